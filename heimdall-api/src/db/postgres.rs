//! PostgreSQL specifics: pool sizing and migrations.

use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;

pub(super) fn pool_options() -> AnyPoolOptions {
    super::base_options().max_connections(16)
}

pub(super) fn migrator() -> &'static Migrator {
    static MIGRATOR: Migrator = sqlx::migrate!("migrations/postgres");
    &MIGRATOR
}

/// Claims the oldest queued job of an organization whose Resource has no
/// running job. `SKIP LOCKED` lets concurrent claimers pass over each
/// other's candidate row instead of waiting on it; the partial unique index
/// `jobs_one_running_per_resource` settles the remaining race.
/// `$1` org, `$2` lease, `$3` lease expiry, `$4` agent, `$5` now.
pub(super) const CLAIM: &str = "
WITH next AS (
    SELECT j.id FROM jobs j
    WHERE j.org_id = $1 AND j.status = 'queued'
      AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.resource_id = j.resource_id AND r.status = 'running')
    ORDER BY j.queued_at, j.id
    LIMIT 1
    FOR UPDATE OF j SKIP LOCKED
)
UPDATE jobs SET status = 'running', attempts = jobs.attempts + 1, lease_id = $2, lease_expires_at = $3,
    agent = $4, started_at = COALESCE(jobs.started_at, $5)
FROM next WHERE jobs.id = next.id
RETURNING jobs.id";

/// Running jobs whose lease expired before `$1`, locked for the reaper.
pub(super) const EXPIRED: &str = "
SELECT id FROM jobs WHERE status = 'running' AND lease_expires_at < $1
ORDER BY lease_expires_at FOR UPDATE SKIP LOCKED";
