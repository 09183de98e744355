//! A person's client certificate: a key made here, certified by the API.

use heimdall_core::Redacted;
use heimdall_wire::IssuedCertificate;
use zeroize::Zeroizing;

use crate::{Client, Error, Identity, Result};

/// What [`login`] made: the identity to show Agents, and what the API said
/// of the certificate.
#[derive(Debug)]
pub struct Certified {
    pub identity: Identity,
    pub issued: IssuedCertificate,
}

/// Has the API's CA certify a key for the caller of `api` (the person its
/// token names): `keep` (a PEM key from an earlier login: personal secrets
/// bound to it stay reachable) or a new ECDSA P-256 key. Only a certificate
/// request leaves this process; names, usages and validity are the API's.
/// Storing the key is the caller's (the CLI writes it 0600 in its profile).
pub async fn login(api: &Client, keep: Option<&Redacted<String>>) -> Result<Certified> {
    let kept = keep.and_then(|pem| rcgen::KeyPair::from_pem(pem.expose()).ok());
    let key = match kept {
        Some(key) => key,
        None => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .map_err(|err| Error::Invalid(format!("cannot generate a key: {err}")))?,
    };
    let csr = rcgen::CertificateParams::new(Vec::<String>::new())
        .and_then(|params| params.serialize_request(&key))
        .and_then(|request| request.pem())
        .map_err(|err| Error::Invalid(format!("cannot make a certificate request: {err}")))?;
    let issued = api.issue_certificate(&csr).await?;
    let key_pem = Zeroizing::new(key.serialize_pem());
    drop(key);
    let identity = Identity {
        certificate_pem: issued.certificate.clone(),
        key_pem: Redacted::new(key_pem.to_string()),
        ca_pem: issued.ca.clone(),
    };
    Ok(Certified { identity, issued })
}
