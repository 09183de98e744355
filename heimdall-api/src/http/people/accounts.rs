//! Cloud accounts: where Terraform runs and keeps state. They hold no
//! credential: a role to assume, or the name of a secret in the Agent.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::accounts;
use heimdall_core::authz::{Action, Target};
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::CloudAccountId;
use heimdall_core::infra::{AccountAuth, AccountLink, CloudAccount, LinkScope};
use heimdall_core::secrets::usable_by_jobs;
use heimdall_core::{ApiError, ErrorCode};
use heimdall_wire::{CloudAccountDetail, CreateCloudAccount, LinkCloudAccount, UpdateCloudAccount};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::catalog::resolve as resolve_catalog;
use crate::http::error::HttpResult;
use crate::http::extract::{Caller, JsonBody, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show, update, delete))
        .routes(routes!(link, unlink))
}

errors!(ListErrors: InvalidInput);
errors!(ShowErrors: NotFound);
errors!(body CreateErrors: AlreadyExists, NotFound);
errors!(body LinkErrors: NotFound, AlreadyExists, Conflict);
errors!(body UpdateErrors: NotFound, Conflict);
errors!(DeleteErrors: NotFound, NotEmpty, InvalidInput);

async fn resolve(state: &AppState, caller: &Caller, key: &str) -> Result<CloudAccount, ApiError> {
    if let Ok(id) = key.parse::<CloudAccountId>() {
        return Ok(state.store.get_account(caller.org.id, id).await?);
    }
    state
        .store
        .find_account_by_name(caller.org.id, key)
        .await?
        .ok_or_else(|| ApiError::not_found("cloud account"))
}

#[utoipa::path(
    get,
    path = "/v1/cloud-accounts",
    tag = "cloud-accounts",
    operation_id = "list_cloud_accounts",
    summary = "List cloud accounts",
    description = "The organization's cloud accounts, by name, one page at a time. An account holds no \
        credential: a role to assume, or the name of a secret the Agents keep. By default owners and admins \
        may list them (`cloud_account.read`).",
    params(crate::http::PageQuery),
    responses((status = 200, description = "A page of the cloud accounts, by name (never a credential)", body = Vec<heimdall_wire::schemas::CloudAccount>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(page): QueryParams<crate::http::PageQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<CloudAccount>>)> {
    state.authorize(&caller, Action::CloudAccountRead, &Target::organization(caller.org.id), None).await?;
    let accounts = state.store.list_accounts(caller.org.id).await?;
    let (headers, accounts) = crate::http::short_page(accounts, page.limit, page.after.as_deref(), |a| {
        vec![a.name.clone(), a.id.to_string()]
    })?;
    Ok((headers, Json(accounts)))
}

#[utoipa::path(
    get,
    path = "/v1/cloud-accounts/{key}",
    tag = "cloud-accounts",
    operation_id = "get_cloud_account",
    summary = "Show a cloud account and its links",
    description = "One cloud account, by id or name, with the links that say which environments and scopes \
        it serves. By default owners and admins may read it (`cloud_account.read`).",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "The account and its links", body = CloudAccountDetail), ShowErrors),
)]
async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<CloudAccountDetail>> {
    state.authorize(&caller, Action::CloudAccountRead, &Target::organization(caller.org.id), None).await?;
    let account = resolve(&state, &caller, &key).await?;
    let links = state
        .store
        .list_links(caller.org.id)
        .await?
        .into_iter()
        .filter(|l| l.account_id == account.id)
        .collect();
    Ok(Json(CloudAccountDetail { account, links }))
}

#[utoipa::path(
    post,
    path = "/v1/cloud-accounts",
    tag = "cloud-accounts",
    operation_id = "create_cloud_account",
    summary = "Register a cloud account",
    description = "Registers where Terraform runs and keeps its state: the provider, region, state bucket \
        and how jobs authenticate (a role to assume, or the name of an organization secret holding a static \
        credential, which must exist and be readable by the caller). By default owners and admins may \
        register one (`cloud_account.write`); a name already taken is refused `ALREADY_EXISTS`.",
    request_body = heimdall_wire::schemas::CreateCloudAccount,
    responses((status = 201, description = "The account", body = heimdall_wire::schemas::CloudAccount), CreateErrors),
)]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateCloudAccount>,
) -> HttpResult<(StatusCode, Json<CloudAccount>)> {
    let id = CloudAccountId::from_uuid(Uuid::new_v4());
    let planned = accounts::register(body, id, caller.org.id, &caller.member.email, state.clock.now())?;
    state.authorize(&caller, Action::CloudAccountWrite, &Target::organization(caller.org.id), None).await?;
    if let AccountAuth::Static { secret } = &planned.account.auth {
        check_static_secret(&state, &caller, secret).await?;
    }
    let event = state.planned_event(&caller.member.email, planned.event);
    state.store.create_account(&planned.account, event).await?;
    Ok((StatusCode::CREATED, Json(planned.account)))
}

/// The job will carry only this name: it must be an organization secret
/// that exists now (its value lives in the Agents), and one the caller may
/// read somewhere (each link decides its environment, each job its
/// requester: `on_behalf::may_use`).
async fn check_static_secret(state: &AppState, caller: &Caller, secret: &str) -> Result<(), ApiError> {
    let found = state.store.find_secret_by_name(caller.org.id, secret).await?.ok_or_else(|| {
        ApiError::new(
            ErrorCode::NotFound,
            format!("secret {secret} not found: `heimdall secret create {secret}` and set its value first"),
        )
    })?;
    usable_by_jobs(found.owner_id)?;
    let environments = state.store.list_catalog(caller.org.id, CatalogKind::Environment, None).await?;
    let mut refusal = None;
    for environment in &environments {
        match super::secrets::check_use(state, caller, secret, &environment.name).await {
            Ok(_) => return Ok(()),
            Err(e) => refusal = Some(e),
        }
    }
    refusal.map_or(Ok(()), Err)
}

#[utoipa::path(
    patch,
    path = "/v1/cloud-accounts/{key}",
    tag = "cloud-accounts",
    operation_id = "update_cloud_account",
    summary = "Change a cloud account",
    description = "Changes a registered account in place: its region, how jobs authenticate (a new static \
        credential's secret is checked as at registration), its drift schedule (`off` stops it), and where it \
        keeps state, which is refused `CONFLICT` while a Resource keeps state there (naming how many). The \
        provider and the state backend never change. The next job uses the change; queued jobs keep what \
        they were queued with. By default owners and admins may change one (`cloud_account.write`).",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = heimdall_wire::schemas::UpdateCloudAccount,
    responses((status = 200, description = "The account as it is now", body = heimdall_wire::schemas::CloudAccount), UpdateErrors),
)]
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<UpdateCloudAccount>,
) -> HttpResult<Json<CloudAccount>> {
    state.authorize(&caller, Action::CloudAccountWrite, &Target::organization(caller.org.id), None).await?;
    let current = resolve(&state, &caller, &key).await?;
    let Some(change) = accounts::update(&current, &body)? else {
        return Ok(Json(current));
    };
    if let (Some(AccountAuth::Static { secret }), true) = (&body.auth, change.changed.contains(&"auth")) {
        check_static_secret(&state, &caller, secret).await?;
    }
    let planned = accounts::updated(&current, &change.changed);
    let event = state.planned_event(&caller.member.email, planned);
    state.store.update_account(&change, event).await?;
    Ok(Json(change.account))
}

#[utoipa::path(
    delete,
    path = "/v1/cloud-accounts/{key}",
    tag = "cloud-accounts",
    operation_id = "delete_cloud_account",
    summary = "Delete a cloud account",
    description = "Removes an account that nothing links and no Resource keeps state on; otherwise \
        `NOT_EMPTY`, saying which. Nothing in the cloud is touched. By default owners and admins may delete \
        one (`cloud_account.write`).",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 204, description = "Deleted"), DeleteErrors),
)]
async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<StatusCode> {
    state.authorize(&caller, Action::CloudAccountWrite, &Target::organization(caller.org.id), None).await?;
    let account = resolve(&state, &caller, &key).await?;
    let event = state.planned_event(&caller.member.email, accounts::deleted(&account));
    state.store.delete_account(&account, event).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Which link to remove, as it was made.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct UnlinkQuery {
    /// `organization`, `domain` or `system`.
    #[param(value_type = heimdall_wire::schemas::LinkScope)]
    scope: LinkScope,
    /// The domain or system (id or name); none for `organization`.
    scope_id: Option<String>,
    /// The environment (id or name).
    environment: String,
}

impl heimdall_wire::body::Query for UnlinkQuery {}

#[utoipa::path(
    delete,
    path = "/v1/cloud-accounts/{key}/links",
    tag = "cloud-accounts",
    operation_id = "unlink_cloud_account",
    summary = "Unlink a cloud account from an environment and scope",
    description = "Removes one link of the account, named as it was made; refused `NOT_EMPTY` while a \
        Resource of that environment keeps state on the account (its next job would find no account, or \
        another). By default owners and admins may unlink (`cloud_account.write`).",
    params(("key" = String, Path, description = "An id or a name"), UnlinkQuery),
    responses((status = 204, description = "Unlinked"), DeleteErrors),
)]
async fn unlink(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    QueryParams(q): QueryParams<UnlinkQuery>,
) -> HttpResult<StatusCode> {
    state.authorize(&caller, Action::CloudAccountWrite, &Target::organization(caller.org.id), None).await?;
    let account = resolve(&state, &caller, &key).await?;
    let environment = resolve_catalog(&state, &caller, CatalogKind::Environment, &q.environment).await?;
    let scope_id = scope_entry(&state, &caller, q.scope, q.scope_id).await?;
    let planned = accounts::link_event(&account, false, (q.scope, scope_id), &environment.name);
    let event = state.planned_event(&caller.member.email, planned);
    state.store.unlink_account(&account, q.scope, scope_id, environment.id, event).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The domain or system a link's scope names (`accounts::scope_kind`);
/// none for the organization.
async fn scope_entry(
    state: &AppState,
    caller: &Caller,
    scope: LinkScope,
    scope_id: Option<String>,
) -> Result<Option<heimdall_core::ids::CatalogId>, ApiError> {
    match (accounts::scope_kind(scope, scope_id.as_deref())?, scope_id) {
        (Some(kind), Some(key)) => Ok(Some(resolve_catalog(state, caller, kind, &key).await?.id)),
        _ => Ok(None),
    }
}

#[utoipa::path(
    post,
    path = "/v1/cloud-accounts/{key}/links",
    tag = "cloud-accounts",
    operation_id = "link_cloud_account",
    summary = "Link a cloud account to an environment and scope",
    description = "Says that this account serves Resources in one environment, for the whole organization or \
        for one domain or system (`scope` and `scope_id`). For an account with a static credential, the \
        caller must be able to read its secret in that environment. A link replacing another account's for the \
        same scope and environment is refused `CONFLICT` while Resources there keep state on that account. \
        By default owners and admins may link (`cloud_account.write`); the same link twice is refused \
        `ALREADY_EXISTS`.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = LinkCloudAccount,
    responses((status = 201, description = "The link", body = heimdall_wire::schemas::AccountLink), LinkErrors),
)]
async fn link(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<LinkCloudAccount>,
) -> HttpResult<(StatusCode, Json<AccountLink>)> {
    state.authorize(&caller, Action::CloudAccountWrite, &Target::organization(caller.org.id), None).await?;
    let account = resolve(&state, &caller, &key).await?;
    let environment = resolve_catalog(&state, &caller, CatalogKind::Environment, &body.environment).await?;
    let scope_id = scope_entry(&state, &caller, body.scope, body.scope_id).await?;
    // Linked, a static account's secret is used in that environment: the
    // caller may read it there (each job decides its own requester too).
    if let AccountAuth::Static { secret } = &account.auth {
        super::secrets::check_use(&state, &caller, secret, &environment.name).await?;
    }
    let planned = accounts::link(
        &account,
        (body.scope, scope_id),
        &environment,
        &caller.member.email,
        state.clock.now(),
    );
    let event = state.planned_event(&caller.member.email, planned.event);
    state.store.link_account(caller.org.id, &planned.link, event).await?;
    Ok((StatusCode::CREATED, Json(planned.link)))
}
