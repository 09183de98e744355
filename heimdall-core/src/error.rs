//! The one list of stable error codes (docs/api-and-sdk.md, "Errors and exit codes") and their HTTP status.
//!
//! Architecture Invariant: a code's string and status never change once
//! shipped; `tests/core.rs` pins the whole table. Messages never carry a
//! secret value, an input value, a token or a credential.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! error_codes {
    ($($variant:ident = $status:literal),+ $(,)?) => {
        /// A stable, machine-readable error code.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
        pub enum ErrorCode {
            $($variant),+
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),+];

            /// The HTTP status this code is served with. The only such table.
            pub const fn http_status(self) -> u16 {
                match self {
                    $(ErrorCode::$variant => $status),+
                }
            }
        }
    };
}

error_codes! {
    ValueNotAccepted = 400,
    SchemaViolation = 422,
    SelfApproval = 403,
    StaleRevision = 409,
    Forbidden = 403,
    Unauthenticated = 401,
    NotFound = 404,
    ValueMayPersist = 409,
    VersionDeactivated = 410,
    NoCloudAccount = 422,
    ModuleNotAllowed = 422,
    TerraformChecksumMismatch = 422,
    PolicyStale = 503,
    AuditUnavailable = 503,
    // Heimdall's own additions, same rules.
    BadRequest = 400,
    InvalidInput = 422,
    InvalidPolicy = 422,
    AlreadyExists = 409,
    NotEmpty = 409,
    LastOwner = 409,
    AlreadyBootstrapped = 409,
    Conflict = 409,
    PayloadTooLarge = 413,
    Unavailable = 503,
    Internal = 500,
    GrantInvalid = 403,
    NoAgent = 409,
    AgentRevoked = 403,
    ImportWouldChange = 409,
    StalePlan = 409,
    TooManyRequests = 429,
    // An Agent lacks the current version (or the one asked for): ask the next holder.
    VersionNotHeld = 503,
    // A version replaced by a newer one, erased after its writer's overlap.
    VersionSuperseded = 410,
}

impl ErrorCode {
    /// The wire spelling, e.g. `VALUE_NOT_ACCEPTED`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ValueNotAccepted => "VALUE_NOT_ACCEPTED",
            ErrorCode::SchemaViolation => "SCHEMA_VIOLATION",
            ErrorCode::SelfApproval => "SELF_APPROVAL",
            ErrorCode::StaleRevision => "STALE_REVISION",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::ValueMayPersist => "VALUE_MAY_PERSIST",
            ErrorCode::VersionDeactivated => "VERSION_DEACTIVATED",
            ErrorCode::NoCloudAccount => "NO_CLOUD_ACCOUNT",
            ErrorCode::ModuleNotAllowed => "MODULE_NOT_ALLOWED",
            ErrorCode::TerraformChecksumMismatch => "TERRAFORM_CHECKSUM_MISMATCH",
            ErrorCode::PolicyStale => "POLICY_STALE",
            ErrorCode::AuditUnavailable => "AUDIT_UNAVAILABLE",
            ErrorCode::BadRequest => "BAD_REQUEST",
            ErrorCode::InvalidInput => "INVALID_INPUT",
            ErrorCode::InvalidPolicy => "INVALID_POLICY",
            ErrorCode::AlreadyExists => "ALREADY_EXISTS",
            ErrorCode::NotEmpty => "NOT_EMPTY",
            ErrorCode::LastOwner => "LAST_OWNER",
            ErrorCode::AlreadyBootstrapped => "ALREADY_BOOTSTRAPPED",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::Unavailable => "UNAVAILABLE",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::GrantInvalid => "GRANT_INVALID",
            ErrorCode::NoAgent => "NO_AGENT",
            ErrorCode::AgentRevoked => "AGENT_REVOKED",
            ErrorCode::ImportWouldChange => "IMPORT_WOULD_CHANGE",
            ErrorCode::StalePlan => "STALE_PLAN",
            ErrorCode::TooManyRequests => "TOO_MANY_REQUESTS",
            ErrorCode::VersionNotHeld => "VERSION_NOT_HELD",
            ErrorCode::VersionSuperseded => "VERSION_SUPERSEDED",
        }
    }

    /// The generic code for an answer with this status whose body is not
    /// a Heimdall error (a proxy's page, an older server).
    pub fn for_status(status: u16) -> Self {
        match status {
            400 => ErrorCode::BadRequest,
            401 => ErrorCode::Unauthenticated,
            403 => ErrorCode::Forbidden,
            404 => ErrorCode::NotFound,
            409 => ErrorCode::Conflict,
            413 => ErrorCode::PayloadTooLarge,
            422 => ErrorCode::InvalidInput,
            429 => ErrorCode::TooManyRequests,
            503 => ErrorCode::Unavailable,
            _ => ErrorCode::Internal,
        }
    }

    /// Codes whose message is built from a failing part's own error (a
    /// database, a key, KMS): it can name hosts, paths or key ids, so it
    /// goes to the operator's log and the response says only this.
    pub fn public_message(self) -> Option<&'static str> {
        match self {
            ErrorCode::Internal => Some("internal error; the server's log has the details"),
            ErrorCode::Unavailable => Some("a backing service is unavailable; try again shortly"),
            _ => None,
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One refused field: where (a JSON Pointer) and which rule. Never the value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub path: String,
    pub rule: String,
}

/// The error every layer speaks: a stable code, a human message, and for
/// input refusals the fields. Serialized on the wire as
/// `{"error": {"code", "message", "fields"?}}` (`heimdall_wire::ErrorBody`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<FieldError>>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), fields: None }
    }

    pub fn with_fields(mut self, fields: Vec<FieldError>) -> Self {
        self.fields = Some(fields);
        self
    }

    pub fn http_status(&self) -> u16 {
        self.code.http_status()
    }

    /// What a response may carry, and what only the log gets: for the
    /// codes with a [`ErrorCode::public_message`], the message is replaced
    /// and the original returned as the detail to log. Both servers answer
    /// through this, so they hide the same things.
    pub fn into_public(self) -> (Self, Option<String>) {
        match self.code.public_message() {
            Some(public) => (Self::new(self.code, public), Some(self.message)),
            None => (self, None),
        }
    }

    pub fn not_found(what: impl fmt::Display) -> Self {
        Self::new(ErrorCode::NotFound, format!("{what} not found"))
    }

    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidInput, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Forbidden, message)
    }
}

/// An error and its sources on one line: TLS and HTTP client errors say
/// why only in a source.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
