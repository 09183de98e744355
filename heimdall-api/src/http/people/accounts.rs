//! Cloud accounts: where Terraform runs and keeps state. They hold no
//! credential: a role to assume, or the name of a secret in the Agent.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::accounts::service;
use heimdall_core::ids::CloudAccountId;
use heimdall_core::infra::{AccountLink, CloudAccount, LinkScope};
use heimdall_wire::{CloudAccountDetail, CreateCloudAccount, LinkCloudAccount, UpdateCloudAccount};
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
        .routes(routes!(link, unlink))
}

errors!(ListErrors: InvalidInput);
errors!(ShowErrors: NotFound);
errors!(body CreateErrors: AlreadyExists, NotFound);
errors!(body LinkErrors: NotFound, AlreadyExists, Conflict);
errors!(body UpdateErrors: NotFound, Conflict);
errors!(DeleteErrors: NotFound, NotEmpty, InvalidInput);

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
    let accounts = service::list(&*state.store, &state.acting(&caller)).await?;
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
    let (account, links) = service::show(&*state.store, &state.acting(&caller), &key).await?;
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
    let account = service::create(&*state.store, &state.acting(&caller), body, id).await?;
    Ok((StatusCode::CREATED, Json(account)))
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
    Ok(Json(service::update(&*state.store, &state.acting(&caller), &key, &body).await?))
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
    service::delete(&*state.store, &state.acting(&caller), &key).await?;
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
    let at = service::Place { scope: q.scope, scope_key: q.scope_id, environment: q.environment };
    service::unlink(&*state.store, &state.acting(&caller), &key, at).await?;
    Ok(StatusCode::NO_CONTENT)
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
    let at = service::Place { scope: body.scope, scope_key: body.scope_id, environment: body.environment };
    let link = service::link(&*state.store, &state.acting(&caller), &key, at).await?;
    Ok((StatusCode::CREATED, Json(link)))
}
