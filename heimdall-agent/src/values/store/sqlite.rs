//! SQLite: one file, WAL, `synchronous = FULL` (an access record is on disk
//! before the read it records is served), `secure_delete` (deleted rows are
//! overwritten, not left in free pages), one connection.

use std::path::Path;

use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;
use sqlx::Executor;

use super::sql::SqlRows;
use super::{Backend, ValueStoreError, Vault};
use crate::values::crypto::KeySealer;

fn migrator() -> &'static Migrator {
    static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");
    &MIGRATOR
}

/// Opens (creating if needed) the store in the SQLite file at `path`.
/// A key that does not open it is [`ValueStoreError::WrongMasterKey`] (or `WrongKmsKey`).
pub async fn open(path: &Path, keys: &dyn KeySealer) -> Result<Vault, ValueStoreError> {
    Vault::open(connect(path).await?, keys).await
}

/// The store's rows, migrated, with no key opened (for `rekey`).
pub async fn connect(path: &Path) -> Result<Box<dyn super::SealedStore>, ValueStoreError> {
    let Some(path_text) = path.to_str() else {
        return Err(ValueStoreError::Open(format!("{} is not a UTF-8 path", path.display())));
    };
    sqlx::any::install_default_drivers();
    let url = format!("sqlite://{path_text}?mode=rwc");
    // One connection: every transaction is serial, which is what the
    // counter row needs on a file that one Agent owns.
    let pool = AnyPoolOptions::new()
        .max_connections(1)
        // No ping before each use: a round trip to the connection's thread
        // on every group commit, for a file that does not go away.
        .test_before_acquire(false)
        .acquire_timeout(std::time::Duration::from_secs(10))
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                conn.execute(
                    "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA secure_delete = ON; \
                     PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;",
                )
                .await?;
                Ok(())
            })
        })
        .connect(&url)
        .await
        .map_err(|e| ValueStoreError::Open(format!("cannot open {}: {e}", path.display())))?;
    Ok(Box::new(SqlRows::migrate(pool, Backend::Sqlite, migrator()).await?))
}
