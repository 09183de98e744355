//! Writing the Agent's files: new ones never over another, and
//! replacements whole or not at all.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Creating, writing, reading or replacing one of the Agent's files failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {}: {source}", path.display())]
pub struct FileError {
    pub action: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl FileError {
    /// `action` on `path` failed with the error given to the result.
    pub fn on<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Self + 'a {
        move |source| FileError { action, path: path.to_owned(), source }
    }
}

/// Reads `path` as text.
pub fn read_text(path: &Path) -> Result<String, FileError> {
    std::fs::read_to_string(path).map_err(FileError::on("read", path))
}

/// Reads `path` whole.
pub fn read(path: &Path) -> Result<Vec<u8>, FileError> {
    std::fs::read(path).map_err(FileError::on("read", path))
}

/// Writes `bytes` to `path`, created or truncated (a job's own files,
/// in a directory only the job uses).
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), FileError> {
    std::fs::write(path, bytes).map_err(FileError::on("write", path))
}

/// Creates `path` with `mode` and writes `bytes`; refused if it exists.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), FileError> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(FileError::on("create", path))?;
    f.write_all(bytes).map_err(FileError::on("write", path))
}

/// A new file only its owner reads (0600), for what may hold secrets.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    write_new(path, bytes, 0o600)
}

/// Writes `bytes` to `path` whole or not at all (a temporary file, then a
/// rename), replacing what was there.
pub fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), FileError> {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    write_new(&tmp, bytes, mode)?;
    std::fs::rename(&tmp, path).map_err(FileError::on("replace", path))
}
