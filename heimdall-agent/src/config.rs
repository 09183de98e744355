//! The Agent's configuration (TOML), written by `enroll` and edited by
//! whoever runs the Agent. The API never decides what the Agent may run:
//! the Terraform pin and the module allowlist live here.

use std::path::{Path, PathBuf};

use heimdall_core::Sha256Hex;
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
    #[serde(default, skip_serializing_if = "FederationConfig::is_default")]
    pub federation: FederationConfig,
    /// Where this Agent keeps secret values (encrypted); absent: it holds none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<ValuesConfig>,
    /// Where people write and read values (HTTPS, client certificates);
    /// needs `[values]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_api: Option<LocalApiConfig>,
    /// `GET /metrics` (Prometheus, plain HTTP) on an address of its own; absent: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsConfig>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// e.g. `127.0.0.1:9481`
    pub listen: String,
}

/// The Agent's local API. Its certificate comes from the installation CA
/// (asked for over the channel, kept next to the Agent's own key and
/// renewed when it has less than a third of its life left).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalApiConfig {
    /// Address to listen on, e.g. `127.0.0.1:7482` or `0.0.0.0:7482`.
    pub listen: String,
    /// DNS names and IP addresses the certificate names (default: `localhost`, `127.0.0.1`).
    #[serde(default = "LocalApiConfig::default_names")]
    pub names: Vec<String>,
    /// The URL people use, reported to the API (default: `https://<first name>:<port>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Seconds a connection has to finish its TLS handshake (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake_timeout_seconds: Option<u64>,
    /// Seconds a connection has to send a request's head (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_read_timeout_seconds: Option<u64>,
    /// Connections served at once (default 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<usize>,
}

impl LocalApiConfig {
    /// `localhost` and `127.0.0.1`.
    pub fn default_names() -> Vec<String> {
        vec!["localhost".into(), "127.0.0.1".into()]
    }

    /// The listener's limits: these settings over `heimdall_tls`'s defaults.
    pub fn limits(&self) -> heimdall_tls::server::Limits {
        let defaults = heimdall_tls::server::Limits::default();
        let seconds = |s: Option<u64>, d| s.filter(|s| *s > 0).map_or(d, std::time::Duration::from_secs);
        heimdall_tls::server::Limits {
            handshake: seconds(self.handshake_timeout_seconds, defaults.handshake),
            header_read: seconds(self.header_read_timeout_seconds, defaults.header_read),
            max_connections: self.max_connections.filter(|n| *n > 0).unwrap_or(defaults.max_connections),
            shutdown_grace: defaults.shutdown_grace,
        }
    }

    /// The URL people reach this local API at.
    pub fn public_url(&self) -> String {
        if let Some(url) = &self.url {
            return url.trim_end_matches('/').to_owned();
        }
        let port = self.listen.rsplit_once(':').map_or("7482", |(_, p)| p);
        let host = self.names.first().map_or("localhost", String::as_str);
        format!("https://{host}:{port}")
    }
}

/// The value store: exactly one of SQLite (`sqlite_path`), PostgreSQL
/// (`postgres_url`) and DynamoDB (`dynamodb_table`); and exactly one key
/// source: a 32-byte master key (`master_key_env` or `master_key_file`) or
/// a KMS key (`master_key_kms`). `aws_region` and `aws_endpoint_url` apply
/// to DynamoDB and KMS.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValuesConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqlite_path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_url: Option<String>,
    /// A DynamoDB table (created if missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamodb_table: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_key_file: Option<PathBuf>,
    /// A KMS key (id, ARN or `alias/…`) that seals the data keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_key_kms: Option<String>,
    /// The AWS region for DynamoDB and KMS (default: the SDK's, e.g. `AWS_REGION`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_region: Option<String>,
    /// An endpoint for DynamoDB and KMS (a VPC endpoint; moto in tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_endpoint_url: Option<String>,
    /// How often access records and the inventory go to the API.
    #[serde(default = "ValuesConfig::default_sync_seconds")]
    pub sync_seconds: u64,
    /// How often to ask the API whether a database user is due for
    /// creation, rotation or retirement.
    #[serde(default = "ValuesConfig::default_database_poll_seconds")]
    pub database_poll_seconds: u64,
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
    /// Read strictly: 64 hex digits (sha256sum of the terraform executable).
    pub sha256: Sha256Hex,
    /// More of the Agent's environment variables Terraform may see (e.g.
    /// `GOOGLE_APPLICATION_CREDENTIALS`), besides `PATH`, `TF_*` and the
    /// AWS credentials and proxy settings (`heimdall_core::runner::PASSED_ENV`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_env: Vec<String>,
    /// Terraform's CLI configuration (`TF_CLI_CONFIG_FILE`), e.g. a
    /// `provider_installation` block naming a local mirror, so providers
    /// install with no registry in reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_config: Option<PathBuf>,
}

/// Module sources this Agent agrees to run (globs, e.g.
/// `git::https://github.com/acme/terraform-*`). Empty: nothing runs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Modules {
    #[serde(default)]
    pub allowed_sources: Vec<String>,
    /// The module to run for a schema type whose schema names none, e.g.
    /// `bucket = { source = "git::https://github.com/acme/terraform-bucket.git", version = "v1.2.0" }`.
    /// The allowlist still applies.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub by_type: heimdall_core::runner::ModulesByType,
}

/// Where state goes. By default, the account's S3 bucket with S3-native
/// locking; `s3_endpoint` overrides the endpoint for S3-compatible stores;
/// Where federated tokens are traded, when not at the cloud's own
/// endpoint (a private endpoint, or an emulator in tests).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FederationConfig {
    /// Google's STS for `external_account` files (default `https://sts.googleapis.com/v1/token`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gcp_token_url: Option<String>,
}

impl FederationConfig {
    fn is_default(&self) -> bool {
        self == &Self::default()
    }

    pub fn gcp_token_url(&self) -> &str {
        self.gcp_token_url.as_deref().unwrap_or(heimdall_core::credentials::GCP_TOKEN_URL)
    }
}

/// `local_dir` (the quickstart) keeps state on local disk instead.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_dir: Option<PathBuf>,
}

/// Why `agent.toml` (or what it points at) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    File(#[from] crate::files::FileError),
    /// Not TOML of this shape.
    #[error("invalid {}: {message}", path.display())]
    Syntax { path: PathBuf, message: String },
    /// A setting, or a combination of them, that cannot be used; the
    /// message names it and what to set.
    #[error("{0}")]
    Invalid(String),
    /// The Agent's own certificate does not say which Agent it is.
    #[error("{0}")]
    Certificate(&'static str),
}

fn invalid(message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid(message.into())
}

impl AgentConfig {
    /// This Agent's certificate, key and CA, as a client of other Agents'
    /// local APIs (the same identity as on the channel).
    pub fn identity(&self) -> Result<heimdall_sdk::Identity, ConfigError> {
        let read = crate::files::read_text;
        Ok(heimdall_sdk::Identity {
            certificate_pem: read(&self.cert)?,
            key_pem: heimdall_core::Redacted::new(read(&self.key)?),
            ca_pem: read(&self.ca)?,
        })
    }

    /// This Agent's id: the URI SAN of its own certificate.
    pub fn agent_id(&self) -> Result<heimdall_core::ids::AgentId, ConfigError> {
        let pem = crate::files::read_text(&self.cert)?;
        let der = heimdall_tls::identity::first_der(&pem)
            .ok_or(ConfigError::Certificate("no certificate in the Agent's certificate file"))?;
        heimdall_tls::identity::agent_of(&der)
            .ok_or(ConfigError::Certificate("the Agent certificate names no Agent"))
    }

    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = crate::files::read_text(path)?;
        let config: Self = toml::from_str(&text)
            .map_err(|e| ConfigError::Syntax { path: path.to_owned(), message: e.message().to_owned() })?;
        config.validate()?;
        Ok(config)
    }

    /// `agent.toml` as this configuration writes it: a header that says
    /// what the file is, then every setting. Comments added by hand are
    /// not kept.
    pub fn render(&self) -> Result<String, ConfigError> {
        let text = toml::to_string_pretty(self)
            .map_err(|e| invalid(format!("cannot write the configuration: {e}")))?;
        Ok(format!("{CONFIG_HEADER}{text}"))
    }

    /// Writes this configuration to `path` whole (a temporary file, then a
    /// rename), after checking it as `load` would.
    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        self.validate()?;
        Ok(crate::files::replace_file(path, self.render()?.as_bytes(), 0o644)?)
    }

    /// What `load` checks beyond the TOML's shape.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let config = self;
        if config.concurrency == 0 || config.concurrency > 64 {
            return Err(invalid("concurrency must be between 1 and 64"));
        }
        if let Some(var) = config.values.as_ref().and_then(|v| v.master_key_env.as_ref()) {
            if config.terraform.pass_env.contains(var) {
                return Err(invalid(format!(
                    "terraform.pass_env names {var}, the master key's variable: Terraform never sees it"
                )));
            }
        }
        if config.local_api.is_some() && config.values.is_none() {
            return Err(invalid("[local_api] needs a [values] store to serve"));
        }
        if let Some(v) = &config.local_api {
            if v.names.is_empty() {
                return Err(invalid("[local_api] names must list at least one DNS name or IP address"));
            }
            if v.listen.parse::<std::net::SocketAddr>().is_err() {
                return Err(invalid("[local_api] listen must be an address and port, e.g. 127.0.0.1:7482"));
            }
        }
        if let Some(v) = &config.values {
            v.validate()?;
        }
        Ok(())
    }
}

const CONFIG_HEADER: &str = "# Heimdall Agent configuration, written by `heimdall-agent enroll` and `configure`.\n\
                             # terraform.sha256 pins the executable: a job refuses to run if it changes.\n\
                             # modules.allowed_sources are globs; a schema's module outside them never runs.\n\n";

impl ValuesConfig {
    pub const DEFAULT_SYNC_SECONDS: u64 = 60;
    pub const DEFAULT_DATABASE_POLL_SECONDS: u64 = 15;

    fn default_sync_seconds() -> u64 {
        Self::DEFAULT_SYNC_SECONDS
    }

    fn default_database_poll_seconds() -> u64 {
        Self::DEFAULT_DATABASE_POLL_SECONDS
    }

    /// Exactly one store and exactly one key source; AWS settings only
    /// where something uses AWS.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let stores = [self.sqlite_path.is_some(), self.postgres_url.is_some(), self.dynamodb_table.is_some()];
        if stores.iter().filter(|s| **s).count() != 1 {
            return Err(invalid(
                "[values] needs exactly one of sqlite_path, postgres_url and dynamodb_table",
            ));
        }
        if self.sync_seconds == 0 {
            return Err(invalid("[values] sync_seconds must be at least 1"));
        }
        let sources =
            [self.master_key_env.is_some(), self.master_key_file.is_some(), self.master_key_kms.is_some()];
        if sources.iter().filter(|s| **s).count() != 1 {
            return Err(invalid(
                "[values] needs exactly one of master_key_env, master_key_file and master_key_kms",
            ));
        }
        if let Some(table) = &self.dynamodb_table {
            crate::values::store::dynamodb::validate_table_name(table)
                .map_err(|_| invalid("[values] dynamodb_table: a DynamoDB table name is 3 to 255 characters of A-Z, a-z, 0-9, '_', '-' and '.'"))?;
        }
        if self.master_key_kms.as_deref().is_some_and(|k| k.trim().is_empty()) {
            return Err(invalid("[values] master_key_kms is empty"));
        }
        let uses_aws = self.dynamodb_table.is_some() || self.master_key_kms.is_some();
        if !uses_aws && (self.aws_region.is_some() || self.aws_endpoint_url.is_some()) {
            return Err(invalid(
                "[values] aws_region and aws_endpoint_url apply only with dynamodb_table or master_key_kms",
            ));
        }
        if self.aws_region.as_deref().is_some_and(|r| r.trim().is_empty()) {
            return Err(invalid("[values] aws_region is empty"));
        }
        if let Some(url) = &self.aws_endpoint_url {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(invalid("[values] aws_endpoint_url must start with https:// or http://"));
            }
        }
        Ok(())
    }

    /// The AWS overrides for DynamoDB and KMS.
    pub fn aws(&self) -> crate::aws::AwsSettings {
        crate::aws::AwsSettings {
            region: self.aws_region.clone(),
            endpoint_url: self.aws_endpoint_url.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(toml_text: &str) -> Result<ValuesConfig, String> {
        let v: ValuesConfig = toml::from_str(toml_text).map_err(|e| e.message().to_owned())?;
        v.validate().map(|()| v).map_err(|e| e.to_string())
    }

    #[test]
    fn values_take_exactly_one_store_and_one_key_source() {
        for ok in [
            "sqlite_path = '/s.db'\nmaster_key_env = 'K'",
            "postgres_url = 'postgres://h/db'\nmaster_key_file = '/k'",
            "dynamodb_table = 'heimdall-values'\nmaster_key_env = 'K'\naws_region = 'eu-west-1'",
            "sqlite_path = '/s.db'\nmaster_key_kms = 'alias/heimdall'",
            "dynamodb_table = 'heimdall.values_1'\nmaster_key_kms = 'arn:aws:kms:us-east-1:1:key/x'\n\
             aws_endpoint_url = 'http://127.0.0.1:5000'",
        ] {
            values(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
        }
        let v = values("dynamodb_table = 'tbl'\nmaster_key_kms = 'k'\naws_region = 'r'").unwrap();
        assert_eq!(v.aws(), crate::aws::AwsSettings { region: Some("r".into()), endpoint_url: None });

        for (bad, says) in [
            ("master_key_env = 'K'", "exactly one of sqlite_path, postgres_url and dynamodb_table"),
            (
                "sqlite_path = '/s.db'\ndynamodb_table = 'tbl'\nmaster_key_env = 'K'",
                "exactly one of sqlite_path, postgres_url and dynamodb_table",
            ),
            ("dynamodb_table = 'tbl'", "exactly one of master_key_env, master_key_file and master_key_kms"),
            (
                "sqlite_path = '/s.db'\nmaster_key_env = 'K'\nmaster_key_kms = 'k'",
                "exactly one of master_key_env, master_key_file and master_key_kms",
            ),
            ("dynamodb_table = 'no spaces'\nmaster_key_env = 'K'", "dynamodb_table"),
            ("dynamodb_table = 'ab'\nmaster_key_env = 'K'", "3 to 255"),
            ("sqlite_path = '/s.db'\nmaster_key_env = 'K'\naws_region = 'r'", "apply only with"),
            ("sqlite_path = '/s.db'\nmaster_key_kms = ' '", "master_key_kms is empty"),
            ("dynamodb_table = 'tbl'\nmaster_key_env = 'K'\naws_endpoint_url = 'localhost:1'", "https://"),
            ("dynamodb_table = 'tbl'\nmaster_key_env = 'K'\naws_profile = 'p'", "unknown field"),
        ] {
            let err = values(bad).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }
}
