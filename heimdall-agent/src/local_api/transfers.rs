//! `POST /v1/transfers`: this Agent hands a current version to another
//! holder of the environment that lacks it (`heimdall_core::transfer`).
//!
//! The caller is an Agent, by the id its verified certificate names (its
//! URI SAN), never a host name; the grant is the CA's, names that Agent as
//! the destination and one (secret, environment, version). The hand-over is
//! recorded as a read by that Agent before the value is served, like any
//! other read.

use axum::extract::State;
use axum::{Extension, Json};
use heimdall_core::transfer::ServeCheck;
use heimdall_core::{ApiError, ErrorCode, Redacted};
use heimdall_wire::{FetchTransfer, ValueAnswer};

use crate::local_api::openapi::TransferErrors;
use crate::local_api::{
    counted, record, snapshot, store_refusal, to_u32_version, ErrorAnswer, LocalApi, Peer,
};
use crate::values::store::{ServedRead, ValueAddress};

#[utoipa::path(
    post,
    path = "/v1/transfers",
    tag = "values",
    operation_id = "fetch_transfer",
    summary = "Hand a current version to another Agent",
    description = "For another Agent holding the same environment, with its own Agent certificate: the value \
        of the version a grant from the API names, if the grant is the installation CA's, names the caller's \
        Agent id, is fresh, and the version is not superseded here. Recorded in the access trail as a read by \
        that Agent (`agent <id> (replication)`) before it is served. People and programs are refused.",
    request_body = FetchTransfer,
    responses((status = 200, description = "The value, recorded before it is served", body = ValueAnswer), TransferErrors),
)]
pub(crate) async fn fetch(
    State(state): State<LocalApi>,
    Extension(peer): Extension<Peer>,
    body: axum::body::Bytes,
) -> Result<Json<ValueAnswer>, ErrorAnswer> {
    let served = async {
        let body: FetchTransfer = heimdall_wire::body::decode(&body).map_err(ErrorAnswer)?;
        let refused = |e: heimdall_core::transfer::TransferError| ErrorAnswer(ApiError::from(e));
        let grant = heimdall_core::transfer::parse(&body.grant).map_err(refused)?;
        let snap = snapshot(&state).await?;
        let claims = &grant.claims;
        let newest_held = state
            .store
            .latest_value(claims.org, &claims.secret, claims.environment_id)
            .await
            .map_err(store_refusal)?
            .map(|(version, _)| i64::from(version));
        let check = ServeCheck {
            org: snap.org(),
            caller: peer.cert.as_ref().and_then(|c| c.agent),
            current: snap.current_version(&claims.secret, claims.environment_id),
            newest_held,
        };
        let now = state.clock.now();
        state.grants.verify_transfer(&grant, &check, now).map_err(refused)?;
        let version = to_u32_version(claims.version)?;
        let at = ValueAddress {
            org: claims.org,
            secret: claims.secret.clone(),
            environment: claims.environment_id,
            version,
        };
        let value = state.store.get_value(&at).await.map_err(store_refusal)?.ok_or_else(|| {
            ErrorAnswer(ApiError::new(
                ErrorCode::VersionNotHeld,
                format!("this Agent does not hold version {version} of that secret; another holder may"),
            ))
        })?;
        let read = ServedRead {
            accessor: format!("agent {} (replication)", claims.destination),
            at_micros: i64::try_from(now.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX),
            secret: claims.secret.clone(),
            environment: claims.environment_id,
            version,
            source: peer.addr.ip().to_string(),
            served_by: state.agent,
        };
        record(&state, vec![read], &claims.secret).await?;
        let text = String::from_utf8(value.to_vec()).map_err(|_| {
            ErrorAnswer(ApiError::new(ErrorCode::Internal, "the stored value is not UTF-8 text"))
        })?;
        let environment = snap
            .environment_name(claims.environment_id)
            .map_or_else(|| claims.environment_id.to_string(), str::to_owned);
        Ok(Json(ValueAnswer {
            name: claims.secret.clone(),
            environment,
            version: claims.version,
            value: Redacted::new(text),
        }))
    };
    counted(&state, served.await, 1)
}
