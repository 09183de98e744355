//! Program tokens on the Agent channel: an Agent registers each token it
//! makes (its id and scope, never the token) and its revocations; and
//! programs' writes and deletions, asked by the Agent that holds the
//! program's token.
//!
//! The Agent decided the token's scope and the organization's policies
//! with its snapshot; the API does not take its word for either. It
//! decides what it is the authority on: the token id is one this Agent
//! registered, live, with that name, verb, environment (by id) and
//! secret, inside an owner's allowance as it stands now
//! (`heimdall_core::program::check_registered_call`); the Agent holds the
//! environment; the secret is an organization secret, and no `forbid`
//! refuses the program (`program::organization_allows`, the Agent's rule
//! too). So a stolen Agent key writes or deletes nothing an owner did not
//! allow that Agent's programs. Then the same steps as a person's: a
//! version numbered here with a grant for this Agent and this program's
//! token only, or a deletion started. Both are attributed to
//! `program NAME@AGENT`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use heimdall_core::deletion::Lifecycle;
use heimdall_core::grant::{self, GrantWriter, WriteGrantClaims};
use heimdall_core::program;
use heimdall_core::program::service::{self as programs, Program};
use heimdall_core::{ApiError, ErrorCode, Redacted};
use heimdall_wire::{ProgramDeletion, ProgramDeletionRequest, ProgramVersion, ProgramVersionRequest};
use uuid::Uuid;

use super::{agent, PeerAgent};
use crate::http::error::HttpResult;
use crate::http::extract::JsonBody;
use crate::http::openapi::errors;
use crate::http::people::secrets::grant_signer;
use crate::http::AppState;

errors!(public body ProgramErrors: Unauthenticated, AgentRevoked, Forbidden, NotFound, Conflict, ValueMayPersist);

/// `POST /v1/agent/program-versions`: numbers the next version for the
/// program and signs a grant for this Agent and this token only.
#[utoipa::path(
    post,
    path = "/v1/agent/program-versions",
    tag = "agent-channel",
    operation_id = "number_program_version",
    summary = "Number a version for a program's write (Agent)",
    description = "For a program writing through this Agent's local API: numbers the next version of the \
        secret in the environment and signs a write grant for this Agent and this program token only. The \
        API checks for itself that the token is one this Agent registered, live, inside an owner's \
        allowance, that the Agent holds the environment, and that no policy forbids the write; otherwise \
        `FORBIDDEN`. The version is attributed to the program.",
    request_body = ProgramVersionRequest,
    security(()),
    responses((status = 201, description = "The next version number and a write grant for this Agent and token", body = ProgramVersion), ProgramErrors),
)]
pub(super) async fn version(
    State(state): State<AppState>,
    Extension(peer): Extension<PeerAgent>,
    JsonBody(body): JsonBody<ProgramVersionRequest>,
) -> HttpResult<(StatusCode, Json<ProgramVersion>)> {
    let agent = agent(&state, &peer).await?;
    let who = Program { token_id: &body.program.token_id, name: &body.program.name };
    let asked = (who, (body.secret_id, body.environment_id));
    let ca = grant_signer(&state);
    let signer = || ca.as_ref().map(|_| ()).map_err(Clone::clone);
    let numbered = programs::number_version(&*state.store, (&state, &state), &agent, asked, signer).await?;
    let ca = ca?;
    let programs::Numbered { secret, environment: env, version, accessor, at: now } = numbered;
    let claims = WriteGrantClaims::new(
        Uuid::new_v4(),
        agent.org_id,
        (secret.id, &secret.name),
        (env.id, &env.name),
        version.version,
        agent.id,
        (GrantWriter::Program(body.program.token_id.clone()), &accessor),
        None,
        now,
    );
    let token = grant::encode(&claims, |m| ca.sign_statement(m))
        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
    tracing::info!(secret = %secret.name, environment = %env.name, version = version.version, writer = %accessor, "version numbered for a program");
    Ok((
        StatusCode::CREATED,
        Json(ProgramVersion {
            secret: secret.name,
            environment: env.name,
            environment_id: env.id,
            version: version.version,
            grant: Redacted::new(token),
        }),
    ))
}

/// `POST /v1/agent/program-deletions`: starts deleting the secret in the
/// environment, as `secret delete NAME --environment E` does.
#[utoipa::path(
    post,
    path = "/v1/agent/program-deletions",
    tag = "agent-channel",
    operation_id = "delete_as_program",
    summary = "Delete a secret in an environment for a program (Agent)",
    description = "For a program deleting through this Agent's local API: starts deleting the secret in one \
        environment, as a person's deletion there does, after the same checks as a program's write. Refused \
        `VALUE_MAY_PERSIST` while an Agent that will not sync again may hold a copy there.",
    request_body = ProgramDeletionRequest,
    security(()),
    responses((status = 202, description = "The secret is deleting in the environment", body = ProgramDeletion), ProgramErrors),
)]
pub(super) async fn deletion(
    State(state): State<AppState>,
    Extension(peer): Extension<PeerAgent>,
    JsonBody(body): JsonBody<ProgramDeletionRequest>,
) -> HttpResult<(StatusCode, Json<ProgramDeletion>)> {
    let agent = agent(&state, &peer).await?;
    let who = Program { token_id: &body.program.token_id, name: &body.program.name };
    let asked = ((body.secret_id, body.environment_id), state.agent_stale_after);
    let (secret, env) = programs::delete(&*state.store, (&state, &state), &agent, who, asked).await?;
    let by = heimdall_core::program::accessor(who.name, &agent.id.to_string());
    tracing::info!(secret = %secret.name, environment = %env.name, %by, "deletion started for a program");
    Ok((
        StatusCode::ACCEPTED,
        Json(ProgramDeletion { secret: secret.name, environment: env.name, status: Lifecycle::Deleting }),
    ))
}

errors!(public body RegisterErrors: Unauthenticated, AgentRevoked, Forbidden, NotFound, AlreadyExists);
errors!(public RevokeErrors: Unauthenticated, AgentRevoked, NotFound);

/// `POST /v1/agent/program-tokens`: the Agent registers a token it made
/// (`heimdall-agent token create`). Its environment must be one the Agent
/// holds, and its writes and deletions must fit an owner's allowance for
/// this Agent (`program::check_registration`). Recorded as
/// `program_token.registered`.
#[utoipa::path(
    post,
    path = "/v1/agent/program-tokens",
    tag = "agent-channel",
    operation_id = "register_program_token",
    summary = "Register a program token (Agent)",
    description = "The Agent registers a program token it made: its id, name, environment, secret names or \
        globs, verbs and expiry, never the token itself. The environment must be one the Agent holds, and \
        the token's writes and deletions must fit an owner's allowance for this Agent; otherwise \
        `FORBIDDEN`. Recorded in the audit feed as `program_token.registered`.",
    request_body = heimdall_wire::RegisterProgramToken,
    security(()),
    responses((status = 201, description = "The token as registered (its environment by id)", body = heimdall_wire::schemas::RegisteredToken), RegisterErrors),
)]
pub(super) async fn register(
    State(state): State<AppState>,
    Extension(peer): Extension<PeerAgent>,
    JsonBody(body): JsonBody<heimdall_wire::RegisterProgramToken>,
) -> HttpResult<(StatusCode, Json<heimdall_core::program::RegisteredToken>)> {
    let agent = agent(&state, &peer).await?;
    let request = program::NewToken {
        id: body.id,
        name: body.name,
        environment: body.environment,
        secrets: body.secrets,
        verbs: body.verbs,
        expires_at: body.expires_at,
    };
    let token = programs::register_token(&*state.store, &state, &agent, request).await?;
    tracing::info!(agent = %agent.name, program = %token.name, token = %token.id, "program token registered");
    Ok((StatusCode::CREATED, Json(token)))
}

/// `POST /v1/agent/program-tokens/{id}/revoke`: the Agent revoked a token
/// (`heimdall-agent token revoke`); the API refuses its writes and
/// deletions from now on, and no Agent accepts it after its next sync.
#[utoipa::path(
    post,
    path = "/v1/agent/program-tokens/{id}/revoke",
    tag = "agent-channel",
    operation_id = "revoke_program_token",
    summary = "Revoke a program token (Agent)",
    description = "The Agent reports that it revoked one of its program tokens: the API refuses the token's \
        writes and deletions from now on, and no Agent accepts it after its next sync. Revoking it again \
        changes nothing.",
    params(("id" = String, Path, description = "The token's id")),
    security(()),
    responses((status = 204, description = "Revoked (or it already was)"), RevokeErrors),
)]
pub(super) async fn revoke(
    State(state): State<AppState>,
    Extension(peer): Extension<PeerAgent>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> HttpResult<StatusCode> {
    let agent = agent(&state, &peer).await?;
    programs::revoke_token(&*state.store, &state, &agent, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
