//! Domains, systems, components and environments: one set of handlers,
//! registered once per kind.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::catalog::service;
use heimdall_core::domain::{CatalogEntry, CatalogKind};
use heimdall_core::ids::CatalogId;
use heimdall_wire::{CreateCatalogEntry, Rename};
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::http::error::HttpResult;
use crate::http::extract::{Caller, JsonBody, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;

/// One kind's routes: its handlers, each with its document.
pub(super) fn routes(kind: CatalogKind) -> OpenApiRouter<AppState> {
    match kind {
        CatalogKind::Domain => domains::routes(),
        CatalogKind::System => systems::routes(),
        CatalogKind::Component => components::routes(),
        CatalogKind::Environment => environments::routes(),
    }
}

/// One module of documented handlers per kind (a document names each
/// path literally), all calling the shared handlers below.
macro_rules! catalog_kind {
    ($module:ident, $kind:expr, $list_path:literal, $entry_path:literal, $noun:literal) => {
        mod $module {
            use super::*;

            pub(super) fn routes() -> OpenApiRouter<AppState> {
                OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(show, rename, delete))
            }

            #[utoipa::path(get, path = $list_path, tag = "catalog", operation_id = concat!("list_", $noun, "s"),
                summary = concat!("List the ", $noun, "s"),
                description = concat!(
                    "The organization's ",
                    $noun,
                    "s, by name, one page at a time; systems may be filtered by `domain` and components by \
                     `system`. Every member may list them by default (`catalog.read`)."
                ),
                params(ListQuery),
                responses((status = 200, description = "A page of the entries of this kind, by name", body = Vec<heimdall_wire::schemas::CatalogEntry>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors))]
            async fn list(state: State<AppState>, caller: Caller, query: QueryParams<ListQuery>) -> HttpResult<(axum::http::HeaderMap, Json<Vec<CatalogEntry>>)> {
                super::list($kind, state, caller, query).await
            }

            #[utoipa::path(post, path = $list_path, tag = "catalog", operation_id = concat!("create_", $noun),
                summary = concat!("Create a new ", $noun),
                description = concat!(
                    "Adds one to the organization's ",
                    $noun,
                    "s, with a name and an optional description. A system names its domain in `parent_id` \
                     and a component its system; domains and environments belong to the organization and \
                     take none. By default owners and admins may create them (`catalog.write`); a name \
                     already taken is refused `ALREADY_EXISTS`."
                ),
                request_body = CreateCatalogEntry,
                responses((status = 201, description = "The new entry", body = heimdall_wire::schemas::CatalogEntry), CreateErrors))]
            async fn create(state: State<AppState>, caller: Caller, body: JsonBody<CreateCatalogEntry>) -> HttpResult<(StatusCode, Json<CatalogEntry>)> {
                super::create($kind, state, caller, body).await
            }

            #[utoipa::path(get, path = $entry_path, tag = "catalog", operation_id = concat!("get_", $noun),
                summary = concat!("Show the ", $noun),
                description = concat!(
                    "One of the organization's ",
                    $noun,
                    "s, by id or by name (a name that several share must be given as an id). Every member \
                     may read it by default (`catalog.read`)."
                ),
                params(("key" = String, Path, description = "An id or a name")),
                responses((status = 200, description = "The entry", body = heimdall_wire::schemas::CatalogEntry), ShowErrors))]
            async fn show(state: State<AppState>, caller: Caller, key: Path<String>) -> HttpResult<Json<CatalogEntry>> {
                super::show($kind, state, caller, key).await
            }

            #[utoipa::path(patch, path = $entry_path, tag = "catalog", operation_id = concat!("rename_", $noun),
                summary = concat!("Rename the ", $noun),
                description = concat!(
                    "Gives one of the organization's ",
                    $noun,
                    "s a new name; its id stays. By default owners and admins may rename it \
                     (`catalog.write`); a name already taken is refused `ALREADY_EXISTS`."
                ),
                params(("key" = String, Path, description = "An id or a name")),
                request_body = Rename,
                responses((status = 200, description = "The entry, renamed", body = heimdall_wire::schemas::CatalogEntry), RenameErrors))]
            async fn rename(state: State<AppState>, caller: Caller, key: Path<String>, body: JsonBody<Rename>) -> HttpResult<Json<CatalogEntry>> {
                super::rename($kind, state, caller, key, body).await
            }

            #[utoipa::path(delete, path = $entry_path, tag = "catalog", operation_id = concat!("delete_", $noun),
                summary = concat!("Delete the ", $noun),
                description = concat!(
                    "Deletes one of the organization's ",
                    $noun,
                    "s. Refused `NOT_EMPTY` while it still contains entries or is used by a Resource, a cloud \
                     account link, a secret or an Agent assignment. By default owners and admins may delete it \
                     (`catalog.write`)."
                ),
                params(("key" = String, Path, description = "An id or a name")),
                responses((status = 204, description = "Deleted"), DeleteErrors))]
            async fn delete(state: State<AppState>, caller: Caller, key: Path<String>) -> HttpResult<StatusCode> {
                super::delete($kind, state, caller, key).await
            }
        }
    };
}

catalog_kind!(domains, CatalogKind::Domain, "/v1/domains", "/v1/domains/{key}", "domain");
catalog_kind!(systems, CatalogKind::System, "/v1/systems", "/v1/systems/{key}", "system");
catalog_kind!(components, CatalogKind::Component, "/v1/components", "/v1/components/{key}", "component");
catalog_kind!(
    environments,
    CatalogKind::Environment,
    "/v1/environments",
    "/v1/environments/{key}",
    "environment"
);

errors!(ListErrors: NotFound, InvalidInput);
errors!(body CreateErrors: NotFound, AlreadyExists);
errors!(ShowErrors: NotFound, InvalidInput);
errors!(body RenameErrors: NotFound, AlreadyExists);
errors!(DeleteErrors: NotFound, InvalidInput, NotEmpty);

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// For systems: only those in this domain (id or name).
    domain: Option<String>,
    /// For components: only those in this system (id or name).
    system: Option<String>,
    /// At most this many (default 100, at most 1000).
    limit: Option<u32>,
    /// The `Heimdall-Next-After` of the previous page.
    after: Option<String>,
}

impl heimdall_wire::body::Query for ListQuery {}

async fn list(
    kind: CatalogKind,
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<ListQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<CatalogEntry>>)> {
    let within = (query.domain.as_deref(), query.system.as_deref());
    let entries = service::list(&*state.store, &state.acting(&caller), kind, within).await?;
    let (headers, entries) = crate::http::short_page(entries, query.limit, query.after.as_deref(), |e| {
        vec![e.name.clone(), e.id.to_string()]
    })?;
    Ok((headers, Json(entries)))
}

async fn create(
    kind: CatalogKind,
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateCatalogEntry>,
) -> HttpResult<(StatusCode, Json<CatalogEntry>)> {
    let request =
        service::NewEntry { name: body.name, description: body.description, parent: body.parent_id };
    let id = CatalogId::from_uuid(Uuid::new_v4());
    let entry = service::create(&*state.store, &state.acting(&caller), kind, request, id).await?;
    Ok((StatusCode::CREATED, Json(entry)))
}

async fn show(
    kind: CatalogKind,
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<CatalogEntry>> {
    Ok(Json(service::show(&*state.store, &state.acting(&caller), kind, &key).await?))
}

async fn rename(
    kind: CatalogKind,
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<Rename>,
) -> HttpResult<Json<CatalogEntry>> {
    Ok(Json(service::rename(&*state.store, &state.acting(&caller), kind, &key, &body.name).await?))
}

async fn delete(
    kind: CatalogKind,
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<StatusCode> {
    service::delete(&*state.store, &state.acting(&caller), kind, &key).await?;
    Ok(StatusCode::NO_CONTENT)
}
