//! heimdall-api: the HTTP API over PostgreSQL or SQLite.
//!
//! An adapter: it plugs storage ([`db`]) and transport ([`http`]) into the
//! rules of `heimdall-core`. Architecture Invariant: the API never stores a
//! secret value or a cloud credential; tokens are stored only as hashes.
#![forbid(unsafe_code)]

pub mod bootstrap;
pub mod config;
pub mod db;
pub mod http;
#[cfg(feature = "testing")]
pub mod testing;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use heimdall_core::clock::Clock;
use heimdall_core::ports::Store;
use time::OffsetDateTime;
use tokio::net::TcpListener;

pub use config::ServeConfig;

/// The wall clock, truncated to microseconds (what the database keeps), so
/// that a record read back equals the record written.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        let now = OffsetDateTime::now_utc();
        now.replace_nanosecond(now.nanosecond() / 1_000 * 1_000).unwrap_or(now)
    }
}

/// Serves the API on `listener` until `shutdown` resolves.
pub async fn serve_on(
    listener: TcpListener,
    store: db::SqlStore,
    config: &ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let store: Arc<dyn Store> = Arc::new(store);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let reaper = tokio::spawn(reap_forever(store.clone(), clock.clone()));
    let state = http::AppState::new(store, clock);
    let app = http::router(state, config.max_body_bytes);
    let served = axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(shutdown)
        .await;
    reaper.abort();
    served
}

/// How often expired leases are looked for. Every API replica reaps; on
/// PostgreSQL `SKIP LOCKED` keeps two reapers off the same job.
pub const REAP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

async fn reap_forever(store: Arc<dyn Store>, clock: Arc<dyn Clock>) {
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
