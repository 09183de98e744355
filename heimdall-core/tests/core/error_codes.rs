use heimdall_core::{ApiError, ErrorCode};

/// The published table. Changing a line here is a breaking API change.
const PINNED: &[(&str, u16)] = &[
    ("VALUE_NOT_ACCEPTED", 400),
    ("SCHEMA_VIOLATION", 422),
    ("SELF_APPROVAL", 403),
    ("STALE_REVISION", 409),
    ("FORBIDDEN", 403),
    ("UNAUTHENTICATED", 401),
    ("NOT_FOUND", 404),
    ("VALUE_MAY_PERSIST", 409),
    ("VERSION_DEACTIVATED", 410),
    ("NO_CLOUD_ACCOUNT", 422),
    ("MODULE_NOT_ALLOWED", 422),
    ("TERRAFORM_CHECKSUM_MISMATCH", 422),
    ("POLICY_STALE", 503),
    ("AUDIT_UNAVAILABLE", 503),
    ("BAD_REQUEST", 400),
    ("INVALID_INPUT", 422),
    ("INVALID_POLICY", 422),
    ("ALREADY_EXISTS", 409),
    ("NOT_EMPTY", 409),
    ("LAST_OWNER", 409),
    ("ALREADY_BOOTSTRAPPED", 409),
    ("CONFLICT", 409),
    ("PAYLOAD_TOO_LARGE", 413),
    ("UNAVAILABLE", 503),
    ("INTERNAL", 500),
    ("GRANT_INVALID", 403),
    ("NO_AGENT", 409),
    ("AGENT_REVOKED", 403),
    ("IMPORT_WOULD_CHANGE", 409),
    ("STALE_PLAN", 409),
    ("TOO_MANY_REQUESTS", 429),
    ("VERSION_NOT_HELD", 503),
    ("VERSION_SUPERSEDED", 410),
];

#[test]
fn every_code_has_its_pinned_status_and_spelling() {
    let actual: Vec<(&str, u16)> = ErrorCode::ALL.iter().map(|c| (c.as_str(), c.http_status())).collect();
    assert_eq!(actual, PINNED);
}

#[test]
fn codes_round_trip_through_json_and_parse() {
    for code in ErrorCode::ALL {
        let json = serde_json::to_string(code).unwrap();
        assert_eq!(json, format!("\"{}\"", code.as_str()));
        assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), *code);
        assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
    }
}

#[test]
fn internal_detail_is_split_off_for_the_log_and_nothing_else_is() {
    let store = ApiError::new(ErrorCode::Unavailable, "pool timed out connecting to db.internal:5432");
    let (public, detail) = store.into_public();
    assert_eq!(public.code, ErrorCode::Unavailable);
    assert!(!public.message.contains("db.internal"), "{}", public.message);
    assert_eq!(detail.as_deref(), Some("pool timed out connecting to db.internal:5432"));
    let (public, _) = ApiError::new(ErrorCode::Internal, "key id 3f2a does not open").into_public();
    assert!(!public.message.contains("3f2a"));
    // A refusal written for the caller is served as written.
    let refusal =
        ApiError::new(ErrorCode::AuditUnavailable, "the read could not be recorded; nothing was served");
    assert_eq!(refusal.clone().into_public(), (refusal, None));
}

#[test]
fn a_foreign_answer_gets_the_generic_code_of_its_status() {
    // The inverse of the table for the generic codes.
    for code in [
        ErrorCode::BadRequest,
        ErrorCode::Unauthenticated,
        ErrorCode::Forbidden,
        ErrorCode::NotFound,
        ErrorCode::Conflict,
        ErrorCode::PayloadTooLarge,
        ErrorCode::InvalidInput,
        ErrorCode::Unavailable,
        ErrorCode::Internal,
    ] {
        assert_eq!(ErrorCode::for_status(code.http_status()), code);
    }
    assert_eq!(ErrorCode::for_status(502), ErrorCode::Internal);
}
