//! Databases and their service users (`heimdall database …`); the Agent
//! channel's side of their rotations is `agent_channel::database_tasks`.
//!
//! People say where a database is, which secret holds its admin
//! credential, and how often each user rotates; the API keeps that and the
//! schedule, and decides what is due (`heimdall_core::dbusers::due`). One
//! Agent holding the database's environment claims a due task with a lease,
//! generates the password, changes the database and stores the version;
//! no password ever reaches this process.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::dbusers::{self, service, Database, ServiceUser};
use heimdall_core::ids::{DatabaseId, SecretId, ServiceUserId};
use heimdall_core::ApiError;
use heimdall_wire::{CreateDatabase, CreateServiceUser, UpdateDatabase};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::http::error::HttpResult;
use crate::http::extract::{Caller, JsonBody, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(update, delete))
        .routes(routes!(list_users, create_user))
        .routes(routes!(show_user, delete_user))
        .routes(routes!(rotate))
}

errors!(body CreateErrors: AlreadyExists, NotFound);
errors!(ListErrors: InvalidInput);
errors!(body UpdateErrors: NotFound);
errors!(DeleteErrors: NotFound, NotEmpty);
errors!(body CreateUserErrors: AlreadyExists, NotFound);
errors!(ShowErrors: NotFound);
errors!(ListUsersErrors: NotFound, InvalidInput);
errors!(RotateErrors: NotFound, Conflict);
errors!(DeleteUserErrors: NotFound, InvalidInput, ValueMayPersist, Conflict);

#[utoipa::path(
    post,
    path = "/v1/databases",
    tag = "databases",
    operation_id = "create_database",
    summary = "Register a database",
    description = "Registers a database whose service users Heimdall creates and rotates: its engine, host, \
        port, TLS mode, the environment whose Agents run the statements, and the secret holding the \
        administrative login. The caller needs `secret.write` in that environment (owners and admins by \
        default) and must be able to read the admin secret there; an unknown environment or secret is \
        refused `NOT_FOUND`.",
    request_body = CreateDatabase,
    responses((status = 201, description = "The database", body = heimdall_wire::schemas::Database), CreateErrors),
)]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateDatabase>,
) -> HttpResult<(StatusCode, Json<Database>)> {
    if let Some(pem) = &body.ca_pem {
        check_ca_pem(pem)?;
    }
    let new = dbusers::NewDatabase {
        name: body.name,
        engine: body.engine,
        host: body.host,
        port: body.port,
        database: body.database,
        tls: body.tls,
        ca_pem: body.ca_pem,
    };
    let (id, place) =
        (DatabaseId::from_uuid(Uuid::new_v4()), (body.environment.as_str(), body.admin_secret.as_str()));
    let database = service::create(&*state.store, &state.acting(&caller), new, place, id).await?;
    Ok((StatusCode::CREATED, Json(database)))
}

#[utoipa::path(
    patch,
    path = "/v1/databases/{database}",
    tag = "databases",
    operation_id = "update_database",
    summary = "Change a database",
    description = "Changes where a registered database is (host, port), how the admin connection is secured \
        (`tls`, `ca_pem`; an empty `ca_pem` removes it) and which secret holds the admin login, each checked \
        as at registration; the next task an Agent claims uses it. The engine, database name and environment \
        never change. Needs `secret.write` in its environment (owners and admins by default).",
    params(("database" = String, Path, description = "The database's name")),
    request_body = heimdall_wire::schemas::UpdateDatabase,
    responses((status = 200, description = "The database as it is now", body = heimdall_wire::schemas::Database), UpdateErrors),
)]
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(body): JsonBody<UpdateDatabase>,
) -> HttpResult<Json<Database>> {
    if let Some(pem) = body.ca_pem.as_deref().filter(|p| !p.is_empty()) {
        check_ca_pem(pem)?;
    }
    Ok(Json(service::update(&*state.store, &state.acting(&caller), &name, &body).await?))
}

#[utoipa::path(
    delete,
    path = "/v1/databases/{database}",
    tag = "databases",
    operation_id = "delete_database",
    summary = "Delete a database",
    description = "Removes a registered database that has no service users (`NOT_EMPTY` otherwise: their \
        logins would stay on the server with no one to rotate or retire them). Nothing on the server is \
        touched. Needs `secret.write` in its environment (owners and admins by default).",
    params(("database" = String, Path, description = "The database's name")),
    responses((status = 204, description = "Deleted"), DeleteErrors),
)]
async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> HttpResult<StatusCode> {
    service::delete(&*state.store, &state.acting(&caller), &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    get,
    path = "/v1/databases",
    tag = "databases",
    operation_id = "list_databases",
    summary = "List databases",
    description = "The registered databases, by name, one page at a time: only those in environments where \
        the caller may read secrets.",
    params(crate::http::PageQuery),
    responses((status = 200, description = "A page of the databases the caller may see, by name", body = Vec<heimdall_wire::schemas::Database>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(page): QueryParams<crate::http::PageQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<Database>>)> {
    let databases = service::list(&*state.store, &state.acting(&caller)).await?;
    let (headers, databases) = crate::http::short_page(databases, page.limit, page.after.as_deref(), |d| {
        vec![d.name.clone(), d.id.to_string()]
    })?;
    Ok((headers, Json(databases)))
}

#[utoipa::path(
    post,
    path = "/v1/databases/{database}/users",
    tag = "databases",
    operation_id = "create_service_user",
    summary = "Create a database service user",
    description = "Adds a login to the database that an Agent holding its environment creates, then rotates \
        every `rotate_every`, keeping the previous login usable for `grace`; its credential is a new secret \
        named after the database and the user. The caller needs `secret.write` in the database's environment \
        and must be able to read the admin secret; no password ever reaches the API.",
    params(("database" = String, Path, description = "A database name")),
    request_body = CreateServiceUser,
    responses((status = 201, description = "The service user; its first rotation is due", body = heimdall_wire::schemas::ServiceUser), CreateUserErrors),
)]
async fn create_user(
    State(state): State<AppState>,
    caller: Caller,
    Path(database): Path<String>,
    JsonBody(body): JsonBody<CreateServiceUser>,
) -> HttpResult<(StatusCode, Json<ServiceUser>)> {
    let every = dbusers::parse_period(&body.rotate_every)?;
    let grace = dbusers::parse_period(&body.grace)?;
    let schedule = dbusers::Schedule::new(every, grace)?;
    let new = dbusers::NewUser {
        name: body.name,
        rotate_every: body.rotate_every,
        grace: body.grace,
        schedule,
        grants: body.grants,
    };
    let ids = (ServiceUserId::from_uuid(Uuid::new_v4()), SecretId::from_uuid(Uuid::new_v4()));
    let user = service::create_user(&*state.store, &state.acting(&caller), &database, new, ids).await?;
    Ok((StatusCode::CREATED, Json(user)))
}

#[utoipa::path(
    get,
    path = "/v1/databases/{database}/users",
    tag = "databases",
    operation_id = "list_service_users",
    summary = "List a database's service users",
    description = "The service users of one database, by name, one page at a time, with their rotation \
        schedule and state. The caller needs `secret.read` in the database's environment.",
    params(("database" = String, Path, description = "A database name"), crate::http::PageQuery),
    responses((status = 200, description = "A page of the database's service users, by name", body = Vec<heimdall_wire::schemas::ServiceUser>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListUsersErrors),
)]
async fn list_users(
    State(state): State<AppState>,
    caller: Caller,
    Path(database): Path<String>,
    QueryParams(page): QueryParams<crate::http::PageQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<ServiceUser>>)> {
    let users = service::list_users(&*state.store, &state.acting(&caller), &database).await?;
    let (headers, users) = crate::http::short_page(users, page.limit, page.after.as_deref(), |u| {
        vec![u.name.clone(), u.id.to_string()]
    })?;
    Ok((headers, Json(users)))
}

#[utoipa::path(
    get,
    path = "/v1/databases/{database}/users/{user}",
    tag = "databases",
    operation_id = "get_service_user",
    summary = "Show a database service user",
    description = "One service user of a database, with its rotation schedule, current version and next \
        rotation. The caller needs `secret.read` in the database's environment.",
    params(("database" = String, Path, description = "A database name"), ("user" = String, Path, description = "A service user name")),
    responses((status = 200, description = "The service user", body = heimdall_wire::schemas::ServiceUser), ShowErrors),
)]
async fn show_user(
    State(state): State<AppState>,
    caller: Caller,
    Path((database, user)): Path<(String, String)>,
) -> HttpResult<Json<ServiceUser>> {
    Ok(Json(service::show_user(&*state.store, &state.acting(&caller), (&database, &user)).await?))
}

#[utoipa::path(
    post,
    path = "/v1/databases/{database}/users/{user}/rotate",
    tag = "databases",
    operation_id = "rotate_service_user",
    summary = "Rotate a service user's password now",
    description = "Makes a rotation due now; an Agent holding the environment runs it. The caller needs \
        `secret.write` in the database's environment and must be able to read the admin secret. Refused \
        `CONFLICT` while the user is not created yet or the previous login is still in its grace period.",
    params(("database" = String, Path, description = "A database name"), ("user" = String, Path, description = "A service user name")),
    responses((status = 202, description = "A rotation is due now", body = heimdall_wire::schemas::ServiceUser), RotateErrors),
)]
async fn rotate(
    State(state): State<AppState>,
    caller: Caller,
    Path((database, user)): Path<(String, String)>,
) -> HttpResult<(StatusCode, Json<ServiceUser>)> {
    let user = service::rotate(&*state.store, &state.acting(&caller), (&database, &user)).await?;
    Ok((StatusCode::ACCEPTED, Json(user)))
}

#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct DeleteUserQuery {
    /// How long the current login keeps working before both are dropped
    /// (e.g. `1h`); the user's own grace by default.
    grace: Option<String>,
}

impl heimdall_wire::body::Query for DeleteUserQuery {}

#[utoipa::path(
    delete,
    path = "/v1/databases/{database}/users/{user}",
    tag = "databases",
    operation_id = "delete_service_user",
    summary = "Delete a database service user",
    description = "Stops the user's rotations and, after `grace` (the user's own by default), has an Agent \
        holding the environment drop both logins and the group role; then the user is gone and its secret \
        starts deleting (each Agent deletes its copies at its next sync). Until then `database user show` \
        names it `deleting` and the current version is still served. The caller needs `secret.write` in the \
        database's environment and must be able to read the admin secret: the drop uses it as her read. \
        Refused `CONFLICT` when it is already being deleted, and `VALUE_MAY_PERSIST` while an Agent that \
        will not sync again may hold its secret.",
    params(
        ("database" = String, Path, description = "A database name"),
        ("user" = String, Path, description = "A service user name"),
        DeleteUserQuery,
    ),
    responses((status = 202, description = "The service user, deleting", body = heimdall_wire::schemas::ServiceUser), DeleteUserErrors),
)]
async fn delete_user(
    State(state): State<AppState>,
    caller: Caller,
    Path((database, user)): Path<(String, String)>,
    QueryParams(query): QueryParams<DeleteUserQuery>,
) -> HttpResult<(StatusCode, Json<ServiceUser>)> {
    let grace = query.grace.as_deref().map(dbusers::parse_period).transpose()?;
    let (actor, stale_after) = (state.acting(&caller), state.agent_stale_after);
    let user = service::delete_user(&*state.store, &actor, (&database, &user), grace, stale_after).await?;
    Ok((StatusCode::ACCEPTED, Json(user)))
}

/// A CA bundle: PEM certificates only, bounded.
fn check_ca_pem(pem: &str) -> Result<(), ApiError> {
    if pem.len() > dbusers::MAX_CA_PEM {
        return Err(ApiError::invalid_input(format!("--ca-file is at most {} bytes", dbusers::MAX_CA_PEM)));
    }
    heimdall_tls::verify::roots(pem)
        .map(|_| ())
        .map_err(|e| ApiError::invalid_input(format!("--ca-file holds no usable CA certificate: {e}")))
}
