//! The people-facing API: members, the catalog, secrets' metadata,
//! Resources and what a platform team registers, each route with its
//! OpenAPI document. Handlers parse, call core's rules and one store call.

pub(crate) mod accounts;
pub(crate) mod agents;
pub(crate) mod catalog;
pub(crate) mod certificates;
pub(crate) mod console_sign_in;
pub(crate) mod databases;
pub(crate) mod events;
pub(crate) mod jobs;
pub(crate) mod members;
pub(crate) mod notifications;
pub(crate) mod policies;
pub(crate) mod resources;
pub(crate) mod schemas;
pub(crate) mod secrets;
pub(crate) mod tokens;
pub(crate) mod values;

use axum::extract::DefaultBodyLimit;
use axum::{Json, Router};
use heimdall_core::domain::CatalogKind;
use heimdall_core::{ApiError, ErrorCode};
use heimdall_wire::{CaCertificate, Health, WhoAmI};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::Caller;
use super::openapi::{self, errors};
use super::{AppState, ErrorAnswer};

/// Every people-facing route, each with its document.
pub(crate) fn document() -> OpenApiRouter<AppState> {
    let mut app = OpenApiRouter::with_openapi(openapi::PeopleApi::openapi())
        .routes(routes!(openapi_json))
        .routes(routes!(health))
        .routes(routes!(oidc_discovery))
        .routes(routes!(oidc_jwks))
        .routes(routes!(ca))
        .routes(routes!(whoami))
        .merge(members::routes())
        .merge(tokens::routes())
        .merge(console_sign_in::routes())
        .merge(certificates::routes())
        .merge(policies::routes())
        .merge(events::routes())
        .merge(notifications::routes())
        .merge(schemas::routes())
        .merge(accounts::routes())
        .merge(resources::routes())
        .merge(agents::routes())
        .merge(secrets::routes())
        .merge(databases::routes())
        .merge(jobs::routes());
    for kind in CatalogKind::ALL {
        app = app.merge(catalog::routes(kind));
    }
    app
}

/// The people-facing OpenAPI document, as `GET /v1/openapi.json` serves it.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    document().split_for_parts().1
}

pub fn router(state: AppState, max_body_bytes: usize) -> Router {
    let (app, _) = document().split_for_parts();
    let app = app.merge(crate::console::router());
    crate::metrics::layer(app, "people", state.metrics.clone())
        .fallback(not_found)
        .method_not_allowed_fallback(not_found)
        .layer(axum::middleware::from_fn(move |req, next| values::guard(max_body_bytes, req, next)))
        .layer(DefaultBodyLimit::max(max_body_bytes))
        // The span names the path, never the query string.
        .layer(TraceLayer::new_for_http().make_span_with(|req: &axum::extract::Request| {
            tracing::debug_span!("request", method = %req.method(), path = %req.uri().path())
        }))
        .with_state(state)
}

/// The issuer's discovery document and keys: public, as an issuer's must
/// be (a cloud fetches them to verify job tokens). 404 without an issuer.
#[utoipa::path(get, path = heimdall_core::oidc::DISCOVERY_PATH, tag = "oidc", operation_id = "get_oidc_discovery",
    summary = "Get the job-token issuer's OpenID configuration",
    description = "The OpenID discovery document of the issuer that signs job tokens, public as an issuer's \
        must be: a cloud fetches it to verify the tokens jobs present. `NOT_FOUND` when this API runs \
        without an issuer.",
    security(()),
    responses((status = 200, description = "The job-token issuer's OpenID discovery document", body = Object), PublicNotFound))]
async fn oidc_discovery(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> Result<Json<serde_json::Value>, ErrorAnswer> {
    let federation = state.federation.as_ref().ok_or_else(|| ApiError::not_found("OIDC issuer"))?;
    Ok(Json(federation.issuer.discovery()))
}

#[utoipa::path(get, path = heimdall_core::oidc::JWKS_PATH, tag = "oidc", operation_id = "get_oidc_jwks",
    summary = "Get the job-token issuer's signing keys",
    description = "The public keys (JWKS) that verify job tokens, public so that a cloud can fetch them. \
        `NOT_FOUND` when this API runs without an issuer.",
    security(()),
    responses((status = 200, description = "The issuer's public signing keys (JWKS)", body = Object), PublicNotFound))]
async fn oidc_jwks(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> Result<Json<serde_json::Value>, ErrorAnswer> {
    let federation = state.federation.as_ref().ok_or_else(|| ApiError::not_found("OIDC issuer"))?;
    Ok(Json(federation.issuer.jwks()))
}

#[utoipa::path(get, path = "/v1/openapi.json", tag = "health", operation_id = "get_openapi_document",
    summary = "Get this API's OpenAPI document",
    description = "This document (OpenAPI 3.1), describing every operation of the people-facing API. No \
        token is needed.",
    security(()),
    responses((status = 200, description = "This document (OpenAPI 3.1)", body = Object), PublicErrors))]
async fn openapi_json() -> axum::response::Response {
    static DOCUMENT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    openapi::serve(DOCUMENT.get_or_init(|| openapi::to_json(&openapi_document())))
}

#[utoipa::path(get, path = "/v1/health", tag = "health", operation_id = "get_health",
    summary = "Check that the API is up",
    description = "Answers `ok` and the API's version when the API is up. No token is needed.",
    security(()),
    responses((status = 200, description = "The API is up", body = Health), PublicErrors))]
async fn health() -> Json<Health> {
    Json(Health { status: "ok".into(), version: env!("CARGO_PKG_VERSION").into() })
}

/// The installation CA (public), for clients that pinned its fingerprint.
#[utoipa::path(get, path = "/v1/ca", tag = "health", operation_id = "get_installation_ca",
    summary = "Get the installation CA certificate",
    description = "The installation CA's certificate (public) and its SHA-256 fingerprint, for clients that \
        pinned the fingerprint. No token is needed; `NOT_FOUND` when this API runs without a CA.",
    security(()),
    responses((status = 200, description = "The installation CA certificate (public)", body = CaCertificate), PublicNotFound))]
async fn ca(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> Result<Json<CaCertificate>, ErrorAnswer> {
    let ca = state
        .ca
        .as_ref()
        .ok_or_else(|| ApiError::not_found("installation CA (this API runs without --ca-dir)"))?;
    Ok(Json(CaCertificate { certificate: ca.cert_pem().to_owned(), sha256: ca.fingerprint() }))
}

#[utoipa::path(get, path = "/v1/whoami", tag = "members", operation_id = "whoami",
    summary = "Show who you are signed in as",
    description = "The member the API token belongs to, with their role, and their organization. Any valid \
        token may ask.",
    responses((status = 200, description = "The caller and their organization", body = WhoAmI), SignedInErrors))]
async fn whoami(caller: Caller) -> Json<WhoAmI> {
    Json(WhoAmI { member: caller.member, organization: caller.org })
}

errors!(public PublicErrors);
errors!(public PublicNotFound: NotFound);
errors!(SignedInErrors);

async fn not_found() -> ErrorAnswer {
    ErrorAnswer(ApiError::new(ErrorCode::NotFound, "no such route"))
}
