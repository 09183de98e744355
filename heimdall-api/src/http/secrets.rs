//! Secret metadata and which Agents hold each environment. The value of a
//! secret never comes here (see `values.rs`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use heimdall_core::authz::{Action, Target, TargetKind};
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{AgentId, CatalogId, SecretId};
use heimdall_core::names::{validate_name, validate_text};
use heimdall_core::secrets::{validate_secret_type, validate_tags, Assignment, Secret};
use heimdall_core::wire::{AccessLogEntry, AssignAgent, CreateSecret, SecretDetail, UpdateSecret};
use heimdall_core::ApiError;
use uuid::Uuid;

use super::catalog::resolve as resolve_catalog;
use super::error::HttpResult;
use super::extract::{Caller, JsonBody, QueryParams};
use super::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/secrets", get(list).post(create))
        .route("/v1/secrets/{key}", get(show).patch(update))
        .route("/v1/secrets/{key}/access-log", get(access_log))
        .route("/v1/environments/{key}/agents", get(assignments).post(assign))
}

fn target(secret: Option<&Secret>, caller: &Caller) -> Target {
    match secret {
        Some(s) => Target::new(TargetKind::Secret, s.id),
        None => Target::organization(caller.org.id),
    }
}

/// A personal secret exists only for its owner: anyone else gets 404,
/// whatever their role.
fn visible(secret: &Secret, caller: &Caller) -> bool {
    secret.personal_owner.as_deref().is_none_or(|owner| owner == caller.member.email)
}

async fn resolve(state: &AppState, caller: &Caller, key: &str) -> Result<Secret, ApiError> {
    let found = match key.parse::<SecretId>() {
        Ok(id) => Some(state.store.get_secret(caller.org.id, id).await?),
        Err(_) => state.store.find_secret_by_name(caller.org.id, key).await?,
    };
    found.filter(|s| visible(s, caller)).ok_or_else(|| ApiError::not_found("secret"))
}

async fn components(state: &AppState, caller: &Caller, keys: &[String]) -> Result<Vec<CatalogId>, ApiError> {
    let mut ids = Vec::with_capacity(keys.len());
    for key in keys {
        let id = resolve_catalog(state, caller, CatalogKind::Component, key).await?.id;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

async fn list(State(state): State<AppState>, caller: Caller) -> HttpResult<Json<Vec<Secret>>> {
    state.authorize(&caller, Action::SecretRead, &target(None, &caller), None).await?;
    let mut secrets = state.store.list_secrets(caller.org.id).await?;
    secrets.retain(|s| visible(s, &caller));
    Ok(Json(secrets))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<SecretDetail>> {
    let secret = resolve(&state, &caller, &key).await?;
    state.authorize(&caller, Action::SecretRead, &target(Some(&secret), &caller), None).await?;
    let versions = state.store.list_versions(caller.org.id, secret.id).await?;
    Ok(Json(SecretDetail { secret, versions }))
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateSecret>,
) -> HttpResult<(StatusCode, Json<Secret>)> {
    validate_name("name", &body.name)?;
    let secret_type = body.secret_type.unwrap_or_else(|| "generic".into());
    validate_secret_type(&secret_type)?;
    let description = body.description.unwrap_or_default();
    validate_text("description", &description, 1000)?;
    let tags = body.tags.unwrap_or_default();
    validate_tags(&tags)?;
    // Anyone may keep a personal secret; org secrets are for owners and admins.
    if !body.personal {
        state.authorize(&caller, Action::SecretWrite, &target(None, &caller), None).await?;
    }
    let components = components(&state, &caller, &body.components.unwrap_or_default()).await?;
    let now = state.clock.now();
    let secret = Secret {
        id: SecretId::from_uuid(Uuid::new_v4()),
        org_id: caller.org.id,
        name: body.name,
        secret_type,
        description,
        tags,
        components,
        personal_owner: body.personal.then(|| caller.member.email.clone()),
        created_at: now,
        created_by: caller.member.email.clone(),
        updated_at: now,
    };
    let event = state.event(
        &caller,
        "secret.created",
        format!("secret:{}", secret.id),
        serde_json::json!({ "name": secret.name, "personal": body.personal }),
    );
    state.store.create_secret(&secret, event).await?;
    Ok((StatusCode::CREATED, Json(secret)))
}

async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<UpdateSecret>,
) -> HttpResult<Json<Secret>> {
    let mut secret = resolve(&state, &caller, &key).await?;
    if secret.personal_owner.is_none() {
        state.authorize(&caller, Action::SecretWrite, &target(Some(&secret), &caller), None).await?;
    }
    if let Some(t) = body.secret_type {
        validate_secret_type(&t)?;
        secret.secret_type = t;
    }
    if let Some(d) = body.description {
        validate_text("description", &d, 1000)?;
        secret.description = d;
    }
    if let Some(tags) = body.tags {
        validate_tags(&tags)?;
        secret.tags = tags;
    }
    if let Some(keys) = body.components {
        secret.components = components(&state, &caller, &keys).await?;
    }
    secret.updated_at = state.clock.now();
    let event = state.event(
        &caller,
        "secret.updated",
        format!("secret:{}", secret.id),
        serde_json::json!({ "name": secret.name }),
    );
    state.store.update_secret(&secret, event).await?;
    Ok(Json(secret))
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AccessLogQuery {
    environment: Option<String>,
}

/// The reads Agents reported for this secret (owner, admin; a personal
/// secret: only its owner, for whom everyone else gets 404).
async fn access_log(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    QueryParams(query): QueryParams<AccessLogQuery>,
) -> HttpResult<Json<Vec<AccessLogEntry>>> {
    let secret = resolve(&state, &caller, &key).await?;
    let environment = match query.environment.as_deref() {
        Some(env) => Some(resolve_catalog(&state, &caller, CatalogKind::Environment, env).await?.name),
        None => None,
    };
    if secret.personal_owner.is_none() {
        let target = target(Some(&secret), &caller);
        state.authorize(&caller, Action::SecretAccessLog, &target, environment.as_deref()).await?;
    }
    let entries = state.store.access_log(caller.org.id, &secret.name, environment.as_deref()).await?;
    Ok(Json(entries))
}

async fn assignments(
    State(state): State<AppState>,
    caller: Caller,
    Path(env): Path<String>,
) -> HttpResult<Json<Vec<Assignment>>> {
    state.authorize(&caller, Action::AgentRead, &Target::organization(caller.org.id), None).await?;
    let env = resolve_catalog(&state, &caller, CatalogKind::Environment, &env).await?;
    Ok(Json(state.store.list_assignments(caller.org.id, env.id).await?))
}

async fn assign(
    State(state): State<AppState>,
    caller: Caller,
    Path(env): Path<String>,
    JsonBody(body): JsonBody<AssignAgent>,
) -> HttpResult<(StatusCode, Json<Assignment>)> {
    let env = resolve_catalog(&state, &caller, CatalogKind::Environment, &env).await?;
    let target = Target::new(TargetKind::Environment, env.id);
    state.authorize(&caller, Action::EnvironmentAssignAgent, &target, Some(&env.name)).await?;
    let agents = state.store.list_agents(caller.org.id).await?;
    let by_id = body.agent.parse::<AgentId>().ok();
    let agent = agents
        .into_iter()
        .find(|a| a.revoked_at.is_none() && (Some(a.id) == by_id || a.name == body.agent))
        .ok_or_else(|| ApiError::not_found("agent (active)"))?;
    let assignment = Assignment {
        environment_id: env.id,
        agent_id: agent.id,
        assigned_at: state.clock.now(),
        assigned_by: caller.member.email.clone(),
    };
    let event = state.event(
        &caller,
        "environment.agent_assigned",
        format!("environment:{}", env.id),
        serde_json::json!({ "environment": env.name, "agent": agent.name }),
    );
    state.store.assign_agent(caller.org.id, &assignment, event).await?;
    Ok((StatusCode::CREATED, Json(assignment)))
}
