//! The organization's notification channels: made and removed by an
//! owner, listed with their deliveries by owners and admins.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::notify::{service, Channel, Delivery};
use heimdall_core::{ApiError, ErrorCode};
use heimdall_wire::{CreateChannel, CreatedChannel, UpdateChannel};
use serde::Deserialize;
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
        .routes(routes!(deliveries))
        .routes(routes!(update, remove))
}

errors!(body CreateErrors: AlreadyExists);
errors!(ListErrors: InvalidInput);
errors!(DeliveriesErrors: InvalidInput);
errors!(RemoveErrors: NotFound);
errors!(body UpdateErrors: NotFound, AlreadyExists);

#[utoipa::path(
    post,
    path = "/v1/notifications",
    tag = "notifications",
    operation_id = "create_channel",
    summary = "Create a notification channel",
    description = "Adds a webhook that receives the organization's notable audit events as JSON, and answers \
        the secret that signs each delivery (HMAC-SHA256), shown once. The webhook's URL is kept sealed and \
        shown by its host only, as it may hold the receiver's credential. Owners only by default \
        (`notification.write`); a name already taken is refused `ALREADY_EXISTS`.",
    request_body = CreateChannel,
    responses((status = 201, description = "The channel, with its signing secret shown once", body = CreatedChannel), CreateErrors),
)]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateChannel>,
) -> HttpResult<(StatusCode, Json<CreatedChannel>)> {
    let seal = |id: &str, url: &str| seal_url(&state, id, url);
    let id = (Uuid::new_v4().to_string(), body.name);
    let channel = service::create(&*state.store, &state.acting(&caller), id, &body.webhook, seal).await?;
    let secret = signing_key(&state)?.channel_secret(&channel.id);
    Ok((StatusCode::CREATED, Json(CreatedChannel { channel, secret: secret.to_string() })))
}

#[utoipa::path(
    get,
    path = "/v1/notifications",
    tag = "notifications",
    operation_id = "list_channels",
    summary = "List notification channels",
    description = "The organization's notification channels, by name, one page at a time (webhooks shown by \
        host only). By default owners and admins may list them (`notification.read`).",
    params(crate::http::PageQuery),
    responses((status = 200, description = "A page of the notification channels, by name", body = Vec<heimdall_wire::schemas::Channel>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(page): QueryParams<crate::http::PageQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<Channel>>)> {
    let channels = service::list(&*state.store, &state.acting(&caller)).await?;
    let (headers, channels) = crate::http::short_page(channels, page.limit, page.after.as_deref(), |c| {
        vec![c.name.clone(), c.id.clone()]
    })?;
    Ok((headers, Json(channels)))
}

#[utoipa::path(
    patch,
    path = "/v1/notifications/{key}",
    tag = "notifications",
    operation_id = "update_channel",
    summary = "Change a notification channel",
    description = "Renames a channel or points it at another webhook (checked as at creation, kept sealed, \
        recorded by its host only); deliveries not yet sent go to the new one, signed with the same secret. \
        Owners only by default (`notification.write`); a name already taken is refused `ALREADY_EXISTS`.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = UpdateChannel,
    responses((status = 200, description = "The channel as it is now", body = heimdall_wire::schemas::Channel), UpdateErrors),
)]
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<UpdateChannel>,
) -> HttpResult<Json<Channel>> {
    let seal = |id: &str, url: &str| seal_url(&state, id, url);
    let change = (body.name, body.webhook.as_deref());
    Ok(Json(service::update(&*state.store, &state.acting(&caller), &key, change, seal).await?))
}

#[utoipa::path(
    delete,
    path = "/v1/notifications/{key}",
    tag = "notifications",
    operation_id = "delete_channel",
    summary = "Delete a notification channel",
    description = "Removes a notification channel, by id or name, with its deliveries: it receives nothing \
        more. Owners only by default (`notification.write`).",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "The channel, removed", body = heimdall_wire::schemas::Channel), RemoveErrors),
)]
async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<Channel>> {
    Ok(Json(service::remove(&*state.store, &state.acting(&caller), &key).await?))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct DeliveriesQuery {
    limit: Option<u32>,
}

impl heimdall_wire::body::Query for DeliveriesQuery {}

#[utoipa::path(
    get,
    path = "/v1/notifications/deliveries",
    tag = "notifications",
    operation_id = "list_deliveries",
    summary = "List recent notification deliveries",
    description = "The latest deliveries to the organization's channels, newest first (50 by default, at \
        most 1000), with their status (`pending`, `delivered` or `failed`), attempts and the receiver's last \
        answer. By default owners and admins may read them (`notification.read`).",
    params(DeliveriesQuery),
    responses((status = 200, description = "Recent deliveries, newest first", body = Vec<heimdall_wire::schemas::Delivery>), DeliveriesErrors),
)]
async fn deliveries(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<DeliveriesQuery>,
) -> HttpResult<Json<Vec<Delivery>>> {
    Ok(Json(service::deliveries(&*state.store, &state.acting(&caller), query.limit).await?))
}

/// The API's notification signing key; without `--ca-dir` there is none.
fn signing_key(state: &AppState) -> Result<std::sync::Arc<crate::notifications::SigningKey>, ApiError> {
    state.notifications.clone().ok_or_else(|| {
        ApiError::new(
            ErrorCode::Unavailable,
            "this API runs without --ca-dir, where its notification signing key lives",
        )
    })
}

/// The webhook URL sealed under the channel's id: its path may hold the
/// receiver's credential, so it is kept sealed, and shown by its host only.
fn seal_url(state: &AppState, id: &str, url: &str) -> Result<String, ApiError> {
    signing_key(state)?.seal_url(id, url).map_err(ApiError::from)
}
