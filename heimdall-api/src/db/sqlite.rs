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

/// The SQLite claim: the same choice as PostgreSQL's, in one statement.
/// With a single connection every statement is serial, which is the
/// equivalent of `SKIP LOCKED` for one API process.
pub(super) const CLAIM: &str = "
UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_id = $2, lease_expires_at = $3,
    agent = $4, started_at = COALESCE(started_at, $5)
WHERE id = (
    SELECT j.id FROM jobs j
    WHERE j.org_id = $1 AND j.status = 'queued'
      AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.resource_id = j.resource_id AND r.status = 'running')
    ORDER BY j.queued_at, j.id
    LIMIT 1
)
RETURNING id";

pub(super) const EXPIRED: &str =
    "SELECT id FROM jobs WHERE status = 'running' AND lease_expires_at < $1 ORDER BY lease_expires_at";
