//! The organization's audit feed.

use axum::extract::State;
use axum::Json;
use heimdall_core::audit::service;
use heimdall_core::domain::AuditEvent;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::error::HttpResult;
use crate::http::extract::{Caller, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

errors!(ListErrors: InvalidInput);

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    limit: Option<u32>,
    /// RFC 3339; only events strictly older (for paging back).
    before: Option<String>,
    /// Prefix of the action, e.g. `member.`.
    action: Option<String>,
}

impl heimdall_wire::body::Query for ListQuery {}

#[utoipa::path(
    get,
    path = "/v1/events",
    tag = "events",
    operation_id = "list_events",
    summary = "List audit events",
    description = "The organization's audit feed, newest first: who did what, when. Filter by an action \
        prefix (e.g. `member.`) and page back with `before`. By default owners and admins may read it \
        (`event.read`).",
    params(ListQuery),
    responses((status = 200, description = "Audit events, newest first", body = Vec<heimdall_wire::schemas::AuditEvent>), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<ListQuery>,
) -> HttpResult<Json<Vec<AuditEvent>>> {
    let asked = service::Asked { limit: query.limit, before: query.before, action: query.action };
    let feed = service::list(&*state.store, &state.acting(&caller), asked).await?;
    for (kind, error) in &feed.unnamed {
        tracing::warn!(%kind, %error, "audit feed: names not looked up");
    }
    Ok(Json(feed.events))
}
