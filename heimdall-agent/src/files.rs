//! Writing the Agent's files: new ones never over another, and
//! replacements whole or not at all.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Creates `path` with `mode` and writes `bytes`; refused if it exists.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    f.write_all(bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A new file only its owner reads (0600), for what may hold secrets.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    write_new(path, bytes, 0o600)
}

/// Writes `bytes` to `path` whole or not at all (a temporary file, then a
/// rename), replacing what was there.
pub fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    write_new(&tmp, bytes, mode)?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot replace {}: {e}", path.display()))
}
