//! The one error answer's shape on the wire.

use heimdall_core::{ApiError, ErrorCode};

#[test]
fn error_body_shape() {
    let body = heimdall_wire::ErrorBody {
        error: ApiError::new(ErrorCode::SchemaViolation, "input does not match the schema")
            .with_fields(vec![heimdall_core::FieldError { path: "/bucket".into(), rule: "pattern".into() }]),
    };
    let json = serde_json::to_value(&body).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"error": {"code": "SCHEMA_VIOLATION", "message": "input does not match the schema",
            "fields": [{"path": "/bucket", "rule": "pattern"}]}})
    );
    let plain =
        serde_json::to_value(heimdall_wire::ErrorBody { error: ApiError::not_found("member") }).unwrap();
    assert!(plain["error"].get("fields").is_none());
}
