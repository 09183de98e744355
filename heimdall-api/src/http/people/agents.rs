//! Agents as people manage them: registration tokens, list, revoke; and
//! enrollment, where an Agent trades a registration token and a CSR for a
//! certificate.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::agents::service;
use heimdall_core::ids::{AgentId, RegistrationId};
use heimdall_core::infra::Agent;
use heimdall_core::token::TokenHash;
use heimdall_core::ApiError;
use heimdall_wire::{AgentDetail, CreateRegistration, Enroll, Enrolled, ForgetAgent, Registration};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::tokens::generate_token;
use crate::http::error::HttpResult;
use crate::http::extract::{Caller, JsonBody, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(create_registration))
        .routes(routes!(enroll))
        .routes(routes!(show, revoke))
        .routes(routes!(forget))
        .routes(routes!(allowances, allow_programs, disallow_programs))
        .routes(routes!(program_tokens))
        .routes(routes!(allow_name))
        .routes(routes!(disallow_name))
}

errors!(ListErrors: InvalidInput);
errors!(ShowErrors: NotFound);
errors!(body ForgetErrors: NotFound, Conflict);
errors!(body RegisterErrors: AlreadyExists);
errors!(public body EnrollErrors: Unauthenticated, NotFound);
errors!(body AllowErrors: NotFound);
errors!(DisallowErrors: NotFound, InvalidInput);
errors!(body AllowNameErrors: NotFound, Forbidden);

#[utoipa::path(
    get,
    path = "/v1/agents",
    tag = "agents",
    operation_id = "list_agents",
    summary = "List Agents",
    description = "The organization's enrolled Agents, revoked ones included, by name, one page at a time. \
        By default owners and admins may list them (`agent.read`).",
    params(crate::http::PageQuery),
    responses((status = 200, description = "A page of the enrolled Agents, by name", body = Vec<heimdall_wire::schemas::Agent>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(page): QueryParams<crate::http::PageQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<Agent>>)> {
    let agents = service::list(&*state.store, &state.acting(&caller)).await?;
    let (headers, agents) = crate::http::short_page(agents, page.limit, page.after.as_deref(), |a| {
        vec![a.name.clone(), crate::http::sort_time(a.created_at), a.id.to_string()]
    })?;
    Ok((headers, Json(agents)))
}

#[utoipa::path(
    get,
    path = "/v1/agents/{key}",
    tag = "agents",
    operation_id = "get_agent",
    summary = "Show an Agent and what it holds",
    description = "One Agent, by id or name (the one not revoked, else the last revoked), with the secret \
        versions its last inventory listed and the host names approved for its local API; other members' \
        personal secrets are left out. By default owners and admins may read it (`agent.read`).",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "The Agent and what its last inventory holds", body = AgentDetail), ShowErrors),
)]
async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<AgentDetail>> {
    let service::Shown { agent, holdings, behind, names } =
        service::show(&*state.store, &state.acting(&caller), &key).await?;
    let behind = behind.into_iter().map(Into::into).collect();
    Ok(Json(AgentDetail { agent, holdings, behind, names }))
}

/// An owner says the Agent's store is destroyed: its last inventory no
/// longer holds up a delete. Recorded as `agent.forgotten`.
#[utoipa::path(
    post,
    path = "/v1/agents/{key}/forget",
    tag = "agents",
    operation_id = "forget_agent",
    summary = "Forget an Agent whose store is destroyed",
    description = "An owner states that the Agent's value store is destroyed (`confirm_store_destroyed` must \
        be true): its last inventory no longer holds up the deletion of a secret, and deletions waiting only \
        on it complete. Recorded in the audit feed as `agent.forgotten`, naming what it held.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = ForgetAgent,
    responses((status = 200, description = "The Agent, no longer counted as a holder", body = AgentDetail), ForgetErrors),
)]
async fn forget(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<ForgetAgent>,
) -> HttpResult<Json<AgentDetail>> {
    let actor = state.acting(&caller);
    let (agent, names) = service::forget(&*state.store, &actor, &key, body.confirm_store_destroyed).await?;
    Ok(Json(AgentDetail { agent, holdings: Vec::new(), behind: Vec::new(), names }))
}

#[utoipa::path(
    post,
    path = "/v1/agents/registrations",
    tag = "agents",
    operation_id = "create_agent_registration",
    summary = "Create a one-time Agent registration token",
    description = "Makes a registration token, shown once, that enrolls one Agent under this name within an \
        hour, with the installation CA's fingerprint to pin. Owners only by default (`agent.manage`).",
    request_body = CreateRegistration,
    responses((status = 201, description = "A one-time enrollment grant, shown once", body = Registration), RegisterErrors),
)]
async fn create_registration(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateRegistration>,
) -> HttpResult<(StatusCode, Json<Registration>)> {
    let token = generate_token();
    let id = (RegistrationId::from_uuid(Uuid::new_v4()), body.name.as_str());
    let hash = TokenHash::of(token.expose());
    let registration = service::create_registration(&*state.store, &state.acting(&caller), id, hash).await?;
    Ok((
        StatusCode::CREATED,
        Json(Registration {
            name: body.name,
            token: token.expose().clone(),
            expires_at: registration.expires_at,
            ca_sha256: state.ca.as_ref().map(|ca| ca.fingerprint()),
        }),
    ))
}

#[utoipa::path(
    post,
    path = "/v1/agents/enroll",
    tag = "agents",
    operation_id = "enroll_agent",
    summary = "Enroll an Agent",
    description = "An Agent trades a registration token and a certificate signing request for its client \
        certificate, signed by the installation CA, and the address of the Agent channel; no API token is \
        needed. A token that is unknown, used or expired is refused `UNAUTHENTICATED`, and a bad CSR does \
        not use up the token. `NOT_FOUND` means this API does not serve the Agent channel.",
    request_body = Enroll,
    security(()),
    responses((status = 201, description = "The Agent's certificate, signed by the installation CA", body = Enrolled), EnrollErrors),
)]
async fn enroll(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<Enroll>,
) -> HttpResult<(StatusCode, Json<Enrolled>)> {
    let (Some(ca), Some(agent_api_url)) = (state.ca.clone(), state.agent_api_url.clone()) else {
        // Not an outage but how this API is run: say so (a 503's message
        // is hidden as a backing service's).
        return Err(ApiError::not_found("Agent enrollment (this API runs without --agent-listen)").into());
    };
    let token = service::registration(&body.token)?;
    // Sign first (no side effect), then use the token and store the Agent
    // in one transaction: a bad CSR does not burn the token.
    let id = AgentId::from_uuid(Uuid::new_v4());
    let (certificate_pem, cert_sha256) = ca
        .issue_agent_cert(&body.csr_pem, id, &format!("heimdall-agent-{id}"))
        .map_err(|e| ApiError::invalid_input(e.to_string()))?;
    let agent = service::enroll(&*state.store, &state, &token, (id, cert_sha256)).await?;
    Ok((
        StatusCode::CREATED,
        Json(Enrolled { agent, certificate_pem, ca_pem: ca.cert_pem().to_owned(), agent_api_url }),
    ))
}

#[utoipa::path(
    delete,
    path = "/v1/agents/{key}",
    tag = "agents",
    operation_id = "revoke_agent",
    summary = "Revoke an Agent",
    description = "Revokes the Agent: it runs no more jobs and serves no more secrets, and is \
        refused `AGENT_REVOKED` on its next call. Owners only by default (`agent.manage`).",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "The Agent, revoked", body = heimdall_wire::schemas::Agent), ShowErrors),
)]
async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<Agent>> {
    Ok(Json(service::revoke(&*state.store, &state.acting(&caller), &key).await?))
}

/// `DELETE …/program-allowances?environment=E&secret=GLOB`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct AllowanceQuery {
    /// The environment's name or id.
    environment: String,
    /// The allowance's secret name or glob, as it was given.
    secret: String,
}

impl heimdall_wire::body::Query for AllowanceQuery {}

#[utoipa::path(
    get,
    path = "/v1/agents/{key}/program-allowances",
    tag = "agents",
    operation_id = "list_program_allowances",
    summary = "List what an Agent's programs may write",
    description = "What the programs using this Agent's local API may write or delete, per environment and \
        secret name or glob; reads need no allowance. By default owners and admins may read them \
        (`agent.read`).",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "What the Agent's programs may write or delete, per environment (reads need no allowance)", body = Vec<heimdall_wire::schemas::ProgramAllowance>), ShowErrors),
)]
async fn allowances(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<Vec<heimdall_core::program::ProgramAllowance>>> {
    Ok(Json(service::allowances(&*state.store, &state.acting(&caller), &key).await?))
}

/// An owner lets the Agent's programs write or delete what `secret` names
/// in one environment (`heimdall_core::program::check_allowance`); the
/// same Agent, environment and glob again replaces the verbs. Recorded as
/// `agent.programs_allowed`.
#[utoipa::path(
    post,
    path = "/v1/agents/{key}/program-allowances",
    tag = "agents",
    operation_id = "allow_programs",
    summary = "Let an Agent's programs write or delete secrets",
    description = "An owner lets the programs using this Agent's tokens write or delete the secrets a name \
        or glob matches, in one environment; the same Agent, environment and glob again replaces the verbs. \
        Recorded in the audit feed as `agent.programs_allowed`.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = heimdall_wire::AllowPrograms,
    responses((status = 201, description = "The allowance", body = heimdall_wire::schemas::ProgramAllowance), AllowErrors),
)]
async fn allow_programs(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<heimdall_wire::AllowPrograms>,
) -> HttpResult<(StatusCode, Json<heimdall_core::program::ProgramAllowance>)> {
    let place = (body.environment.as_str(), body.secret);
    let allowance =
        service::allow_programs(&*state.store, &state.acting(&caller), &key, place, body.verbs).await?;
    Ok((StatusCode::CREATED, Json(allowance)))
}

/// An owner withdraws an allowance: from now on the API refuses what it
/// allowed, whatever tokens were made under it. Recorded as
/// `agent.programs_disallowed`.
#[utoipa::path(
    delete,
    path = "/v1/agents/{key}/program-allowances",
    tag = "agents",
    operation_id = "disallow_programs",
    summary = "Withdraw a program allowance",
    description = "An owner withdraws the allowance for this environment and secret name or glob: from now \
        on the API refuses what it allowed, whatever tokens were made under it. Recorded in the audit feed \
        as `agent.programs_disallowed`.",
    params(("key" = String, Path, description = "An id or a name"), AllowanceQuery),
    responses((status = 204, description = "Withdrawn"), DisallowErrors),
)]
async fn disallow_programs(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    QueryParams(query): QueryParams<AllowanceQuery>,
) -> HttpResult<StatusCode> {
    let place = (query.environment.as_str(), query.secret.as_str());
    service::disallow_programs(&*state.store, &state.acting(&caller), &key, place).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    get,
    path = "/v1/agents/{key}/program-tokens",
    tag = "agents",
    operation_id = "list_program_tokens",
    summary = "List an Agent's program tokens",
    description = "The program tokens this Agent registered: ids, names, environments, secrets, verbs, \
        expiry and revocation, never a token. By default owners and admins may read them (`agent.read`).",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "The program tokens the Agent registered: ids and scopes, never a token", body = Vec<heimdall_wire::schemas::RegisteredToken>), ShowErrors),
)]
async fn program_tokens(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<Vec<heimdall_core::program::RegisteredToken>>> {
    Ok(Json(service::program_tokens(&*state.store, &state.acting(&caller), &key).await?))
}

/// An owner approves a host name for the Agent's local-API certificate: the
/// CA signs it for that Agent from its next renewal (the Agent asks for a
/// new certificate at its next sync when its configuration names it).
/// Never one of the API's own names. Recorded as `agent.name_allowed`.
#[utoipa::path(
    post,
    path = "/v1/agents/{key}/names",
    tag = "agents",
    operation_id = "allow_agent_name",
    summary = "Approve a host name for an Agent's local API",
    description = "An owner approves a DNS name or IP address for this Agent's local-API certificate: the CA \
        signs it from the Agent's next renewal. One of the API's own names is refused `FORBIDDEN`. Recorded \
        in the audit feed as `agent.name_allowed`.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = heimdall_wire::AllowName,
    responses((status = 201, description = "Approved", body = heimdall_wire::schemas::ApprovedName), AllowNameErrors),
)]
async fn allow_name(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<heimdall_wire::AllowName>,
) -> HttpResult<(StatusCode, Json<heimdall_core::server_names::ApprovedName>)> {
    let actor = state.acting(&caller);
    let approved = service::allow_name(&*state.store, &actor, &key, &body.name, &state.api_names).await?;
    Ok((StatusCode::CREATED, Json(approved)))
}

/// An owner withdraws a name: the CA signs it no more for that Agent.
/// Certificates already issued with it are revoked, so the Agent renews
/// without it at its next sync (and clients that pin the API's list stop
/// accepting them at once). Recorded as `agent.name_disallowed`.
#[utoipa::path(
    delete,
    path = "/v1/agents/{key}/names/{name}",
    tag = "agents",
    operation_id = "disallow_agent_name",
    summary = "Withdraw an approved host name",
    description = "An owner withdraws a name: the CA no longer signs it for this Agent, certificates already \
        issued with it are revoked, and the Agent renews without it at its next sync. Recorded in the audit \
        feed as `agent.name_disallowed`.",
    params(("key" = String, Path, description = "An id or a name"), ("name" = String, Path, description = "The approved name")),
    responses((status = 204, description = "Withdrawn"), ShowErrors),
)]
async fn disallow_name(
    State(state): State<AppState>,
    caller: Caller,
    Path((key, name)): Path<(String, String)>,
) -> HttpResult<StatusCode> {
    service::disallow_name(&*state.store, &state.acting(&caller), &key, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
