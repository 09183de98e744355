//! Who a certificate names. The installation CA writes one URI SAN into
//! every leaf it signs, and that URI, never a host name or a display name,
//! is the identity every check compares:
//!
//! | URI SAN | certificate | who may hold it |
//! |---|---|---|
//! | `urn:heimdall:api` | the API's Agent channel (and people's HTTPS, when from the CA) | the API only: the CA never signs it for anyone else |
//! | `urn:heimdall:agent:<id>` | an Agent's client certificate and its local API's server certificate | that Agent |
//! | `urn:heimdall:member:<id>` | a person's client certificate | that member |

use heimdall_core::ids::{AgentId, MemberId};
use heimdall_core::Sha256Hex;

/// The API's own identity.
pub const API_URI: &str = "urn:heimdall:api";
pub const AGENT_URI_PREFIX: &str = "urn:heimdall:agent:";
pub const MEMBER_URI_PREFIX: &str = "urn:heimdall:member:";

pub fn agent_uri(id: AgentId) -> String {
    format!("{AGENT_URI_PREFIX}{id}")
}

pub fn member_uri(id: MemberId) -> String {
    format!("{MEMBER_URI_PREFIX}{id}")
}

/// SHA-256 (hex) of DER bytes: a certificate's pin.
pub fn sha256_hex(der: &[u8]) -> Sha256Hex {
    Sha256Hex::of(der)
}

/// The URI SANs of a DER certificate (empty if it does not parse).
pub fn uri_sans(cert_der: &[u8]) -> Vec<String> {
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(cert_der) else { return Vec::new() };
    let Ok(Some(san)) = cert.subject_alternative_name() else { return Vec::new() };
    san.value
        .general_names
        .iter()
        .filter_map(|name| match name {
            x509_parser::extensions::GeneralName::URI(uri) => Some((*uri).to_owned()),
            _ => None,
        })
        .collect()
}

/// The Agent a certificate names, if it names exactly one.
pub fn agent_of(cert_der: &[u8]) -> Option<AgentId> {
    one_id(cert_der, AGENT_URI_PREFIX)
}

/// The member a certificate names, if it names exactly one.
pub fn member_of(cert_der: &[u8]) -> Option<MemberId> {
    one_id(cert_der, MEMBER_URI_PREFIX)
}

fn one_id<T: std::str::FromStr>(cert_der: &[u8], prefix: &str) -> Option<T> {
    let ids: Vec<T> = uri_sans(cert_der)
        .iter()
        .filter_map(|u| u.strip_prefix(prefix).and_then(|id| id.parse().ok()))
        .collect();
    match <[T; 1]>::try_from(ids) {
        Ok([id]) => Some(id),
        Err(_) => None,
    }
}

/// SHA-256 (hex) of a DER certificate's SubjectPublicKeyInfo: what a
/// personal secret is bound to (it survives a renewal with the same key).
pub fn spki_sha256(cert_der: &[u8]) -> Option<Sha256Hex> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der).ok()?;
    Some(sha256_hex(cert.tbs_certificate.subject_pki.raw))
}

/// The first certificate of a PEM text, as DER.
pub fn first_der(pem: &str) -> Option<Vec<u8>> {
    let (_, parsed) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).ok()?;
    (parsed.label == "CERTIFICATE").then_some(parsed.contents)
}
