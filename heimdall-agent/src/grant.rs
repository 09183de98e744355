//! Verifying write grants (see `heimdall_core::grant`): the signature
//! against the installation CA's public key, which the Agent trusts
//! already for its channel, then the claims against the write asked for.

use heimdall_core::grant::{GrantError, GrantTarget, ParsedGrant};
use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_ASN1};
use time::OffsetDateTime;

/// The CA's public key, read once from its certificate.
#[derive(Clone, Debug)]
pub struct GrantVerifier {
    public_key: Vec<u8>,
}

impl GrantVerifier {
    /// From the CA certificate (PEM). The CA key must be ECDSA P-256, as the
    /// API generates it.
    pub fn from_ca_pem(ca_pem: &str) -> Result<Self, String> {
        let der = rustls_pemfile::certs(&mut ca_pem.as_bytes())
            .next()
            .ok_or("no certificate in the CA file")?
            .map_err(|e| format!("the CA file is not PEM: {e}"))?;
        let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref())
            .map_err(|e| format!("the CA certificate does not parse: {e}"))?;
        let spki = cert.public_key();
        // id-ecPublicKey with the P-256 curve.
        let is_p256 = spki.algorithm.algorithm.to_id_string() == "1.2.840.10045.2.1"
            && spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.as_oid().ok())
                .is_some_and(|oid| oid.to_id_string() == "1.2.840.10045.3.1.7");
        if !is_p256 {
            return Err("the CA key is not ECDSA P-256; write grants cannot be verified".into());
        }
        Ok(Self { public_key: spki.subject_public_key.data.to_vec() })
    }

    /// Checks a parsed grant: its signature against the CA key, then that
    /// it permits exactly `target` at `now`.
    pub fn verify(
        &self,
        grant: &ParsedGrant,
        target: &GrantTarget<'_>,
        now: OffsetDateTime,
    ) -> Result<(), GrantError> {
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &self.public_key)
            .verify(&grant.signed_message, &grant.signature)
            .map_err(|_| GrantError::BadSignature)?;
        grant.claims.check(target, now)
    }
}
