//! `heimdall-agent`: enroll with an organization, then run jobs.
#![forbid(unsafe_code)]

use heimdall_agent::crypto::MasterKey;
use heimdall_agent::{channel, config, enroll, sync, worker};

/// The registration token comes from here, or from standard input; never argv.
const REGISTRATION_TOKEN_ENV: &str = "HEIMDALL_REGISTRATION_TOKEN";

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

/// mimalloc: the read path allocates per request (TLS records, HTTP,
/// JSON), and it is markedly cheaper than glibc's malloc there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "heimdall-agent",
    version,
    about = "The Heimdall Agent: runs Terraform jobs in your network"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Enroll with the API using a one-time registration token
    /// (`heimdall agent token create`). The key is generated here and never sent.
    Enroll {
        /// The API's URL (the one people use).
        #[arg(long, env = "HEIMDALL_API_URL")]
        api: String,
        /// The SHA-256 of the installation CA, as `heimdall agent token create`
        /// printed it: the API is trusted only if its chain holds that CA.
        #[arg(long)]
        ca_sha256: Option<String>,
        /// Where the key, certificate and agent.toml go.
        #[arg(long)]
        data: PathBuf,
        /// The terraform executable to pin (its SHA-256 is recorded).
        #[arg(long, default_value = "terraform")]
        terraform: PathBuf,
        /// Module sources this Agent runs (glob; repeatable).
        #[arg(long = "allow-module")]
        allow_module: Vec<String>,
        /// S3 endpoint override for S3-compatible state stores.
        #[arg(long)]
        s3_endpoint: Option<String>,
        /// Keep state on local disk under this directory instead of S3.
        #[arg(long)]
        local_state: Option<PathBuf>,
        #[arg(long, default_value_t = 2)]
        concurrency: usize,
    },
    /// Run jobs until SIGTERM or Ctrl-C.
    Run {
        /// The agent.toml written by `enroll`.
        #[arg(long, env = "HEIMDALL_AGENT_CONFIG")]
        config: PathBuf,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_env("HEIMDALL_LOG").unwrap_or_else(|_| EnvFilter::new("info")))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    // Before any thread starts: a master key in an environment variable is
    // read once and removed, so no child process (Terraform) inherits it.
    // Likewise a registration token in the environment.
    let command = match cli.command {
        Command::Run { config } => match prepare_run(&config) {
            Ok(run) => Ready::Run(Box::new(run)),
            Err(message) => return fail(&message),
        },
        other => match take_registration_token() {
            Ok(token) => Ready::Other(other, token),
            Err(message) => return fail(&message),
        },
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the runtime: {e}")),
    };
    let result = match command {
        Ready::Run(run) => runtime.block_on(run_agent(*run)),
        Ready::Other(command, token) => runtime.block_on(run(command, token)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(&message),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::FAILURE
}

enum Ready {
    Run(Box<(config::AgentConfig, Option<MasterKey>)>),
    Other(Command, Option<zeroize::Zeroizing<String>>),
}

/// `HEIMDALL_REGISTRATION_TOKEN`, removed from the environment once read
/// (so `terraform version`, run by enroll, does not inherit it).
fn take_registration_token() -> Result<Option<zeroize::Zeroizing<String>>, String> {
    let Some(value) = std::env::var_os(REGISTRATION_TOKEN_ENV) else { return Ok(None) };
    std::env::remove_var(REGISTRATION_TOKEN_ENV);
    let value = zeroize::Zeroizing::new(
        value.into_string().map_err(|_| format!("{REGISTRATION_TOKEN_ENV} is not text"))?,
    );
    Ok(Some(zeroize::Zeroizing::new(value.trim().to_owned())))
}

fn prepare_run(path: &std::path::Path) -> Result<(config::AgentConfig, Option<MasterKey>), String> {
    let config = config::AgentConfig::load(path)?;
    let key = match config.values.as_ref().and_then(|v| v.master_key_env.as_deref()) {
        Some(var) => {
            Some(MasterKey::take_from_env(var).map_err(|e| format!("the value store's master key: {e}"))?)
        }
        None => None,
    };
    Ok((config, key))
}

async fn run(command: Command, token: Option<zeroize::Zeroizing<String>>) -> Result<(), String> {
    match command {
        Command::Enroll {
            api,
            ca_sha256,
            data,
            terraform,
            allow_module,
            s3_endpoint,
            local_state,
            concurrency,
        } => {
            // The token is a credential: never on the command line.
            let token = match token {
                Some(t) => t,
                None => {
                    let mut line = zeroize::Zeroizing::new(String::new());
                    std::io::stdin().read_line(&mut line).map_err(|e| e.to_string())?;
                    zeroize::Zeroizing::new(line.trim().to_owned())
                }
            };
            if token.is_empty() {
                return Err(format!(
                    "no registration token: set {REGISTRATION_TOKEN_ENV} or pipe it on standard input"
                ));
            }
            let terraform = resolve_on_path(&terraform);
            let options = enroll::EnrollOptions {
                api,
                ca_sha256,
                data,
                terraform,
                allowed_modules: allow_module,
                state: config::StateConfig { s3_endpoint, local_dir: local_state },
                concurrency,
            };
            let (enrolled, config_path) = enroll::enroll(&token, options).await?;
            println!("✓ Agent enrolled: {} ({})", enrolled.agent.name, enrolled.agent.id);
            println!("✓ Configuration: {}", config_path.display());
            println!("Next: heimdall-agent run --config {}", config_path.display());
            Ok(())
        }
        Command::Run { .. } => Err("internal: run is prepared before the runtime".into()),
    }
}

async fn run_agent((config, master_key): (config::AgentConfig, Option<MasterKey>)) -> Result<(), String> {
    // The value store opens first: with a wrong master key the Agent must
    // not start at all.
    let values = match &config.values {
        Some(v) => Some(open_values(v, master_key).await?),
        None => None,
    };
    let channel = channel::Channel::new(&config).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&config.work_dir)
        .map_err(|e| format!("cannot create {}: {e}", config.work_dir.display()))?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    tracing::info!(api = %config.api_url, concurrency = config.concurrency, "agent running");
    let agent = config.agent_id()?;
    let policy: heimdall_agent::access::SharedPolicy = Default::default();
    let mut local_cert = None;
    let serving = match (&values, &config.local_api) {
        (Some(store), Some(local)) => {
            let cert =
                heimdall_agent::local_cert::LocalCertificate::load_or_issue(&config, local, &channel).await?;
            local_cert = Some(cert.clone());
            Some(
                start_local_api(&config, local, agent, cert, store.clone(), policy.clone(), stop_rx.clone())
                    .await?,
            )
        }
        _ => None,
    };
    // SIGHUP: sync now (who may read what, deactivations, the access
    // records), without waiting for the next period.
    if values.is_some() {
        let policy = policy.clone();
        tokio::spawn(async move {
            let Ok(mut hangups) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            else {
                return;
            };
            while hangups.recv().await.is_some() {
                tracing::info!("SIGHUP: syncing now");
                policy.request_sync();
            }
        });
    }
    let syncing = match (&values, &config.values) {
        (Some(store), Some(v)) => Some(tokio::spawn(sync::run(
            sync::Syncer {
                store: store.clone(),
                channel: channel.clone(),
                policy: policy.clone(),
                agent,
                local_url: config.local_api.as_ref().map(config::LocalApiConfig::public_url),
                local_cert,
            },
            std::time::Duration::from_secs(v.sync_seconds),
            stop_rx.clone(),
        ))),
        _ => None,
    };
    worker::run(config, channel, stop_rx).await;
    if let Some(task) = serving {
        let _ = task.await;
    }
    if let Some(task) = syncing {
        let _ = task.await;
    }
    if let Some(values) = values {
        values.close().await;
    }
    tracing::info!("agent stopped");
    Ok(())
}

/// Opens the configured store with the configured key source
/// (`AgentConfig::load` checked there is exactly one of each); a key from
/// the environment was taken before the runtime started.
async fn open_values(
    v: &config::ValuesConfig,
    taken: Option<MasterKey>,
) -> Result<std::sync::Arc<dyn heimdall_agent::store::ValueStore>, String> {
    use heimdall_agent::crypto::{KeyError, KeySealer};
    use heimdall_agent::store::{dynamodb, postgres, sqlite};
    let boxed = |k: MasterKey| Box::new(k) as Box<dyn KeySealer>;
    let keys = match (taken, &v.master_key_file, &v.master_key_kms) {
        (Some(key), _, _) => Ok(boxed(key)),
        (None, Some(path), _) => MasterKey::from_file(path).map(boxed),
        (None, _, Some(kms)) => {
            heimdall_agent::kms::KmsKey::connect(kms, &v.aws()).await.map(|k| Box::new(k) as _)
        }
        (None, None, None) => Err(KeyError::Missing { origin: "[values] master key".into() }),
    }
    .map_err(|e| format!("the value store's master key: {e}"))?;
    let opened: Result<std::sync::Arc<dyn heimdall_agent::store::ValueStore>, _> =
        match (&v.sqlite_path, &v.postgres_url, &v.dynamodb_table) {
            (Some(path), _, _) => {
                sqlite::open(path, keys.as_ref()).await.map(|s| std::sync::Arc::new(s) as _)
            }
            (_, Some(url), _) => {
                postgres::open(url, keys.as_ref()).await.map(|s| std::sync::Arc::new(s) as _)
            }
            (_, _, Some(table)) => {
                let cfg = dynamodb::DynamoConfig { table: table.clone(), aws: v.aws() };
                dynamodb::open(&cfg, keys.as_ref()).await.map(|s| std::sync::Arc::new(s) as _)
            }
            (None, None, None) => return Err("[values] names no store".into()),
        };
    let store = opened.map_err(|e| format!("the value store cannot be opened: {e}"))?;
    tracing::info!("value store open");
    Ok(store)
}

/// Starts the local API on its certificate (renewed by the sync loop) and
/// listener. Fails the start if the address is taken.
async fn start_local_api(
    config: &config::AgentConfig,
    local: &config::LocalApiConfig,
    agent: heimdall_core::ids::AgentId,
    cert: std::sync::Arc<heimdall_agent::local_cert::LocalCertificate>,
    store: std::sync::Arc<dyn heimdall_agent::store::ValueStore>,
    policy: heimdall_agent::access::SharedPolicy,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<()>, String> {
    use heimdall_agent::local_api;
    let ca_pem = std::fs::read_to_string(&config.ca)
        .map_err(|e| format!("cannot read {}: {e}", config.ca.display()))?;
    let tls = local_api::tls_config(cert, &ca_pem)?;
    let state = local_api::LocalApi {
        agent,
        store: store.clone(),
        recorder: heimdall_agent::recorder::Recorder::start(store),
        policy,
        grants: heimdall_agent::grant::GrantVerifier::from_ca_pem(&ca_pem)?,
    };
    let listener = tokio::net::TcpListener::bind(&local.listen)
        .await
        .map_err(|e| format!("the local API cannot listen on {}: {e}", local.listen))?;
    tracing::info!(listen = %local.listen, url = %local.public_url(), "local API serving");
    Ok(tokio::spawn(local_api::serve(
        listener,
        std::sync::Arc::new(tls),
        local_api::router(state),
        local.limits(),
        stop,
    )))
}

/// `terraform` → the first match on PATH (so the pin names a real file).
fn resolve_on_path(program: &std::path::Path) -> PathBuf {
    if program.components().count() > 1 {
        return program.to_path_buf();
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(program)).find(|p| p.is_file()))
        .unwrap_or_else(|| program.to_path_buf())
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        () = term => {},
    }
}
