//! The SQL metadata store: one implementation of
//! [`heimdall_core::ports::MetadataStore`] over PostgreSQL or SQLite.
//!
//! Both backends share the query text in [`store`]: ids are UUID text, times
//! are microseconds since the epoch, placeholders are `$N` (which SQLite
//! accepts too). What differs lives in one module per backend: the
//! migrations, connection setup, and (later) the job queue's claim query.
//!
//! SQLite runs with a single connection: the embedded default serves one API
//! process, and one connection makes every transaction serial, so the
//! checks-then-writes in this store cannot race.

mod access;
mod accounts;
mod agents;
mod assignments;
mod at_risk;
mod databases;
mod events;
mod infra_rows;
mod inventory;
mod notifications;
mod policies;
mod postgres;
mod programs;
pub use postgres::listen_for_jobs;
mod queue;
mod resources;
mod secrets;
mod sql;
mod sqlite;
mod store;
mod sync_secrets;

use std::fmt;

use sqlx::any::AnyPoolOptions;
use sqlx::AnyPool;

pub use sql::SqlStore;

fn claim_sql(backend: Backend) -> &'static str {
    match backend {
        Backend::Postgres => postgres::CLAIM,
        Backend::Sqlite => sqlite::CLAIM,
    }
}

fn expired_sql(backend: Backend) -> &'static str {
    match backend {
        Backend::Postgres => postgres::EXPIRED,
        Backend::Sqlite => sqlite::EXPIRED,
    }
}

/// Which database a URL names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Sqlite,
}

impl Backend {
    pub fn from_url(url: &str) -> Result<Self, ConnectError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Backend::Postgres)
        } else if url.starts_with("sqlite:") {
            Ok(Backend::Sqlite)
        } else {
            Err(ConnectError::UnsupportedUrl)
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("database URL must start with postgres://, postgresql:// or sqlite://")]
    UnsupportedUrl,
    #[error("cannot connect to the {backend:?} database at {location}: {reason}")]
    Connect { backend: Backend, location: String, reason: String },
    #[error("{0}")]
    Migrate(String),
}

/// Where a URL points, without user or password, for messages and logs.
pub fn describe_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let rest = rest.split_once('?').map_or(rest, |(path, _)| path);
    format!("{scheme}://{rest}")
}

/// Opens the store and brings its schema up to date.
pub async fn connect(url: &str) -> Result<SqlStore, ConnectError> {
    let backend = Backend::from_url(url)?;
    sqlx::any::install_default_drivers();
    let pool = match backend {
        Backend::Postgres => postgres::pool_options(),
        Backend::Sqlite => sqlite::pool_options(),
    };
    let url = match backend {
        Backend::Sqlite => sqlite::with_create_mode(url),
        Backend::Postgres => url.to_owned(),
    };
    let pool: AnyPool = pool.connect(&url).await.map_err(|e| ConnectError::Connect {
        backend,
        location: describe_url(&url),
        // Driver messages name the host and user, never the password.
        reason: match backend {
            Backend::Postgres => {
                heimdall_tls::database::explain(&e.to_string(), heimdall_tls::database::POSTGRES_URL_TLS)
            }
            Backend::Sqlite => e.to_string(),
        },
    })?;
    let migrator = match backend {
        Backend::Postgres => postgres::migrator(),
        Backend::Sqlite => sqlite::migrator(),
    };
    migrator.run(&pool).await.map_err(|e| ConnectError::Migrate(migrate_error(e, migrator)))?;
    Ok(SqlStore::new(pool, backend))
}

/// A migration the database has and this binary does not: refused, naming
/// both versions (see `heimdall_tls::database::newer_schema`).
fn migrate_error(e: sqlx::migrate::MigrateError, migrator: &sqlx::migrate::Migrator) -> String {
    match e {
        sqlx::migrate::MigrateError::VersionMissing(applied) => {
            let known = migrator.iter().map(|m| m.version).max().unwrap_or(0);
            heimdall_tls::database::newer_schema(applied, known)
        }
        other => format!("database migration failed: {other}"),
    }
}

pub(crate) fn base_options() -> AnyPoolOptions {
    AnyPoolOptions::new().acquire_timeout(std::time::Duration::from_secs(10))
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Postgres => "postgresql",
            Backend::Sqlite => "sqlite",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_described_without_credentials() {
        assert_eq!(
            describe_url("postgres://admin:hunter2@db.internal:5432/heimdall?sslmode=require"),
            "postgres://db.internal:5432/heimdall"
        );
        assert_eq!(describe_url("sqlite://./data/h.db"), "sqlite://./data/h.db");
        assert!(Backend::from_url("mysql://x").is_err());
    }
}
