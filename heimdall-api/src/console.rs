//! The web Console: static assets built from `console/` (Vite; `bash
//! scripts/console.sh build`) and embedded in the binary, served under
//! `/console`. Not API routes (so not in the OpenAPI document): the
//! Console is a page whose script calls the documented `/v1` routes with
//! the token the person pastes. Nothing is fetched from elsewhere, which the
//! Content-Security-Policy on every answer enforces.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

const INDEX_HTML: &str = include_str!("../console/dist/index.html");
const CONSOLE_JS: &str = include_str!("../console/dist/console.js");
const CONSOLE_CSS: &str = include_str!("../console/dist/console.css");

/// The policy of every Console answer: its own script and style only, API
/// calls to its own origin only, no frames, no forms posted anywhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `GET /` and `/console` (redirects to `/console/`), `/console/`,
/// `/console/index.html`, `/console/console.js` and `/console/console.css`.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(redirect))
        .route("/console", get(redirect))
        .route("/console/", get(index))
        .route("/console/index.html", get(index))
        .route("/console/console.js", get(script))
        .route("/console/console.css", get(style))
}

async fn redirect() -> Response {
    answer(StatusCode::PERMANENT_REDIRECT, "text/plain; charset=utf-8", "", Some("/console/"))
}

async fn index() -> Response {
    answer(StatusCode::OK, "text/html; charset=utf-8", INDEX_HTML, None)
}

async fn script() -> Response {
    answer(StatusCode::OK, "text/javascript; charset=utf-8", CONSOLE_JS, None)
}

async fn style() -> Response {
    answer(StatusCode::OK, "text/css; charset=utf-8", CONSOLE_CSS, None)
}

fn answer(
    status: StatusCode,
    content_type: &'static str,
    body: &'static str,
    location: Option<&'static str>,
) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if let Some(location) = location {
        headers.insert(header::LOCATION, HeaderValue::from_static(location));
    }
    response
}
