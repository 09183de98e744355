//! heimdall-api: the HTTP API over PostgreSQL or SQLite.
//!
//! An adapter: it plugs storage ([`db`]) and transport ([`http`]) into the
//! rules of `heimdall-core`. Architecture Invariant: the API never stores a
//! secret value or a cloud credential; tokens are stored only as hashes.
#![forbid(unsafe_code)]

pub mod background;
pub mod bootstrap;
pub mod config;
pub mod console;
pub mod db;
pub mod federation;
pub mod http;
pub mod key_files;
pub mod metrics;
pub mod notifications;
pub mod oidc;
pub mod pki;
pub mod policy_cache;
pub mod start;
#[cfg(feature = "testing")]
pub mod testing;
mod tls;

use std::future::Future;
use std::sync::Arc;

use heimdall_core::clock::Clock;
use heimdall_core::ports::Store;
use time::OffsetDateTime;
use tokio::net::TcpListener;

pub use config::ServeConfig;
pub use http::agent_channel::openapi_document as agent_channel_openapi_document;
pub use http::openapi_document;

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

/// The mTLS listener Agents dial, and what it needs.
#[derive(Debug)]
pub struct AgentListener {
    pub listener: TcpListener,
    pub ca: Arc<pki::Ca>,
    /// The URL Agents are told to dial (`https://host:port`).
    pub public_url: String,
    /// DNS names / IPs for the listener's server certificate.
    pub tls_names: Vec<String>,
    /// OIDC federation for jobs of `oidc` accounts (its keys live beside the CA).
    pub federation: Option<federation::Federation>,
    /// The key notification channels are signed with (beside the CA too).
    pub notifications: Option<Arc<notifications::SigningKey>>,
}

/// Serves the API on `listener` (HTTPS with `people_tls`, plain HTTP
/// without: behind a TLS-terminating proxy, or in tests), and the Agent
/// channel on `agents` if given, until `shutdown` resolves. Both listeners
/// share `heimdall_tls::server`'s limits.
pub async fn serve_on(
    listener: TcpListener,
    people_tls: Option<Arc<rustls::ServerConfig>>,
    agents: Option<AgentListener>,
    store: db::SqlStore,
    config: &ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with_clock(listener, people_tls, agents, store, config, Arc::new(SystemClock), shutdown).await
}

/// [`serve_on`] reading time from `clock` (tests drive schedules with a
/// `heimdall_core::clock::ManualClock`).
pub async fn serve_with_clock(
    listener: TcpListener,
    people_tls: Option<Arc<rustls::ServerConfig>>,
    agents: Option<AgentListener>,
    store: db::SqlStore,
    config: &ServeConfig,
    clock: Arc<dyn Clock>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let backend = store.backend();
    let store: Arc<dyn Store> = Arc::new(store);
    // Agents' lists of secrets from before this start (and before any
    // restore of the database that preceded it) are answered whole.
    store.start_sync_epoch().await.map_err(|e| std::io::Error::other(e.to_string()))?;
    let reaper = tokio::spawn(background::reap_forever(store.clone(), clock.clone()));
    let mut state = http::AppState::new(store, clock);
    state.agent_stale_after = config.agent_stale_after;
    state.claim_recheck = config.claim_recheck;
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    // Replicas on one PostgreSQL wake each other's waiting claims.
    let wakeups = (backend == db::Backend::Postgres).then(|| {
        let url = config.database_url.expose().clone();
        tokio::spawn(db::listen_for_jobs(url, state.jobs_queued.clone(), stop.clone()))
    });
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    // Before any router is made: each counts its requests when metrics are on.
    let metrics_listener = match config.metrics_listen {
        Some(addr) => {
            state.metrics = Some(Arc::new(metrics::Metrics::default()));
            let listener = TcpListener::bind(addr).await?;
            tracing::info!(listen = %addr, "metrics (Prometheus) serving at /metrics");
            Some(listener)
        }
        None => None,
    };
    let mut agent_task = None;
    if let Some(agents) = agents {
        let tls = agents.ca.mtls_server_config(&agents.tls_names).map_err(std::io::Error::other)?;
        state.ca = Some(agents.ca.clone());
        state.agent_api_url = Some(agents.public_url.clone());
        state.api_names = agents.tls_names.clone();
        state.federation = agents.federation.clone();
        state.notifications = agents.notifications.clone();
        let channel = http::agent_channel::router(state.clone());
        agent_task = Some(tokio::spawn(tls::serve_mtls(
            agents.listener,
            Arc::new(tls),
            channel,
            config.limits,
            stopped(stop.clone()),
        )));
    }
    let metrics_task = metrics_listener.map(|listener| {
        let (app, stop) =
            (metrics::router(state.metrics.clone(), state.store.clone()), stopped(stop.clone()));
        tokio::spawn(async move { axum::serve(listener, app).with_graceful_shutdown(stop).await })
    });
    let drift = tokio::spawn(background::drift_forever(state.clone()));
    let deliveries = state.notifications.clone().map(|key| {
        let (store, clock) = (state.store.clone(), state.clock.clone());
        let allowed = config.webhook_allow_cidrs.clone();
        tokio::spawn(background::deliver_forever(store, clock, key, config.notification_retry, allowed))
    });
    let app = http::router(state, config.max_body_bytes);
    let people =
        heimdall_tls::server::serve(listener, people_tls, |_, _| Some(()), app, config.limits, stopped(stop));
    tokio::pin!(people);
    tokio::select! {
        () = &mut people => {}
        () = shutdown => {
            let _ = stop_tx.send(true);
            people.await;
        }
    }
    reaper.abort();
    if let Some(wakeups) = wakeups {
        wakeups.abort();
    }
    drift.abort();
    if let Some(deliveries) = deliveries {
        deliveries.abort();
    }
    if let Some(task) = agent_task {
        let _ = task.await;
    }
    if let Some(task) = metrics_task {
        let _ = task.await;
    }
    Ok(())
}
