//! `heimdall-agent run`: opens the value store, starts the local API, the
//! sync loop and the job workers, and stops them on shutdown. Secrets from
//! the environment are taken in [`prepare`], before any thread or child
//! process exists.

use std::future::Future;
use std::sync::Arc;

use heimdall_core::clock::Clock;
use heimdall_core::ids::AgentId;
use time::OffsetDateTime;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::access::{PolicySnapshot, SharedPolicy};
use crate::channel::Channel;
use crate::config::{AgentConfig, LocalApiConfig, ValuesConfig};
use crate::jobs::job_credentials::CredentialSource;
use crate::jobs::worker;
use crate::local_api::local_cert::LocalCertificate;
use crate::metrics::Metrics;
use crate::policy_file::PolicyFile;
use crate::values::crypto::{KeyError, KeySealer, MasterKey};
use crate::values::store::{dynamodb, postgres, sqlite, Vault};
use crate::values::{grant, kms, recorder};
use crate::{local_api, sync};

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// Why the Agent, or one of its own commands, did not start. Each names
/// what to fix; none carries a key, a value or a token.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    File(#[from] crate::files::FileError),
    #[error("the value store's master key: {0}")]
    MasterKey(#[from] KeyError),
    #[error("the value store cannot be opened: {0}")]
    Store(#[from] crate::values::store::ValueStoreError),
    #[error(transparent)]
    Channel(#[from] crate::channel::ChannelError),
    #[error(transparent)]
    Sealed(#[from] crate::sealed_file::SealedFileError),
    #[error(transparent)]
    LocalCert(#[from] crate::local_api::local_cert::LocalCertError),
    /// The CA certificate in agent.toml's `ca` cannot verify grants or clients.
    #[error("the CA certificate: {0}")]
    Ca(heimdall_tls::TlsSetupError),
    #[error("{what} cannot listen on {address}: {source}")]
    Listen {
        what: &'static str,
        address: String,
        #[source]
        source: std::io::Error,
    },
    /// What the configuration lacks for this command.
    #[error("{0}")]
    Missing(&'static str),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

/// A loaded configuration and the master key taken from the environment,
/// if the configuration names a variable.
#[derive(Debug)]
pub struct Prepared {
    pub config: AgentConfig,
    master_key: Option<MasterKey>,
}

/// Loads `agent.toml` and takes a master key held in an environment
/// variable, removing the variable so no child process (Terraform)
/// inherits it. Call before starting threads.
pub fn prepare(path: &std::path::Path) -> Result<Prepared, StartError> {
    let config = AgentConfig::load(path)?;
    let master_key = match config.values.as_ref().and_then(|v| v.master_key_env.as_deref()) {
        Some(var) => Some(MasterKey::take_from_env(var)?),
        None => None,
    };
    Ok(Prepared { config, master_key })
}

impl Prepared {
    /// The master key taken from the environment, if that is its source.
    pub fn into_master_key(self) -> Option<MasterKey> {
        self.master_key
    }
}

/// What the Agent's own commands (`token`) work with: its value store,
/// where it keeps its sealed files (next to its certificate), its id, and
/// its channel to the API.
#[derive(Debug)]
pub struct Own {
    pub vault: Arc<Vault>,
    pub dir: std::path::PathBuf,
    pub agent: AgentId,
    pub channel: Channel,
}

/// [`Own`] for a prepared configuration.
pub async fn open_own(prepared: Prepared) -> Result<Own, StartError> {
    let Prepared { config, master_key } = prepared;
    let values = config
        .values
        .as_ref()
        .ok_or(StartError::Missing("agent.toml has no [values]: this Agent keeps no secrets"))?;
    let vault = open_values(values, master_key).await?;
    let dir = config.cert.parent().unwrap_or(std::path::Path::new(".")).to_owned();
    let channel = Channel::new(&config)?;
    Ok(Own { vault, dir, agent: config.agent_id()?, channel })
}

/// Runs the Agent until `shutdown` resolves, then lets running work end.
pub async fn run(
    prepared: Prepared,
    clock: Arc<dyn Clock>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let Prepared { config, master_key } = prepared;
    // The value store opens first: with a wrong master key the Agent must
    // not start at all.
    let values = match &config.values {
        Some(v) => Some(open_values(v, master_key).await?),
        None => None,
    };
    let channel = Channel::new(&config)?;
    std::fs::create_dir_all(&config.work_dir)
        .map_err(crate::files::FileError::on("create", &config.work_dir))?;
    clear_work_dir(&config.work_dir);
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    tracing::info!(api = %config.api_url, concurrency = config.concurrency, "agent running");
    let agent = config.agent_id()?;
    let policy = SharedPolicy::default();
    let metrics = config.metrics.as_ref().map(|_| Arc::new(Metrics::default()));
    let identity_dir = config.cert.parent().unwrap_or(std::path::Path::new("."));
    // What this Agent finds wrong on its side, told to the API by sync.
    let alerts = crate::alerts::Alerts::default();
    let policy_file = values
        .as_ref()
        .map(|vault| Arc::new(PolicyFile::new(identity_dir, agent, vault.clone(), alerts.clone())));
    if let Some(file) = &policy_file {
        file.load_floor().await?;
        restore_policy(file, &policy);
    }
    // Program tokens: the local API authenticates with them, the sync loop
    // tells the API of revocations it did not hear.
    let tokens = match &values {
        Some(vault) => {
            let file =
                crate::program_tokens::TokenFile::new(identity_dir, agent, vault.clone(), alerts.clone());
            file.load_floor().await?;
            Some(Arc::new(file))
        }
        None => None,
    };
    // One group committer for every read this Agent serves: people's, and
    // the credentials its jobs run with.
    let credentials = values.as_ref().map(|store| CredentialSource {
        vault: store.clone(),
        recorder: recorder::Recorder::start(store.clone(), metrics.clone()),
        policy: policy.clone(),
        agent,
        clock: clock.clone(),
    });
    // Fetching the current versions it lacks from the other holders: after
    // each sync, and when a read asks for one (`Replication::fetch_now`).
    let replication = match &values {
        Some(store) => match config.identity() {
            Ok(identity) => {
                Some(Arc::new(crate::values::replication::Replication::new(identity, store.clone())))
            }
            Err(e) => {
                tracing::warn!(error = %e, "this Agent cannot fetch what it lacks from other holders");
                None
            }
        },
        None => None,
    };
    let mut local_cert = None;
    let serving = match (&credentials, &config.local_api) {
        (Some(source), Some(local)) => {
            let cert = LocalCertificate::load_or_issue(&config, local, &channel, clock.now()).await?;
            local_cert = Some(cert.clone());
            let parts = LocalParts {
                agent,
                cert,
                store: source.vault.clone(),
                recorder: source.recorder.clone(),
                policy: policy.clone(),
                clock: clock.clone(),
                metrics: metrics.clone(),
                api: channel.clone(),
                tokens: tokens.clone(),
                replication: replication.clone(),
            };
            Some(start_local_api(&config, local, parts, stop_rx.clone()).await?)
        }
        _ => None,
    };
    let syncing = match (&values, &config.values) {
        (Some(store), Some(v)) => {
            sync_on_hangup(policy.clone());
            let syncer = sync::Syncer {
                store: store.clone(),
                clock: clock.clone(),
                channel: channel.clone(),
                policy: policy.clone(),
                agent,
                local_url: config.local_api.as_ref().map(LocalApiConfig::public_url),
                local_cert,
                policy_file,
                tokens: tokens.clone(),
                alerts: alerts.clone(),
                replication: replication.clone(),
            };
            let period = std::time::Duration::from_secs(v.sync_seconds);
            Some(tokio::spawn(sync::run(syncer, period, stop_rx.clone())))
        }
        _ => None,
    };
    // Database service users: created and rotated here, on the API's schedule.
    let rotating = match (&credentials, &config.values) {
        (Some(source), Some(v)) => {
            let rotator = crate::db_rotation::Rotator {
                vault: source.vault.clone(),
                recorder: source.recorder.clone(),
                policy: source.policy.clone(),
                channel: channel.clone(),
                agent,
                clock: clock.clone(),
                poll: std::time::Duration::from_secs(v.database_poll_seconds.max(1)),
            };
            Some(tokio::spawn(crate::db_rotation::run(rotator, stop_rx.clone())))
        }
        _ => None,
    };
    let scraping = match (&config.metrics, metrics.clone()) {
        (Some(settings), Some(metrics)) => {
            let scrape = crate::metrics::Scrape { metrics, policy: policy.clone(), clock: clock.clone() };
            Some(start_metrics(&settings.listen, scrape, stop_rx.clone()).await?)
        }
        _ => None,
    };
    worker::run(config, channel, credentials, metrics, stop_rx).await;
    for task in [serving, syncing, rotating, scraping].into_iter().flatten() {
        let _ = task.await;
    }
    if let Some(values) = values {
        values.close().await;
    }
    tracing::info!("agent stopped");
    Ok(())
}

/// Serves `GET /metrics` on `listen` until `stop`; fails the start if the
/// address is taken.
async fn start_metrics(
    listen: &str,
    scrape: crate::metrics::Scrape,
    mut stop: watch::Receiver<bool>,
) -> Result<JoinHandle<()>, StartError> {
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(|source| StartError::Listen {
        what: "the metrics listener",
        address: listen.to_owned(),
        source,
    })?;
    tracing::info!(listen, "metrics (Prometheus) serving at /metrics");
    let app = crate::metrics::router(scrape);
    Ok(tokio::spawn(async move {
        let stopped = async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(stopped).await {
            tracing::error!(error = %e, "the metrics listener stopped");
        }
    }))
}

/// Decides with the snapshot kept on disk until the first sync answers:
/// an Agent restarted while the API is unreachable serves what it served
/// before, for the rest of the snapshot's 24 hours.
fn restore_policy(file: &PolicyFile, policy: &SharedPolicy) {
    let restored = file.load().map_err(|e| e.to_string()).and_then(|kept| match kept {
        Some((response, received_at)) => {
            Ok(Some((PolicySnapshot::new(&response, received_at).map_err(|e| e.to_string())?, received_at)))
        }
        None => Ok(None),
    });
    match restored {
        Ok(Some((snapshot, received_at))) => {
            policy.install(snapshot);
            tracing::info!(%received_at, "deciding with the policy snapshot kept on disk until the API answers");
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(error = %e, "the policy snapshot on disk is not used; nothing is decided until the first sync")
        }
    }
}

/// Job directories left by a run that did not end (the Agent was killed):
/// an attempt never reuses one, and they may hold a job's credential
/// files, so they go before anything runs.
fn clear_work_dir(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut removed = 0;
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        tracing::info!(removed, "removed job directories left by an earlier run");
    }
}

/// SIGHUP: sync now (who may read what, deactivations, the access
/// records), without waiting for the next period.
fn sync_on_hangup(policy: SharedPolicy) {
    tokio::spawn(async move {
        let Ok(mut hangups) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
            return;
        };
        while hangups.recv().await.is_some() {
            tracing::info!("SIGHUP: syncing now");
            policy.request_sync();
        }
    });
}

/// Opens the configured store with the configured key source
/// (`AgentConfig::load` checked there is exactly one of each); a key from
/// the environment was taken in [`prepare`].
async fn open_values(v: &ValuesConfig, taken: Option<MasterKey>) -> Result<Arc<Vault>, StartError> {
    let keys = master_key(v, taken).await?;
    let opened = match (&v.sqlite_path, &v.postgres_url, &v.dynamodb_table) {
        (Some(path), _, _) => sqlite::open(path, keys.as_ref()).await,
        (_, Some(url), _) => postgres::open(url, keys.as_ref()).await,
        (_, _, Some(table)) => {
            let cfg = dynamodb::DynamoConfig { table: table.clone(), aws: v.aws() };
            dynamodb::open(&cfg, keys.as_ref()).await
        }
        (None, None, None) => return Err(StartError::Missing("[values] names no store")),
    };
    let store = opened?;
    tracing::info!("value store open");
    Ok(Arc::new(store))
}

/// The configured master key (`AgentConfig::load` checked there is exactly
/// one source); a key from the environment was taken in [`prepare`].
pub async fn master_key(v: &ValuesConfig, taken: Option<MasterKey>) -> Result<Box<dyn KeySealer>, KeyError> {
    let boxed = |k: MasterKey| Box::new(k) as Box<dyn KeySealer>;
    match (taken, &v.master_key_file, &v.master_key_kms) {
        (Some(key), _, _) => Ok(boxed(key)),
        (None, Some(path), _) => MasterKey::from_file(path).map(boxed),
        (None, _, Some(key)) => kms::KmsKey::connect(key, &v.aws()).await.map(|k| Box::new(k) as _),
        (None, None, None) => Err(KeyError::Missing { origin: "[values] master key".into() }),
    }
}

/// What the local API serves with.
struct LocalParts {
    agent: AgentId,
    cert: Arc<LocalCertificate>,
    store: Arc<Vault>,
    recorder: recorder::Recorder,
    policy: SharedPolicy,
    clock: Arc<dyn Clock>,
    metrics: Option<Arc<Metrics>>,
    /// Asked on programs' behalf for versions and deletions.
    api: Channel,
    tokens: Option<Arc<crate::program_tokens::TokenFile>>,
    replication: Option<Arc<crate::values::replication::Replication>>,
}

/// Starts the local API on its certificate (renewed by the sync loop) and
/// listener. Fails the start if the address is taken.
async fn start_local_api(
    config: &AgentConfig,
    local: &LocalApiConfig,
    parts: LocalParts,
    stop: watch::Receiver<bool>,
) -> Result<JoinHandle<()>, StartError> {
    let ca_pem = crate::files::read_text(&config.ca)?;
    let tls = local_api::tls_config(parts.cert, &ca_pem)?;
    let state = local_api::LocalApi {
        agent: parts.agent,
        clock: parts.clock,
        store: parts.store.clone(),
        recorder: parts.recorder,
        policy: parts.policy,
        grants: grant::GrantVerifier::from_ca_pem(&ca_pem).map_err(StartError::Ca)?,
        metrics: parts.metrics,
        tokens: parts.tokens,
        api: Some(parts.api),
        watches: crate::local_api::watch::Watches::default(),
        replication: parts.replication,
    };
    let listener = tokio::net::TcpListener::bind(&local.listen).await.map_err(|source| {
        StartError::Listen { what: "the local API", address: local.listen.clone(), source }
    })?;
    tracing::info!(listen = %local.listen, url = %local.public_url(), "local API serving");
    Ok(tokio::spawn(local_api::serve(
        listener,
        Arc::new(tls),
        local_api::router(state),
        local.limits(),
        stop,
    )))
}
