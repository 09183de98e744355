//! A profile's client certificate: what a person shows an Agent's local
//! API to write and read values.
//!
//! `heimdall login` (and `heimdall dev` for its profile) makes an ECDSA
//! P-256 key here, sends only a certificate signing request to
//! `POST /v1/me/certificate`, and keeps, next to `config.toml`:
//!
//! ```text
//! profiles/<profile>/client.key   the private key (PEM, mode 0600)
//! profiles/<profile>/client.pem   the certificate the API's CA signed
//! profiles/<profile>/ca.pem       that CA, the only one an Agent's local API is trusted by
//! ```
//!
//! Architecture Invariant: the key never leaves this machine, is never
//! printed or logged, is written whole (temp file + rename) with mode 0600,
//! and its PEM text is zeroized once written or read into an [`Identity`].

use std::path::{Path, PathBuf};

use heimdall_core::{ApiError, ErrorCode, Redacted};
use heimdall_sdk::flows::{self, Certified};
use heimdall_sdk::{Client, Identity};
use heimdall_wire::IssuedCertificate;

use crate::config;
use crate::error::{CliError, Result};

pub const CERT_FILE: &str = "client.pem";
pub const KEY_FILE: &str = "client.key";
pub const CA_FILE: &str = "ca.pem";

/// `<config dir>/profiles/<profile>`: where a profile's certificate lives.
pub fn profile_dir(config_dir: &Path, profile: &str) -> PathBuf {
    config_dir.join("profiles").join(profile)
}

/// Has the API certify this profile's key for the caller (a new key the
/// first time, or with `new_key`), and stores the three files for
/// `profile`, replacing any older ones (a renewal). Keeping the key keeps
/// the personal secrets bound to it reachable.
pub async fn issue(
    client: &Client,
    config_dir: &Path,
    profile: &str,
    new_key: bool,
) -> Result<IssuedCertificate> {
    let dir = profile_dir(config_dir, profile);
    let kept = match std::fs::read_to_string(dir.join(KEY_FILE)) {
        Ok(pem) if !new_key => Some(Redacted::new(pem)),
        _ => None,
    };
    let Certified { identity, issued } = flows::login(client, kept.as_ref()).await?;
    // The key first: a certificate on disk always has its key.
    config::write_private(&dir, &dir.join(KEY_FILE), identity.key_pem.expose().as_bytes())?;
    config::write_private(&dir, &dir.join(CERT_FILE), issued.certificate.as_bytes())?;
    config::write_private(&dir, &dir.join(CA_FILE), issued.ca.as_bytes())?;
    Ok(issued)
}

/// The stored identity of `profile`; missing files are the error that
/// says to run `heimdall login`.
pub fn load(config_dir: &Path, profile: &str) -> Result<Identity> {
    let dir = profile_dir(config_dir, profile);
    let missing = || {
        CliError::Coded(ApiError::new(
            ErrorCode::Unauthenticated,
            format!(
                "no client certificate for this profile: run `heimdall login` (profile {profile:?}; looked in {})",
                dir.display()
            ),
        ))
    };
    let read = |name: &str| -> Result<Option<String>> {
        let path = dir.join(name);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            // The error says why, never what the file holds.
            Err(err) => Err(CliError::local(format!("cannot read {}: {err}", path.display()))),
        }
    };
    let (Some(certificate_pem), Some(key_pem), Some(ca_pem)) =
        (read(CERT_FILE)?, read(KEY_FILE)?, read(CA_FILE)?)
    else {
        return Err(missing());
    };
    Ok(Identity { certificate_pem, key_pem: Redacted::new(key_pem), ca_pem })
}

/// Forgets `profile`'s certificate and key (logout). Missing files are fine.
pub fn remove(config_dir: &Path, profile: &str) -> Result<bool> {
    let dir = profile_dir(config_dir, profile);
    let mut removed = false;
    for name in [KEY_FILE, CERT_FILE, CA_FILE] {
        match std::fs::remove_file(dir.join(name)) {
            Ok(()) => removed = true,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(CliError::local(format!("cannot remove {}: {err}", dir.join(name).display())))
            }
        }
    }
    let _ = std::fs::remove_dir(&dir);
    Ok(removed)
}
