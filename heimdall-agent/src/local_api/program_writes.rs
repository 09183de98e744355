//! A program's write and deletion on the local API, through the API.
//!
//! The token's scope and the organization's policies are decided here
//! first (`PolicySnapshot::decide_program`), so a token that may not
//! write costs the API nothing. Then the Agent asks the API on the
//! program's behalf over its own mTLS channel, naming the program by its
//! token's id: the API decides again with the policies as stored, numbers
//! the version and signs a grant for this Agent and this token only, or
//! starts the deletion. The value never leaves the Agent: it is stored
//! here with that grant, verified like a person's.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use heimdall_core::grant::{GrantTarget, GrantWriter};
use heimdall_core::program::{ProgramScope, Verb};
use heimdall_core::{ApiError, ErrorCode};
use heimdall_tls::server::QueryParams;
use heimdall_wire::{
    ProgramCaller, ProgramDeletion, ProgramDeletionRequest, ProgramValue, ProgramVersionRequest,
};

use crate::access::AllowedRead;
use crate::channel::{Channel, ChannelError};
use crate::local_api::openapi::DeleteErrors;
use crate::local_api::{
    caller, check_size, store_granted, to_u32_version, with_fresh, Caller, ErrorAnswer, LocalApi, Peer,
};
use crate::values::store::ValueAddress;

/// `verb` on `name` in `environment`, decided with the snapshot (after a
/// sync if it does not know them yet).
async fn decide(
    state: &LocalApi,
    scope: &ProgramScope,
    accessor: &str,
    verb: Verb,
    name: &str,
    environment: &str,
) -> Result<AllowedRead, ErrorAnswer> {
    let now = state.clock.now();
    let (_, allowed) =
        with_fresh(state, |s| s.decide_program(scope, accessor, verb, name, environment, now)).await?;
    Ok(allowed)
}

fn api(state: &LocalApi) -> Result<&Channel, ErrorAnswer> {
    state.api.as_ref().ok_or_else(|| {
        ErrorAnswer(ApiError::new(
            ErrorCode::Unavailable,
            "this Agent has no channel to the API; programs only read",
        ))
    })
}

/// The API's own refusal, as it gave it; an API out of reach is
/// `UNAVAILABLE` (a write or a deletion is never decided here alone).
fn channel_refusal(e: ChannelError) -> ErrorAnswer {
    match e {
        ChannelError::Api(e) => ErrorAnswer(e),
        ChannelError::Transport(_) | ChannelError::Setup(_) | ChannelError::Tls(_) => {
            ErrorAnswer(ApiError::new(
                ErrorCode::Unavailable,
                "the API cannot be reached; a program writes and deletes only through it, try again later",
            ))
        }
    }
}

fn who(scope: &ProgramScope) -> ProgramCaller {
    ProgramCaller { token_id: scope.id.clone(), name: scope.name.clone() }
}

/// `PUT /v1/secrets/{name}/value` with a program token: `{environment,
/// value}`; answers the version the API numbered, once stored here.
pub(crate) async fn write(
    state: &LocalApi,
    scope: &ProgramScope,
    accessor: &str,
    name: &str,
    body: &[u8],
) -> Result<(StatusCode, Json<serde_json::Value>), ErrorAnswer> {
    // A token without the verb is told so before its body is read.
    heimdall_core::program::check_verb(scope, Verb::Write, state.clock.now())?;
    // One strict parse, as for people; no error quotes the input.
    let body: ProgramValue = heimdall_wire::body::decode(body)?;
    check_size(body.value.expose())?;
    let allowed = decide(state, scope, accessor, Verb::Write, name, &body.environment).await?;
    let request = ProgramVersionRequest {
        program: who(scope),
        secret_id: allowed.secret_id,
        environment_id: allowed.environment_id,
    };
    let numbered = api(state)?.program_version(&request).await.map_err(channel_refusal)?;
    let grant = heimdall_core::grant::parse(numbered.grant.expose()).map_err(ApiError::from)?;
    let target = GrantTarget {
        org: allowed.org,
        agent: state.agent,
        secret: &allowed.secret,
        environment: &allowed.environment,
        version: numbered.version,
        writer: GrantWriter::Program(scope.id.clone()),
        writer_key: None,
    };
    state.grants.verify(&grant, &target, state.clock.now()).map_err(ApiError::from)?;
    let (secret_id, environment_id) = (grant.claims.secret_id, grant.claims.environment_id);
    with_fresh(state, |s| s.may_store(&allowed.secret, secret_id, environment_id, numbered.version)).await?;
    let version = to_u32_version(numbered.version)?;
    let at = ValueAddress {
        org: allowed.org,
        secret: allowed.secret.clone(),
        environment: grant.claims.environment_id,
        version,
    };
    store_granted(state, &at, body.value.expose().as_bytes()).await?;
    tracing::info!(secret = %allowed.secret, environment = %allowed.environment, version, writer = %accessor, "value stored");
    Ok((
        StatusCode::CREATED,
        Json(serde_json::json!({
            "name": allowed.secret,
            "environment": allowed.environment,
            "version": version,
        })),
    ))
}

#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct DeleteQuery {
    environment: String,
}

impl heimdall_wire::body::Query for DeleteQuery {}

/// `DELETE /v1/secrets/{name}?environment=E` with a program token that
/// may delete: every version in that environment, on every Agent holding
/// it, as `heimdall secret delete NAME --environment E`. People delete
/// through the API.
#[utoipa::path(
    delete,
    path = "/v1/secrets/{name}",
    tag = "values",
    operation_id = "delete_as_program",
    summary = "Delete a secret in an environment (program)",
    description = "With a program token that may delete: deletes every version of the secret in the \
        environment, on every Agent holding it, through the API. People delete through the API instead \
        (`FORBIDDEN` here). Refused `VALUE_MAY_PERSIST` while an Agent that will not sync again may hold a \
        copy.",
    params(("name" = String, Path, description = "A secret name"), DeleteQuery),
    responses((status = 202, description = "Deleting in the environment, on every Agent holding it", body = ProgramDeletion), DeleteErrors),
)]
pub(crate) async fn delete(
    State(state): State<LocalApi>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
    Path(name): Path<String>,
    QueryParams(query): QueryParams<DeleteQuery>,
) -> Result<(StatusCode, Json<ProgramDeletion>), ErrorAnswer> {
    let (scope, accessor) = match caller(&state, &peer, &headers)? {
        Caller::Program { scope, accessor } => (scope, accessor),
        Caller::Person(_) => {
            return Err(ErrorAnswer(ApiError::new(
                ErrorCode::Forbidden,
                "people delete a secret through the API: `heimdall secret delete NAME --environment E`",
            )))
        }
    };
    let allowed = decide(&state, &scope, &accessor, Verb::Delete, &name, &query.environment).await?;
    let request = ProgramDeletionRequest {
        program: who(&scope),
        secret_id: allowed.secret_id,
        environment_id: allowed.environment_id,
    };
    let started = api(&state)?.program_deletion(&request).await.map_err(channel_refusal)?;
    tracing::info!(secret = %allowed.secret, environment = %allowed.environment, by = %accessor, "deletion started");
    Ok((StatusCode::ACCEPTED, Json(started)))
}
