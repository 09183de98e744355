//! Members: add, list, show, change role, remove.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::domain::Member;
use heimdall_core::ids::MemberId;
use heimdall_core::members::service;
use heimdall_wire::{AddMember, AddedMember, ChangeRole};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::tokens::new_token;
use crate::http::error::HttpResult;
use crate::http::extract::{Caller, JsonBody, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, add)).routes(routes!(show, change_role, remove))
}

errors!(ListErrors: InvalidInput);
errors!(body AddErrors: AlreadyExists);
errors!(ShowErrors: NotFound);
errors!(body ChangeErrors: NotFound, LastOwner);
errors!(RemoveErrors: NotFound, LastOwner);

#[utoipa::path(
    get,
    path = "/v1/members",
    tag = "members",
    operation_id = "list_members",
    summary = "List members",
    description = "The members of the organization with their roles, by email, one page at a time. Every \
        member may list them by default (`member.read`).",
    params(crate::http::PageQuery),
    responses((status = 200, description = "A page of the members of the organization, by email", body = Vec<heimdall_wire::schemas::Member>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(page): QueryParams<crate::http::PageQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<Member>>)> {
    let members = service::list(&*state.store, &state.acting(&caller)).await?;
    let (headers, members) = crate::http::short_page(members, page.limit, page.after.as_deref(), |m| {
        vec![m.email.clone(), m.id.to_string()]
    })?;
    Ok((headers, Json(members)))
}

#[utoipa::path(
    post,
    path = "/v1/members",
    tag = "members",
    operation_id = "add_member",
    summary = "Add a member",
    description = "Adds a member with an email and a role, and answers their first API token, shown once. By \
        default owners and admins may add members (`member.write`), and only an owner may add an owner. An \
        email already in the organization is refused `ALREADY_EXISTS`.",
    request_body = AddMember,
    responses((status = 201, description = "Added, with the first API token", body = AddedMember), AddErrors),
)]
async fn add(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<AddMember>,
) -> HttpResult<(StatusCode, Json<AddedMember>)> {
    let id = MemberId::from_uuid(Uuid::new_v4());
    let (token, record) = new_token("initial");
    let actor = state.acting(&caller);
    let member = service::add(&*state.store, &actor, id, &body.email, body.role, &record).await?;
    Ok((StatusCode::CREATED, Json(AddedMember { member, token: token.expose().clone() })))
}

#[utoipa::path(
    get,
    path = "/v1/members/{key}",
    tag = "members",
    operation_id = "get_member",
    summary = "Show a member",
    description = "One member, by id or email, with their role. Every member may read it by default \
        (`member.read`).",
    params(("key" = String, Path, description = "A member id or an email")),
    responses((status = 200, description = "The member", body = heimdall_wire::schemas::Member), ShowErrors),
)]
async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<Member>> {
    Ok(Json(service::show(&*state.store, &state.acting(&caller), &key).await?))
}

#[utoipa::path(
    patch,
    path = "/v1/members/{key}",
    tag = "members",
    operation_id = "change_member_role",
    summary = "Change a member's role",
    description = "Gives a member the role `owner`, `admin` or `member`. By default owners and admins may \
        change roles (`member.write`), and only an owner may grant or take away the owner role. Demoting the \
        last owner is refused `LAST_OWNER`.",
    params(("key" = String, Path, description = "A member id or an email")),
    request_body = ChangeRole,
    responses((status = 200, description = "The member with the new role", body = heimdall_wire::schemas::Member), ChangeErrors),
)]
async fn change_role(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<ChangeRole>,
) -> HttpResult<Json<Member>> {
    Ok(Json(service::change_role(&*state.store, &state.acting(&caller), &key, body.role).await?))
}

#[utoipa::path(
    delete,
    path = "/v1/members/{key}",
    tag = "members",
    operation_id = "remove_member",
    summary = "Remove a member",
    description = "Removes a member from the organization and revokes all of their API tokens. By default \
        owners and admins may remove members (`member.write`), and only an owner may remove an owner. \
        Removing the last owner is refused `LAST_OWNER`.",
    params(("key" = String, Path, description = "A member id or an email")),
    responses((status = 200, description = "The member removed (their tokens revoked)", body = heimdall_wire::schemas::Member), RemoveErrors),
)]
async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<Member>> {
    Ok(Json(service::remove(&*state.store, &state.acting(&caller), &key).await?))
}
