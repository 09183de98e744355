//! `heimdall-agent configure`: changes `agent.toml` through
//! [`AgentConfig`], so that the file is only ever written by the type that
//! reads it, and checked as `run` would check it before it is replaced.
//! Supervisors (`heimdall dev`) call this instead of editing the file.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::{AgentConfig, ConfigError, LocalApiConfig, ValuesConfig};
use crate::setup::SetupError;
use crate::values::crypto::MasterKey;

/// What to set; a setting not given is left as it is.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Settings {
    /// The API's Agent channel, e.g. https://api.internal:7481.
    #[arg(long)]
    pub api_url: Option<String>,
    /// Keep values in SQLite at this path (replacing any other store).
    #[arg(long, value_name = "PATH")]
    pub sqlite: Option<PathBuf>,
    /// Read the master key from this file (replacing any other key source).
    #[arg(long, value_name = "PATH")]
    pub master_key_file: Option<PathBuf>,
    /// Seal data keys with this AWS KMS key (its ARN) instead (replacing
    /// any other key source).
    #[arg(long, value_name = "ARN", conflicts_with_all = ["master_key_file", "create_master_key"])]
    pub master_key_kms: Option<String>,
    /// The AWS region of the value store's DynamoDB table or KMS key.
    #[arg(long)]
    pub aws_region: Option<String>,
    /// The AWS endpoint (DynamoDB or KMS) to use instead of the public one.
    #[arg(long, value_name = "URL")]
    pub aws_endpoint_url: Option<String>,
    /// Make the master key file (32 random bytes as hex, mode 0600) if it
    /// does not exist yet. Never replaces a key.
    #[arg(long)]
    pub create_master_key: bool,
    /// How often access records and the inventory go to the API.
    #[arg(long, value_name = "SECONDS")]
    pub sync_seconds: Option<u64>,
    /// How often to ask the API whether a database service user is due
    /// for creation, rotation or retirement.
    #[arg(long, value_name = "SECONDS")]
    pub database_poll_seconds: Option<u64>,
    /// Serve the local API (where people write and read values) on this address.
    #[arg(long, value_name = "ADDR:PORT")]
    pub local_api_listen: Option<String>,
    /// The URL people use for the local API; its host is added to the
    /// names the certificate holds.
    #[arg(long, value_name = "URL")]
    pub local_api_url: Option<String>,
    /// A DNS name or IP address the local API's certificate holds
    /// (repeatable; replaces the list).
    #[arg(long = "local-api-name", value_name = "NAME")]
    pub local_api_names: Vec<String>,
    /// Terraform's CLI configuration file (TF_CLI_CONFIG_FILE for every
    /// job), e.g. one that installs providers from a local mirror.
    #[arg(long, value_name = "PATH")]
    pub terraform_cli_config: Option<PathBuf>,
    /// Serve `GET /metrics` (Prometheus, plain HTTP) on this address.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics_listen: Option<String>,
    /// Serve no metrics (removes `[metrics]`).
    #[arg(long, conflicts_with = "metrics_listen")]
    pub no_metrics: bool,
}

/// What changed, and the configuration as it now is.
#[derive(Debug, Serialize)]
pub struct Configured {
    pub path: PathBuf,
    /// The settings whose value changed, as `section.key`.
    pub changed: Vec<String>,
    /// Whether a new master key file was made.
    pub master_key_created: bool,
    pub config: AgentConfig,
}

/// Applies `settings` to the configuration at `path` and writes it back if
/// anything changed. Nothing is written when the result would not load.
pub fn configure(path: &Path, settings: &Settings) -> Result<Configured, SetupError> {
    let before = AgentConfig::load(path)?;
    let mut config = before.clone();
    apply(&mut config, settings)?;
    config.validate()?;
    let master_key_created = match (settings.create_master_key, master_key_file(&config)) {
        (true, Some(file)) => create_master_key(file, &config)?,
        (true, None) => {
            return Err(SetupError::Usage(
                "--create-master-key needs a master key file (--master-key-file)".into(),
            ));
        }
        (false, _) => false,
    };
    let changed = changes(&before, &config)?;
    if !changed.is_empty() {
        config.save(path)?;
    }
    Ok(Configured { path: path.to_path_buf(), changed, master_key_created, config })
}

/// One line per change, or the whole result as JSON.
pub fn print(done: &Configured, json: bool) {
    if json {
        match serde_json::to_string_pretty(done) {
            Ok(text) => println!("{text}"),
            Err(e) => eprintln!("error: cannot print the result: {e}"),
        }
        return;
    }
    if done.master_key_created {
        println!("✓ new master key: keep a copy of it somewhere safe; without it the values are lost");
    }
    if done.changed.is_empty() {
        println!("✓ {} already says so; nothing changed", done.path.display());
    }
    for key in &done.changed {
        println!("✓ {key} updated in {}", done.path.display());
    }
}

fn apply(config: &mut AgentConfig, s: &Settings) -> Result<(), SetupError> {
    if let Some(listen) = &s.metrics_listen {
        config.metrics = Some(crate::config::MetricsConfig { listen: listen.clone() });
    } else if s.no_metrics {
        config.metrics = None;
    }
    if let Some(file) = &s.terraform_cli_config {
        if !file.is_file() {
            return Err(SetupError::Usage(format!(
                "--terraform-cli-config {}: no such file",
                file.display()
            )));
        }
        config.terraform.cli_config = Some(file.clone());
    }
    if let Some(url) = &s.api_url {
        config.api_url = url.trim_end_matches('/').to_owned();
    }
    let values_given = s.sqlite.is_some()
        || s.master_key_file.is_some()
        || s.master_key_kms.is_some()
        || s.aws_region.is_some()
        || s.aws_endpoint_url.is_some()
        || s.sync_seconds.is_some()
        || s.database_poll_seconds.is_some();
    if values_given {
        let values = config.values.get_or_insert_with(empty_values);
        if let Some(path) = &s.sqlite {
            values.sqlite_path = Some(path.clone());
            values.postgres_url = None;
            values.dynamodb_table = None;
        }
        if let Some(file) = &s.master_key_file {
            values.master_key_file = Some(file.clone());
            values.master_key_env = None;
            values.master_key_kms = None;
        }
        if let Some(key) = &s.master_key_kms {
            values.master_key_kms = Some(key.clone());
            values.master_key_env = None;
            values.master_key_file = None;
        }
        if let Some(region) = &s.aws_region {
            values.aws_region = Some(region.clone());
        }
        if let Some(url) = &s.aws_endpoint_url {
            values.aws_endpoint_url = Some(url.clone());
        }
        if values.dynamodb_table.is_none() && values.master_key_kms.is_none() {
            values.aws_region = None;
            values.aws_endpoint_url = None;
        }
        if let Some(seconds) = s.sync_seconds {
            values.sync_seconds = seconds;
        }
        if let Some(seconds) = s.database_poll_seconds {
            values.database_poll_seconds = seconds.max(1);
        }
    }
    let local_given =
        s.local_api_listen.is_some() || s.local_api_url.is_some() || !s.local_api_names.is_empty();
    if local_given {
        let listen = s.local_api_listen.clone();
        let local = match (&mut config.local_api, listen) {
            (Some(local), listen) => {
                if let Some(listen) = listen {
                    local.listen = listen;
                }
                local
            }
            (None, Some(listen)) => config.local_api.insert(LocalApiConfig {
                listen,
                names: LocalApiConfig::default_names(),
                url: None,
                handshake_timeout_seconds: None,
                header_read_timeout_seconds: None,
                max_connections: None,
            }),
            (None, None) => {
                return Err(SetupError::Usage("a new [local_api] needs --local-api-listen".into()))
            }
        };
        if let Some(url) = &s.local_api_url {
            local.url = Some(url.trim_end_matches('/').to_owned());
        }
        if !s.local_api_names.is_empty() {
            local.names = s.local_api_names.clone();
        }
        // The certificate must name what the URL names.
        if let Some(host) = local.url.as_deref().and_then(url_host) {
            if !local.names.iter().any(|n| n.eq_ignore_ascii_case(&host)) {
                local.names.push(host);
            }
        }
    }
    Ok(())
}

/// The host of an `https://host[:port][/…]` URL, brackets removed.
fn url_host(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://")?;
    let authority = rest.split('/').next()?;
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
    };
    (!host.is_empty()).then(|| host.to_owned())
}

fn empty_values() -> ValuesConfig {
    ValuesConfig {
        sqlite_path: None,
        postgres_url: None,
        dynamodb_table: None,
        master_key_env: None,
        master_key_file: None,
        master_key_kms: None,
        aws_region: None,
        aws_endpoint_url: None,
        sync_seconds: ValuesConfig::DEFAULT_SYNC_SECONDS,
        database_poll_seconds: ValuesConfig::DEFAULT_DATABASE_POLL_SECONDS,
    }
}

fn master_key_file(config: &AgentConfig) -> Option<&Path> {
    config.values.as_ref()?.master_key_file.as_deref()
}

/// A store whose key is gone cannot be opened: a missing key next to an
/// existing SQLite store is an error, not a new key.
fn create_master_key(file: &Path, config: &AgentConfig) -> Result<bool, SetupError> {
    if file.exists() {
        return Ok(false);
    }
    let store = config.values.as_ref().and_then(|v| v.sqlite_path.as_deref());
    if let Some(db) = store.filter(|db| db.exists()) {
        return Err(SetupError::MasterKeyGone { store: db.to_owned(), key: file.to_owned() });
    }
    Ok(MasterKey::create_file(file)?)
}

/// The `section.key` settings that differ, compared as they are written.
fn changes(before: &AgentConfig, after: &AgentConfig) -> Result<Vec<String>, ConfigError> {
    let flat = |c: &AgentConfig| -> Result<Vec<(String, String)>, ConfigError> {
        let value = toml::Value::try_from(c)
            .map_err(|e| ConfigError::Invalid(format!("cannot write the configuration: {e}")))?;
        let mut out = Vec::new();
        flatten("", &value, &mut out);
        Ok(out)
    };
    let (old, new) = (flat(before)?, flat(after)?);
    let mut keys: Vec<&String> = old.iter().chain(new.iter()).map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    let get =
        |set: &[(String, String)], key: &str| set.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    Ok(keys.into_iter().filter(|k| get(&old, k) != get(&new, k)).cloned().collect())
}

fn flatten(prefix: &str, value: &toml::Value, out: &mut Vec<(String, String)>) {
    match value {
        toml::Value::Table(table) => {
            for (key, value) in table {
                let key = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
                flatten(&key, value, out);
            }
        }
        other => out.push((prefix.to_owned(), other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enrolled(dir: &Path) -> PathBuf {
        let path = dir.join("agent.toml");
        let text = format!(
            "api_url = 'https://127.0.0.1:7481'\ncert = '{0}/agent.pem'\nkey = '{0}/agent.key'\nca = '{0}/ca.pem'\n\
             work_dir = '{0}/work'\n[terraform]\npath = '/usr/bin/terraform'\nversion = '1.9.0'\nsha256 = '{1}'\n",
            dir.display(),
            "a".repeat(64)
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn adds_a_value_store_and_a_local_api_once_and_makes_the_key_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = enrolled(dir.path());
        let settings = Settings {
            sqlite: Some(dir.path().join("values.db")),
            master_key_file: Some(dir.path().join("master.key")),
            create_master_key: true,
            sync_seconds: Some(2),
            database_poll_seconds: None,
            local_api_listen: Some("127.0.0.1:7482".into()),
            local_api_url: Some("https://127.0.0.1:7482/".into()),
            ..Settings::default()
        };
        let first = configure(&path, &settings).unwrap();
        assert!(first.master_key_created);
        assert!(first.changed.contains(&"values.sqlite_path".to_owned()), "{:?}", first.changed);
        assert!(first.changed.contains(&"local_api.listen".to_owned()), "{:?}", first.changed);
        let loaded = AgentConfig::load(&path).unwrap();
        assert_eq!(loaded.values.as_ref().unwrap().sync_seconds, 2);
        assert_eq!(loaded.local_api.as_ref().unwrap().public_url(), "https://127.0.0.1:7482");
        // The key: 64 hex characters the Agent reads, readable by its owner only.
        let key = dir.path().join("master.key");
        MasterKey::from_file(&key).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        let key_before = std::fs::read(&key).unwrap();

        let again = configure(&path, &settings).unwrap();
        assert!(again.changed.is_empty() && !again.master_key_created, "{again:?}");
        assert_eq!(std::fs::read(&key).unwrap(), key_before, "an existing key is never replaced");

        // A URL on another host: the certificate names it too.
        let v6 = Settings {
            local_api_listen: Some("[::1]:7482".into()),
            local_api_url: Some("https://[::1]:7482".into()),
            ..Settings::default()
        };
        configure(&path, &v6).unwrap();
        let names = AgentConfig::load(&path).unwrap().local_api.unwrap().names;
        assert_eq!(names, ["localhost", "127.0.0.1", "::1"]);

        let moved = Settings { api_url: Some("https://127.0.0.1:9481".into()), ..Settings::default() };
        let moved = configure(&path, &moved).unwrap();
        assert_eq!(moved.changed, ["api_url"]);
        assert_eq!(AgentConfig::load(&path).unwrap().api_url, "https://127.0.0.1:9481");

        // Terraform's CLI configuration: a file that is there, or nothing changes.
        let rc = dir.path().join("mirror.tfrc");
        let mirror = Settings { terraform_cli_config: Some(rc.clone()), ..Settings::default() };
        let err = configure(&path, &mirror).unwrap_err();
        assert!(matches!(&err, SetupError::Usage(why) if why.contains("no such file")), "{err}");
        std::fs::write(&rc, "provider_installation {}\n").unwrap();
        assert_eq!(configure(&path, &mirror).unwrap().changed, ["terraform.cli_config"]);
        assert_eq!(AgentConfig::load(&path).unwrap().terraform.cli_config, Some(rc));
    }

    #[test]
    fn refuses_what_would_not_load_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = enrolled(dir.path());
        let before = std::fs::read_to_string(&path).unwrap();
        // A local API without a value store.
        let err = configure(
            &path,
            &Settings { local_api_listen: Some("127.0.0.1:1".into()), ..Settings::default() },
        )
        .unwrap_err();
        assert!(matches!(&err, SetupError::Config(_)), "{err:?}");
        assert!(err.to_string().contains("needs a [values] store"), "{err}");
        // A store without a key source.
        let err =
            configure(&path, &Settings { sqlite: Some(dir.path().join("v.db")), ..Settings::default() })
                .unwrap_err();
        assert!(err.to_string().contains("exactly one of master_key_env"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);

        // A store whose key is gone gets no new key.
        std::fs::write(dir.path().join("v.db"), b"").unwrap();
        let settings = Settings {
            sqlite: Some(dir.path().join("v.db")),
            master_key_file: Some(dir.path().join("gone.key")),
            create_master_key: true,
            ..Settings::default()
        };
        let err = configure(&path, &settings).unwrap_err();
        assert!(
            matches!(&err, SetupError::MasterKeyGone { key, .. } if key.ends_with("gone.key")),
            "{err:?}"
        );
        assert!(err.to_string().contains("its master key") && err.to_string().contains("is gone"), "{err}");
        assert!(!dir.path().join("gone.key").exists());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }
}
