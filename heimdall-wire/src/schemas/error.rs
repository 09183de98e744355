//! The OpenAPI schemas of `heimdall_core::error`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// One refused field: where (a JSON Pointer) and which rule. Never the value.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FieldError {
    pub path: String,
    pub rule: String,
}

/// The error every layer speaks: a stable code, a human message, and for
/// input refusals the fields. Serialized on the wire as
/// `{"error": {"code", "message", "fields"?}}` (`heimdall_wire::ErrorBody`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<FieldError>>,
}
