//! The CLI's errors and its stable exit codes.
//!
//! Architecture Invariant: `exit_code` is the only place an error becomes a
//! process exit status; scripts depend on these numbers, so they never
//! change once shipped.

use heimdall_core::{ApiError, ErrorCode};

/// Exit statuses. 2 is also what clap uses for a usage error.
pub mod exit {
    pub const GENERAL: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const UNAUTHENTICATED: u8 = 3;
    pub const FORBIDDEN: u8 = 4;
    pub const NOT_FOUND: u8 = 5;
    pub const CONFLICT: u8 = 6;
    pub const INVALID_INPUT: u8 = 7;
    pub const UNAVAILABLE: u8 = 8;
}

/// The exit status for an API error code. Exhaustive on purpose: a new code
/// in core does not compile here until someone decides its status.
pub fn exit_code(code: ErrorCode) -> u8 {
    match code {
        ErrorCode::Internal | ErrorCode::TerraformChecksumMismatch => exit::GENERAL,
        ErrorCode::Unauthenticated => exit::UNAUTHENTICATED,
        ErrorCode::Forbidden
        | ErrorCode::SelfApproval
        | ErrorCode::ModuleNotAllowed
        | ErrorCode::GrantInvalid
        | ErrorCode::AgentRevoked => exit::FORBIDDEN,
        ErrorCode::NotFound | ErrorCode::VersionDeactivated | ErrorCode::VersionSuperseded => exit::NOT_FOUND,
        ErrorCode::AlreadyExists
        | ErrorCode::NotEmpty
        | ErrorCode::LastOwner
        | ErrorCode::StaleRevision
        | ErrorCode::AlreadyBootstrapped
        | ErrorCode::ValueMayPersist
        | ErrorCode::NoAgent
        | ErrorCode::ImportWouldChange
        | ErrorCode::StalePlan
        | ErrorCode::Conflict => exit::CONFLICT,
        ErrorCode::BadRequest
        | ErrorCode::InvalidInput
        | ErrorCode::InvalidPolicy
        | ErrorCode::SchemaViolation
        | ErrorCode::ValueNotAccepted
        | ErrorCode::PayloadTooLarge
        | ErrorCode::NoCloudAccount => exit::INVALID_INPUT,
        ErrorCode::PolicyStale
        | ErrorCode::AuditUnavailable
        | ErrorCode::Unavailable
        | ErrorCode::TooManyRequests
        | ErrorCode::VersionNotHeld => exit::UNAVAILABLE,
    }
}

/// Everything a command can fail with. Messages never contain a token.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// From the SDK: the API's typed error, or transport/decode trouble.
    #[error("{0}")]
    Sdk(#[from] heimdall_sdk::Error),
    /// An error with a stable code decided here, before or without the API
    /// (e.g. not logged in → `UNAUTHENTICATED`).
    #[error("{0}")]
    Coded(ApiError),
    /// Arguments that parsed but do not make sense together.
    #[error("{0}")]
    Usage(String),
    /// Local trouble: files, config, the `heimdall-api` child process.
    #[error("{0}")]
    Local(String),
    /// Writing to stdout failed (a closed pipe is not an error; see main).
    #[error("cannot write output: {0}")]
    Output(#[from] std::io::Error),
    /// Not an error: the command printed its result and exits with this
    /// status (`plan --detailed-exitcode`: 2 when something would change).
    #[error("exit status {0}")]
    Status(u8),
}

impl CliError {
    pub fn local(message: impl Into<String>) -> Self {
        CliError::Local(message.into())
    }

    pub fn usage(message: impl Into<String>) -> Self {
        CliError::Usage(message.into())
    }

    pub fn not_logged_in(detail: impl std::fmt::Display) -> Self {
        CliError::Coded(ApiError::new(
            ErrorCode::Unauthenticated,
            format!(
                "{detail}; run `heimdall login --api-url URL` (or `heimdall dev` for a local API), \
                 or set HEIMDALL_API_URL and HEIMDALL_TOKEN"
            ),
        ))
    }

    /// The stable code, when there is one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            CliError::Sdk(err) => err.code(),
            CliError::Coded(err) => Some(err.code),
            CliError::Usage(_) | CliError::Local(_) | CliError::Output(_) | CliError::Status(_) => None,
        }
    }

    /// The structured form printed for `--output json`.
    pub fn api_error(&self) -> Option<&ApiError> {
        match self {
            CliError::Sdk(err) => err.api(),
            CliError::Coded(err) => Some(err),
            _ => None,
        }
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) | CliError::Sdk(heimdall_sdk::Error::Invalid(_)) => exit::USAGE,
            CliError::Status(status) => *status,
            _ => self.code().map_or(exit::GENERAL, exit_code),
        }
    }

    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Output(err) if err.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_stable() {
        let expected = [
            ("VALUE_NOT_ACCEPTED", 7),
            ("SCHEMA_VIOLATION", 7),
            ("SELF_APPROVAL", 4),
            ("STALE_REVISION", 6),
            ("FORBIDDEN", 4),
            ("UNAUTHENTICATED", 3),
            ("NOT_FOUND", 5),
            ("VALUE_MAY_PERSIST", 6),
            ("VERSION_DEACTIVATED", 5),
            ("NO_CLOUD_ACCOUNT", 7),
            ("MODULE_NOT_ALLOWED", 4),
            ("TERRAFORM_CHECKSUM_MISMATCH", 1),
            ("POLICY_STALE", 8),
            ("AUDIT_UNAVAILABLE", 8),
            ("BAD_REQUEST", 7),
            ("INVALID_INPUT", 7),
            ("INVALID_POLICY", 7),
            ("ALREADY_EXISTS", 6),
            ("NOT_EMPTY", 6),
            ("LAST_OWNER", 6),
            ("ALREADY_BOOTSTRAPPED", 6),
            ("CONFLICT", 6),
            ("PAYLOAD_TOO_LARGE", 7),
            ("UNAVAILABLE", 8),
            ("INTERNAL", 1),
            ("GRANT_INVALID", 4),
            ("NO_AGENT", 6),
            ("AGENT_REVOKED", 4),
            ("IMPORT_WOULD_CHANGE", 6),
            ("STALE_PLAN", 6),
            ("TOO_MANY_REQUESTS", 8),
            ("VERSION_NOT_HELD", 8),
            ("VERSION_SUPERSEDED", 5),
        ];
        assert_eq!(expected.len(), ErrorCode::ALL.len(), "every code has a pinned exit status");
        for (name, status) in expected {
            let code = ErrorCode::parse(name).unwrap_or_else(|| panic!("unknown code {name}"));
            assert_eq!(exit_code(code), status, "{name}");
        }
    }

    #[test]
    fn errors_without_a_code() {
        assert_eq!(CliError::usage("x").exit_code(), exit::USAGE);
        assert_eq!(CliError::local("x").exit_code(), exit::GENERAL);
        let transport = CliError::Sdk(heimdall_sdk::Error::Transport("refused".into()));
        assert_eq!(transport.exit_code(), exit::GENERAL);
        assert_eq!(CliError::not_logged_in("no profile").exit_code(), exit::UNAUTHENTICATED);
        let api = CliError::Sdk(heimdall_sdk::Error::Api(ApiError::forbidden("no")));
        assert_eq!(api.exit_code(), exit::FORBIDDEN);
    }
}
