//! The organization's notification channels: made and removed by an
//! owner, listed with their deliveries by owners and admins.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::{Json, Router};
use heimdall_core::authz::{Action, Target};
use heimdall_core::names::validate_name;
use heimdall_core::notify::{check_webhook_url, display_url, Channel, Delivery};
use heimdall_core::wire::{CreateChannel, CreatedChannel};
use heimdall_core::{ApiError, ErrorCode};
use serde::Deserialize;
use uuid::Uuid;

use super::error::HttpResult;
use super::extract::{Caller, JsonBody, QueryParams};
use super::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/notifications", get(list).post(create))
        .route("/v1/notifications/deliveries", get(deliveries))
        .route("/v1/notifications/{key}", delete(remove))
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateChannel>,
) -> HttpResult<(StatusCode, Json<CreatedChannel>)> {
    state.authorize(&caller, Action::NotificationWrite, &Target::organization(caller.org.id), None).await?;
    validate_name("channel name", &body.name)?;
    check_webhook_url(&body.webhook)?;
    let key = state.notifications.clone().ok_or_else(|| {
        ApiError::new(
            ErrorCode::Unavailable,
            "this API runs without --ca-dir, where its notification signing key lives",
        )
    })?;
    // The URL's path may hold the receiver's credential: it is kept sealed,
    // and shown (and recorded) by its host only.
    let id = Uuid::new_v4().to_string();
    let sealed_url = key.seal_url(&id, &body.webhook).map_err(|e| ApiError::new(ErrorCode::Internal, e))?;
    let channel = Channel {
        id,
        org_id: caller.org.id,
        name: body.name,
        url: display_url(&body.webhook),
        sealed_url,
        created_at: state.clock.now(),
        created_by: caller.member.email.clone(),
    };
    let event = state.event(
        &caller,
        "notification.created",
        format!("notification:{}", channel.id),
        serde_json::json!({ "name": channel.name, "webhook": channel.url }),
    );
    state.store.create_channel(&channel, event).await?;
    let secret = key.channel_secret(&channel.id);
    Ok((StatusCode::CREATED, Json(CreatedChannel { channel, secret: secret.to_string() })))
}

async fn list(State(state): State<AppState>, caller: Caller) -> HttpResult<Json<Vec<Channel>>> {
    state.authorize(&caller, Action::NotificationRead, &Target::organization(caller.org.id), None).await?;
    Ok(Json(state.store.list_channels(caller.org.id).await?))
}

async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<Channel>> {
    state.authorize(&caller, Action::NotificationWrite, &Target::organization(caller.org.id), None).await?;
    let event =
        state.event(&caller, "notification.deleted", format!("notification:{key}"), serde_json::Value::Null);
    Ok(Json(state.store.delete_channel(caller.org.id, &key, event).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeliveriesQuery {
    limit: Option<u32>,
}

impl heimdall_core::body::Query for DeliveriesQuery {}

async fn deliveries(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<DeliveriesQuery>,
) -> HttpResult<Json<Vec<Delivery>>> {
    state.authorize(&caller, Action::NotificationRead, &Target::organization(caller.org.id), None).await?;
    let limit = query.limit.unwrap_or(50);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::invalid_input("limit must be between 1 and 1000").into());
    }
    Ok(Json(state.store.list_deliveries(caller.org.id, limit).await?))
}
