//! Resource schemas: compiled and checked before they are stored.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::ids::SchemaId;
use heimdall_core::infra::ResourceSchema;
use heimdall_core::schemas::{self, service};
use heimdall_wire::{CreateSchema, UpdateSchema};
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::http::error::HttpResult;
use crate::http::extract::{Caller, JsonBody, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(show, update, delete))
}

errors!(ListErrors: InvalidInput);
errors!(ShowErrors: NotFound);
errors!(body UpdateErrors: NotFound);
errors!(DeleteErrors: NotFound, NotEmpty);
errors!(body CreateErrors: AlreadyExists, ModuleNotAllowed, SchemaViolation);

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// Only the versions of this type.
    #[serde(rename = "type")]
    type_name: Option<String>,
    /// At most this many (default 100, at most 1000).
    limit: Option<u32>,
    /// The `Heimdall-Next-After` of the previous page.
    after: Option<String>,
}

impl heimdall_wire::body::Query for ListQuery {}

#[utoipa::path(
    patch,
    path = "/v1/schemas/{key}",
    tag = "schemas",
    operation_id = "update_schema",
    summary = "Deprecate a resource schema version, or take that back",
    description = "`deprecated: true`: no new Resource is requested on this version (`CONFLICT`, naming it), \
        and a type name means its newest version that is not deprecated; the Resources already on it go on. \
        `false` takes that back. By default owners and admins may (`schema.write`).",
    params(("key" = String, Path, description = "A schema id")),
    request_body = UpdateSchema,
    responses((status = 200, description = "The schema as it is now", body = heimdall_wire::schemas::ResourceSchema), UpdateErrors),
)]
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<UpdateSchema>,
) -> HttpResult<Json<ResourceSchema>> {
    let actor = state.acting(&caller);
    Ok(Json(service::set_deprecated(&*state.store, &actor, &key, body.deprecated).await?))
}

#[utoipa::path(
    delete,
    path = "/v1/schemas/{key}",
    tag = "schemas",
    operation_id = "delete_schema",
    summary = "Delete a resource schema version",
    description = "Removes a version once no Resource uses it (else `NOT_EMPTY`, naming how many): gone from \
        lists and lookups, kept for the history of the Resources that were on it. Its number is never used \
        again. By default owners and admins may (`schema.write`).",
    params(("key" = String, Path, description = "A schema id")),
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

#[utoipa::path(
    get,
    path = "/v1/schemas",
    tag = "schemas",
    operation_id = "list_schemas",
    summary = "List resource schemas",
    description = "Every version of the organization's resource schemas, by type and version, one page at a \
        time, optionally of one type only. Every member may read them by default (`schema.read`).",
    params(ListQuery),
    responses((status = 200, description = "A page of the resource schemas, every version, by type and version", body = Vec<heimdall_wire::schemas::ResourceSchema>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<ListQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<ResourceSchema>>)> {
    let schemas = service::list(&*state.store, &state.acting(&caller), query.type_name.as_deref()).await?;
    let (headers, schemas) = crate::http::short_page(schemas, query.limit, query.after.as_deref(), |s| {
        vec![s.type_name.clone(), crate::http::sort_number(s.version), s.id.to_string()]
    })?;
    Ok((headers, Json(schemas)))
}

#[utoipa::path(
    get,
    path = "/v1/schemas/{key}",
    tag = "schemas",
    operation_id = "get_schema",
    summary = "Show a resource schema",
    description = "One resource schema, by id, or by type name for its newest version: its input schema, \
        per-environment defaults, module and whether changes require approval. Every member may read it by \
        default (`schema.read`).",
    params(("key" = String, Path, description = "A schema id, or a type name (its newest version)")),
    responses((status = 200, description = "The schema", body = heimdall_wire::schemas::ResourceSchema), ShowErrors),
)]
async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<ResourceSchema>> {
    Ok(Json(service::show(&*state.store, &state.acting(&caller), &key).await?))
}

#[utoipa::path(
    post,
    path = "/v1/schemas",
    tag = "schemas",
    operation_id = "create_schema",
    summary = "Create a resource schema",
    description = "Adds a resource type, or a new version of an existing one: the JSON Schema of its input, \
        defaults per environment, the Terraform module to run, whether each change needs approval of its \
        plan, and how often to check for drift. The input schema must compile. By default owners and admins \
        may create schemas (`schema.write`).",
    request_body = CreateSchema,
    responses((status = 201, description = "The schema (a new version when the type exists)", body = heimdall_wire::schemas::ResourceSchema), CreateErrors),
)]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateSchema>,
) -> HttpResult<(StatusCode, Json<ResourceSchema>)> {
    let request = schemas::NewSchema {
        type_name: body.type_name,
        input_schema: body.input_schema,
        defaults: body.defaults.unwrap_or_default(),
        module: body.module,
        requires_approval: body.requires_approval,
        drift_check_every: body.drift_check_every,
    };
    let id = SchemaId::from_uuid(Uuid::new_v4());
    let stored = service::create(&*state.store, &state.acting(&caller), request, id).await?;
    Ok((StatusCode::CREATED, Json(stored)))
}
