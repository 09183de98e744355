//! Server configuration: flags, then environment, then a TOML file.

use std::net::SocketAddr;
use std::path::Path;

use heimdall_core::{ApiError, Redacted};
use serde::Deserialize;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:7480";
pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024;

#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// May carry a password: redacted in `Debug`, described without
    /// credentials in logs (see [`crate::db::describe_url`]).
    pub database_url: Redacted<String>,
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    /// Handshake and header timeouts, the connection cap, the shutdown grace.
    pub limits: heimdall_tls::server::Limits,
    /// How long after a failed notification delivery it is tried again
    /// (then three times longer each time; `heimdall_core::notify`).
    pub notification_retry: std::time::Duration,
    /// An Agent not seen for longer may never sync again: a delete of a
    /// secret it holds is refused (`heimdall_core::deletion`).
    pub agent_stale_after: time::Duration,
    /// Where `GET /metrics` is served (plain HTTP); `None`: metrics are off.
    pub metrics_listen: Option<SocketAddr>,
    /// Internal address ranges webhooks may reach besides the internet
    /// (`heimdall_core::notify::may_deliver_to`); none by default.
    pub webhook_allow_cidrs: Vec<heimdall_core::notify::Cidr>,
    /// How often a waiting claim looks at the queue again when nothing
    /// woke it (a replica's notification can be lost while its listening
    /// connection is made again).
    pub claim_recheck: std::time::Duration,
}

/// The optional config file (`--config FILE`); every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub database_url: Option<String>,
    pub listen: Option<String>,
    pub max_body_bytes: Option<usize>,
    /// Seconds a connection has to finish its TLS handshake (default 10).
    pub handshake_timeout_seconds: Option<u64>,
    /// Seconds a connection has to send a request's head (default 30).
    pub header_read_timeout_seconds: Option<u64>,
    /// Connections served at once, per listener (default 1024).
    pub max_connections: Option<usize>,
    /// Seconds open connections get to finish on shutdown (default 30).
    pub shutdown_grace_seconds: Option<u64>,
    /// Seconds before a failed notification delivery is tried again (default 10).
    pub notification_retry_seconds: Option<u64>,
    /// Days after which an Agent not seen is taken as one that will not sync again (default 7).
    pub agent_stale_after_days: Option<u32>,
    /// Where `GET /metrics` is served, e.g. 127.0.0.1:9480 (off by default).
    pub metrics_listen: Option<String>,
    /// Internal address ranges notification webhooks may reach, e.g.
    /// ["10.20.0.0/16"]: by default only internet addresses (no loopback,
    /// private, link-local or metadata address).
    pub webhook_allow_cidrs: Option<Vec<String>>,
}

impl FileConfig {
    pub fn load(path: &Path) -> Result<Self, ApiError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| invalid(format!("cannot read config file {}: {e}", path.display())))?;
        toml::from_str(&text)
            .map_err(|e| invalid(format!("invalid config file {}: {}", path.display(), e.message())))
    }
}

impl ServeConfig {
    /// Merges explicit values (flags or environment, already merged by clap)
    /// over the file, over defaults, then validates.
    pub fn resolve(
        database_url: Option<String>,
        listen: Option<String>,
        file: FileConfig,
    ) -> Result<Self, ApiError> {
        let database_url = database_url
            .or(file.database_url)
            .ok_or_else(|| invalid("no database URL: pass --database-url, set HEIMDALL_DATABASE_URL, or set database_url in the config file"))?;
        crate::db::Backend::from_url(&database_url).map_err(invalid)?;
        let listen = listen.or(file.listen).unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
        let listen: SocketAddr = listen
            .parse()
            .map_err(|_| invalid(format!("--listen must be an address like {DEFAULT_LISTEN}")))?;
        let max_body_bytes = file.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
        if max_body_bytes < 1024 {
            return Err(invalid("max_body_bytes must be at least 1024"));
        }
        let defaults = heimdall_tls::server::Limits::default();
        let seconds = |v: Option<u64>, default: std::time::Duration, what: &str| match v {
            Some(0) => Err(invalid(format!("{what} must be at least 1 second"))),
            Some(s) => Ok(std::time::Duration::from_secs(s)),
            None => Ok(default),
        };
        let limits = heimdall_tls::server::Limits {
            handshake: seconds(
                file.handshake_timeout_seconds,
                defaults.handshake,
                "handshake_timeout_seconds",
            )?,
            header_read: seconds(
                file.header_read_timeout_seconds,
                defaults.header_read,
                "header_read_timeout_seconds",
            )?,
            max_connections: match file.max_connections {
                Some(0) => return Err(invalid("max_connections must be at least 1")),
                Some(n) => n,
                None => defaults.max_connections,
            },
            shutdown_grace: seconds(
                file.shutdown_grace_seconds,
                defaults.shutdown_grace,
                "shutdown_grace_seconds",
            )?,
        };
        let notification_retry = seconds(
            file.notification_retry_seconds,
            std::time::Duration::from_secs(10),
            "notification_retry_seconds",
        )?;
        let agent_stale_after = match file.agent_stale_after_days {
            Some(0) => return Err(invalid("agent_stale_after_days must be at least 1")),
            Some(days) => time::Duration::days(i64::from(days)),
            None => heimdall_core::deletion::STALE_AFTER,
        };
        let metrics_listen = file.metrics_listen.as_deref().map(parse_metrics_listen).transpose()?;
        let webhook_allow_cidrs = file
            .webhook_allow_cidrs
            .unwrap_or_default()
            .iter()
            .map(|c| c.parse().map_err(|e| invalid(format!("webhook_allow_cidrs: {e}"))))
            .collect::<Result<Vec<_>, ApiError>>()?;
        Ok(Self {
            database_url: Redacted::new(database_url),
            listen,
            max_body_bytes,
            limits,
            notification_retry,
            agent_stale_after,
            metrics_listen,
            webhook_allow_cidrs,
            claim_recheck: std::time::Duration::from_secs(1),
        })
    }
}

/// `--metrics-listen` / `metrics_listen`: an address like 127.0.0.1:9480.
pub fn parse_metrics_listen(text: &str) -> Result<SocketAddr, ApiError> {
    text.parse()
        .map_err(|_| invalid(format!("metrics_listen must be an address like 127.0.0.1:9480, not {text:?}")))
}

/// A setting that cannot be used: the operator fixes it.
fn invalid(message: impl std::fmt::Display) -> ApiError {
    ApiError::invalid_input(message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_file_and_debug_hides_the_url() {
        let file = FileConfig {
            database_url: Some("sqlite://file.db".into()),
            listen: Some("127.0.0.1:9000".into()),
            header_read_timeout_seconds: Some(5),
            ..FileConfig::default()
        };
        let cfg = ServeConfig::resolve(Some("postgres://u:pw@h/db".into()), None, file).unwrap();
        assert_eq!(cfg.database_url.expose(), "postgres://u:pw@h/db");
        assert_eq!(cfg.listen.port(), 9000);
        assert_eq!(cfg.limits.header_read, std::time::Duration::from_secs(5));
        assert_eq!(cfg.limits.handshake, std::time::Duration::from_secs(10));
        assert!(!format!("{cfg:?}").contains("pw"));
        assert!(ServeConfig::resolve(None, None, FileConfig::default()).is_err());
        assert!(ServeConfig::resolve(Some("mysql://x".into()), None, FileConfig::default()).is_err());
    }
}
