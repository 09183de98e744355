//! Verifying write grants (see `heimdall_core::grant`): the signature
//! against the installation CA's public key, which the Agent trusts
//! already for its channel (`heimdall_tls::verify::CaSignatures`), then the
//! claims against the write asked for.

use heimdall_core::grant::{GrantError, GrantTarget, ParsedGrant};
use heimdall_core::transfer::{ParsedTransfer, ServeCheck, TransferError};
use heimdall_tls::verify::CaSignatures;
use time::OffsetDateTime;

/// The CA's public key, read once from its certificate.
#[derive(Clone, Debug)]
pub struct GrantVerifier {
    ca: CaSignatures,
}

impl GrantVerifier {
    /// From the CA certificate (PEM).
    pub fn from_ca_pem(ca_pem: &str) -> Result<Self, heimdall_tls::TlsSetupError> {
        Ok(Self { ca: CaSignatures::from_ca_pem(ca_pem)? })
    }

    /// Checks a parsed grant: its signature against the CA key, then that
    /// it permits exactly `target` at `now`.
    pub fn verify(
        &self,
        grant: &ParsedGrant,
        target: &GrantTarget<'_>,
        now: OffsetDateTime,
    ) -> Result<(), GrantError> {
        if !self.ca.verify(&grant.signed_message, &grant.signature) {
            return Err(GrantError::BadSignature);
        }
        grant.claims.check(target, now)
    }

    /// Checks a transfer grant: its signature against the CA key, then
    /// that this Agent may serve it to its caller at `now`.
    pub fn verify_transfer(
        &self,
        grant: &ParsedTransfer,
        check: &ServeCheck,
        now: OffsetDateTime,
    ) -> Result<(), TransferError> {
        if !self.ca.verify(&grant.signed_message, &grant.signature) {
            return Err(TransferError::BadSignature);
        }
        grant.claims.check(check, now)
    }
}
