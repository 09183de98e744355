//! The answer to `GET /metrics`, the same from the API and the Agent.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::registry::Registry;

/// `registry` in the OpenMetrics text format.
pub fn scrape_response(registry: &Registry) -> Response {
    let mut text = String::new();
    if prometheus_client::encoding::text::encode(&mut text, registry).is_err() {
        return (StatusCode::INTERNAL_SERVER_ERROR, "metrics could not be encoded").into_response();
    }
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], text)
        .into_response()
}
