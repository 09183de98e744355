//! The local API's server certificate: issued by the installation CA
//! (asked for over the channel; it names this Agent's URI SAN, and the
//! names in `[local_api]`), kept next to the Agent's key as
//! `local-api.pem` / `local-api.key`, and served through a resolver that
//! swaps it without a restart. It is renewed when a third of its life is
//! left, and at once when the API no longer lists it (revoked with
//! `heimdall certificate revoke`): people's clients accept only the
//! certificates the API lists for this Agent.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use time::OffsetDateTime;
use zeroize::Zeroizing;

use heimdall_core::renewal::needs_renewal;
use heimdall_core::Sha256Hex;

use crate::channel::Channel;
use crate::config::{AgentConfig, LocalApiConfig};

/// The certificate in use, swapped in place.
#[derive(Debug)]
struct Current {
    key: Arc<CertifiedKey>,
    sha256: Sha256Hex,
    not_before: i64,
    not_after: i64,
}

#[derive(Debug)]
pub struct LocalCertificate {
    current: RwLock<Current>,
    cert_path: PathBuf,
    key_path: PathBuf,
    names: Vec<String>,
}

impl ResolvesServerCert for LocalCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.read().ok().map(|c| c.key.clone())
    }
}

/// Why the local API's certificate was not loaded or renewed.
#[derive(Debug, thiserror::Error)]
pub enum LocalCertError {
    /// The certificate or key file does not hold what it should.
    #[error("local API {0}")]
    Unusable(String),
    #[error(transparent)]
    File(#[from] crate::files::FileError),
    /// The API did not issue one.
    #[error(transparent)]
    Channel(#[from] crate::channel::ChannelError),
    /// None on disk still good, and none issued now.
    #[error("the local API needs a certificate from the API: {0}")]
    NoneIssued(Box<LocalCertError>),
    /// The CA certificate that client certificates must chain to.
    #[error("the CA certificate: {0}")]
    Ca(heimdall_tls::TlsSetupError),
    /// rustls refused the server configuration.
    #[error("the local API's TLS: {0}")]
    Tls(String),
}

fn unusable(what: impl std::fmt::Display) -> LocalCertError {
    LocalCertError::Unusable(what.to_string())
}

fn parse(cert_pem: &str, key_pem: &str) -> Result<Current, LocalCertError> {
    let chain: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| unusable(format!("certificate: {e}")))?;
    let leaf = chain.first().ok_or_else(|| unusable("certificate: none in the file"))?;
    let (_, parsed) = x509_parser::parse_x509_certificate(leaf.as_ref())
        .map_err(|e| unusable(format!("certificate: {e}")))?;
    let validity = parsed.validity();
    let (not_before, not_after) = (validity.not_before.timestamp(), validity.not_after.timestamp());
    let sha256 = heimdall_tls::identity::sha256_hex(leaf.as_ref());
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut key_pem.as_bytes())
        .map_err(|e| unusable(format!("key: {e}")))?
        .ok_or_else(|| unusable("key: no private key in the file"))?;
    let signing = heimdall_tls::verify::provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| unusable(format!("key: {e}")))?;
    Ok(Current { key: Arc::new(CertifiedKey::new(chain, signing)), sha256, not_before, not_after })
}

impl LocalCertificate {
    /// The cached certificate if it is still good, else a new one from the
    /// CA; with the API down, the cached one while it lasts.
    pub async fn load_or_issue(
        config: &AgentConfig,
        local: &LocalApiConfig,
        channel: &Channel,
        now: OffsetDateTime,
    ) -> Result<Arc<Self>, LocalCertError> {
        let dir = config.key.parent().unwrap_or(Path::new("."));
        let (cert_path, key_path) = (dir.join("local-api.pem"), dir.join("local-api.key"));
        let cached = match (std::fs::read_to_string(&cert_path), std::fs::read_to_string(&key_path)) {
            (Ok(cert), Ok(key)) => parse(&cert, &Zeroizing::new(key)).ok(),
            _ => None,
        };
        let now = now.unix_timestamp();
        let current = match cached {
            Some(c) if !needs_renewal(c.not_before, c.not_after, now, &c.sha256, None) => c,
            cached => match issue(channel, &local.names, &cert_path, &key_path).await {
                Ok(fresh) => fresh,
                Err(e) => match cached.filter(|c| c.not_after > now) {
                    Some(c) => {
                        tracing::warn!(error = %e, "could not renew the local API certificate; using the current one");
                        c
                    }
                    None => return Err(LocalCertError::NoneIssued(Box::new(e))),
                },
            },
        };
        Ok(Arc::new(Self { current: RwLock::new(current), cert_path, key_path, names: local.names.clone() }))
    }

    /// The SHA-256 of the certificate in use.
    pub fn sha256(&self) -> Option<Sha256Hex> {
        self.current.read().map(|c| c.sha256.clone()).ok()
    }

    /// After a sync: renews if due or no longer listed (`listed`: the
    /// API's list, `None` from an API that sends none); the new certificate
    /// is served from the next handshake on.
    pub async fn check(&self, listed: Option<&[Sha256Hex]>, channel: &Channel, now: OffsetDateTime) {
        let due = self
            .current
            .read()
            .is_ok_and(|c| needs_renewal(c.not_before, c.not_after, now.unix_timestamp(), &c.sha256, listed));
        if !due {
            return;
        }
        match issue(channel, &self.names, &self.cert_path, &self.key_path).await {
            Ok(fresh) => {
                tracing::warn!(sha256 = %fresh.sha256, "the local API serves a new certificate");
                if let Ok(mut current) = self.current.write() {
                    *current = fresh;
                }
            }
            Err(e) => tracing::error!(error = %e, "could not renew the local API certificate; will retry"),
        }
    }
}

/// A new key here, a certificate for it from the CA, both written whole.
async fn issue(
    channel: &Channel,
    names: &[String],
    cert_path: &Path,
    key_path: &Path,
) -> Result<Current, LocalCertError> {
    let key = rcgen::KeyPair::generate().map_err(|e| unusable(format!("key: {e}")))?;
    let csr = rcgen::CertificateParams::new(Vec::<String>::new())
        .and_then(|p| p.serialize_request(&key))
        .and_then(|r| r.pem())
        .map_err(|e| unusable(format!("certificate request: {e}")))?;
    let request = heimdall_wire::ServerCertificateRequest { csr, names: names.to_vec() };
    let issued = channel.server_certificate(&request).await?;
    let key_pem = Zeroizing::new(key.serialize_pem());
    crate::files::replace_file(key_path, key_pem.as_bytes(), 0o600)?;
    crate::files::replace_file(cert_path, issued.certificate.as_bytes(), 0o644)?;
    tracing::info!(sha256 = %issued.sha256, "local API certificate issued");
    parse(&issued.certificate, &key_pem)
}
