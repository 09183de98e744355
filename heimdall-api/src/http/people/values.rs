//! The API refuses secret values (docs/secrets.md, "What the API keeps, and refuses").
//!
//! The rule itself is `heimdall_wire::body`: each request body is parsed
//! once, strictly, and judged by its type's [`ValuePolicy`] in the same
//! step that decodes it ([`crate::http::extract::JsonBody`]), so the check and
//! the handler see the same bytes. This middleware covers what no body
//! type does: a body sent to a route that takes none, and query strings
//! (which reach logs): a parameter named like a value is refused on every
//! route.
//!
//! [`ValuePolicy`]: heimdall_wire::body::ValuePolicy

use std::collections::BTreeMap;

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use heimdall_core::{ApiError, ErrorCode};
use heimdall_wire::body::{decode_query, Query};

use crate::http::ErrorAnswer;

/// Any query string, judged as metadata.
#[derive(Debug, serde::Deserialize)]
#[serde(transparent)]
struct AnyQuery(#[allow(dead_code)] BTreeMap<String, String>);

impl Query for AnyQuery {}

/// Middleware: refuses bodies over `limit` bytes, a body on a route that
/// reads none (GET, HEAD, DELETE), and value-like query parameters.
pub async fn guard(limit: usize, request: Request, next: Next) -> Response {
    if let Some(query) = request.uri().query() {
        if let Err(e) = decode_query::<AnyQuery>(query) {
            return ErrorAnswer(e).into_response();
        }
    }
    let takes_no_body = matches!(*request.method(), Method::GET | Method::HEAD | Method::DELETE);
    if !takes_no_body {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match to_bytes(body, limit).await {
        Ok(b) => b,
        Err(_) => {
            return ErrorAnswer(ApiError::new(ErrorCode::PayloadTooLarge, "request body is too large"))
                .into_response();
        }
    };
    if !bytes.is_empty() {
        return ErrorAnswer(ApiError::new(
            ErrorCode::BadRequest,
            format!("{} takes no request body", parts.method),
        ))
        .into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}
