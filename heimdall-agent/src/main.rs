//! `heimdall-agent`: enroll with an organization, then run jobs.
#![forbid(unsafe_code)]

mod channel;
mod config;
mod enroll;
mod sync;
mod terraform;
mod worker;

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
        /// The registration token; read from stdin if omitted.
        #[arg(long, env = "HEIMDALL_REGISTRATION_TOKEN", hide_env_values = true)]
        token: Option<String>,
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
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Enroll {
            api,
            token,
            data,
            terraform,
            allow_module,
            s3_endpoint,
            local_state,
            concurrency,
        } => {
            let token = match token {
                Some(t) => t,
                None => {
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line).map_err(|e| e.to_string())?;
                    line.trim().to_owned()
                }
            };
            let terraform = resolve_on_path(&terraform);
            let options = enroll::EnrollOptions {
                api,
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
        Command::Run { config } => {
            let config = config::AgentConfig::load(&config)?;
            // The value store opens first: with a wrong master key the Agent
            // must not start at all.
            let values = match &config.values {
                Some(v) => Some(open_values(v).await?),
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
            let policy: heimdall_agent::access::SharedPolicy = Default::default();
            let serving = match (&values, &config.local_api) {
                (Some(store), Some(local)) => Some(
                    start_local_api(&config, local, &channel, store.clone(), policy.clone(), stop_rx.clone())
                        .await?,
                ),
                _ => None,
            };
            // SIGHUP: sync now (who may read what, deactivations, the
            // access records), without waiting for the next period.
            if values.is_some() {
                let policy = policy.clone();
                tokio::spawn(async move {
                    let Ok(mut hangups) =
                        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
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
                        agent: agent_id(&config.cert)?,
                        local_url: config.local_api.as_ref().map(config::LocalApiConfig::public_url),
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
    }
}

/// Opens the configured store with the configured key source
/// (`AgentConfig::load` checked there is exactly one of each).
async fn open_values(
    v: &config::ValuesConfig,
) -> Result<std::sync::Arc<dyn heimdall_agent::store::ValueStore>, String> {
    use heimdall_agent::crypto::{KeyError, KeySealer, MasterKey};
    use heimdall_agent::store::{dynamodb, postgres, sqlite};
    let boxed = |k: MasterKey| Box::new(k) as Box<dyn KeySealer>;
    let keys = match (&v.master_key_env, &v.master_key_file, &v.master_key_kms) {
        (Some(var), _, _) => MasterKey::from_env(var).map(boxed),
        (_, Some(path), _) => MasterKey::from_file(path).map(boxed),
        (_, _, Some(kms)) => {
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

/// Starts the local API: its certificate first (cached next to the
/// Agent's key, renewed over the channel when a third of its life is left),
/// then the listener. Fails the start if the address is taken.
async fn start_local_api(
    config: &config::AgentConfig,
    local: &config::LocalApiConfig,
    channel: &channel::Channel,
    store: std::sync::Arc<dyn heimdall_agent::store::ValueStore>,
    policy: heimdall_agent::access::SharedPolicy,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<()>, String> {
    use heimdall_agent::local_api;
    let ca_pem = std::fs::read_to_string(&config.ca)
        .map_err(|e| format!("cannot read {}: {e}", config.ca.display()))?;
    let (cert_pem, key_pem) = local_api_certificate(config, local, channel).await?;
    let tls = local_api::tls_config(&cert_pem, &key_pem, &ca_pem)?;
    drop(zeroize::Zeroizing::new(key_pem));
    let agent = agent_id(&config.cert)?;
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
    Ok(tokio::spawn(local_api::serve(listener, std::sync::Arc::new(tls), local_api::router(state), stop)))
}

/// This Agent's id, from the URI SAN of its own certificate.
fn agent_id(cert: &std::path::Path) -> Result<heimdall_core::ids::AgentId, String> {
    let pem = std::fs::read(cert).map_err(|e| format!("cannot read {}: {e}", cert.display()))?;
    let der = rustls_pemfile::certs(&mut pem.as_slice())
        .next()
        .ok_or("no certificate in the Agent's certificate file")?
        .map_err(|e| e.to_string())?;
    let (_, parsed) = x509_parser::parse_x509_certificate(der.as_ref()).map_err(|e| e.to_string())?;
    let san = parsed.subject_alternative_name().ok().flatten().ok_or("the Agent certificate has no SAN")?;
    san.value
        .general_names
        .iter()
        .find_map(|n| match n {
            x509_parser::extensions::GeneralName::URI(uri) => {
                uri.strip_prefix("urn:heimdall:agent:")?.parse().ok()
            }
            _ => None,
        })
        .ok_or_else(|| "the Agent certificate names no Agent".to_owned())
}

/// The local API's certificate and key (PEM): the cached pair if it still
/// has more than a third of its life, else a new one from the CA.
async fn local_api_certificate(
    config: &config::AgentConfig,
    local: &config::LocalApiConfig,
    channel: &channel::Channel,
) -> Result<(String, String), String> {
    let dir = config.key.parent().unwrap_or(std::path::Path::new("."));
    let (cert_path, key_path) = (dir.join("local-api.pem"), dir.join("local-api.key"));
    let cached = match (std::fs::read_to_string(&cert_path), std::fs::read_to_string(&key_path)) {
        (Ok(cert), Ok(key)) => Some((cert, key)),
        _ => None,
    };
    let fresh_enough = cached.as_ref().is_some_and(|(cert, _)| {
        rustls_pemfile::certs(&mut cert.as_bytes()).next().and_then(Result::ok).is_some_and(|der| {
            x509_parser::parse_x509_certificate(der.as_ref()).is_ok_and(|(_, c)| {
                let validity = c.validity();
                let life = validity.not_after.timestamp() - validity.not_before.timestamp();
                let left = validity.not_after.timestamp() - time::OffsetDateTime::now_utc().unix_timestamp();
                left > life / 3
            })
        })
    });
    if fresh_enough {
        if let Some(pair) = cached {
            return Ok(pair);
        }
    }
    let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
    let csr = rcgen::CertificateParams::new(Vec::<String>::new())
        .and_then(|p| p.serialize_request(&key))
        .and_then(|r| r.pem())
        .map_err(|e| e.to_string())?;
    let request = heimdall_core::wire::ServerCertificateRequest { csr, names: local.names.clone() };
    match channel.server_certificate(&request).await {
        Ok(issued) => {
            let key_pem = zeroize::Zeroizing::new(key.serialize_pem());
            enroll::replace_file(&key_path, key_pem.as_bytes(), 0o600)?;
            enroll::replace_file(&cert_path, issued.certificate.as_bytes(), 0o644)?;
            tracing::info!(sha256 = %issued.sha256, "local API certificate issued");
            Ok((issued.certificate, key_pem.to_string()))
        }
        // The API is down but the old certificate still works: use it.
        Err(e) => match cached {
            Some(pair) => {
                tracing::warn!(error = %e, "could not renew the local API certificate; using the current one");
                Ok(pair)
            }
            None => Err(format!("the local API needs a certificate from the API: {e}")),
        },
    }
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
