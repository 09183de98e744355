//! Jobs and their logs, read-only for people.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use heimdall_core::authz::{Action, Target};
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{JobId, ResourceId};
use heimdall_core::infra::Job;
use heimdall_core::ports::ResourceFilter;
use heimdall_core::wire::JobLog;
use heimdall_core::ApiError;
use serde::Deserialize;

use super::catalog::resolve as resolve_catalog;
use super::error::HttpResult;
use super::extract::{Caller, QueryParams};
use super::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/jobs", get(list))
        .route("/v1/jobs/{id}", get(show))
        .route("/v1/jobs/{id}/log", get(log))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    component: Option<String>,
    resource: Option<String>,
}

impl heimdall_core::body::Query for ListQuery {}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<ListQuery>,
) -> HttpResult<Json<Vec<Job>>> {
    state.authorize(&caller, Action::JobRead, &Target::organization(caller.org.id), None).await?;
    let resource = match q.resource {
        Some(key) => Some(super::resources::resolve(&state, &caller, &key).await?),
        None => None,
    };
    let mut jobs = state.store.list_jobs(caller.org.id, resource.as_ref().map(|r| r.id)).await?;
    if let Some(component) = q.component {
        let component = resolve_catalog(&state, &caller, CatalogKind::Component, &component).await?;
        if resource.as_ref().is_some_and(|r| r.component_id != component.id) {
            return Err(ApiError::not_found("resource in that component").into());
        }
        let filter = ResourceFilter { component: Some(component.id), ..Default::default() };
        let ids: Vec<ResourceId> =
            state.store.list_resources(caller.org.id, &filter).await?.iter().map(|r| r.id).collect();
        jobs.retain(|j| ids.contains(&j.resource_id));
    }
    Ok(Json(jobs))
}

fn parse_id(raw: &str) -> Result<JobId, ApiError> {
    raw.parse().map_err(|_| ApiError::not_found("job"))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> HttpResult<Json<Job>> {
    state.authorize(&caller, Action::JobRead, &Target::organization(caller.org.id), None).await?;
    Ok(Json(state.store.get_job(caller.org.id, parse_id(&id)?).await?))
}

async fn log(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> HttpResult<Json<JobLog>> {
    state.authorize(&caller, Action::JobRead, &Target::organization(caller.org.id), None).await?;
    let (content, truncated) = state.store.job_log(caller.org.id, parse_id(&id)?).await?;
    Ok(Json(JobLog { content, truncated }))
}
