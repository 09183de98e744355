//! Secret metadata and which Agents hold each environment. The value of a
//! secret never comes here (see `values.rs`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use heimdall_core::authz::{Action, Target, TargetKind};
use heimdall_core::domain::CatalogKind;
use heimdall_core::grant::{self, WriteGrantClaims};
use heimdall_core::ids::{AgentId, CatalogId, SecretId};
use heimdall_core::names::{validate_name, validate_text};
use heimdall_core::secrets::SecretVersion;
use heimdall_core::secrets::{validate_secret_type, validate_tags, Assignment, Secret};
use heimdall_core::wire::{
    AccessLogEntry, AgentLocation, AssignAgent, CreateSecret, CreateVersion, CreatedVersion,
    DeactivateVersion, SecretDetail, UpdateSecret, VersionHolder,
};
use heimdall_core::{ApiError, ErrorCode, Redacted};
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
        .route("/v1/secrets/{key}/versions", post(create_version))
        .route("/v1/secrets/{key}/deactivate", post(deactivate_version))
        .route("/v1/secrets/{key}/holders", get(holders))
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

impl heimdall_core::body::Query for AccessLogQuery {
    const VALUES: heimdall_core::body::ValuePolicy = heimdall_core::body::ValuePolicy::Closed;
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

/// Who may write or deactivate versions: owner and admin by default (a
/// policy may narrow it per environment); a personal secret: only its
/// owner, whatever their role.
async fn authorize_write(
    state: &AppState,
    caller: &Caller,
    secret: &Secret,
    env: &str,
) -> Result<(), ApiError> {
    if secret.personal_owner.is_some() {
        // `resolve` already answered 404 to anyone but the owner.
        return Ok(());
    }
    state.authorize(caller, Action::SecretWrite, &target(Some(secret), caller), Some(env)).await
}

/// The Agents that hold `environment`, and where people reach them.
async fn locations(
    state: &AppState,
    caller: &Caller,
    environment: CatalogId,
) -> Result<Vec<AgentLocation>, ApiError> {
    let assigned = state.store.list_assignments(caller.org.id, environment).await?;
    let agents = state.store.list_agents(caller.org.id).await?;
    Ok(assigned
        .iter()
        .filter_map(|a| agents.iter().find(|g| g.id == a.agent_id && g.revoked_at.is_none()))
        .map(|g| AgentLocation { agent_id: g.id, agent: g.name.clone(), url: g.local_url.clone() })
        .collect())
}

/// Numbers the next version of a secret in an environment and answers with
/// one signed grant per Agent that holds the environment. The value goes
/// from the CLI to those Agents; it never comes here.
async fn create_version(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<CreateVersion>,
) -> HttpResult<(StatusCode, Json<CreatedVersion>)> {
    let secret = resolve(&state, &caller, &key).await?;
    let env = resolve_catalog(&state, &caller, CatalogKind::Environment, &body.environment).await?;
    authorize_write(&state, &caller, &secret, &env.name).await?;
    let Some(ca) = state.ca.clone() else {
        return Err(ApiError::new(
            ErrorCode::Unavailable,
            "this API has no certificate authority (--ca-dir) to sign write grants",
        )
        .into());
    };
    // Checked before anything is stored: a version no Agent can hold
    // would be a number with no value behind it.
    let holders = locations(&state, &caller, env.id).await?;
    if holders.is_empty() {
        return Err(ApiError::new(
            ErrorCode::NoAgent,
            format!(
                "no Agent holds environment {}; an owner assigns one with `heimdall environment assign-agent`",
                env.name
            ),
        )
        .into());
    }
    let event = state.event(
        &caller,
        "secret.version_created",
        format!("secret:{}", secret.id),
        serde_json::json!({ "name": secret.name, "environment": env.name }),
    );
    let now = event.at;
    let version =
        state.store.create_version(caller.org.id, secret.id, env.id, &caller.member.email, event).await?;
    let mut signed = Vec::with_capacity(holders.len());
    for location in holders {
        let claims = WriteGrantClaims::new(
            Uuid::new_v4(),
            caller.org.id,
            (secret.id, &secret.name),
            (env.id, &env.name),
            version.version,
            location.agent_id,
            &caller.member.email,
            now,
        );
        let token = grant::encode(&claims, |m| ca.sign_grant(m))
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        signed.push(VersionHolder { location, grant: Redacted::new(token) });
    }
    Ok((
        StatusCode::CREATED,
        Json(CreatedVersion {
            secret: secret.name,
            environment: env.name,
            environment_id: env.id,
            version: version.version,
            grant_expires_at: now + grant::GRANT_TTL,
            holders: signed,
        }),
    ))
}

/// Deactivates a version (a leak): every Agent replaces its value with a
/// tombstone on its next sync and answers 410 for it.
async fn deactivate_version(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<DeactivateVersion>,
) -> HttpResult<Json<SecretVersion>> {
    let secret = resolve(&state, &caller, &key).await?;
    let env = resolve_catalog(&state, &caller, CatalogKind::Environment, &body.environment).await?;
    authorize_write(&state, &caller, &secret, &env.name).await?;
    if body.version < 1 {
        return Err(ApiError::invalid_input("version starts at 1").into());
    }
    let event = state.event(
        &caller,
        "secret.version_deactivated",
        format!("secret:{}", secret.id),
        serde_json::json!({ "name": secret.name, "environment": env.name, "version": body.version }),
    );
    let version =
        state.store.deactivate_version(caller.org.id, secret.id, env.id, body.version, event).await?;
    Ok(Json(version))
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HoldersQuery {
    environment: String,
}

impl heimdall_core::body::Query for HoldersQuery {
    const VALUES: heimdall_core::body::ValuePolicy = heimdall_core::body::ValuePolicy::Closed;
}

/// Where to read a secret in an environment: the Agents that hold it.
async fn holders(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    QueryParams(query): QueryParams<HoldersQuery>,
) -> HttpResult<Json<Vec<AgentLocation>>> {
    let secret = resolve(&state, &caller, &key).await?;
    let env = resolve_catalog(&state, &caller, CatalogKind::Environment, &query.environment).await?;
    if secret.personal_owner.is_none() {
        let target = target(Some(&secret), &caller);
        state.authorize(&caller, Action::SecretRead, &target, Some(&env.name)).await?;
    }
    Ok(Json(locations(&state, &caller, env.id).await?))
}
