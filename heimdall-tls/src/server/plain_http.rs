//! Plain HTTP sent to a TLS port. A TLS handshake starts with the record
//! type 0x16; an HTTP/1 request starts with its method's capital letter.
//! Such a client gets `400` with the one error body naming the `https://`
//! address, so `curl http://…` and an SDK pointed at `http://` both say
//! what to change rather than "invalid HTTP version" or nothing at all.

use std::time::Duration;

use heimdall_core::{ApiError, ErrorCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The most of a plain request head read before answering: enough for
/// any real one; the rest is drained, never parsed.
const HEAD_LIMIT: usize = 8 * 1024;
/// How long the client gets to send its head, and later to close.
const LINGER: Duration = Duration::from_secs(1);

/// Whether the client on `tcp` spoke plain HTTP; if it did, it has been
/// answered and the connection is done. Waits at most `wait` for a first
/// byte; anything else (a TLS handshake, silence, a closed socket) is left
/// to the TLS acceptor unread.
pub async fn answered(tcp: &mut TcpStream, wait: Duration) -> bool {
    let mut first = [0u8; 1];
    match tokio::time::timeout(wait, tcp.peek(&mut first)).await {
        Ok(Ok(1)) if is_plain_http(first[0]) => {}
        _ => return false,
    }
    // Read the head first: closing a socket with unread bytes resets it,
    // and a reset can reach the client before the answer does.
    let mut head = Vec::with_capacity(1024);
    let _ = tokio::time::timeout(LINGER, async {
        let mut buf = [0u8; 1024];
        while head.len() < HEAD_LIMIT && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let address = tcp.local_addr().map_or_else(|_| "this host".to_owned(), |a| a.to_string());
    let _ = tcp.write_all(&answer(&address)).await;
    let _ = tcp.shutdown().await;
    // Wait for the client to close after reading (`Connection: close`).
    let _ = tokio::time::timeout(LINGER, async {
        let mut buf = [0u8; 1024];
        while matches!(tcp.read(&mut buf).await, Ok(n) if n > 0) {}
    })
    .await;
    true
}

/// The first byte of an HTTP/1 request line: a method is a token, and
/// every standard one is capital letters. TLS records start below 0x20.
pub fn is_plain_http(first: u8) -> bool {
    first.is_ascii_uppercase()
}

/// The whole answer: a 400 with the one error body. The address is the
/// socket's own (never the request's `Host`: nothing the client sent is
/// echoed).
pub fn answer(address: &str) -> Vec<u8> {
    let error = ApiError::new(
        ErrorCode::BadRequest,
        format!(
            "this address speaks HTTPS, not plain HTTP: use https://{address}/ \
             (trusting the installation's CA: curl --cacert, or heimdall login --ca-sha256)"
        ),
    );
    let body = serde_json::to_vec(&heimdall_wire::ErrorBody { error }).unwrap_or_default();
    let mut out = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tls_client_hello_is_not_mistaken_for_http() {
        assert!(!is_plain_http(0x16));
        for method in [b'G', b'P', b'H', b'D', b'O', b'C'] {
            assert!(is_plain_http(method));
        }
    }
}
