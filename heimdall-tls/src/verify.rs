//! What a client checks of the server it reached: the chain to the roots
//! it trusts and the host name, as any TLS client does, and then *who*
//! the certificate names: the exact URI SAN it meant to reach (see
//! [`crate::identity`]), optionally the exact certificate (a pin). A host
//! name alone proves nothing here: any certificate the installation CA
//! signed has one, and Agents ask the CA for the names they like.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use heimdall_core::Sha256Hex;

use crate::identity::{sha256_hex, uri_sans};
use crate::TlsSetupError;

/// Checks the chain and host name with webpki, then that the leaf names
/// `uri` and, with `pins`, that it is one of those certificates (an empty
/// list accepts none).
#[derive(Debug)]
pub struct ExpectIdentity {
    inner: Arc<WebPkiServerVerifier>,
    uri: String,
    pins: Option<Vec<Sha256Hex>>,
}

impl ExpectIdentity {
    pub fn new(
        roots: RootCertStore,
        uri: impl Into<String>,
        pins: Option<Vec<Sha256Hex>>,
    ) -> Result<Self, TlsSetupError> {
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(TlsSetupError::unusable("no usable CA certificate"))?;
        Ok(Self { inner, uri: uri.into(), pins })
    }
}

impl ServerCertVerifier for ExpectIdentity {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified =
            self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)?;
        if !uri_sans(end_entity.as_ref()).contains(&self.uri) {
            return Err(rustls::Error::General(format!(
                "the server's certificate does not name {}: it is not the server meant",
                self.uri
            )));
        }
        let pinned = |pins: &[Sha256Hex]| pins.contains(&sha256_hex(end_entity));
        if self.pins.as_deref().is_some_and(|pins| !pinned(pins)) {
            return Err(rustls::Error::General(format!(
                "the server's certificate for {} is not one the API lists (revoked or replaced)",
                self.uri
            )));
        }
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Trusts only a certificate whose SHA-256 is `ca_sha256` as the root of
/// the chain the server presents (the API sends its CA with its leaf):
/// how an Agent enrolls before it holds the CA, from the fingerprint
/// `heimdall agent token create` printed.
#[derive(Debug)]
pub struct PinnedRoot {
    ca_sha256: Sha256Hex,
}

impl PinnedRoot {
    pub fn new(ca_sha256: &str) -> Result<Self, TlsSetupError> {
        let pin = Sha256Hex::parse(&ca_sha256.trim().replace(':', ""))
            .map_err(|_| TlsSetupError::BadFingerprint)?;
        Ok(Self { ca_sha256: pin })
    }

    /// Does `pem` hold the pinned certificate?
    pub fn matches_pem(&self, pem: &str) -> bool {
        crate::identity::first_der(pem).is_some_and(|der| sha256_hex(&der) == self.ca_sha256)
    }

    fn verifier(&self, chain: &[CertificateDer<'_>]) -> Result<Arc<WebPkiServerVerifier>, rustls::Error> {
        let root = chain.iter().find(|c| sha256_hex(c.as_ref()) == self.ca_sha256).ok_or_else(|| {
            rustls::Error::General(
                "the server's chain does not hold the CA with the fingerprint given".into(),
            )
        })?;
        let mut roots = RootCertStore::empty();
        roots.add(root.clone().into_owned()).map_err(|e| rustls::Error::General(e.to_string()))?;
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| rustls::Error::General(e.to_string()))
    }
}

impl ServerCertVerifier for PinnedRoot {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier(intermediates)?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &provider().signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &provider().signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        provider().signature_verification_algorithms.supported_schemes()
    }
}

/// rustls on ring, the one provider of the workspace.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The CA certificates of a PEM text as roots.
pub fn roots(ca_pem: &str) -> Result<RootCertStore, TlsSetupError> {
    let mut roots = RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots
            .add(cert.map_err(TlsSetupError::unusable("CA certificate"))?)
            .map_err(TlsSetupError::unusable("CA certificate"))?;
    }
    if roots.is_empty() {
        return Err(TlsSetupError::Missing("no CA certificate in the PEM text"));
    }
    Ok(roots)
}

/// A client configuration that verifies the server with `verifier` and,
/// with `identity` (certificate chain and key, PEM), authenticates with it.
pub fn client_config(
    verifier: Arc<dyn ServerCertVerifier>,
    identity: Option<(&str, &str)>,
) -> Result<rustls::ClientConfig, TlsSetupError> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsSetupError::unusable("TLS versions"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match identity {
        Some((cert_pem, key_pem)) => {
            let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(TlsSetupError::unusable("client certificate"))?;
            let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut key_pem.as_bytes())
                .map_err(TlsSetupError::unusable("client key"))?
                .ok_or(TlsSetupError::Missing("client key: no private key in the PEM text"))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(TlsSetupError::unusable("client certificate and key"))?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Checks what the installation CA signed for others (write grants, an
/// Agent's certificate statement: `heimdall_core::signed`) against the CA
/// certificate's public key, which every party trusts already.
#[derive(Clone, Debug)]
pub struct CaSignatures {
    public_key: Vec<u8>,
}

impl CaSignatures {
    /// From the CA certificate (PEM). The CA key must be ECDSA P-256, as
    /// the API generates it.
    pub fn from_ca_pem(ca_pem: &str) -> Result<Self, TlsSetupError> {
        let der = rustls_pemfile::certs(&mut ca_pem.as_bytes())
            .next()
            .ok_or(TlsSetupError::Missing("no certificate in the CA file"))?
            .map_err(TlsSetupError::unusable("the CA file is not PEM"))?;
        let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref())
            .map_err(TlsSetupError::unusable("the CA certificate does not parse"))?;
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
            return Err(TlsSetupError::NotP256);
        }
        Ok(Self { public_key: spki.subject_public_key.data.to_vec() })
    }

    /// Whether `signature` (ECDSA P-256 SHA-256, ASN.1 DER) is the CA's
    /// over `message`.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_ASN1, &self.public_key)
            .verify(message, signature)
            .is_ok()
    }
}
