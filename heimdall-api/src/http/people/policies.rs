//! Organization policies (Cedar), validated before they are stored.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::domain::{Policy, PolicyVersion};
use heimdall_core::ids::PolicyId;
use heimdall_core::policies::{self, service};
use heimdall_wire::{CreatePolicy, UpdatePolicy};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::http::error::HttpResult;
use crate::http::extract::{Caller, JsonBody, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show, update, delete))
        .routes(routes!(versions))
}

errors!(ListErrors: InvalidInput);
errors!(body CreateErrors: InvalidPolicy, AlreadyExists);
errors!(body UpdateErrors: InvalidPolicy, NotFound, StaleRevision);
errors!(ShowErrors: NotFound);

#[utoipa::path(
    get,
    path = "/v1/policies",
    tag = "policies",
    operation_id = "list_policies",
    summary = "List policies",
    description = "The organization's own Cedar policies, by name, one page at a time. By default owners and \
        admins may read them (`policy.read`).",
    params(crate::http::PageQuery),
    responses((status = 200, description = "A page of the organization's Cedar policies, by name", body = Vec<heimdall_wire::schemas::Policy>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(page): QueryParams<crate::http::PageQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<Policy>>)> {
    let policies = service::list(&*state.store, &state.acting(&caller)).await?;
    let (headers, policies) = crate::http::short_page(policies, page.limit, page.after.as_deref(), |p| {
        vec![p.name.clone(), p.id.to_string()]
    })?;
    Ok((headers, Json(policies)))
}

#[utoipa::path(
    post,
    path = "/v1/policies",
    tag = "policies",
    operation_id = "create_policy",
    summary = "Create a policy",
    description = "Adds a Cedar `permit` or `forbid` policy to the built-in role defaults; it applies from \
        the next request, and a `forbid` always wins. Text that does not compile, or names an unknown action \
        or attribute, is refused `INVALID_POLICY` with its line and column. Owners only by default \
        (`policy.write`).",
    request_body = CreatePolicy,
    responses((status = 201, description = "The policy; it applies from the next request", body = heimdall_wire::schemas::Policy), CreateErrors),
)]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreatePolicy>,
) -> HttpResult<(StatusCode, Json<Policy>)> {
    let request = service::NewPolicy { name: body.name, description: body.description, text: body.text };
    let id = PolicyId::from_uuid(Uuid::new_v4());
    Ok((
        StatusCode::CREATED,
        Json(service::create(&*state.store, &state.acting(&caller), request, id).await?),
    ))
}

#[utoipa::path(
    get,
    path = "/v1/policies/{id}",
    tag = "policies",
    operation_id = "get_policy",
    summary = "Show a policy",
    description = "One of the organization's Cedar policies, with its text and version. By default owners \
        and admins may read it (`policy.read`).",
    params(("id" = String, Path, description = "An id, or a name")),
    responses((status = 200, description = "The policy", body = heimdall_wire::schemas::Policy), ShowErrors),
)]
async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> HttpResult<Json<Policy>> {
    Ok(Json(service::show(&*state.store, &state.acting(&caller), &id).await?))
}

#[utoipa::path(
    patch,
    path = "/v1/policies/{id}",
    tag = "policies",
    operation_id = "update_policy",
    summary = "Change a policy",
    description = "Replaces a policy's text or description in one transaction (never a moment without it), \
        as its next version; the text is validated as a new policy's is (`INVALID_POLICY`), and \
        `expected_version` refuses `STALE_REVISION` if someone changed it since. It applies from the next \
        request, and at each Agent from its next sync. The same text and description again is no new \
        version. Owners only by default (`policy.write`).",
    params(("id" = String, Path, description = "An id, or a name")),
    request_body = UpdatePolicy,
    responses((status = 200, description = "The policy as it is now", body = heimdall_wire::schemas::Policy), UpdateErrors),
)]
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<UpdatePolicy>,
) -> HttpResult<Json<Policy>> {
    let change = policies::Change {
        text: body.text,
        description: body.description,
        expected_version: body.expected_version,
    };
    Ok(Json(service::update(&*state.store, &state.acting(&caller), &id, change).await?))
}

#[utoipa::path(
    get,
    path = "/v1/policies/{id}/versions",
    tag = "policies",
    operation_id = "list_policy_versions",
    summary = "List a policy's versions",
    description = "Every version of a policy, newest first: its text and description then, and who wrote it \
        when. By default owners and admins may read them (`policy.read`).",
    params(("id" = String, Path, description = "An id, or a name")),
    responses((status = 200, description = "The policy's versions, newest first", body = Vec<heimdall_wire::schemas::PolicyVersion>), ShowErrors),
)]
async fn versions(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> HttpResult<Json<Vec<PolicyVersion>>> {
    Ok(Json(service::versions(&*state.store, &state.acting(&caller), &id).await?))
}

#[utoipa::path(
    delete,
    path = "/v1/policies/{id}",
    tag = "policies",
    operation_id = "delete_policy",
    summary = "Delete a policy",
    description = "Removes one of the organization's Cedar policies; it no longer applies from the next \
        request. Owners only by default (`policy.write`).",
    params(("id" = String, Path, description = "An id, or a name")),
    responses((status = 204, description = "Deleted"), ShowErrors),
)]
async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> HttpResult<StatusCode> {
    service::delete(&*state.store, &state.acting(&caller), &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
