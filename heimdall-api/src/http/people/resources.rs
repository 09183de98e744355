//! Resources: request, change, upgrade, approve or refuse, retry, delete.
//!
//! Each handler parses the request and calls one use case of
//! `heimdall_core::resources::service`, which loads what the request is
//! about, authorizes it, asks the planner what follows and has the store
//! apply the plan in one transaction; the planner refuses bad input, a
//! missing cloud account or a stale revision before anything is written.
//! The handler answers, and wakes the Agents when a job was queued.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::ids::{JobId, ResourceId};
use heimdall_core::infra::{Resource, ResourceStatus};
use heimdall_core::resources::service;
use heimdall_core::resources::{Change, DecisionRequest, ResourceCursor};
use heimdall_core::ApiError;
use heimdall_wire::{ChangeResource, CreateResource, Decide, ResourceDetail};
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::http::error::HttpResult;
use crate::http::extract::{Caller, JsonBody, NoBody, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show, change, delete))
        .routes(routes!(approve))
        .routes(routes!(refuse))
        .routes(routes!(retry))
        .routes(routes!(export))
        .routes(routes!(drift_check))
        .routes(routes!(abandon))
        .routes(routes!(upgrade))
}

errors!(ListErrors: NotFound, InvalidInput);
errors!(body CreateErrors: NotFound, AlreadyExists, SchemaViolation, NoCloudAccount, ModuleNotAllowed, NoAgent);
errors!(ShowErrors: NotFound);
errors!(ShowResourceErrors: NotFound, InvalidInput);
errors!(body ChangeErrors: NotFound, SchemaViolation, Conflict, NoCloudAccount);
errors!(body UpgradeErrors: NotFound, InvalidInput, SchemaViolation, Conflict, StaleRevision, NoCloudAccount);
errors!(DeleteErrors: NotFound, Conflict);
errors!(body DecideErrors: NotFound, SelfApproval, StaleRevision, StalePlan, Conflict);
errors!(RetryErrors: NotFound, Conflict);
errors!(DriftErrors: NotFound, Conflict, NoCloudAccount);

/// The id a job queued by this request gets (randomness is the adapter's).
fn fresh_job() -> JobId {
    JobId::from_uuid(Uuid::new_v4())
}

/// Wakes the Agents waiting for work when a plan queued a job.
fn answered(state: &AppState, applied: service::Applied) -> Resource {
    if applied.queued.is_some() {
        state.jobs_queued.notify_waiters();
    }
    applied.resource
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    component: Option<String>,
    environment: Option<String>,
    status: Option<String>,
    /// Only Resources of this schema type (any version).
    #[serde(rename = "type")]
    type_name: Option<String>,
    /// `true`: only Resources on an older version of their schema type
    /// than the one a new request gets (`resource upgrade` moves them).
    outdated: Option<bool>,
    /// At most this many (default 100, at most 1000).
    limit: Option<u32>,
    /// The `Heimdall-Next-After` of the previous page.
    after: Option<String>,
}

impl heimdall_wire::body::Query for ListQuery {}

#[utoipa::path(
    get,
    path = "/v1/resources",
    tag = "resources",
    operation_id = "list_resources",
    summary = "List the Resources you may read",
    description = "Infrastructure Resources, oldest first, one page at a time, optionally only those of a \
        component, an environment, a status or a schema type, or only those on an older version of their type \
        (`outdated=true`). Each Resource is decided in its own environment and place: a \
        policy's `forbid` scoped to an environment or a domain hides what it forbids.",
    params(ListQuery),
    responses((status = 200, description = "A page of Resources the caller may read, oldest first", body = Vec<heimdall_wire::schemas::Resource>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<ListQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<Resource>>)> {
    let limit = heimdall_wire::page::limit(query.limit)?;
    let after = query.after.as_deref().map(heimdall_wire::page::decode::<ResourceCursor>).transpose()?;
    let status = match query.status {
        Some(s) => Some(s.parse().map_err(|e: String| ApiError::invalid_input(format!("status {e}")))?),
        None => None,
    };
    let asked = service::ListAsked {
        component: query.component,
        environment: query.environment,
        status,
        type_name: query.type_name,
        outdated: query.outdated == Some(true),
    };
    let page = service::list(&*state.store, &state.acting(&caller), asked, limit, after).await?;
    let (headers, resources) = crate::http::visible(page);
    Ok((headers, Json(resources)))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ShowQuery {
    /// Long poll: answer once the Resource's status is no longer this one
    /// (a client following a job passes the status it last saw), or when
    /// `wait_seconds` pass.
    #[param(value_type = Option<heimdall_wire::schemas::ResourceStatus>)]
    changed_from: Option<ResourceStatus>,
    /// How long a long poll may hold the request: 1 to 30 seconds (default 20).
    wait_seconds: Option<u32>,
}

impl heimdall_wire::body::Query for ShowQuery {}

/// The most a long poll holds a request: under every proxy's idle timeout.
const MAX_WAIT_SECONDS: u32 = 30;

#[utoipa::path(
    get,
    path = "/v1/resources/{key}",
    tag = "resources",
    operation_id = "get_resource",
    summary = "Show a Resource, or wait for its status to change",
    description = "The Resource with its revisions. With `changed_from`, the answer waits (up to `wait_seconds`) \
        until the Resource's status is another one: a client following a job hears of its end at once, without polling.",
    params(("key" = String, Path, description = "An id or a name"), ShowQuery),
    responses((status = 200, description = "The Resource with its revisions (sensitive outputs shown as `<sensitive>`)", body = ResourceDetail), ShowResourceErrors),
)]
async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    QueryParams(query): QueryParams<ShowQuery>,
) -> HttpResult<Json<ResourceDetail>> {
    let wait = match (query.changed_from, query.wait_seconds) {
        (None, Some(_)) => return Err(ApiError::invalid_input("wait_seconds needs changed_from").into()),
        (_, Some(seconds)) if !(1..=MAX_WAIT_SECONDS).contains(&seconds) => {
            return Err(
                ApiError::invalid_input(format!("wait_seconds must be 1 to {MAX_WAIT_SECONDS}")).into()
            )
        }
        (Some(from), seconds) => Some((from, std::time::Duration::from_secs(seconds.unwrap_or(20).into()))),
        (None, None) => None,
    };
    let actor = state.acting(&caller);
    let readable = service::readable(&*state.store, &actor, &key).await?;
    let (mut resource, mut revisions) = service::as_stored(&*state.store, &actor, readable.id).await?;
    if let Some((from, wait)) = wait {
        let deadline = tokio::time::Instant::now() + wait;
        while resource.status == from {
            // Registered before the look, so a change between the look and
            // the wait is not missed.
            let moved = state.jobs_moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            (resource, revisions) = service::as_stored(&*state.store, &actor, resource.id).await?;
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            if resource.status != from || remaining.is_zero() {
                break;
            }
            tokio::select! {
                () = &mut moved => {}
                // Another replica moved it, or a change this process does
                // not announce (an approval, a cancel): the re-check.
                () = tokio::time::sleep(remaining.min(state.claim_recheck)) => {}
            }
        }
    }
    Ok(Json(ResourceDetail { resource, revisions }))
}

/// Stops managing a Resource without a destroy (`resources::abandon`).
#[utoipa::path(
    post,
    path = "/v1/resources/{key}/abandon",
    tag = "resources",
    operation_id = "abandon_resource",
    summary = "Stop managing a Resource without destroying it",
    description = "Heimdall lets the Resource go: nothing is destroyed and no job is queued, its state stays \
        in the account's store, queued applies are cancelled and pending revisions superseded; it stays listed \
        as `abandoned` with its history, its name free again. `resource import` (a new Resource) or `terraform \
        export` takes it up later. Refused `CONFLICT` while a job runs on it, or once it is deleting, deleted \
        or abandoned. Needs `resource.abandon` (owners and admins by default).",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "The Resource, abandoned", body = heimdall_wire::schemas::Resource), DeleteErrors),
)]
async fn abandon(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<Resource>> {
    let applied = service::abandon(&*state.store, &state.acting(&caller), &key, fresh_job()).await?;
    Ok(Json(answered(&state, applied)))
}

/// Queues a drift check (`resources::drift_check`): `202` with the job.
#[utoipa::path(
    post,
    path = "/v1/resources/{key}/drift-check",
    tag = "resources",
    operation_id = "check_resource_drift",
    summary = "Check a Resource for drift",
    description = "Queues a drift check of a provisioned Resource: its Agent plans the applied revision \
        against what exists, never applying it, and a plan with changes marks the Resource drifted. Needs \
        `resource.write` on the Resource (owners and admins by default); refused `CONFLICT` unless it is \
        provisioned and no job is working on it.",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 202, description = "A drift check (a plan) is queued", body = heimdall_wire::schemas::Job), DriftErrors),
)]
async fn drift_check(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    _: NoBody,
) -> HttpResult<(StatusCode, Json<heimdall_core::infra::Job>)> {
    let job = service::drift_check(&*state.store, &state.acting(&caller), &key, fresh_job()).await?;
    state.jobs_queued.notify_waiters();
    Ok((StatusCode::ACCEPTED, Json(job)))
}

/// The root module of the last applied job, for plain `terraform`
/// (`heimdall_core::export::package`): readable by whoever reads the
/// Resource; it holds no credential.
#[utoipa::path(
    get,
    path = "/v1/resources/{key}/export",
    tag = "resources",
    operation_id = "export_resource",
    summary = "Export a Resource as plain Terraform",
    description = "The root module of the Resource's last applied job (module call, backend, input), to \
        manage it with plain `terraform` without Heimdall; it holds no credential, and each secret input is \
        left to fill. Readable by whoever may read the Resource; refused `CONFLICT` before the current \
        revision is applied.",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "A Terraform package that manages the Resource without Heimdall", body = heimdall_wire::schemas::ExportPackage), ShowErrors),
)]
async fn export(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<heimdall_core::export::ExportPackage>> {
    Ok(Json(service::export(&*state.store, &state.acting(&caller), &key).await?))
}

#[utoipa::path(
    post,
    path = "/v1/resources",
    tag = "resources",
    operation_id = "create_resource",
    summary = "Request a Resource",
    description = "Requests a Resource of a schema for a component in an environment, with its input \
        (checked against the schema, `SCHEMA_VIOLATION` otherwise) and, optionally, objects to import. Its \
        first revision is planned or, under a schema that requires approval, awaits approval; the job uses \
        the cloud account linked for the place (`NO_CLOUD_ACCOUNT` when none is). Needs `resource.write` \
        there (owners and admins by default), and the caller must be able to read every secret the job would \
        use.",
    request_body = CreateResource,
    responses((status = 201, description = "The Resource; its first revision is planned or awaits approval", body = heimdall_wire::schemas::Resource), CreateErrors),
)]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateResource>,
) -> HttpResult<(StatusCode, Json<Resource>)> {
    let asked = service::Requested {
        id: ResourceId::from_uuid(Uuid::new_v4()),
        name: body.name,
        component: body.component,
        environment: body.environment,
        schema: body.schema,
        input: body.input,
        region: body.region,
        imports: body.imports,
    };
    let applied = service::create(&*state.store, &state.acting(&caller), asked, fresh_job()).await?;
    Ok((StatusCode::CREATED, Json(answered(&state, applied))))
}

#[utoipa::path(
    patch,
    path = "/v1/resources/{key}",
    tag = "resources",
    operation_id = "change_resource",
    summary = "Change a Resource's input",
    description = "Records a new revision of the Resource with a new input (and optionally region), checked \
        against its schema; it is applied, or awaits approval when the schema requires it. Needs \
        `resource.write` on the Resource (owners and admins by default); `CONFLICT` once it is deleting or \
        deleted.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = ChangeResource,
    responses((status = 200, description = "The Resource with a new revision", body = heimdall_wire::schemas::Resource), ChangeErrors),
)]
async fn change(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<ChangeResource>,
) -> HttpResult<Json<Resource>> {
    let change = Change { input: body.input, region: body.region };
    let applied = service::change(&*state.store, &state.acting(&caller), &key, change, fresh_job()).await?;
    Ok(Json(answered(&state, applied)))
}

#[utoipa::path(
    post,
    path = "/v1/resources/{key}/upgrade",
    tag = "resources",
    operation_id = "upgrade_resource",
    summary = "Move a Resource to another version of its schema",
    description = "Records a new revision of the Resource on another version of its schema's type: the new \
        version's module runs under the existing state, so Terraform updates in place what the module allows \
        (nothing is destroyed first). The input (the current revision's when none is given) is checked in full \
        against the new version (`SCHEMA_VIOLATION`, naming the field); it is applied, or awaits approval when \
        the new version requires it. Refused `CONFLICT` to a deprecated version, to the version it is on, and to \
        an older version unless `allow_downgrade`; `NOT_FOUND` for a version that does not exist. Needs \
        `resource.write` on the Resource (owners and admins by default). Nothing is stored when refused.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = heimdall_wire::UpgradeResource,
    responses((status = 200, description = "The Resource with a new revision on the new version", body = heimdall_wire::schemas::Resource), UpgradeErrors),
)]
async fn upgrade(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<heimdall_wire::UpgradeResource>,
) -> HttpResult<Json<Resource>> {
    let to = (body.schema_version, body.input.as_ref(), body.allow_downgrade);
    let applied = service::upgrade(&*state.store, &state.acting(&caller), &key, to, fresh_job()).await?;
    Ok(Json(answered(&state, applied)))
}

#[utoipa::path(
    post,
    path = "/v1/resources/{key}/approve",
    tag = "resources",
    operation_id = "approve_resource",
    summary = "Approve a Resource's pending revision",
    description = "Approves the revision awaiting approval, named by number, and under a schema that \
        requires it the plan's SHA-256 (at least its first 12 hex digits); the revision then applies exactly \
        that plan. Needs `resource.approve` (owners and admins by default), and someone other than the \
        requester must decide (`SELF_APPROVAL`). Another revision or an expired one is refused \
        `STALE_REVISION`, another or missing plan `STALE_PLAN`.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = Decide,
    responses((status = 200, description = "Approved: the revision applies", body = heimdall_wire::schemas::Resource), DecideErrors),
)]
async fn approve(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<Decide>,
) -> HttpResult<Json<Resource>> {
    let request = DecisionRequest { revision: body.revision, plan: body.plan, reason: body.reason };
    let applied = service::approve(&*state.store, &state.acting(&caller), &key, request, fresh_job()).await?;
    Ok(Json(answered(&state, applied)))
}

#[utoipa::path(
    post,
    path = "/v1/resources/{key}/refuse",
    tag = "resources",
    operation_id = "refuse_resource",
    summary = "Refuse a Resource's pending revision",
    description = "Refuses the revision awaiting approval, named by number, optionally with a reason: it \
        does not apply. Needs `resource.approve` (owners and admins by default), and someone other than the \
        requester must decide (`SELF_APPROVAL`); another revision or an expired one is refused \
        `STALE_REVISION`.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = Decide,
    responses((status = 200, description = "Refused: the revision does not apply", body = heimdall_wire::schemas::Resource), DecideErrors),
)]
async fn refuse(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<Decide>,
) -> HttpResult<Json<Resource>> {
    let request = DecisionRequest { revision: body.revision, plan: body.plan, reason: body.reason };
    let applied = service::refuse(&*state.store, &state.acting(&caller), &key, request, fresh_job()).await?;
    Ok(Json(answered(&state, applied)))
}

#[utoipa::path(
    post,
    path = "/v1/resources/{key}/retry",
    tag = "resources",
    operation_id = "retry_resource",
    summary = "Retry a Resource's failed operation",
    description = "Queues the failed operation again for the newest approved revision (a failed plan is \
        planned again). Needs `resource.write` on the Resource (owners and admins by default); refused \
        `CONFLICT` unless the Resource failed.",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 202, description = "A new attempt is queued", body = heimdall_wire::schemas::Resource), RetryErrors),
)]
async fn retry(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    _: NoBody,
) -> HttpResult<(StatusCode, Json<Resource>)> {
    let applied = service::retry(&*state.store, &state.acting(&caller), &key, fresh_job()).await?;
    Ok((StatusCode::ACCEPTED, Json(answered(&state, applied))))
}

#[utoipa::path(
    delete,
    path = "/v1/resources/{key}",
    tag = "resources",
    operation_id = "delete_resource",
    summary = "Delete a Resource",
    description = "Deletes a Resource: if anything was ever applied, a destroy is queued (or awaits \
        approval) and the answer is `202`; a Resource that never ran is deleted at once, and one already \
        deleting or deleted is answered as it is (`200`). Queued applies are cancelled and pending revisions \
        superseded. Needs `resource.delete` (owners and admins by default).",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "Already deleted, or removed without a destroy", body = heimdall_wire::schemas::Resource), (status = 202, description = "A destroy is queued (or awaits approval)", body = heimdall_wire::schemas::Resource), DeleteErrors),
)]
async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<(StatusCode, Json<Resource>)> {
    let applied = service::delete(&*state.store, &state.acting(&caller), &key, fresh_job()).await?;
    // A destroy runs later (202); a Resource that never ran, or is already
    // deleting, is answered as it is now (200).
    let code = if applied.queued.is_some() { StatusCode::ACCEPTED } else { StatusCode::OK };
    Ok((code, Json(answered(&state, applied))))
}
