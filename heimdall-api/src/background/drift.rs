//! Scheduled drift checks: every few seconds, a check is queued for each
//! provisioned Resource whose schema's or account's schedule is due.

use heimdall_core::ApiError;

use heimdall_core::ids::JobId;
use heimdall_core::resources::service::scheduled_drift_check;
use uuid::Uuid;

use crate::http::AppState;

/// How often the drift schedules of schemas and accounts are looked at. Every replica scans;
/// a Resource a check is queued for is not due again (its job counts as
/// its last check), and one a job works on is refused.
pub const DRIFT_SCAN_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

pub async fn drift_forever(state: AppState) {
    let mut tick = tokio::time::interval(DRIFT_SCAN_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match queue_due_drift_checks(&state).await {
            Ok(0) => {}
            Ok(queued) => tracing::info!(queued, "scheduled drift checks queued"),
            Err(e) => tracing::error!(error = %e.message, "drift schedule scan failed"),
        }
    }
}

/// Queues a drift check for every provisioned Resource whose schedule is
/// due; one that cannot run now (a job works on it, no account, a store
/// error) waits for the next scan, and the others still get theirs.
/// Returns how many were queued.
pub(crate) async fn queue_due_drift_checks(state: &AppState) -> Result<usize, ApiError> {
    let mut queued = 0;
    for candidate in state.store.list_drift_candidates().await? {
        let job = JobId::from_uuid(Uuid::new_v4());
        match scheduled_drift_check(&*state.store, state, &candidate, job).await {
            Ok(Some(_)) => {
                queued += 1;
                state.jobs_queued.notify_waiters();
            }
            Ok(None) => {}
            Err(why) => {
                tracing::debug!(resource = %candidate.resource, reason = %why.message, "drift check not queued")
            }
        }
    }
    Ok(queued)
}
