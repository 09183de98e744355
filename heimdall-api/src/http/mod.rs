//! HTTP transport: axum routes over the store and core's rules.
//!
//! Every handler follows the same order: authenticate ([`extract::Caller`]),
//! parse and validate input ([`extract::JsonBody`]), authorize with Cedar
//! ([`AppState::authorize`]), then one store call that writes the change
//! and its audit event in one transaction.

mod accounts;
pub mod agent_channel;
mod agents;
pub(crate) mod catalog;
mod certificates;
mod console_sign_in;
mod databases;
mod error;
mod event_names;
mod events;
pub(crate) mod extract;
mod jobs;
mod members;
mod notifications;
pub(crate) mod openapi;
mod policies;
mod program_writes;
pub(crate) mod resources;
mod schemas;
mod secrets;
pub(crate) mod tokens;
mod values;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::{Json, Router};
use heimdall_core::audit::AuditAction;
use heimdall_core::authz::{decide, Action, Decision, ManyDecisions, OrgPolicies, Principal, Target};
use heimdall_core::clock::Clock;
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{EventId, OrgId};
use heimdall_core::ports::{NewEvent, Store};
use heimdall_core::wire::{CaCertificate, Health, WhoAmI};
use heimdall_core::{ApiError, ErrorCode};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

pub use error::HttpError;
use extract::Caller;
use openapi::errors;

#[derive(Clone, Debug)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    /// Woken whenever this process queues a job, so waiting claims return
    /// at once instead of on their next re-check.
    pub jobs_queued: Arc<tokio::sync::Notify>,
    /// Woken whenever this process sees a job claimed or ended, so a
    /// long poll on a Resource answers at once.
    pub jobs_moved: Arc<tokio::sync::Notify>,
    /// The installation CA, when the Agent listener is configured.
    pub ca: Option<Arc<crate::pki::Ca>>,
    /// Where Agents dial (told to them at enrollment).
    pub agent_api_url: Option<String>,
    /// The names in the API's own certificates: never signed for an Agent.
    pub api_names: Vec<String>,
    /// The OIDC issuer and STS, for jobs of `oidc` accounts.
    pub federation: Option<crate::federation::Federation>,
    /// The key notification channels' secrets derive from (beside the CA).
    pub notifications: Option<Arc<crate::notifications::SigningKey>>,
    /// An Agent not seen for longer may never sync again (`heimdall_core::deletion`).
    pub agent_stale_after: time::Duration,
    /// Counted and served on `--metrics-listen`; `None` when that is off.
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Each organization's policies, compiled once per change.
    pub policies: Arc<crate::policy_cache::PolicyCache>,
    /// How often a waiting claim re-checks the queue unwoken.
    pub claim_recheck: std::time::Duration,
}

impl AppState {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            jobs_queued: Arc::new(tokio::sync::Notify::new()),
            jobs_moved: Arc::new(tokio::sync::Notify::new()),
            ca: None,
            agent_api_url: None,
            api_names: Vec::new(),
            federation: None,
            notifications: None,
            agent_stale_after: heimdall_core::deletion::STALE_AFTER,
            metrics: None,
            policies: Arc::default(),
            claim_recheck: std::time::Duration::from_secs(1),
        }
    }

    /// The caller and the organization's policies as stored right now (so
    /// a new policy applies from the next request), ready to decide.
    pub async fn decider(&self, caller: &Caller) -> Result<Decider, ApiError> {
        let policies = self.org_policies(caller.org.id).await?;
        let principal = Principal {
            org: caller.org.id,
            id: caller.member.id,
            email: caller.member.email.clone(),
            role: caller.member.role,
        };
        Ok(Decider { principal, policies })
    }

    /// The organization's policies as stored right now, compiled (once per
    /// policy version).
    pub async fn org_policies(&self, org: OrgId) -> Result<Arc<OrgPolicies>, ApiError> {
        // The version first, then the policies: see `PolicyCache::compile`.
        let version = self.store.policy_version(org).await?;
        if let Some(policies) = self.policies.at_version(org, version) {
            return Ok(policies);
        }
        let stored = self.store.list_policies(org).await?;
        self.policies.compile(org, version, &stored).map_err(|(id, err)| {
            // Fail closed: a policy that no longer compiles denies everything.
            tracing::error!(policy = %id, error = %err, "stored policy does not compile");
            ApiError::new(
                ErrorCode::Internal,
                format!("stored policy {id} no longer compiles; an owner must delete it"),
            )
        })
    }

    /// Decides one action with the role defaults and the organization's
    /// policies; refused is `FORBIDDEN`.
    pub async fn authorize(
        &self,
        caller: &Caller,
        action: Action,
        target: &Target,
        environment: Option<&str>,
    ) -> Result<(), ApiError> {
        self.decider(caller).await?.require(action, target, environment)
    }

    /// An audit event by `caller`, stamped now.
    pub fn event(
        &self,
        caller: &Caller,
        action: AuditAction,
        target: String,
        detail: serde_json::Value,
    ) -> NewEvent {
        self.event_as(&caller.member.email, action, target, detail)
    }

    /// [`Self::event`] by an actor that is no member (the drift schedule).
    pub fn event_as(
        &self,
        actor: &str,
        action: AuditAction,
        target: String,
        detail: serde_json::Value,
    ) -> NewEvent {
        NewEvent {
            id: EventId::from_uuid(Uuid::new_v4()),
            at: self.clock.now(),
            actor: actor.to_owned(),
            action,
            target,
            detail,
        }
    }
}

/// One request's principal and policies, for handlers that decide more
/// than once (per environment, per item of a list).
#[derive(Debug)]
pub struct Decider {
    principal: Principal,
    policies: Arc<OrgPolicies>,
}

impl Decider {
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    pub fn policies(&self) -> &OrgPolicies {
        &self.policies
    }

    pub fn decide(&self, action: Action, target: &Target, environment: Option<&str>) -> Decision {
        decide(&self.principal, action, target, environment, &self.policies)
    }

    /// For deciding `action` over the items of a list: each distinct
    /// shape of item is evaluated once (`heimdall_core::authz::ManyDecisions`).
    pub fn many(&self, action: Action) -> ManyDecisions<'_> {
        ManyDecisions::new(&self.principal, action, &self.policies)
    }

    pub fn require(
        &self,
        action: Action,
        target: &Target,
        environment: Option<&str>,
    ) -> Result<(), ApiError> {
        match self.decide(action, target, environment) {
            Decision::Allow => Ok(()),
            Decision::NotPermitted => Err(ApiError::forbidden(format!(
                "your role ({}) does not permit {action}",
                self.principal.role
            ))),
            Decision::ForbiddenBy(ids) => {
                Err(ApiError::forbidden(format!("{action} is forbidden by policy {}", ids.join(", "))))
            }
        }
    }

    /// The environments among `environments` where `action` is allowed
    /// (see `authz::allowed_environments`).
    pub fn allowed_environments<'a>(
        &self,
        action: Action,
        target: &Target,
        environments: impl IntoIterator<Item = &'a str>,
    ) -> Vec<&'a str> {
        heimdall_core::authz::allowed_environments(
            &self.principal,
            action,
            target,
            environments,
            &self.policies,
        )
    }
}

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
) -> Result<Json<serde_json::Value>, HttpError> {
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
) -> Result<Json<serde_json::Value>, HttpError> {
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
) -> Result<Json<CaCertificate>, HttpError> {
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

/// `?limit=&after=` of a short list: one the API reads whole and cuts
/// into pages ([`short_page`]).
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// At most this many (default 100, at most 1000).
    pub(crate) limit: Option<u32>,
    /// The `Heimdall-Next-After` of the previous page.
    pub(crate) after: Option<String>,
}

impl heimdall_core::body::Query for PageQuery {}

/// The page of a short list after `after`, in the order of `key` (which
/// tells any two entries apart), and its `Heimdall-Next-After`. The list
/// is read whole: these lists are an organization's members, tokens,
/// policies, schemas, accounts, Agents, databases and catalog, not its
/// data.
pub(crate) fn short_page<T>(
    items: Vec<T>,
    limit: Option<u32>,
    after: Option<&str>,
    key: impl Fn(&T) -> Vec<String>,
) -> Result<(axum::http::HeaderMap, Vec<T>), ApiError> {
    let limit = heimdall_core::page::limit(limit)?;
    let after = after.map(heimdall_core::page::decode::<heimdall_core::page::KeyCursor>).transpose()?;
    let (items, next) = heimdall_core::page::cut(items, key, after.as_ref(), limit);
    Ok((next_after(next.map(|n| heimdall_core::page::encode(&n))), items))
}

/// The `Heimdall-Next-After` header of a page, when another follows.
fn next_after(cursor: Option<String>) -> axum::http::HeaderMap {
    let mut headers = axum::http::HeaderMap::new();
    if let Some(value) = cursor.and_then(|c| axum::http::HeaderValue::from_str(&c).ok()) {
        headers.insert(heimdall_core::page::NEXT_AFTER, value);
    }
    headers
}

/// A count or a time as a sort key: zero-padded, so that text order is
/// number order (for 0 and up; these never go below).
pub(crate) fn sort_number(n: i64) -> String {
    format!("{:020}", n.max(0))
}

/// A time as a sort key, oldest first (to the microsecond, as stored).
pub(crate) fn sort_time(t: time::OffsetDateTime) -> String {
    sort_number(i64::try_from(t.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX))
}

/// A time as a sort key, newest first.
pub(crate) fn sort_time_newest_first(t: time::OffsetDateTime) -> String {
    let micros = i64::try_from(t.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX);
    sort_number(i64::MAX - micros.max(0))
}

/// Most chunks one page reads: where a `forbid` hides nearly everything, a
/// page stops short (with where to go on) rather than read the whole list.
pub(crate) const MAX_CHUNKS: usize = 20;

/// A page of what the caller may see: reads chunks of `limit + 1` from
/// `fetch` (each after the last entry read), keeps those `allowed`, until
/// one more than `limit` is kept (so there is a next page) or the list
/// ends; hidden entries never leave a short page, unless [`MAX_CHUNKS`]
/// were read: then it ends short, its `Heimdall-Next-After` at the last
/// entry read. Answers the page and that header (see [`page`]).
pub(crate) async fn visible_page<T, C, Fut>(
    limit: u32,
    mut after: Option<C>,
    mut fetch: impl FnMut(Option<C>, u32) -> Fut,
    mut allowed: impl FnMut(&T) -> bool,
    cursor: impl Fn(&T) -> C,
) -> Result<(axum::http::HeaderMap, Vec<T>), ApiError>
where
    C: serde::Serialize,
    Fut: std::future::Future<Output = Result<Vec<T>, heimdall_core::ports::StoreError>>,
{
    let wanted = limit.saturating_add(1);
    let enough = usize::try_from(wanted).unwrap_or(usize::MAX);
    let mut kept = Vec::new();
    for chunks in 1.. {
        let chunk = fetch(after.take(), wanted).await?;
        let read = chunk.len();
        after = chunk.last().map(&cursor);
        kept.extend(chunk.into_iter().filter(|e| allowed(e)));
        if kept.len() >= enough || read < enough {
            break;
        }
        if chunks >= MAX_CHUNKS {
            // Short, and more to read: go on after the last entry read.
            let next = after.as_ref().map(heimdall_core::page::encode);
            return Ok((next_after(next), kept));
        }
    }
    let headers = page(&mut kept, limit, |last| heimdall_core::page::encode(&cursor(last)));
    Ok((headers, kept))
}

/// Ends a page: keeps `limit` of `items` (fetched one more than asked, to
/// know) and, when there were more, names where the next page starts.
pub(crate) fn page<T>(
    items: &mut Vec<T>,
    limit: u32,
    cursor: impl Fn(&T) -> String,
) -> axum::http::HeaderMap {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if items.len() <= limit {
        return axum::http::HeaderMap::new();
    }
    items.truncate(limit);
    next_after(items.last().map(cursor))
}

async fn not_found() -> HttpError {
    HttpError(ApiError::new(ErrorCode::NotFound, "no such route"))
}
