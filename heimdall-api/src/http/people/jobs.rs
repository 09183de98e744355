//! Jobs and their logs, read-only for people.

use axum::extract::{Path, State};
use axum::Json;
use heimdall_core::infra::Job;
use heimdall_core::queue::{JobCursor, JobOrder};
use heimdall_core::resources::jobs;
use heimdall_wire::JobLog;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

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
    let after = q.after.as_deref().map(heimdall_wire::page::decode::<JobCursor>).transpose()?;
    let asked =
        jobs::ListAsked { resource: q.resource, component: q.component, order: q.order.unwrap_or_default() };
    let page = jobs::list(&*state.store, &state.acting(&caller), asked, limit, after).await?;
    let (headers, jobs) = crate::http::visible(page);
    Ok((headers, Json(jobs)))
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
    Ok(Json(jobs::show(&*state.store, &state.acting(&caller), &id).await?))
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
    let (content, truncated) = jobs::log(&*state.store, &state.acting(&caller), &id).await?;
    Ok(Json(JobLog { content, truncated }))
}
