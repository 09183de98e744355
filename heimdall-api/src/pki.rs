//! The installation's certificate authority: it signs Agent certificates
//! (from a CSR: the Agent's private key never leaves it) and the API's own
//! server certificate for the mTLS listener.
//!
//! The CA key is a file (`--ca-dir`, default next to nothing: it must be
//! given), never a database row: every replica is given the same files, as
//! with any TLS key, and the database holds no private key.

use std::path::Path;
use std::sync::Arc;

use heimdall_core::ids::{AgentId, MemberId};
use heimdall_core::Sha256Hex;
use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use time::{Duration, OffsetDateTime};

/// Agent certificates are valid this long; re-enrolling issues a new one.
pub const AGENT_CERT_VALIDITY: Duration = Duration::days(365);

/// People's client certificates are short-lived: removing a member stops
/// new ones at once, and Agents drop old ones on their next sync.
pub const MEMBER_CERT_VALIDITY: Duration = Duration::days(30);
/// The Agent's local API certificate; the Agent renews it well before.
pub const AGENT_SERVER_CERT_VALIDITY: Duration = Duration::days(90);

use heimdall_tls::identity::{agent_uri, member_uri, API_URI};

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("certificate authority files in {dir}: {reason}")]
    Files { dir: String, reason: String },
    #[error("the certificate signing request is not valid: {0}")]
    BadCsr(String),
    #[error("certificate generation failed: {0}")]
    Generate(String),
    #[error("TLS configuration failed: {0}")]
    Tls(String),
}

/// A certificate the CA just signed.
#[derive(Clone, Debug)]
pub struct IssuedCert {
    pub pem: String,
    pub sha256: Sha256Hex,
    pub not_after: OffsetDateTime,
}

/// What a leaf certificate says, beyond its public key.
struct Leaf<'a> {
    common_name: &'a str,
    uri: String,
    dns_names: &'a [String],
    usage: ExtendedKeyUsagePurpose,
    validity: Duration,
}

pub struct Ca {
    cert_pem: String,
    cert_der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca").field("cert_sha256", &sha256_hex(&self.cert_der)).finish_non_exhaustive()
    }
}

pub fn sha256_hex(der: &[u8]) -> Sha256Hex {
    heimdall_tls::identity::sha256_hex(der)
}

fn generate_err(e: rcgen::Error) -> PkiError {
    PkiError::Generate(e.to_string())
}

impl Ca {
    /// Loads `ca.pem` and `ca.key` from `dir`, creating both (key mode
    /// 0600) if neither exists.
    pub fn load_or_create(dir: &Path) -> Result<Self, PkiError> {
        let files = |reason: String| PkiError::Files { dir: dir.display().to_string(), reason };
        let (cert_path, key_path) = (dir.join("ca.pem"), dir.join("ca.key"));
        match (cert_path.exists(), key_path.exists()) {
            (true, true) => {
                let cert_pem = std::fs::read_to_string(&cert_path).map_err(|e| files(e.to_string()))?;
                let key_pem = std::fs::read_to_string(&key_path).map_err(|e| files(e.to_string()))?;
                Self::from_pem(&cert_pem, &key_pem).map_err(|e| files(e.to_string()))
            }
            (false, false) => {
                let ca = Self::generate()?;
                std::fs::create_dir_all(dir).map_err(|e| files(e.to_string()))?;
                write_private(&key_path, ca.issuer.key().serialize_pem().as_bytes())
                    .map_err(|e| files(e.to_string()))?;
                std::fs::write(&cert_path, &ca.cert_pem).map_err(|e| files(e.to_string()))?;
                tracing::warn!(dir = %dir.display(), "created a new certificate authority; give every API replica these files");
                Ok(ca)
            }
            _ => {
                Err(files("exactly one of ca.pem and ca.key exists; restore the other or remove both".into()))
            }
        }
    }

    pub fn generate() -> Result<Self, PkiError> {
        let key = KeyPair::generate().map_err(generate_err)?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "Heimdall installation CA");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::hours(1);
        params.not_after = now + Duration::days(3650);
        let cert = params.self_signed(&key).map_err(generate_err)?;
        let cert_pem = cert.pem();
        Self::from_pem(&cert_pem, &key.serialize_pem())
    }

    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, PkiError> {
        let key = KeyPair::from_pem(key_pem).map_err(generate_err)?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key).map_err(generate_err)?;
        let cert_der = rustls_pemfile::certs(&mut cert_pem.as_bytes())
            .next()
            .ok_or_else(|| PkiError::Generate("no certificate in ca.pem".into()))?
            .map_err(|e| PkiError::Generate(e.to_string()))?;
        Ok(Self { cert_pem: cert_pem.to_owned(), cert_der, issuer })
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// Signs a leaf certificate for the CSR's public key. Nothing else in
    /// the CSR is trusted: names, usages and validity are the caller's.
    fn sign_leaf(&self, csr_pem: &str, leaf: Leaf<'_>, now: OffsetDateTime) -> Result<IssuedCert, PkiError> {
        let csr = CertificateSigningRequestParams::from_pem(csr_pem)
            .map_err(|e| PkiError::BadCsr(e.to_string()))?;
        let mut params =
            CertificateParams::new(leaf.dns_names.to_vec()).map_err(|e| PkiError::BadCsr(e.to_string()))?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, leaf.common_name);
        params.distinguished_name = dn;
        params.subject_alt_names.push(SanType::URI(leaf.uri.try_into().map_err(generate_err)?));
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![leaf.usage];
        params.not_before = now - Duration::minutes(5);
        params.not_after = now + leaf.validity;
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&csr.public_key, &self.issuer).map_err(generate_err)?;
        Ok(IssuedCert { pem: cert.pem(), sha256: sha256_hex(cert.der()), not_after: params.not_after })
    }

    /// Signs an Agent's client certificate (its id in a URI SAN).
    pub fn issue_agent_cert(
        &self,
        csr_pem: &str,
        agent: AgentId,
        name: &str,
    ) -> Result<(String, Sha256Hex), PkiError> {
        let leaf = Leaf {
            common_name: name,
            uri: agent_uri(agent),
            dns_names: &[],
            usage: ExtendedKeyUsagePurpose::ClientAuth,
            validity: AGENT_CERT_VALIDITY,
        };
        let issued = self.sign_leaf(csr_pem, leaf, OffsetDateTime::now_utc())?;
        Ok((issued.pem, issued.sha256))
    }

    /// Signs a person's client certificate: the member's id in a URI SAN,
    /// client authentication only.
    pub fn issue_member_cert(
        &self,
        csr_pem: &str,
        member: MemberId,
        email: &str,
        now: OffsetDateTime,
    ) -> Result<IssuedCert, PkiError> {
        let leaf = Leaf {
            common_name: email,
            uri: member_uri(member),
            dns_names: &[],
            usage: ExtendedKeyUsagePurpose::ClientAuth,
            validity: MEMBER_CERT_VALIDITY,
        };
        self.sign_leaf(csr_pem, leaf, now)
    }

    /// Signs the server certificate of an Agent's local API, for `names`
    /// (DNS names or IP addresses), server authentication only, with the
    /// Agent's id in a URI SAN.
    pub fn issue_agent_server_cert(
        &self,
        csr_pem: &str,
        agent: AgentId,
        names: &[String],
        now: OffsetDateTime,
    ) -> Result<IssuedCert, PkiError> {
        let leaf = Leaf {
            common_name: "Heimdall Agent (local API)",
            uri: agent_uri(agent),
            dns_names: names,
            usage: ExtendedKeyUsagePurpose::ServerAuth,
            validity: AGENT_SERVER_CERT_VALIDITY,
        };
        self.sign_leaf(csr_pem, leaf, now)
    }

    /// Signs a statement's signing input (`heimdall_core::signed`: a write
    /// grant, an Agent's certificate statement; its context keeps kinds
    /// apart) with the CA key (ECDSA P-256, SHA-256, ASN.1 DER signature);
    /// Agents and clients verify with the CA certificate they already trust.
    pub fn sign_statement(&self, message: &[u8]) -> Result<Vec<u8>, PkiError> {
        use rcgen::SigningKey;
        self.issuer.key().sign(message).map_err(generate_err)
    }

    /// The SHA-256 (hex) of the CA certificate: the fingerprint an Agent
    /// pins to enroll (`heimdall-agent enroll --ca-sha256`).
    pub fn fingerprint(&self) -> Sha256Hex {
        sha256_hex(&self.cert_der)
    }

    /// A fresh server certificate of the API's own, for `names` (DNS names
    /// or IP addresses), with the URI SAN `urn:heimdall:api` that the CA
    /// signs for nobody else: what Agents and the CLI require of the API.
    fn server_cert(
        &self,
        names: &[String],
    ) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), PkiError> {
        let key = KeyPair::generate().map_err(generate_err)?;
        let mut params = CertificateParams::new(names.to_vec()).map_err(generate_err)?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "Heimdall API");
        params.distinguished_name = dn;
        params.subject_alt_names.push(SanType::URI(API_URI.try_into().map_err(generate_err)?));
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::minutes(5);
        params.not_after = now + Duration::days(30);
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &self.issuer).map_err(generate_err)?;
        let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok((cert.der().clone(), key_der))
    }

    /// The mTLS listener's TLS config: a client certificate issued by this
    /// CA is required (rustls `WebPkiClientVerifier`).
    pub fn mtls_server_config(&self, names: &[String]) -> Result<rustls::ServerConfig, PkiError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.cert_der.clone()).map_err(|e| PkiError::Tls(e.to_string()))?;
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| PkiError::Tls(e.to_string()))?;
        let (cert, key) = self.server_cert(names)?;
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| PkiError::Tls(e.to_string()))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![cert, self.cert_der.clone()], key)
            .map_err(|e| PkiError::Tls(e.to_string()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }

    /// The people's HTTPS listener's TLS config, with a certificate from
    /// this CA for `names` (when the operator gives no certificate of their
    /// own). The chain carries the CA, so a client that pinned its
    /// fingerprint can verify it.
    pub fn https_server_config(&self, names: &[String]) -> Result<rustls::ServerConfig, PkiError> {
        let (cert, key) = self.server_cert(names)?;
        server_config(vec![cert, self.cert_der.clone()], key)
    }
}

/// A TLS server config (no client certificates) for a chain and key.
pub fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<rustls::ServerConfig, PkiError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| PkiError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| PkiError::Tls(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A TLS server config from PEM files (`--tls-cert`, `--tls-key`).
pub fn server_config_from_files(cert: &Path, key: &Path) -> Result<rustls::ServerConfig, PkiError> {
    let files =
        |reason: String| PkiError::Files { dir: format!("{} / {}", cert.display(), key.display()), reason };
    let cert_pem = std::fs::read_to_string(cert).map_err(|e| files(e.to_string()))?;
    let key_pem = zeroize::Zeroizing::new(std::fs::read_to_string(key).map_err(|e| files(e.to_string()))?);
    let chain: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| files(format!("certificate: {e}")))?;
    if chain.is_empty() {
        return Err(files("no certificate in --tls-cert".into()));
    }
    let key = rustls_pemfile::private_key(&mut key_pem.as_bytes())
        .map_err(|e| files(format!("key: {e}")))?
        .ok_or_else(|| files("no private key in --tls-key".into()))?;
    server_config(chain, key)
}

/// The Agent a verified client certificate names, and the certificate's
/// SHA-256 (checked against the one issued at enrollment).
pub fn agent_identity(cert: &CertificateDer<'_>) -> Option<(AgentId, Sha256Hex)> {
    let id = heimdall_tls::identity::agent_of(cert.as_ref())?;
    Some((id, sha256_hex(cert.as_ref())))
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issues_agent_certs_from_csrs_and_reads_the_identity_back() {
        let ca = Ca::generate().unwrap();
        let agent_key = KeyPair::generate().unwrap();
        // A CSR that asks for more than it gets: CA rights and another name.
        let mut asked = CertificateParams::new(vec!["evil.example.com".to_owned()]).unwrap();
        asked.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let csr = asked.serialize_request(&agent_key).unwrap().pem().unwrap();
        let id = AgentId::from_uuid(uuid::Uuid::new_v4());
        let (pem, sha) = ca.issue_agent_cert(&csr, id, "agent-1").unwrap();
        let der = rustls_pemfile::certs(&mut pem.as_bytes()).next().unwrap().unwrap();
        assert_eq!(agent_identity(&der), Some((id, sha)));
        let (_, parsed) = x509_parser::parse_x509_certificate(der.as_ref()).unwrap();
        assert!(!parsed.is_ca());
        assert!(!format!("{:?}", parsed.subject_alternative_name()).contains("evil"));
        assert!(ca.issue_agent_cert("not a csr", id, "x").is_err());
    }

    #[test]
    fn ca_files_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let a = Ca::load_or_create(dir.path()).unwrap();
        let b = Ca::load_or_create(dir.path()).unwrap();
        assert_eq!(a.cert_pem(), b.cert_pem());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(dir.path().join("ca.key")).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::remove_file(dir.path().join("ca.pem")).unwrap();
        assert!(Ca::load_or_create(dir.path()).is_err());
    }
}
