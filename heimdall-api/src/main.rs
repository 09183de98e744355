//! `heimdall-api`: serve the API, or bootstrap its first organization.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use heimdall_api::config::{FileConfig, ServeConfig};
use heimdall_api::{db, SystemClock};
use heimdall_core::ErrorCode;

#[derive(Parser, Debug)]
#[command(name = "heimdall-api", version, about = "The Heimdall API server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the HTTP API (runs pending migrations first).
    Serve {
        /// postgres://… or sqlite://PATH
        #[arg(long, env = "HEIMDALL_DATABASE_URL", hide_env_values = true)]
        database_url: Option<String>,
        /// Address to listen on [default: 127.0.0.1:7480]
        #[arg(long, env = "HEIMDALL_LISTEN")]
        listen: Option<String>,
        /// TOML file with database_url, listen, max_body_bytes.
        #[arg(long, env = "HEIMDALL_CONFIG")]
        config: Option<PathBuf>,
        /// Also serve the Agent channel (mTLS) on this address.
        #[arg(long, env = "HEIMDALL_AGENT_LISTEN", requires = "ca_dir")]
        agent_listen: Option<String>,
        /// Directory with the installation CA (ca.pem, ca.key); created if empty.
        #[arg(long, env = "HEIMDALL_CA_DIR")]
        ca_dir: Option<PathBuf>,
        /// The URL Agents dial [default: https://<agent-listen>].
        #[arg(long, env = "HEIMDALL_AGENT_PUBLIC_URL")]
        agent_public_url: Option<String>,
        /// Extra DNS name or IP for the Agent listener's certificate, besides
        /// localhost, the listen address and --agent-public-url's host (repeatable).
        #[arg(long = "agent-tls-name")]
        agent_tls_names: Vec<String>,
        /// The people's HTTPS certificate chain (PEM), e.g. from your own CA or a public one.
        #[arg(long, env = "HEIMDALL_TLS_CERT", requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// Its private key (PEM).
        #[arg(long, env = "HEIMDALL_TLS_KEY", requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Without --tls-cert: a DNS name or IP the certificate from the
        /// installation CA names, besides localhost and the listen address (repeatable).
        #[arg(long = "tls-name")]
        tls_names: Vec<String>,
        /// Serve people plain HTTP (only behind a proxy that terminates TLS).
        #[arg(long, conflicts_with_all = ["tls_cert", "tls_key", "tls_names"])]
        insecure_http: bool,
        /// The issuer URL of job identity tokens (`oidc` accounts): the
        /// people's HTTPS URL a cloud can reach, where /.well-known/ is
        /// served [default: https://<first --tls-name, else listen>].
        #[arg(long, env = "HEIMDALL_OIDC_ISSUER_URL")]
        oidc_issuer_url: Option<String>,
        /// Where STS is, for AWS `oidc` accounts [default: AWS's, by the account's region].
        #[arg(long, env = "HEIMDALL_STS_ENDPOINT_URL")]
        sts_endpoint_url: Option<String>,
        /// Serve `GET /metrics` (Prometheus, plain HTTP) on this address, e.g.
        /// 127.0.0.1:9480 [default: off]
        #[arg(long, env = "HEIMDALL_METRICS_LISTEN")]
        metrics_listen: Option<String>,
    },
    /// Add a new signing key for job identity tokens; it signs from the next
    /// start on, and the previous key stays published until the next rotation.
    RotateOidcKey {
        /// The directory given to `serve --ca-dir`.
        #[arg(long, env = "HEIMDALL_CA_DIR")]
        ca_dir: PathBuf,
    },
    /// Create the first organization and its owner; prints the owner's API
    /// token once. Refused on a database that already has an organization.
    Bootstrap {
        #[arg(long, env = "HEIMDALL_DATABASE_URL", hide_env_values = true)]
        database_url: Option<String>,
        #[arg(long, env = "HEIMDALL_CONFIG")]
        config: Option<PathBuf>,
        /// Organization name (lowercase letters, digits, '-', '_').
        #[arg(long)]
        org: String,
        /// The owner's email.
        #[arg(long)]
        owner: String,
        /// Write the owner's token to this new file (mode 0600) instead of
        /// printing it. An existing file is refused before anything is created.
        #[arg(long, value_name = "PATH")]
        token_file: Option<PathBuf>,
        /// With --token-file: when that file is already there and opens this
        /// database, change nothing and succeed (for a script that runs on
        /// every start); a file from another database is refused.
        #[arg(long, requires = "token_file")]
        if_absent: bool,
        #[arg(long, value_enum, default_value_t = Output::Table)]
        output: Output,
    },
    /// Print an OpenAPI document (JSON) and exit: the people-facing API's
    /// (what `GET /v1/openapi.json` serves), or the Agent channel's.
    Openapi {
        #[arg(long, value_enum, default_value = "people")]
        document: Document,
    },
    /// Run pending migrations and exit.
    Migrate {
        #[arg(long, env = "HEIMDALL_DATABASE_URL", hide_env_values = true)]
        database_url: Option<String>,
        #[arg(long, env = "HEIMDALL_CONFIG")]
        config: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Document {
    People,
    AgentChannel,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Output {
    Table,
    Json,
}

fn main() -> ExitCode {
    if let Err(message) = heimdall_tls::logging::init() {
        eprintln!("error: {message}");
        return ExitCode::from(2);
    }
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
        Err((code, message)) => {
            eprintln!("error: {code}: {message}");
            ExitCode::FAILURE
        }
    }
}

type RunError = (&'static str, String);

fn config(
    database_url: Option<String>,
    listen: Option<String>,
    file: Option<PathBuf>,
) -> Result<ServeConfig, RunError> {
    let file = match file {
        Some(path) => FileConfig::load(&path).map_err(|e| ("INVALID_INPUT", e))?,
        None => FileConfig::default(),
    };
    ServeConfig::resolve(database_url, listen, file).map_err(|e| ("INVALID_INPUT", e))
}

async fn open(config: &ServeConfig) -> Result<db::SqlStore, RunError> {
    db::connect(config.database_url.expose()).await.map_err(|e| ("UNAVAILABLE", e.to_string()))
}

async fn run(cli: Cli) -> Result<(), RunError> {
    match cli.command {
        Command::Serve {
            database_url,
            listen,
            config: file,
            agent_listen,
            ca_dir,
            agent_public_url,
            agent_tls_names,
            tls_cert,
            tls_key,
            tls_names,
            insecure_http,
            oidc_issuer_url,
            sts_endpoint_url,
            metrics_listen,
        } => {
            let issuer_url = oidc_issuer_url.unwrap_or_else(|| match tls_names.first() {
                Some(name) => format!("https://{name}:{}", listen_port(&config_listen(&listen))),
                None => format!("https://{}", config_listen(&listen)),
            });
            let mut config = config(database_url, listen, file)?;
            if let Some(text) = metrics_listen {
                let addr =
                    heimdall_api::config::parse_metrics_listen(&text).map_err(|e| ("INVALID_INPUT", e))?;
                config.metrics_listen = Some(addr);
            }
            // The CA first: both listeners may need it.
            let ca = match &ca_dir {
                Some(dir) => Some(std::sync::Arc::new(
                    heimdall_api::pki::Ca::load_or_create(dir)
                        .map_err(|e| ("INVALID_INPUT", e.to_string()))?,
                )),
                None => None,
            };
            let people_tls =
                match (&tls_cert, &tls_key, &ca, insecure_http) {
                    (_, _, _, true) => {
                        tracing::warn!(
                        "serving people plain HTTP (--insecure-http): put a TLS-terminating proxy in front"
                    );
                        None
                    }
                    (Some(cert), Some(key), _, false) => Some(
                        heimdall_api::pki::server_config_from_files(cert, key)
                            .map_err(|e| ("INVALID_INPUT", e.to_string()))?,
                    ),
                    (_, _, Some(ca), false) => {
                        let mut names = vec!["localhost".to_owned(), config.listen.ip().to_string()];
                        names.extend(tls_names);
                        if config.listen.ip().is_unspecified() {
                            names.push("127.0.0.1".to_owned());
                        }
                        names.dedup();
                        Some(ca.https_server_config(&names).map_err(|e| ("INVALID_INPUT", e.to_string()))?)
                    }
                    _ => return Err((
                        "INVALID_INPUT",
                        "the API serves people over HTTPS: give --tls-cert and --tls-key, or --ca-dir for a \
                         certificate from the installation CA, or --insecure-http behind a proxy that \
                         terminates TLS"
                            .to_owned(),
                    )),
                };
            let store = open(&config).await?;
            let listener = tokio::net::TcpListener::bind(config.listen)
                .await
                .map_err(|e| ("UNAVAILABLE", format!("cannot listen on {}: {e}", config.listen)))?;
            let agents = match (agent_listen, ca.clone()) {
                (Some(addr), Some(ca)) => {
                    let addr: std::net::SocketAddr = addr.parse().map_err(|_| {
                        ("INVALID_INPUT", "--agent-listen must be an address like 127.0.0.1:7481".to_owned())
                    })?;
                    let agent_listener = tokio::net::TcpListener::bind(addr)
                        .await
                        .map_err(|e| ("UNAVAILABLE", format!("cannot listen on {addr}: {e}")))?;
                    let public_url = agent_public_url.unwrap_or_else(|| format!("https://{addr}"));
                    // The host Agents dial is named by the certificate without being asked.
                    let dialed = reqwest::Url::parse(&public_url).ok().and_then(|url| {
                        Some(url.host_str()?.trim_start_matches('[').trim_end_matches(']').to_owned())
                    });
                    let mut tls_names = vec!["localhost".to_owned(), addr.ip().to_string()];
                    tls_names.extend(agent_tls_names.into_iter().chain(dialed));
                    tls_names.dedup();
                    tracing::info!(listen = %addr, url = %public_url, "agent channel (mTLS) serving");
                    let dir = ca_dir.as_deref().unwrap_or(std::path::Path::new(".")).join("oidc");
                    let issuer = heimdall_api::oidc::Issuer::load_or_create(&dir, &issuer_url)
                        .map_err(|e| ("INVALID_INPUT", e))?;
                    tracing::info!(issuer = %issuer.url(), "job identity tokens (OIDC) issued");
                    let federation = Some(heimdall_api::federation::Federation::new(
                        std::sync::Arc::new(issuer),
                        sts_endpoint_url,
                    ));
                    let key_file =
                        ca_dir.as_deref().unwrap_or(std::path::Path::new(".")).join("notifications.key");
                    let notifications = heimdall_api::notifications::SigningKey::load_or_create(&key_file)
                        .map_err(|e| ("INVALID_INPUT", e))?;
                    Some(heimdall_api::AgentListener {
                        listener: agent_listener,
                        ca,
                        public_url,
                        tls_names,
                        federation,
                        notifications: Some(std::sync::Arc::new(notifications)),
                    })
                }
                _ => None,
            };
            tracing::info!(
                listen = %config.listen,
                https = people_tls.is_some(),
                database = %db::describe_url(config.database_url.expose()),
                "heimdall-api serving"
            );
            if let Some(ca) = &ca {
                tracing::info!(ca_sha256 = %ca.fingerprint(), "installation CA");
            }
            heimdall_api::serve_on(
                listener,
                people_tls.map(std::sync::Arc::new),
                agents,
                store,
                &config,
                shutdown_signal(),
            )
            .await
            .map_err(|e| ("INTERNAL", e.to_string()))?;
            tracing::info!("heimdall-api stopped");
            Ok(())
        }
        Command::Bootstrap { database_url, config: file, org, owner, token_file, if_absent, output } => {
            let config = config(database_url, None, file)?;
            let store = open(&config).await?;
            if let Some(path) = token_file.as_deref().filter(|path| if_absent && path.exists()) {
                let kept = heimdall_api::bootstrap::kept_token(&store, path).await;
                store.close().await;
                let (owner, org) = kept.map_err(|e| (e.code.as_str(), e.message))?;
                return match output {
                    Output::Json => print_json(&serde_json::json!({
                        "organization": org, "owner": owner, "token_file": path, "created": false,
                    })),
                    Output::Table => {
                        println!("✓ Already bootstrapped: organization {}, owner {}", org.name, owner.email);
                        println!("✓ Owner API token in {}", path.display());
                        Ok(())
                    }
                };
            }
            let token_out = token_file.as_deref().map(heimdall_api::bootstrap::TokenFile::create).transpose();
            let token_out = token_out.map_err(|e| ("INVALID_INPUT", e))?;
            let done = heimdall_api::bootstrap::bootstrap(&store, &SystemClock, &org, &owner).await;
            store.close().await;
            let done = done.map_err(|e| match (&token_out, e.code) {
                (Some(out), ErrorCode::AlreadyBootstrapped) => (
                    e.code.as_str(),
                    format!("{}; its owner's token is not in {}", e.message, out.path.display()),
                ),
                _ => (e.code.as_str(), e.message),
            })?;
            let written = token_out.map(|out| out.write(&done.token)).transpose();
            let written = written.map_err(|e| ("INTERNAL", e))?;
            let (org, owner) = (&done.organization, &done.owner);
            match (output, written) {
                (Output::Json, None) => print_json(&done)?,
                (Output::Json, Some(path)) => print_json(&serde_json::json!({
                    "organization": org, "owner": owner, "token_file": path, "created": true,
                }))?,
                (Output::Table, written) => {
                    println!("✓ Organization created: {} ({})", org.name, org.id);
                    println!("✓ Owner: {}", owner.email);
                    match written {
                        Some(path) => println!("✓ Owner API token written to {} (mode 0600)", path.display()),
                        None => println!("\nOwner API token (shown once, store it now):\n  {}\n", done.token),
                    }
                    println!(
                        "Next: heimdall login --api-url https://{} (the token on standard input)",
                        config.listen
                    );
                }
            }
            Ok(())
        }
        Command::RotateOidcKey { ca_dir } => {
            let kid = heimdall_api::oidc::rotate(&ca_dir.join("oidc")).map_err(|e| ("INVALID_INPUT", e))?;
            println!("✓ New OIDC signing key {kid}: it signs from the API's next start; the previous one stays published");
            Ok(())
        }
        Command::Openapi { document } => {
            let document = match document {
                Document::People => heimdall_api::openapi_document(),
                Document::AgentChannel => heimdall_api::agent_channel_openapi_document(),
            };
            let text = document.to_pretty_json().map_err(|e| ("INTERNAL", e.to_string()))?;
            println!("{text}");
            Ok(())
        }
        Command::Migrate { database_url, config: file } => {
            let config = config(database_url, None, file)?;
            let store = open(&config).await?;
            store.close().await;
            eprintln!("✓ migrations applied to {}", db::describe_url(config.database_url.expose()));
            Ok(())
        }
    }
}

/// What `--listen` will be, for the issuer's default URL.
fn config_listen(listen: &Option<String>) -> String {
    listen.clone().unwrap_or_else(|| "127.0.0.1:7480".to_owned())
}

fn listen_port(listen: &str) -> &str {
    listen.rsplit_once(':').map_or("7480", |(_, port)| port)
}

async fn shutdown_signal() {
    heimdall_tls::server::shutdown_signal().await;
    tracing::info!("shutting down");
}

fn print_json(value: &impl serde::Serialize) -> Result<(), (&'static str, String)> {
    println!("{}", serde_json::to_string_pretty(value).map_err(|e| ("INTERNAL", e.to_string()))?);
    Ok(())
}
