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
                Some(v) => Some(std::sync::Arc::new(open_values(v).await?)),
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
            let syncing = match (&values, &config.values) {
                (Some(store), Some(v)) => Some(tokio::spawn(sync::run(
                    store.clone(),
                    channel.clone(),
                    std::time::Duration::from_secs(v.sync_seconds),
                    stop_rx.clone(),
                ))),
                _ => None,
            };
            worker::run(config, channel, stop_rx).await;
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

async fn open_values(v: &config::ValuesConfig) -> Result<heimdall_agent::store::SqlValueStore, String> {
    use heimdall_agent::crypto::MasterKey;
    let master = match (&v.master_key_env, &v.master_key_file) {
        (Some(var), _) => MasterKey::from_env(var),
        (_, Some(path)) => MasterKey::from_file(path),
        (None, None) => unreachable_config(),
    }
    .map_err(|e| format!("the value store's master key: {e}"))?;
    let store = match (&v.sqlite_path, &v.postgres_url) {
        (Some(path), _) => heimdall_agent::store::sqlite::open(path, &master).await,
        (_, Some(url)) => heimdall_agent::store::postgres::open(url, &master).await,
        (None, None) => return Err("[values] names no store".into()),
    };
    let store = store.map_err(|e| format!("the value store cannot be opened: {e}"))?;
    tracing::info!("value store open");
    Ok(store)
}

/// `AgentConfig::load` refuses a `[values]` section without a key source.
fn unreachable_config() -> Result<heimdall_agent::crypto::MasterKey, heimdall_agent::crypto::KeyError> {
    Err(heimdall_agent::crypto::KeyError::Missing {
        origin: "[values] master_key_env or master_key_file".into(),
    })
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
