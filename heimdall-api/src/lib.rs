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
    let state = http::AppState::new(Arc::new(store), Arc::new(SystemClock));
    let app = http::router(state, config.max_body_bytes);
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(shutdown)
        .await
}
