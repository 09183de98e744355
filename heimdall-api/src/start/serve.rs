//! `heimdall-api serve`: the people's listener, and the Agent channel when
//! the installation CA is given.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use heimdall_core::{ApiError, ErrorCode};

use super::{config, internal, open, ServeArgs};
use crate::config::ServeConfig;
use crate::{db, federation, notifications, oidc, pki, AgentListener};

pub(super) async fn serve(args: ServeArgs) -> Result<(), ApiError> {
    let listen_text = args.listen.clone().unwrap_or_else(|| "127.0.0.1:7480".to_owned());
    let issuer_url = args.oidc_issuer_url.clone().unwrap_or_else(|| match args.tls_names.first() {
        Some(name) => format!("https://{name}:{}", listen_port(&listen_text)),
        None => format!("https://{listen_text}"),
    });
    let mut config = config(args.database_url.clone(), args.listen.clone(), args.config.clone())?;
    if let Some(text) = &args.metrics_listen {
        config.metrics_listen = Some(crate::config::parse_metrics_listen(text)?);
    }
    // The CA first: both listeners may need it.
    let ca = match &args.ca_dir {
        Some(dir) => Some(Arc::new(pki::Ca::load_or_create(dir).map_err(invalid)?)),
        None => None,
    };
    let people_tls = people_tls(&args, &config, ca.as_deref())?;
    let store = open(&config).await?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| unavailable(format!("cannot listen on {}: {e}", config.listen)))?;
    let agents = match (&args.agent_listen, ca.clone()) {
        (Some(addr), Some(ca)) => Some(agent_listener(&args, addr, ca, &issuer_url).await?),
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
    crate::serve_on(listener, people_tls.map(Arc::new), agents, store, &config, shutdown_signal())
        .await
        .map_err(internal)?;
    tracing::info!("heimdall-api stopped");
    Ok(())
}

/// How people are served: a certificate from files, one from the
/// installation CA, or plain HTTP behind a proxy when asked for by name.
fn people_tls(
    args: &ServeArgs,
    config: &ServeConfig,
    ca: Option<&pki::Ca>,
) -> Result<Option<rustls::ServerConfig>, ApiError> {
    match (&args.tls_cert, &args.tls_key, ca, args.insecure_http) {
        (_, _, _, true) => {
            tracing::warn!(
                "serving people plain HTTP (--insecure-http): put a TLS-terminating proxy in front"
            );
            Ok(None)
        }
        (Some(cert), Some(key), _, false) => {
            Ok(Some(pki::server_config_from_files(cert, key).map_err(invalid)?))
        }
        (_, _, Some(ca), false) => {
            let mut names = vec!["localhost".to_owned(), config.listen.ip().to_string()];
            names.extend(args.tls_names.iter().cloned());
            if config.listen.ip().is_unspecified() {
                names.push("127.0.0.1".to_owned());
            }
            names.dedup();
            Ok(Some(ca.https_server_config(&names).map_err(invalid)?))
        }
        _ => Err(ApiError::invalid_input(
            "the API serves people over HTTPS: give --tls-cert and --tls-key, or --ca-dir for a certificate \
             from the installation CA, or --insecure-http behind a proxy that terminates TLS",
        )),
    }
}

/// The Agent channel's listener, with the keys kept beside the CA: job
/// identity tokens (OIDC) and notification signatures.
async fn agent_listener(
    args: &ServeArgs,
    addr: &str,
    ca: Arc<pki::Ca>,
    issuer_url: &str,
) -> Result<AgentListener, ApiError> {
    let addr: SocketAddr = addr
        .parse()
        .map_err(|_| ApiError::invalid_input("--agent-listen must be an address like 127.0.0.1:7481"))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| unavailable(format!("cannot listen on {addr}: {e}")))?;
    let public_url = args.agent_public_url.clone().unwrap_or_else(|| format!("https://{addr}"));
    // The host Agents dial is named by the certificate without being asked.
    let dialed = reqwest::Url::parse(&public_url)
        .ok()
        .and_then(|url| Some(url.host_str()?.trim_start_matches('[').trim_end_matches(']').to_owned()));
    let mut tls_names = vec!["localhost".to_owned(), addr.ip().to_string()];
    tls_names.extend(args.agent_tls_names.iter().cloned().chain(dialed));
    tls_names.dedup();
    tracing::info!(listen = %addr, url = %public_url, "agent channel (mTLS) serving");
    let dir = args.ca_dir.as_deref().unwrap_or(Path::new("."));
    let issuer = oidc::Issuer::load_or_create(&dir.join("oidc"), issuer_url)?;
    tracing::info!(issuer = %issuer.url(), "job identity tokens (OIDC) issued");
    let federation = Some(federation::Federation::new(Arc::new(issuer), args.sts_endpoint_url.clone()));
    let notifications = notifications::SigningKey::load_or_create(&dir.join("notifications.key"))?;
    Ok(AgentListener {
        listener,
        ca,
        public_url,
        tls_names,
        federation,
        notifications: Some(Arc::new(notifications)),
    })
}

fn listen_port(listen: &str) -> &str {
    listen.rsplit_once(':').map_or("7480", |(_, port)| port)
}

async fn shutdown_signal() {
    heimdall_tls::server::shutdown_signal().await;
    tracing::info!("shutting down");
}

fn invalid(e: impl std::fmt::Display) -> ApiError {
    ApiError::invalid_input(e.to_string())
}

fn unavailable(message: String) -> ApiError {
    ApiError::new(ErrorCode::Unavailable, message)
}
