//! The mTLS accept loop: rustls verifies the client certificate against
//! the installation CA; the Agent's identity is read from that verified
//! certificate and attached to every request of the connection.

use std::sync::Arc;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use crate::http::agent_channel::PeerAgent;
use crate::pki::agent_identity;

pub(crate) async fn serve_mtls(listener: TcpListener, config: Arc<rustls::ServerConfig>, app: Router) {
    let acceptor = TlsAcceptor::from(config);
    loop {
        let (tcp, remote) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(error = %e, "agent listener accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let app = app.clone();
        tokio::spawn(async move {
            let tls = match acceptor.accept(tcp).await {
                Ok(tls) => tls,
                Err(e) => {
                    // No or untrusted client certificate: the handshake fails here.
                    tracing::info!(%remote, error = %e, "agent TLS handshake refused");
                    return;
                }
            };
            let identity =
                tls.get_ref().1.peer_certificates().and_then(|certs| certs.first()).and_then(agent_identity);
            let Some((id, cert_sha256)) = identity else {
                tracing::info!(%remote, "client certificate names no Agent");
                return;
            };
            let peer = PeerAgent { id, cert_sha256 };
            let service = app.map_request(move |mut req: axum::extract::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(peer.clone());
                req.map(axum::body::Body::new)
            });
            let result = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), TowerToHyperService::new(service))
                .await;
            if let Err(e) = result {
                tracing::debug!(%remote, error = %e, "agent connection ended with an error");
            }
        });
    }
}
