//! The accept loop both servers run (the API's people and Agent listeners,
//! the Agent's local API): TLS (or, where the operator chose it, plain
//! HTTP), with the limits a server facing a network needs.
//!
//! - A connection that has not finished its TLS handshake within
//!   [`Limits::handshake`] is closed.
//! - A connection that has not sent a whole request head within
//!   [`Limits::header_read`] of connecting or of its last response is
//!   closed (slow or idle clients cannot hold a connection open).
//! - At most [`Limits::max_connections`] connections are served at once;
//!   further ones wait in the listen backlog.
//! - On shutdown the loop stops accepting, tells every connection to close
//!   after its request in flight, and waits up to [`Limits::shutdown_grace`].
//!
//! - A client that speaks plain HTTP to a TLS port gets a readable 400
//!   naming the `https://` address instead of TLS bytes it cannot read
//!   ([`plain_http`]).
//!
//! Each request carries the connection's `ConnectInfo<SocketAddr>` and the
//! peer value `admit` made from the client's verified certificate chain; a
//! connection `admit` refuses is closed before any request is read.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::CertificateDer;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

pub mod plain_http;

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub handshake: Duration,
    pub header_read: Duration,
    pub max_connections: usize,
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            handshake: Duration::from_secs(10),
            header_read: Duration::from_secs(30),
            max_connections: 1024,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, over TLS with
/// `tls` (or plain HTTP with `None`).
pub async fn serve<P, A>(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    admit: A,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) where
    P: Clone + Send + Sync + 'static,
    A: Fn(Option<&[CertificateDer<'static>]>, SocketAddr) -> Option<P> + Clone + Send + Sync + 'static,
{
    let acceptor = tls.map(TlsAcceptor::from);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = async {
                // A slot first: past the cap, connections wait in the backlog.
                let slot = slots.clone().acquire_owned().await;
                (slot, listener.accept().await)
            } => accepted,
        };
        let (Ok(slot), accepted) = accepted else { break };
        let (tcp, remote) = match accepted {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let (acceptor, admit, app, watcher) =
            (acceptor.clone(), admit.clone(), app.clone(), graceful.watcher());
        tokio::spawn(async move {
            let _slot = slot;
            // HTTP/1.1 only (what the listeners offer in ALPN): its
            // header timeout runs from the connection's first byte, where
            // the auto-detecting builder would wait for a preface untimed.
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new()).header_read_timeout(limits.header_read);
            let service = |peer: P| {
                app.map_request(move |mut req: axum::extract::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(ConnectInfo(remote));
                    req.extensions_mut().insert(peer.clone());
                    req.map(axum::body::Body::new)
                })
            };
            let result = match acceptor {
                Some(acceptor) => {
                    let mut tcp = tcp;
                    if plain_http::answered(&mut tcp, limits.handshake).await {
                        tracing::info!(%remote, "plain HTTP on a TLS port: answered with the https:// address");
                        return;
                    }
                    let tls = match tokio::time::timeout(limits.handshake, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => tls,
                        Ok(Err(e)) => {
                            tracing::info!(%remote, error = %e, "TLS handshake refused");
                            return;
                        }
                        Err(_) => {
                            tracing::info!(%remote, "TLS handshake timed out");
                            return;
                        }
                    };
                    let Some(peer) = admit(tls.get_ref().1.peer_certificates(), remote) else {
                        tracing::info!(%remote, "client certificate refused");
                        return;
                    };
                    let conn =
                        http.serve_connection(TokioIo::new(tls), TowerToHyperService::new(service(peer)));
                    watcher.watch(conn).await
                }
                None => {
                    let Some(peer) = admit(None, remote) else { return };
                    let conn =
                        http.serve_connection(TokioIo::new(tcp), TowerToHyperService::new(service(peer)));
                    watcher.watch(conn).await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%remote, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown()).await.is_err() {
        tracing::warn!(grace = ?limits.shutdown_grace, "connections still open after the grace period; closing them");
    }
}

/// Query-string parameters, judged by the type's value policy
/// (`heimdall_wire::body::decode_query`): strict, with errors that never
/// echo what was sent, in the one error body (axum's own `Query` answers
/// plain text).
#[derive(Debug)]
pub struct QueryParams<T>(pub T);

impl<S, T> axum::extract::FromRequestParts<S> for QueryParams<T>
where
    S: Send + Sync,
    T: heimdall_wire::body::Query,
{
    type Rejection = axum::response::Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        heimdall_wire::body::decode_query(query).map(QueryParams).map_err(error_response)
    }
}

/// The answer for an error, the same from both servers: the status from
/// core's one table, `{"error": {...}}`, and internal detail only in the
/// log (`ApiError::into_public`).
pub fn error_response(err: heimdall_core::ApiError) -> axum::response::Response {
    use axum::response::IntoResponse;
    let status = axum::http::StatusCode::from_u16(err.http_status())
        .unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
    let code = err.code;
    let (public, detail) = err.into_public();
    if status.is_server_error() {
        tracing::error!(%code, detail = detail.as_deref().unwrap_or(&public.message), "request failed");
    }
    (status, axum::Json(heimdall_wire::ErrorBody { error: public })).into_response()
}

/// An error as both servers answer it ([`error_response`]): the one type
/// their handlers return for a refusal.
#[derive(Debug)]
pub struct ErrorAnswer(pub heimdall_core::ApiError);

impl From<heimdall_core::ApiError> for ErrorAnswer {
    fn from(err: heimdall_core::ApiError) -> Self {
        Self(err)
    }
}

impl From<heimdall_core::ports::StoreError> for ErrorAnswer {
    fn from(err: heimdall_core::ports::StoreError) -> Self {
        Self(err.into())
    }
}

impl axum::response::IntoResponse for ErrorAnswer {
    fn into_response(self) -> axum::response::Response {
        error_response(self.0)
    }
}

/// SIGTERM or Ctrl-C: when both servers start shutting down.
pub async fn shutdown_signal() {
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
