//! SQLite specifics: one connection, WAL, created on first use.

use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;
use sqlx::Executor;

pub(super) fn pool_options() -> AnyPoolOptions {
    super::base_options().max_connections(1).after_connect(|conn, _meta| {
        Box::pin(async move {
            // WAL keeps readers of the file (backups, `sqlite3`) from blocking
            // the API; NORMAL is durable in WAL mode except on power loss of
            // the last transaction, so use FULL: the audit feed must survive.
            conn.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;")
                .await?;
            Ok(())
        })
    })
}

/// `sqlite://path` opens an existing file only; the quickstart wants it
/// created, so add `mode=rwc` unless the caller chose a mode.
pub(super) fn with_create_mode(url: &str) -> String {
    if url.contains("mode=") {
        url.to_owned()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    }
}

pub(super) fn migrator() -> &'static Migrator {
    static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");
    &MIGRATOR
}
