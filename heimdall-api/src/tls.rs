//! The Agent listener: rustls verifies the client certificate against the
//! installation CA; the Agent's identity is read from that verified
//! certificate (its URI SAN) and attached to every request of the
//! connection. A certificate that names no Agent is closed at once.

use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;

use crate::http::agent_channel::PeerAgent;
use crate::pki::agent_identity;

pub(crate) async fn serve_mtls(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    app: Router,
    limits: heimdall_tls::server::Limits,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let admit = |certs: Option<&[rustls::pki_types::CertificateDer<'static>]>, _remote| {
        let (id, cert_sha256) = certs.and_then(|c| c.first()).and_then(agent_identity)?;
        Some(PeerAgent { id, cert_sha256 })
    };
    heimdall_tls::server::serve(listener, Some(config), admit, app, limits, shutdown).await;
}
