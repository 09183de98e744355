//! `POST /v1/values/watch`, for `heimdall run --watch`: a long poll that
//! answers as soon as the versions of the named secrets differ from the
//! fingerprint the caller last saw (a new version stored here, the latest
//! deactivated), or after [`WAIT`] with the same one. Each secret is
//! decided as a read would be; no value is loaded or sent, so nothing is
//! recorded (the reads that follow a change are).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::{Extension, Json};
use heimdall_core::ApiError;
use heimdall_wire::{WatchAnswer, WatchValues};
use sha2::{Digest, Sha256};

use crate::local_api::openapi::ReadErrors;
use crate::local_api::{caller, decide, store_refusal, Caller, ErrorAnswer, LocalApi, Peer, MAX_READ_VALUES};

/// How long one poll waits for a change.
pub const WAIT: std::time::Duration = std::time::Duration::from_secs(25);

/// Most polls one caller (a certificate's key, a token) holds open at once.
pub const MAX_PER_CALLER: usize = 8;

/// The polls open, per caller.
#[derive(Clone, Debug, Default)]
pub struct Watches(std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>);

/// One open poll, given back when dropped.
struct Open {
    watches: Watches,
    caller: String,
}

impl Watches {
    fn open(&self, caller: String) -> Result<Open, ErrorAnswer> {
        let mut open = self
            .0
            .lock()
            .map_err(|_| ErrorAnswer(ApiError::new(heimdall_core::ErrorCode::Internal, "a poisoned lock")))?;
        let count = open.entry(caller.clone()).or_default();
        if *count >= MAX_PER_CALLER {
            return Err(ErrorAnswer(ApiError::new(
                heimdall_core::ErrorCode::TooManyRequests,
                format!("at most {MAX_PER_CALLER} watches open at once per caller"),
            )));
        }
        *count += 1;
        Ok(Open { watches: self.clone(), caller })
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        if let Ok(mut open) = self.watches.0.lock() {
            if let Some(count) = open.get_mut(&self.caller) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    open.remove(&self.caller);
                }
            }
        }
    }
}

#[utoipa::path(
    post,
    path = "/v1/values/watch",
    tag = "values",
    operation_id = "watch_values",
    summary = "Wait for secret values to change",
    description = "A long poll: answers as soon as the versions of the named secrets in the environment \
        differ from the fingerprint `since` (a new version stored, the latest deactivated), or after about \
        25 seconds with the same one. Each secret is decided as a read would be, but no value is loaded or \
        sent and nothing is recorded; at most 8 polls per caller at once (`TOO_MANY_REQUESTS`).",
    request_body = WatchValues,
    responses((status = 200, description = "The values' fingerprint, answered when it changes or the wait ends", body = WatchAnswer), ReadErrors),
)]
pub(crate) async fn watch(
    State(state): State<LocalApi>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Json<WatchAnswer>, ErrorAnswer> {
    let caller = caller(&state, &peer, &headers)?;
    let _open = state.watches.open(caller.key())?;
    let body: WatchValues = heimdall_wire::body::decode(&body)?;
    if body.secrets.is_empty() || body.secrets.len() > MAX_READ_VALUES {
        return Err(ErrorAnswer(ApiError::invalid_input(format!(
            "secrets[] names 1 to {MAX_READ_VALUES} secrets"
        ))));
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut changes = state.store.watch_changes();
    loop {
        // Marked seen before reading, so that a change while reading wakes the wait.
        changes.borrow_and_update();
        let fingerprint = fingerprint(&state, &caller, &body).await?;
        if body.since.as_deref() != Some(fingerprint.as_str()) {
            return Ok(Json(WatchAnswer { fingerprint, changed: body.since.is_some() }));
        }
        match tokio::time::timeout_at(deadline, changes.changed()).await {
            Ok(Ok(())) => continue,
            _ => return Ok(Json(WatchAnswer { fingerprint, changed: false })),
        }
    }
}

/// The SHA-256 of each secret's latest version here and whether it is
/// deactivated, in the order asked.
async fn fingerprint(state: &LocalApi, caller: &Caller, body: &WatchValues) -> Result<String, ErrorAnswer> {
    let now = state.clock.now();
    let mut digest = Sha256::new();
    for name in &body.secrets {
        let allowed = decide(state, caller, name, &body.environment, now)
            .await
            .map_err(|ErrorAnswer(e)| ErrorAnswer(ApiError::new(e.code, format!("{name}: {}", e.message))))?;
        let latest = state
            .store
            .latest_state(allowed.org, &allowed.secret, allowed.environment_id)
            .await
            .map_err(store_refusal)?;
        let (version, deactivated) = latest.unwrap_or((0, false));
        digest.update(format!("{name}\0{version}\0{deactivated}\n").as_bytes());
    }
    Ok(hex::encode(digest.finalize()))
}
