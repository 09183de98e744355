//! The error of the files the API keeps beside its database and of the
//! keys in them: the OIDC signing keys, the notifications key and the
//! bootstrap's token file (the CA has its own, `crate::pki::PkiError`).
//! Each kind says what to fix; none carries key material.

use std::path::{Path, PathBuf};

use heimdall_core::{ApiError, ErrorCode};

#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// Reading, creating, writing or removing one of them failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is there and holds no usable key.
    #[error("{}: {reason}", path.display())]
    Unusable { path: PathBuf, reason: &'static str },
    /// A key could not be made or used (the system's random source, a
    /// sealed value this key did not seal).
    #[error("{0}")]
    Crypto(&'static str),
}

impl KeyFileError {
    /// `action` on `path` failed with `source`.
    pub fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Self + 'a {
        move |source| KeyFileError::Io { action, path: path.to_owned(), source }
    }
}

/// At start-up a file the operator pointed at is a setting to fix
/// (`INVALID_INPUT`); a failed cryptographic step is the API's own (`INTERNAL`).
impl From<KeyFileError> for ApiError {
    fn from(e: KeyFileError) -> Self {
        let code = match e {
            KeyFileError::Io { .. } | KeyFileError::Unusable { .. } => ErrorCode::InvalidInput,
            KeyFileError::Crypto(_) => ErrorCode::Internal,
        };
        ApiError::new(code, e.to_string())
    }
}
