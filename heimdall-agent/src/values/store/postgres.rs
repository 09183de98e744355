//! PostgreSQL: a pool, default durability (`synchronous_commit` stays on:
//! an access record is durable before the read it records is served).

use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;

use super::sql::SqlRows;
use super::{describe_url, Backend, ValueStoreError, Vault};
use crate::values::crypto::KeySealer;

fn migrator() -> &'static Migrator {
    static MIGRATOR: Migrator = sqlx::migrate!("migrations/postgres");
    &MIGRATOR
}

/// Opens the store in the PostgreSQL database at `url` (`postgres://…`),
/// bringing its schema up to date. A key that does not open it is
/// [`ValueStoreError::WrongMasterKey`] (or `WrongKmsKey`).
pub async fn open(url: &str, keys: &dyn KeySealer) -> Result<Vault, ValueStoreError> {
    Vault::open(connect(url).await?, keys).await
}

/// The store's rows, migrated, with no key opened (for `rekey`).
pub async fn connect(url: &str) -> Result<Box<dyn super::SealedStore>, ValueStoreError> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(ValueStoreError::Open(
            "the database URL must start with postgres:// or postgresql://".into(),
        ));
    }
    sqlx::any::install_default_drivers();
    let pool = AnyPoolOptions::new()
        .max_connections(8)
        // No ping before each use: a round trip on every group commit cost
        // a fifth of the audited reads per second. A connection idle for
        // over a second is still pinged (the server may have restarted
        // meanwhile); one that broke in use fails its statement, which is
        // refused like any failed commit, and the pool drops it.
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for > std::time::Duration::from_secs(1) {
                    sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
        .acquire_timeout(std::time::Duration::from_secs(10))
        .connect(url)
        .await
        .map_err(|e| {
            let reason =
                heimdall_tls::database::explain(&e.to_string(), heimdall_tls::database::POSTGRES_URL_TLS);
            ValueStoreError::Open(format!("cannot connect to {}: {reason}", describe_url(url)))
        })?;
    Ok(Box::new(SqlRows::migrate(pool, Backend::Postgres, migrator()).await?))
}
