//! Jobs and their logs, read-only for people.

use axum::extract::{Path, State};
use axum::Json;
use heimdall_core::authz::{job_target, Action, Target};
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{JobId, ResourceId};
use heimdall_core::infra::{Job, Resource};
use heimdall_core::queue::{JobCursor, JobOrder};
use heimdall_core::ApiError;
use heimdall_wire::JobLog;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::catalog::resolve as resolve_catalog;
use crate::http::error::HttpResult;
use crate::http::extract::{Caller, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(show)).routes(routes!(log))
}

errors!(ListJobsErrors: NotFound, InvalidInput);
errors!(JobErrors: NotFound);

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    component: Option<String>,
    resource: Option<String>,
    /// At most this many (default 100, at most 1000).
    limit: Option<u32>,
    /// The `Heimdall-Next-After` of the previous page (of the same order).
    after: Option<String>,
    /// `oldest` (the default) or `newest` first, by when each job was queued.
    #[param(value_type = Option<heimdall_wire::schemas::JobOrder>)]
    order: Option<JobOrder>,
}

impl heimdall_wire::body::Query for ListQuery {}

/// Jobs, each decided under its Resource, in the Resource's environment:
/// a `forbid` on prod or on a Domain hides what it forbids.
#[utoipa::path(
    get,
    path = "/v1/jobs",
    tag = "jobs",
    operation_id = "list_jobs",
    summary = "List the jobs you may read",
    description = "Infrastructure jobs (plans, applies, imports, destroys, drift checks), oldest first \
        (`order=newest` for the newest first), one page at a time, optionally for one Resource or Component. Each job is decided under its Resource, in \
        the Resource's environment: a policy's `forbid` hides what it forbids.",
    params(ListQuery),
    responses((status = 200, description = "A page of the jobs the caller may read, in the order asked", body = Vec<heimdall_wire::schemas::Job>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page, with the same `order`"))), ListJobsErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<ListQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<Job>>)> {
    let limit = heimdall_wire::page::limit(q.limit)?;
    let order = q.order.unwrap_or_default();
    let after = q.after.as_deref().map(heimdall_wire::page::decode::<JobCursor>).transpose()?;
    if after.as_ref().is_some_and(|a| a.order != order) {
        return Err(ApiError::invalid_input(
            "after is a cursor of the other order: pass the same order as for the first page",
        )
        .into());
    }
    let decider = state.decider(&caller).await?;
    decider.require(Action::JobRead, &Target::organization(caller.org.id), None)?;
    let resource = match q.resource {
        Some(key) => Some(super::resources::resolve(&state, &caller, &key).await?),
        None => None,
    };
    let component = match q.component {
        Some(component) => {
            let component = resolve_catalog(&state, &caller, CatalogKind::Component, &component).await?;
            if resource.as_ref().is_some_and(|r| r.component_id != component.id) {
                return Err(ApiError::not_found("resource in that component").into());
            }
            Some(component.id)
        }
        None => None,
    };
    let (tree, environments) = super::resources::placements(&state, &caller).await?;
    // Each chunk of jobs comes with its own Resources (one query), never
    // the organization's every Resource; the Component is the query's.
    let (org, resource) = (caller.org.id, resource.as_ref().map(|r| r.id));
    let fetch = |after: Option<JobCursor>, n| {
        let store = state.store.clone();
        async move {
            let jobs = store.list_jobs_page(org, resource, component, order, after.as_ref(), n).await?;
            let ids: Vec<ResourceId> = jobs.iter().map(|j| j.resource_id).collect();
            let resources = store.resources_by_ids(org, &ids).await?;
            Ok(jobs
                .into_iter()
                .map(|job| {
                    let under = resources.iter().find(|r| r.id == job.resource_id).cloned();
                    (job, under)
                })
                .collect())
        }
    };
    let mut decisions = decider.many(Action::JobRead);
    let allowed = |(j, r): &(Job, Option<Resource>)| {
        r.as_ref().is_some_and(|r| {
            let env =
                environments.iter().find(|(id, _)| *id == r.environment_id).map_or("", |(_, n)| n.as_str());
            decisions.decide(&job_target(j.id, r.id, r.component_id, &tree), Some(env)).is_allowed()
        })
    };
    let (headers, jobs) = crate::http::visible_page(limit, after, fetch, allowed, |(j, _): &(Job, _)| {
        JobCursor::after(j, order)
    })
    .await?;
    let jobs = jobs.into_iter().map(|(job, _)| job).collect();
    Ok((headers, Json(jobs)))
}

fn parse_id(raw: &str) -> Result<JobId, ApiError> {
    raw.parse().map_err(|_| ApiError::not_found("job"))
}

/// A job the caller may read: decided under its Resource, in its environment.
async fn readable(state: &AppState, caller: &Caller, raw: &str) -> Result<Job, ApiError> {
    let job = state.store.get_job(caller.org.id, parse_id(raw)?).await?;
    let resource = state.store.get_resource(caller.org.id, job.resource_id).await?;
    let (tree, environments) = super::resources::placements(state, caller).await?;
    let env =
        environments.iter().find(|(id, _)| *id == resource.environment_id).map_or("", |(_, n)| n.as_str());
    let target = job_target(job.id, resource.id, resource.component_id, &tree);
    state.authorize(caller, Action::JobRead, &target, Some(env)).await?;
    Ok(job)
}

#[utoipa::path(
    get,
    path = "/v1/jobs/{id}",
    tag = "jobs",
    operation_id = "get_job",
    summary = "Show a job",
    description = "One job and its status, if the caller may read it under its Resource, in the Resource's \
        environment; otherwise `NOT_FOUND` or `FORBIDDEN`.",
    params(("id" = String, Path, description = "An id")),
    responses((status = 200, description = "The job", body = heimdall_wire::schemas::Job), JobErrors),
)]
async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> HttpResult<Json<Job>> {
    Ok(Json(readable(&state, &caller, &id).await?))
}

#[utoipa::path(
    get,
    path = "/v1/jobs/{id}/log",
    tag = "jobs",
    operation_id = "get_job_log",
    summary = "Get a job's log",
    description = "The Terraform output of a job, with secrets masked, and whether it was truncated. \
        Readable by whoever may read the job.",
    params(("id" = String, Path, description = "An id")),
    responses((status = 200, description = "The job's log (secrets masked)", body = JobLog), JobErrors),
)]
async fn log(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> HttpResult<Json<JobLog>> {
    let job = readable(&state, &caller, &id).await?;
    let (content, truncated) = state.store.job_log(caller.org.id, job.id).await?;
    Ok(Json(JobLog { content, truncated }))
}
