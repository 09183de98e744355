//! Why a setup command (`enroll`, `configure`, `dev-setup`, `rekey`,
//! `token`) stopped: one line for the person at the terminal, and a
//! variant a caller can act on (`dev-setup` adds how to get Terraform).

use std::path::PathBuf;

use crate::config::ConfigError;
use crate::files::FileError;
use crate::jobs::terraform::TerraformError;
use crate::program_tokens::TokenListError;
use crate::runtime::StartError;
use crate::sealed_file::SealedFileError;
use crate::values::crypto::KeyError;
use crate::values::store::ValueStoreError;

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A flag, or the input, to fix: the message names it.
    #[error("{0}")]
    Usage(String),
    /// No Terraform where it was said to be, or anywhere it was looked for.
    #[error("{0}")]
    NoTerraform(String),
    /// The directory already holds an Agent, or half of one.
    #[error("{0}")]
    Occupied(String),
    /// A store whose key is gone cannot be opened; a new key would not help.
    #[error(
        "{} exists but its master key {} is gone: put the key back, or remove the store to start with no values",
        store.display(),
        key.display()
    )]
    MasterKeyGone { store: PathBuf, key: PathBuf },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    File(#[from] FileError),
    #[error(transparent)]
    Start(#[from] StartError),
    #[error(transparent)]
    Terraform(#[from] TerraformError),
    #[error(transparent)]
    Sealed(#[from] SealedFileError),
    #[error(transparent)]
    Tokens(#[from] TokenListError),
    #[error(transparent)]
    Store(#[from] ValueStoreError),
    /// The key `rekey` was told to seal under: which flag, and why not.
    #[error("{flag}: {source}")]
    NewKey {
        flag: &'static str,
        #[source]
        source: KeyError,
    },
    #[error("cannot {action}: {source}")]
    Io {
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The API's CA, as `--ca-sha256` pins it, or the client built on it.
    #[error("{0}")]
    Tls(String),
    #[error(transparent)]
    TlsSetup(#[from] heimdall_tls::TlsSetupError),
    #[error("cannot reach the API: {0}")]
    Unreachable(String),
    /// The API answered with an error: what was asked, its code and message.
    #[error("{asked} refused: {code}: {message}")]
    Refused { asked: &'static str, code: String, message: String },
    /// The API answered something this Agent does not understand.
    #[error("unexpected answer from the API: {0}")]
    Unexpected(String),
}

impl SetupError {
    /// `action` failed with the I/O error given to the result.
    pub fn io(action: &'static str) -> impl FnOnce(std::io::Error) -> Self {
        move |source| SetupError::Io { action, source }
    }
}
