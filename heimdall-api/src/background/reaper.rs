//! Jobs whose lease ran out (their Agent died or lost the API) go back to
//! the queue, or fail once out of attempts (`heimdall_core::queue`).

use std::sync::Arc;

use heimdall_core::clock::Clock;
use heimdall_core::ports::Store;

/// How often expired leases are looked for. Every API replica reaps; on
/// PostgreSQL `SKIP LOCKED` keeps two reapers off the same job.
pub const REAP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

pub async fn reap_forever(store: Arc<dyn Store>, clock: Arc<dyn Clock>) {
    let mut tick = tokio::time::interval(REAP_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match store.reap(clock.now()).await {
            Ok(decisions) => {
                for (job, decision) in decisions {
                    tracing::warn!(%job, ?decision, "job lease expired");
                }
            }
            Err(e) => tracing::error!(error = %e, "reaper failed"),
        }
    }
}
