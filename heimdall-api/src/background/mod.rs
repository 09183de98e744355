//! What runs beside the servers, in every replica: the reaper of expired
//! job leases, the drift schedule and webhook deliveries. Each loop runs
//! until its task is aborted at shutdown.

mod deliveries;
mod drift;
mod reaper;

pub use deliveries::deliver_forever;
pub use drift::{drift_forever, DRIFT_SCAN_EVERY};
pub use reaper::{reap_forever, REAP_EVERY};
