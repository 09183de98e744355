//! Organization policies (Cedar), validated before they are stored.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::audit::AuditAction;
use heimdall_core::authz::{validate_policy_text, Action, Target};
use heimdall_core::domain::Policy;
use heimdall_core::ids::PolicyId;
use heimdall_core::names::{validate_name, validate_text};
use heimdall_core::wire::CreatePolicy;
use heimdall_core::{ApiError, ErrorCode, FieldError};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::error::HttpResult;
use super::extract::{Caller, JsonBody, QueryParams};
use super::openapi::errors;
use super::AppState;

/// Policy text limit: generous for hand-written Cedar, small enough that
/// evaluating every policy on every request stays cheap.
const MAX_POLICY_CHARS: usize = 16 * 1024;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(show, delete))
}

errors!(ListErrors: InvalidInput);
errors!(body CreateErrors: InvalidPolicy, AlreadyExists);
errors!(ShowErrors: NotFound);

#[utoipa::path(
    get,
    path = "/v1/policies",
    tag = "policies",
    operation_id = "list_policies",
    summary = "List policies",
    description = "The organization's own Cedar policies, by name, one page at a time. By default owners and \
        admins may read them (`policy.read`).",
    params(super::PageQuery),
    responses((status = 200, description = "A page of the organization's Cedar policies, by name", body = Vec<Policy>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(page): QueryParams<super::PageQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<Policy>>)> {
    state.authorize(&caller, Action::PolicyRead, &Target::organization(caller.org.id), None).await?;
    let policies = state.store.list_policies(caller.org.id).await?;
    let (headers, policies) = super::short_page(policies, page.limit, page.after.as_deref(), |p| {
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
    responses((status = 201, description = "The policy; it applies from the next request", body = Policy), CreateErrors),
)]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreatePolicy>,
) -> HttpResult<(StatusCode, Json<Policy>)> {
    validate_name("name", &body.name)?;
    let description = body.description.unwrap_or_default();
    validate_text("description", &description, 1000)?;
    if body.text.chars().count() > MAX_POLICY_CHARS {
        return Err(ApiError::invalid_input(format!(
            "policy text must be at most {MAX_POLICY_CHARS} characters"
        ))
        .into());
    }
    state.authorize(&caller, Action::PolicyWrite, &Target::organization(caller.org.id), None).await?;
    let count = validate_policy_text(&body.text).map_err(|e| {
        ApiError::new(ErrorCode::InvalidPolicy, format!("policy does not compile: {e}")).with_fields(vec![
            FieldError {
                path: "/text".into(),
                rule: format!("cedar at line {}, column {}", e.line, e.column),
            },
        ])
    })?;
    let policy = Policy {
        id: PolicyId::from_uuid(Uuid::new_v4()),
        org_id: caller.org.id,
        name: body.name,
        description,
        text: body.text,
        created_at: state.clock.now(),
        created_by: caller.member.email.clone(),
    };
    let event = state.event(
        &caller,
        AuditAction::PolicyCreated,
        format!("policy:{}", policy.id),
        serde_json::json!({ "name": policy.name, "statements": count }),
    );
    state.store.create_policy(&policy, event).await?;
    Ok((StatusCode::CREATED, Json(policy)))
}

fn parse_id(raw: &str) -> Result<PolicyId, ApiError> {
    raw.parse().map_err(|_| ApiError::not_found("policy"))
}

#[utoipa::path(
    get,
    path = "/v1/policies/{id}",
    tag = "policies",
    operation_id = "get_policy",
    summary = "Show a policy",
    description = "One of the organization's Cedar policies, with its text. By default owners and admins may \
        read it (`policy.read`).",
    params(("id" = String, Path, description = "An id")),
    responses((status = 200, description = "The policy", body = Policy), ShowErrors),
)]
async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> HttpResult<Json<Policy>> {
    state.authorize(&caller, Action::PolicyRead, &Target::organization(caller.org.id), None).await?;
    Ok(Json(state.store.get_policy(caller.org.id, parse_id(&id)?).await?))
}

#[utoipa::path(
    delete,
    path = "/v1/policies/{id}",
    tag = "policies",
    operation_id = "delete_policy",
    summary = "Delete a policy",
    description = "Removes one of the organization's Cedar policies; it no longer applies from the next \
        request. Owners only by default (`policy.write`).",
    params(("id" = String, Path, description = "An id")),
    responses((status = 204, description = "Deleted"), ShowErrors),
)]
async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> HttpResult<StatusCode> {
    state.authorize(&caller, Action::PolicyWrite, &Target::organization(caller.org.id), None).await?;
    let id = parse_id(&id)?;
    let policy = state.store.get_policy(caller.org.id, id).await?;
    let event = state.event(
        &caller,
        AuditAction::PolicyDeleted,
        format!("policy:{id}"),
        serde_json::json!({ "name": policy.name }),
    );
    state.store.delete_policy(caller.org.id, id, event).await?;
    Ok(StatusCode::NO_CONTENT)
}
