//! PostgreSQL specifics: pool sizing, migrations, the claim query, and
//! the wake-ups replicas send each other when a job is queued.

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

/// The channel migration 0024's trigger notifies when a job is queued.
pub const JOBS_CHANNEL: &str = "heimdall_jobs";

/// Wakes this replica's waiting claims (`wake`) whenever any replica
/// queues a job, until `stop`. A lost connection is made again; since a
/// notification may have been missed meanwhile, waiters are woken then
/// too (the claim's own re-check stays as the last resort).
pub async fn listen_for_jobs(
    url: String,
    wake: std::sync::Arc<tokio::sync::Notify>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    const FIRST_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);
    let mut pause = FIRST_PAUSE;
    loop {
        let began = std::time::Instant::now();
        let listening = listen_once(&url, &wake);
        tokio::select! {
            ended = listening => {
                if let Err(e) = ended {
                    tracing::warn!(error = %e, "cannot listen for queued jobs; trying again");
                }
            }
            _ = stop.wait_for(|s| *s) => return,
        }
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        // Longer pauses only while it keeps failing at once.
        pause = if began.elapsed() > std::time::Duration::from_secs(60) {
            FIRST_PAUSE
        } else {
            (pause * 2).min(std::time::Duration::from_secs(10))
        };
    }
}

/// Listens until the connection fails for good (an error); every
/// notification, and every reconnection, wakes the waiters.
async fn listen_once(url: &str, wake: &tokio::sync::Notify) -> Result<(), sqlx::Error> {
    let mut listener = sqlx::postgres::PgListener::connect(url).await?;
    listener.listen(JOBS_CHANNEL).await?;
    tracing::debug!("listening for jobs queued by any replica");
    wake.notify_waiters();
    loop {
        // `None`: the connection dropped and the next call makes it again;
        // a notification may have been missed meanwhile, so wake them too.
        let _ = listener.try_recv().await?;
        wake.notify_waiters();
    }
}
