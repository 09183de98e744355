//! Secret metadata and which Agents hold each environment. The value of a
//! secret never comes here (see `values.rs`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::grant::{self, GrantWriter, WriteGrantClaims};
use heimdall_core::ids::SecretId;
use heimdall_core::secrets::{
    service, versions, views, Assignment, NewSecret, Secret, SecretCursor, SecretVersion,
};
use heimdall_core::{ApiError, ErrorCode, Redacted};
use heimdall_wire::{
    AccessLogEntry, AgentLocation, AssignAgent, CreateSecret, CreateVersion, CreatedVersion,
    DeactivateVersion, SecretDetail, UpdateSecret, VersionHolder,
};
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
        .routes(routes!(show, update, delete_secret))
        .routes(routes!(access_log))
        .routes(routes!(create_version))
        .routes(routes!(deactivate_version))
        .routes(routes!(holders))
        .routes(routes!(assignments, assign))
        .routes(routes!(unassign))
}

errors!(ListErrors);
errors!(ListSecretsErrors: InvalidInput);
errors!(body CreateErrors: NotFound, AlreadyExists);
errors!(ShowErrors: NotFound);
errors!(AssignmentsErrors: NotFound, InvalidInput);
errors!(body UpdateErrors: NotFound, Conflict);
errors!(DeleteErrors: NotFound, ValueMayPersist, Conflict);
errors!(AccessLogErrors: NotFound, InvalidInput);
errors!(body VersionErrors: NotFound, NoAgent, Conflict, GrantInvalid);
errors!(body DeactivateErrors: NotFound, VersionDeactivated, Conflict);
errors!(HoldersErrors: NotFound, NoAgent, InvalidInput);
errors!(body AssignErrors: NotFound, AlreadyExists, Conflict);

/// The secrets the caller reaches and may read: personal ones only their
/// owner's, and none that a policy forbids (a `forbid` on a Component,
/// System or Domain hides the secrets linked under it).
#[utoipa::path(
    get,
    path = "/v1/secrets",
    tag = "secrets",
    operation_id = "list_secrets",
    summary = "List the secrets you may see",
    description = "The secrets the caller reaches and may read, by name, one page at a time: metadata only, \
        never a value. A personal secret is listed only for its owner, and a policy's `forbid` on a \
        component, system or domain hides the secrets linked under it.",
    params(ListQuery),
    responses((status = 200, description = "A page of the secrets the caller may see, by name (never a value)", body = Vec<heimdall_wire::schemas::Secret>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListSecretsErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<ListQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<Secret>>)> {
    let limit = heimdall_wire::page::limit(query.limit)?;
    let after = query.after.as_deref().map(heimdall_wire::page::decode::<SecretCursor>).transpose()?;
    let page = views::list(&*state.store, &state.acting(&caller), limit, after).await?;
    let (headers, secrets) = crate::http::visible(page);
    Ok((headers, Json(secrets)))
}

#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// At most this many (default 100, at most 1000).
    limit: Option<u32>,
    /// The `Heimdall-Next-After` of the previous page.
    after: Option<String>,
}

impl heimdall_wire::body::Query for ListQuery {
    const VALUES: heimdall_wire::body::ValuePolicy = heimdall_wire::body::ValuePolicy::Closed;
}

/// A secret and its versions: only those in environments where the
/// caller may read it (an environment-scoped `forbid` filters them out).
#[utoipa::path(
    get,
    path = "/v1/secrets/{key}",
    tag = "secrets",
    operation_id = "get_secret",
    summary = "Show a secret and its versions",
    description = "One secret, by id or name (the caller's own personal secret of that name first, then the \
        organization's), with its versions, the Agents holding them and any deletion per environment; only \
        environments where the caller may read it are shown. Never a value; another member's personal secret \
        is `NOT_FOUND`.",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "The secret with its versions per environment", body = SecretDetail), ShowErrors),
)]
async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<SecretDetail>> {
    Ok(Json(detail(views::show(&*state.store, &state.acting(&caller), &key).await?)))
}

/// A secret's detail on the wire.
fn detail(shown: views::Detail) -> SecretDetail {
    let views::Detail { secret, versions, holdings, behind, environment_deletions } = shown;
    let behind = behind.into_iter().map(Into::into).collect();
    SecretDetail { secret, versions, holdings, behind, environment_deletions }
}

#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct DeleteQuery {
    /// Only this environment (id or name).
    environment: Option<String>,
}

impl heimdall_wire::body::Query for DeleteQuery {
    const VALUES: heimdall_wire::body::ValuePolicy = heimdall_wire::body::ValuePolicy::Closed;
}

/// `DELETE /v1/secrets/{key}[?environment=E]` (whoever may write it in
/// every environment it goes from): refused `VALUE_MAY_PERSIST` while an
/// Agent that will not sync again may hold a copy there
/// (`heimdall_core::deletion`); otherwise it goes `deleting` (the secret,
/// or the secret in that environment), and `deleted` once no Agent's
/// inventory lists it (there).
#[utoipa::path(
    delete,
    path = "/v1/secrets/{key}",
    tag = "secrets",
    operation_id = "delete_secret",
    summary = "Delete a secret, or its values in one environment",
    description = "Starts deleting the secret everywhere, or only in `environment`: it goes `deleting`, \
        every Agent holding it deletes its copies on its next sync, and it is `deleted` once none lists it. \
        Needs `secret.write` in every environment concerned. Refused `VALUE_MAY_PERSIST`, naming the Agents, \
        while an Agent that will not sync again (revoked or long unseen) may still hold a copy, and \
        `CONFLICT` when it is already deleting.",
    params(("key" = String, Path, description = "An id or a name"), DeleteQuery),
    responses((status = 200, description = "The secret, deleting where asked", body = SecretDetail), DeleteErrors),
)]
async fn delete_secret(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    QueryParams(query): QueryParams<DeleteQuery>,
) -> HttpResult<Json<SecretDetail>> {
    let (actor, stale_after) = (state.acting(&caller), state.agent_stale_after);
    let deleting = service::delete(&*state.store, &actor, &key, query.environment.as_deref(), stale_after);
    let (secret, holdings) = deleting.await?;
    Ok(Json(detail(views::as_changed(&*state.store, caller.org.id, secret.id, holdings).await?)))
}

#[utoipa::path(
    post,
    path = "/v1/secrets",
    tag = "secrets",
    operation_id = "create_secret",
    summary = "Create a secret",
    description = "Creates a secret's metadata (name, type, description, tags, linked components), with no \
        version yet; its values are written to the Agents, never to this API. An organization secret needs \
        `secret.write` (owners and admins by default); a `personal` one is reached only by its creator, \
        optionally bound to the key of one of her client certificates. A name already taken is refused \
        `ALREADY_EXISTS`.",
    request_body = CreateSecret,
    responses((status = 201, description = "The secret, with no version yet", body = heimdall_wire::schemas::Secret), CreateErrors),
)]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateSecret>,
) -> HttpResult<(StatusCode, Json<Secret>)> {
    let components = body.components.unwrap_or_default();
    let request = NewSecret {
        name: body.name,
        secret_type: body.secret_type,
        description: body.description,
        tags: body.tags,
        personal: body.personal,
        certificate_sha256: body.certificate_sha256,
    };
    let id = SecretId::from_uuid(Uuid::new_v4());
    let secret = service::create(&*state.store, &state.acting(&caller), request, &components, id).await?;
    Ok((StatusCode::CREATED, Json(secret)))
}

#[utoipa::path(
    patch,
    path = "/v1/secrets/{key}",
    tag = "secrets",
    operation_id = "update_secret",
    summary = "Update a secret's metadata",
    description = "Changes a secret's type, description, tags or linked components; fields left out are \
        unchanged, and no value is ever accepted. Needs `secret.write` on the secret, and where it lands \
        when its components change.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = UpdateSecret,
    responses((status = 200, description = "The secret", body = heimdall_wire::schemas::Secret), UpdateErrors),
)]
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<UpdateSecret>,
) -> HttpResult<Json<Secret>> {
    let change = service::Change {
        secret_type: body.secret_type,
        description: body.description,
        tags: body.tags,
        components: body.components,
    };
    Ok(Json(service::update(&*state.store, &state.acting(&caller), &key, change).await?))
}

#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct AccessLogQuery {
    environment: Option<String>,
    /// At most this many entries (default 100, at most 1000).
    limit: Option<u32>,
    /// The `Heimdall-Next-After` of the previous page.
    after: Option<String>,
}

impl heimdall_wire::body::Query for AccessLogQuery {
    const VALUES: heimdall_wire::body::ValuePolicy = heimdall_wire::body::ValuePolicy::Closed;
}

/// The reads Agents reported for this secret (owner, admin; a personal
/// secret: only its owner, for whom everyone else gets 404). Without an
/// environment: only the environments where the caller may read the trail.
#[utoipa::path(
    get,
    path = "/v1/secrets/{key}/access-log",
    tag = "secrets",
    operation_id = "list_access_log",
    summary = "List a secret's access log",
    description = "The reads of this secret that Agents recorded and reported, oldest first, one page at a \
        time, optionally in one environment only; without one, only the environments where the caller may \
        read the trail. Needs `secret.access_log` (owners and admins by default); a personal secret's log is \
        its owner's only.",
    params(("key" = String, Path, description = "An id or a name"), AccessLogQuery),
    responses((status = 200, description = "A page of the reads Agents recorded, oldest first", body = Vec<heimdall_wire::schemas::AccessLogEntry>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), AccessLogErrors),
)]
async fn access_log(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    QueryParams(query): QueryParams<AccessLogQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<AccessLogEntry>>)> {
    let limit = heimdall_wire::page::limit(query.limit)?;
    let after = query
        .after
        .as_deref()
        .map(heimdall_wire::page::decode::<heimdall_core::access::AccessLogCursor>)
        .transpose()?;
    let (actor, environment) = (state.acting(&caller), query.environment.as_deref());
    let page = views::trail(&*state.store, &actor, &key, environment, limit, after).await?;
    let (headers, entries) = crate::http::visible(page);
    Ok((headers, Json(entries)))
}

#[utoipa::path(
    get,
    path = "/v1/environments/{key}/agents",
    tag = "environments",
    operation_id = "list_environment_agents",
    summary = "List the Agents assigned to an environment",
    description = "The Agents that hold this environment's secret values, in the order they were assigned, \
        one page at a time. By default owners and admins may read them (`agent.read`).",
    params(("key" = String, Path, description = "An environment id or name"), crate::http::PageQuery),
    responses((status = 200, description = "A page of the Agents assigned to the environment, in the order they were assigned", body = Vec<heimdall_wire::schemas::Assignment>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), AssignmentsErrors),
)]
async fn assignments(
    State(state): State<AppState>,
    caller: Caller,
    Path(env): Path<String>,
    QueryParams(page): QueryParams<crate::http::PageQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<Assignment>>)> {
    let assigned = service::assignments(&*state.store, &state.acting(&caller), &env).await?;
    let (headers, assigned) =
        crate::http::short_page(assigned, page.limit, page.after.as_deref(), assignment_order)?;
    Ok((headers, Json(assigned)))
}

#[utoipa::path(
    post,
    path = "/v1/environments/{key}/agents",
    tag = "environments",
    operation_id = "assign_environment_agent",
    summary = "Assign an Agent to an environment",
    description = "Makes an active Agent hold this environment: it stores the environment's secret values \
        and serves their reads. Owners only by default (`environment.assign_agent`); an Agent already \
        assigned is refused `ALREADY_EXISTS`.",
    params(("key" = String, Path, description = "An environment id or name")),
    request_body = AssignAgent,
    responses((status = 201, description = "The assignment", body = heimdall_wire::schemas::Assignment), AssignErrors),
)]
async fn assign(
    State(state): State<AppState>,
    caller: Caller,
    Path(env): Path<String>,
    JsonBody(body): JsonBody<AssignAgent>,
) -> HttpResult<(StatusCode, Json<Assignment>)> {
    let assignment = service::assign(&*state.store, &state.acting(&caller), &env, &body.agent).await?;
    Ok((StatusCode::CREATED, Json(assignment)))
}

/// `DELETE /v1/environments/{key}/agents/{agent}` (owner): the Agent no
/// longer holds the environment and deletes its values there on its next
/// sync; refused while it holds the only copy of a current version
/// (`heimdall_core::deletion::may_unassign`).
#[utoipa::path(
    delete,
    path = "/v1/environments/{key}/agents/{agent}",
    tag = "environments",
    operation_id = "unassign_environment_agent",
    summary = "Unassign an Agent from an environment",
    description = "The Agent no longer holds the environment and deletes its values there on its next sync. \
        Owners only by default (`environment.assign_agent`); refused while the Agent holds the only copy of \
        a current version there.",
    params(("key" = String, Path, description = "An environment id or name"), ("agent" = String, Path, description = "An Agent id or name")),
    responses((status = 200, description = "The assignment, removed", body = heimdall_wire::schemas::Assignment), ShowErrors),
)]
async fn unassign(
    State(state): State<AppState>,
    caller: Caller,
    Path((env, key)): Path<(String, String)>,
) -> HttpResult<Json<Assignment>> {
    Ok(Json(service::unassign(&*state.store, &state.acting(&caller), &env, &key).await?))
}

/// Agents in the order they were assigned to an environment (a sort key).
fn assignment_order(a: &Assignment) -> Vec<String> {
    vec![crate::http::sort_time(a.assigned_at), a.agent_id.to_string()]
}

/// The CA that signs write grants.
pub(crate) fn grant_signer(state: &AppState) -> Result<std::sync::Arc<crate::pki::Ca>, ApiError> {
    state.ca.clone().ok_or_else(|| {
        ApiError::new(
            ErrorCode::Unavailable,
            "this API has no certificate authority (--ca-dir) to sign write grants",
        )
    })
}

/// Numbers the next version of a secret in an environment and answers with
/// one signed grant per Agent that holds the environment. The value goes
/// from the CLI to those Agents; it never comes here.
#[utoipa::path(
    post,
    path = "/v1/secrets/{key}/versions",
    tag = "secrets",
    operation_id = "create_secret_version",
    summary = "Start writing a new version of a secret",
    description = "Numbers the next version of the secret in an environment and answers one signed write \
        grant per Agent holding the environment; the client then sends the value to those Agents with the \
        grants, and the value never comes to this API. `keep_previous` (default `0`) is how long the version \
        it replaces stays readable; after it, every Agent erases the older version and answers `410 \
        VERSION_SUPERSEDED` for it. Needs `secret.write` in the environment. Refused `NO_AGENT` when no Agent \
        holds the environment, and `CONFLICT` while the secret is being deleted there.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = CreateVersion,
    responses((status = 201, description = "A version number and a write grant for the Agents to send the value to", body = CreatedVersion), VersionErrors),
)]
async fn create_version(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<CreateVersion>,
) -> HttpResult<(StatusCode, Json<CreatedVersion>)> {
    let asked = versions::Asked {
        environment: &body.environment,
        certificate_sha256: body.certificate_sha256.as_ref(),
        keep_previous: body.keep_previous.as_deref(),
    };
    let ca = grant_signer(&state);
    let signer = || ca.as_ref().map(|_| ()).map_err(Clone::clone);
    let numbered = versions::number(&*state.store, &state.acting(&caller), (&key, asked), signer).await?;
    let ca = ca?;
    let versions::Numbered { secret, environment: env, version, owner_keys, holders, at: now } = numbered;
    let mut signed = Vec::with_capacity(holders.len());
    for holder in holders {
        let claims = WriteGrantClaims::new(
            Uuid::new_v4(),
            caller.org.id,
            (secret.id, &secret.name),
            (env.id, &env.name),
            version.version,
            holder.agent_id,
            (GrantWriter::Member(caller.member.id), &caller.member.email),
            owner_keys.clone(),
            now,
        );
        let token = grant::encode(&claims, |m| ca.sign_statement(m))
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        signed.push(VersionHolder { location: location(holder), grant: Redacted::new(token) });
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
#[utoipa::path(
    post,
    path = "/v1/secrets/{key}/deactivate",
    tag = "secrets",
    operation_id = "deactivate_secret_version",
    summary = "Deactivate a secret version",
    description = "Deactivates one version of the secret in an environment, for example after a leak: every \
        Agent replaces its value with a tombstone on its next sync and answers `410 VERSION_DEACTIVATED` for \
        it. Needs `secret.write` in the environment.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = DeactivateVersion,
    responses((status = 200, description = "The version, deactivated", body = heimdall_wire::schemas::SecretVersion), DeactivateErrors),
)]
async fn deactivate_version(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<DeactivateVersion>,
) -> HttpResult<Json<SecretVersion>> {
    let at = (body.environment.as_str(), body.version);
    let version = service::deactivate(&*state.store, &state.acting(&caller), &key, at).await?;
    Ok(Json(version))
}

#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct HoldersQuery {
    environment: String,
    /// At most this many (1–1000, default 100).
    limit: Option<u32>,
    /// Where the page starts: a `Heimdall-Next-After` value.
    after: Option<String>,
}

impl heimdall_wire::body::Query for HoldersQuery {
    const VALUES: heimdall_wire::body::ValuePolicy = heimdall_wire::body::ValuePolicy::Closed;
}

/// Where to read a secret in an environment: the Agents that hold it.
#[utoipa::path(
    get,
    path = "/v1/secrets/{key}/holders",
    tag = "secrets",
    operation_id = "list_secret_holders",
    summary = "Find the Agents to read a secret from",
    description = "Where to read the secret in an environment: the active Agents holding it, in the order \
        they were assigned, with their local API's address and certificate fingerprints. Needs `secret.read` \
        on the secret in that environment.",
    params(("key" = String, Path, description = "An id or a name"), HoldersQuery),
    responses((status = 200, description = "A page of the Agents that hold the secret in the environment, in the order they were assigned (a revoked one is left out, so a page may hold fewer than `limit`)", body = Vec<AgentLocation>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), HoldersErrors),
)]
async fn holders(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    QueryParams(query): QueryParams<HoldersQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<AgentLocation>>)> {
    let assigned = views::holders(&*state.store, &state.acting(&caller), &key, &query.environment).await?;
    let (headers, assigned) = crate::http::short_page(assigned, query.limit, query.after.as_deref(), |a| {
        assignment_order(&a.assignment)
    })?;
    let holders = assigned.into_iter().filter_map(|a| a.holder).map(location).collect();
    Ok((headers, Json(holders)))
}

/// Where people reach a holder, on the wire.
fn location(holder: views::Holder) -> AgentLocation {
    AgentLocation {
        agent_id: holder.agent_id,
        agent: holder.agent,
        url: holder.url,
        certificates: Some(holder.certificates),
    }
}
