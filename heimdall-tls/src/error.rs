//! Why a TLS set-up failed: a certificate, key or fingerprint that cannot
//! be used. The messages name what to fix, never key material.

/// A certificate, key, CA or fingerprint given to the TLS edge that it
/// cannot use.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// The PEM text holds none of what was asked for.
    #[error("{0}")]
    Missing(&'static str),
    /// What was given does not parse or is refused: what, and why.
    #[error("{what}: {why}")]
    Unusable { what: &'static str, why: String },
    /// The CA's key is of a kind the signatures it makes are not checked with.
    #[error("the CA key is not ECDSA P-256; what it signs cannot be verified")]
    NotP256,
    #[error("a CA fingerprint is the SHA-256 of its certificate: 64 hex digits")]
    BadFingerprint,
}

impl TlsSetupError {
    /// `what` cannot be used, for the reason given to the result.
    pub fn unusable<E: std::fmt::Display>(what: &'static str) -> impl FnOnce(E) -> Self {
        move |e| TlsSetupError::Unusable { what, why: e.to_string() }
    }
}

/// `HEIMDALL_LOG_FORMAT` names no format.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("HEIMDALL_LOG_FORMAT must be text or json, not {0:?}")]
pub struct LogFormatError(pub String);
