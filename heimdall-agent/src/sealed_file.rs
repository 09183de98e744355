//! A file of the Agent's own, sealed under the value store's current data
//! key and bound to a purpose and an owner (this Agent's id): it opens as
//! nothing else, on no other Agent, and not at all once edited. The policy
//! snapshot and the program tokens are kept this way, so that someone who
//! can write the disk but holds no master key can change neither.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::crypto::SealedValue;
use crate::vault::Vault;

/// On disk: which data key sealed it, and the sealed bytes.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SealedFile {
    key_id: String,
    nonce: String,
    ciphertext: String,
}

/// Seals `plaintext` into `path` (0600), written to a new file that
/// replaces the old one whole.
pub fn write(path: &Path, vault: &Vault, purpose: &str, owner: &str, plaintext: &[u8]) -> Result<(), String> {
    let sealed = vault.seal_record(purpose, owner, plaintext).map_err(|e| e.to_string())?;
    let file = SealedFile {
        key_id: sealed.key_id,
        nonce: BASE64.encode(&sealed.nonce),
        ciphertext: BASE64.encode(&sealed.ciphertext),
    };
    let bytes = serde_json::to_vec(&file).map_err(|e| e.to_string())?;
    let temporary = path.with_extension("sealed.new");
    let cannot = |e: std::io::Error| format!("cannot write {}: {e}", temporary.display());
    let _ = std::fs::remove_file(&temporary);
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(cannot)?;
    out.write_all(&bytes).and_then(|()| out.sync_all()).map_err(cannot)?;
    std::fs::rename(&temporary, path).map_err(|e| format!("cannot replace {}: {e}", path.display()))
}

/// What `path` holds, opened; `None` without a file. A file that does not
/// open (edited, another Agent's, another store's key) is an error.
pub fn read(
    path: &Path,
    vault: &Vault,
    purpose: &str,
    owner: &str,
) -> Result<Option<Zeroizing<Vec<u8>>>, String> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let file: SealedFile = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{} is not a sealed file: {e}", path.display()))?;
    let decode = |text: &str| BASE64.decode(text).map_err(|_| format!("{} is damaged", path.display()));
    let sealed = SealedValue {
        key_id: file.key_id,
        nonce: decode(&file.nonce)?,
        ciphertext: decode(&file.ciphertext)?,
    };
    let plaintext = vault.open_record(purpose, owner, &sealed).map_err(|_| {
        format!("{} does not open with this Agent's keys (edited, or not this Agent's)", path.display())
    })?;
    Ok(Some(plaintext))
}
