//! The Agent's configuration (TOML), written by `enroll` and edited by
//! whoever runs the Agent. The API never decides what the Agent may run:
//! the Terraform pin and the module allowlist live here.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The API's mTLS listener, e.g. `https://api.internal:7481`.
    pub api_url: String,
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
    /// Where each job gets its own working directory.
    pub work_dir: PathBuf,
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    pub terraform: TerraformPin,
    #[serde(default)]
    pub modules: Modules,
    #[serde(default)]
    pub state: StateConfig,
    /// Where this Agent keeps secret values (encrypted); absent: it holds none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<ValuesConfig>,
}

/// The value store: SQLite (`path`) or PostgreSQL (`url`), and where the
/// 32-byte master key comes from (exactly one of `master_key_env` and
/// `master_key_file`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValuesConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqlite_path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_key_file: Option<PathBuf>,
    /// How often access records and the inventory go to the API.
    #[serde(default = "default_sync_seconds")]
    pub sync_seconds: u64,
}

fn default_sync_seconds() -> u64 {
    60
}

fn default_concurrency() -> usize {
    2
}

/// Terraform, pinned: a job runs only if the file at `path` has this SHA-256.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TerraformPin {
    pub path: PathBuf,
    pub version: String,
    pub sha256: String,
}

/// Module sources this Agent agrees to run (globs, e.g.
/// `git::https://github.com/acme/terraform-*`). Empty: nothing runs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Modules {
    #[serde(default)]
    pub allowed_sources: Vec<String>,
}

/// Where state goes. By default, the account's S3 bucket with S3-native
/// locking; `s3_endpoint` overrides the endpoint for S3-compatible stores;
/// `local_dir` (the quickstart) keeps state on local disk instead.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_dir: Option<PathBuf>,
}

impl AgentConfig {
    pub fn load(path: &Path) -> Result<Self, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let config: Self =
            toml::from_str(&text).map_err(|e| format!("invalid {}: {}", path.display(), e.message()))?;
        if config.concurrency == 0 || config.concurrency > 64 {
            return Err("concurrency must be between 1 and 64".into());
        }
        if config.terraform.sha256.len() != 64
            || !config.terraform.sha256.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(
                "terraform.sha256 must be 64 hex characters (sha256sum of the terraform executable)".into()
            );
        }
        if let Some(v) = &config.values {
            if v.sqlite_path.is_some() == v.postgres_url.is_some() {
                return Err("[values] needs exactly one of sqlite_path and postgres_url".into());
            }
            if v.sync_seconds == 0 {
                return Err("[values] sync_seconds must be at least 1".into());
            }
            if v.master_key_env.is_some() == v.master_key_file.is_some() {
                return Err("[values] needs exactly one of master_key_env and master_key_file".into());
            }
        }
        Ok(config)
    }
}
