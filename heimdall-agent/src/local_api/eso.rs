//! The External Secrets Operator's webhook provider, served by the local
//! API: `GET /v1/eso/{environment}/{key}` with a program token, answered
//! `{"value": "<the latest value>"}` (the SecretStore's `result.jsonPath`
//! is `$.value`). Key `*` answers `{"value": {"<secret>": "<value>", …}}`,
//! every secret of the token's scope that holds a value in the
//! environment, for `dataFrom.extract`.
//!
//! Every refusal that means "there is nothing for you here" is a 404: an
//! unknown secret, one outside the token's scope, and a deactivated
//! version. ESO treats a 404 as "the secret is gone", and with
//! `deletionPolicy: Delete` removes it from the cluster: a leaked value
//! that was deactivated disappears from Kubernetes too. People get 410
//! `VERSION_DEACTIVATED` instead, which tells them why.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::{Extension, Json};
use heimdall_core::{ApiError, ErrorCode};
use serde_json::{json, Map, Value};

use crate::local_api::openapi::ReadErrors;
use crate::local_api::{caller, load, read_one, record_all, Caller, ErrorAnswer, LocalApi, Peer};

/// The key that asks for every secret of the token's scope.
pub const ALL: &str = "*";

#[utoipa::path(
    get,
    path = "/v1/eso/{environment}/{key}",
    tag = "values",
    operation_id = "read_for_external_secrets",
    summary = "Read values for the External Secrets Operator",
    description = "The External Secrets Operator's webhook provider contract: the latest value of the secret \
        in the environment under `value`, or, with key `*`, an object of every secret of the program token's \
        scope that holds a value there. Every read is recorded before it is served. An unknown, out-of-scope \
        or deactivated secret is `404`, so the operator removes it from the cluster.",
    params(("environment" = String, Path, description = "An environment name"), ("key" = String, Path, description = "A secret name, or `*`")),
    responses((status = 200, description = "A value (or, for `*`, every value of the token's scope) as the External Secrets webhook provider reads it", body = Object), ReadErrors),
)]
pub(crate) async fn read(
    State(state): State<LocalApi>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
    Path((environment, key)): Path<(String, String)>,
) -> Result<Json<Value>, ErrorAnswer> {
    let answer = async {
        let caller = caller(&state, &peer, &headers)?;
        if key == ALL {
            all(&state, &peer, &caller, &environment).await
        } else {
            one(&state, &peer, &caller, &environment, &key).await
        }
    }
    .await;
    // Counted like every read: the values served, or the refusal.
    let served = answer.as_ref().map_or(1, |(_, n)| *n);
    let answer = crate::local_api::counted(&state, answer, served);
    answer.map(|(value, _)| Json(value)).map_err(|ErrorAnswer(e)| ErrorAnswer(as_eso(e)))
}

async fn one(
    state: &LocalApi,
    peer: &Peer,
    caller: &Caller,
    environment: &str,
    key: &str,
) -> Result<(Value, usize), ErrorAnswer> {
    let loaded = read_one(state, peer, caller, key, environment, None).await?;
    Ok((json!({ "value": loaded.answer()?.value.expose() }), 1))
}

/// Every secret the token's scope names that holds a value here; those
/// with none (or a deactivated latest version), and those a policy
/// forbids, are left out. All the reads are recorded in one commit before
/// anything is served.
async fn all(
    state: &LocalApi,
    peer: &Peer,
    caller: &Caller,
    environment: &str,
) -> Result<(Value, usize), ErrorAnswer> {
    let Caller::Program { scope, .. } = caller else {
        return Err(ErrorAnswer(ApiError::invalid_input(
            "key * is for a program token: it reads the token's scope",
        )));
    };
    let mut snapshot = state.policy.current().ok_or_else(|| {
        ErrorAnswer(ApiError::new(ErrorCode::PolicyStale, "this Agent has not synced with the API yet"))
    })?;
    // An environment it does not know: one sync asked for, then 404 (not a
    // sync per secret of the scope).
    if snapshot.environment(environment).is_none() {
        let fresh = state.policy.refresh(snapshot.received_at(), crate::local_api::REFRESH_WAIT).await;
        snapshot = fresh
            .filter(|s| s.environment(environment).is_some())
            .ok_or_else(|| ErrorAnswer(ApiError::not_found("environment")))?;
    }
    let now = state.clock.now();
    let mut loaded = Vec::new();
    for name in snapshot.program_secrets(scope) {
        match load(state, caller, &name, environment, None, now).await {
            Ok(one) => loaded.push(one),
            Err(ErrorAnswer(e)) if is_absent(e.code) || e.code == ErrorCode::Forbidden => {}
            Err(refusal) => return Err(refusal),
        }
    }
    record_all(state, peer, &loaded, environment, now).await?;
    let (mut values, served) = (Map::new(), loaded.len());
    for one in loaded {
        let answer = one.answer()?;
        values.insert(answer.name, Value::String(answer.value.expose().clone()));
    }
    Ok((json!({ "value": values }), served))
}

/// Refusals that mean "nothing here for you".
fn is_absent(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::NotFound | ErrorCode::VersionDeactivated)
}

/// ESO's reading of a refusal: 404 for anything absent, the rest as is.
fn as_eso(e: ApiError) -> ApiError {
    if is_absent(e.code) {
        ApiError::new(ErrorCode::NotFound, e.message)
    } else {
        e
    }
}
