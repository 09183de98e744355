//! The Agent's local HTTPS API: where people write and read values.
//!
//! - TLS with a server certificate from the installation CA, and a client
//!   certificate from the same CA required at the handshake (rustls
//!   `WebPkiClientVerifier`). The person is the SHA-256 of that exact
//!   certificate, looked up in the members the last sync listed: a
//!   certificate the API did not issue and record opens nothing.
//! - Write: a value with the API's signed grant for exactly this
//!   (organization, secret, environment, version, Agent), issued to this
//!   person. Versions are never overwritten.
//! - Read: decided with the synced policies; the value is decrypted, then
//!   the access record is committed (group commit, [`Recorder`]), and only
//!   then is the value sent. A record that cannot be written means
//!   `503 AUDIT_UNAVAILABLE` and no value.
//! - Read many (`POST /v1/values`, for `heimdall run`): each decided and
//!   loaded like a read, then every record in one commit, then the
//!   values; one refusal refuses them all, and nothing is recorded.
//! - Programs: a connection may come without a client certificate, and
//!   then a request must carry a program token (`Authorization: Bearer`,
//!   [`crate::program_tokens`]). A token does what its verbs allow
//!   (`heimdall_core::program`); its reads are recorded as
//!   `program NAME@AGENT`, and its writes and deletions go through the API
//!   ([`crate::local_api::program_writes`]). `GET /v1/eso/{environment}/{key}`
//!   is the External Secrets Operator's webhook contract: `{"value": …}`,
//!   404 for an unknown, out-of-scope or deactivated secret, and key `*`
//!   for every secret of the token's scope holding a value there.

pub mod eso;
pub mod local_cert;
pub mod openapi;
pub mod program_writes;
pub mod transfers;
pub mod watch;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::{Extension, Json, Router};
use heimdall_core::clock::Clock;
use heimdall_core::current;
use heimdall_core::grant::GrantTarget;
use heimdall_core::ids::AgentId;
use heimdall_core::{ApiError, ErrorCode, Redacted, Sha256Hex};
use heimdall_tls::server::QueryParams;
use heimdall_wire::{ReadValues, ValueAnswer, ValuesAnswer, WriteValue};
use rustls::server::WebPkiClientVerifier;
use time::OffsetDateTime;
use tokio::net::TcpListener;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access::{PolicySnapshot, SharedPolicy};
use crate::local_api::local_cert::LocalCertError;
use crate::local_api::openapi::{HealthErrors, ReadErrors, WriteErrors};
use crate::values::grant::GrantVerifier;
use crate::values::recorder::Recorder;
use crate::values::store::{ServedRead, ValueAddress, ValueStoreError, Vault, MAX_VALUE_LEN};

/// Everything a request needs.
#[derive(Clone, Debug)]
pub struct LocalApi {
    pub agent: AgentId,
    /// Grants expire, and records carry the time of the read.
    pub clock: Arc<dyn Clock>,
    pub store: Arc<Vault>,
    pub recorder: Recorder,
    pub policy: SharedPolicy,
    pub grants: GrantVerifier,
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Program tokens; `None`: only people's certificates are accepted.
    pub tokens: Option<Arc<crate::program_tokens::TokenFile>>,
    /// The API, asked on a program's behalf for a version or a deletion;
    /// `None`: programs only read.
    pub api: Option<crate::channel::Channel>,
    /// Long polls open per caller (`watch`): bounded, so that one token or
    /// certificate cannot hold the connection cap.
    pub watches: crate::local_api::watch::Watches,
    /// Fetches a current version this Agent lacks when a read asks for it.
    pub replication: Option<Arc<crate::values::replication::Replication>>,
}

/// A connection: its verified client certificate, if it presented one,
/// and where it came from.
#[derive(Clone, Debug)]
pub struct Peer {
    pub cert: Option<PeerCert>,
    pub addr: SocketAddr,
}

/// A verified client certificate: a person's, or another Agent's (for a transfer).
#[derive(Clone, Debug)]
pub struct PeerCert {
    pub cert_sha256: Sha256Hex,
    /// SHA-256 of the certificate's public key: what a personal secret is bound to.
    pub key_sha256: Sha256Hex,
    /// The Agent it names (URI SAN), for an Agent's certificate: only a
    /// transfer takes one (`transfers.rs`); people are looked up by `cert_sha256`.
    pub agent: Option<AgentId>,
}

/// Who asks: a person (by certificate) or a program (by token).
#[derive(Clone, Debug)]
pub(crate) enum Caller {
    Person(PeerCert),
    Program { scope: heimdall_core::program::ProgramScope, accessor: String },
}

impl Caller {
    /// Who it is, for counting what it holds open: a certificate's key, or a token's id.
    pub(crate) fn key(&self) -> String {
        match self {
            Caller::Person(cert) => format!("key:{}", cert.key_sha256),
            Caller::Program { scope, .. } => format!("token:{}", scope.id),
        }
    }
}

/// The caller of a request: exactly one of a client certificate and a
/// program token, else `UNAUTHENTICATED`.
pub(crate) fn caller(state: &LocalApi, peer: &Peer, headers: &HeaderMap) -> Result<Caller, ErrorAnswer> {
    let unauthenticated = |why: &str| ErrorAnswer(ApiError::new(ErrorCode::Unauthenticated, why.to_owned()));
    let bearer = match headers.get(AUTHORIZATION) {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.strip_prefix("Bearer "))
                .ok_or_else(|| unauthenticated("Authorization must be `Bearer <program token>`"))?,
        ),
    };
    match (&peer.cert, bearer, &state.tokens) {
        (Some(_), Some(_), _) => {
            Err(unauthenticated("present a client certificate or a program token, not both"))
        }
        (Some(cert), None, _) => Ok(Caller::Person(cert.clone())),
        (None, Some(token), Some(tokens)) => {
            let scope = tokens.authenticate(token, state.clock.now())?;
            let accessor = heimdall_core::program::accessor(&scope.name, &state.agent.to_string());
            Ok(Caller::Program { scope, accessor })
        }
        (None, Some(_), None) => Err(unauthenticated("this Agent accepts no program tokens")),
        (None, None, _) => {
            Err(unauthenticated("present a client certificate (`heimdall login`) or a program token"))
        }
    }
}

pub use heimdall_tls::server::ErrorAnswer;

pub(crate) fn store_refusal(e: ValueStoreError) -> ErrorAnswer {
    let code = match &e {
        ValueStoreError::AlreadyExists { .. } => ErrorCode::AlreadyExists,
        ValueStoreError::Deactivated { .. } => ErrorCode::VersionDeactivated,
        ValueStoreError::Superseded { .. } => ErrorCode::VersionSuperseded,
        ValueStoreError::Invalid(_) => ErrorCode::InvalidInput,
        ValueStoreError::Unavailable(_) | ValueStoreError::Open(_) => ErrorCode::Unavailable,
        ValueStoreError::Undecryptable { .. }
        | ValueStoreError::WrongMasterKey { .. }
        | ValueStoreError::WrongKmsKey { .. } => ErrorCode::Internal,
    };
    // Store errors name addresses and key ids, never a value; the
    // response hides them for internal failures, as the API does.
    ErrorAnswer(ApiError::new(code, e.to_string()))
}

/// Every route of the local API, each with its document.
pub(crate) fn routes() -> OpenApiRouter<LocalApi> {
    OpenApiRouter::with_openapi(crate::local_api::openapi::AgentLocalApi::openapi())
        .routes(routes!(openapi_json))
        .routes(routes!(health))
        .routes(routes!(certificate_status))
        .routes(routes!(read, write))
        .routes(routes!(crate::local_api::program_writes::delete))
        .routes(routes!(read_many))
        .routes(routes!(crate::local_api::watch::watch))
        .routes(routes!(crate::local_api::eso::read))
        .routes(routes!(crate::local_api::transfers::fetch))
}

#[utoipa::path(get, path = "/v1/openapi.json", tag = "agent", operation_id = "get_openapi_document",
    summary = "Get this local API's OpenAPI document",
    description = "This document (OpenAPI 3.1), describing every operation of the Agent's local API, where \
        secret values are written and read. No credential is needed.",
    security(()),
    responses((status = 200, description = "This document (OpenAPI 3.1)", body = Object), HealthErrors))]
async fn openapi_json() -> Response {
    static DOCUMENT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    heimdall_tls::openapi::serve(
        DOCUMENT.get_or_init(|| heimdall_tls::openapi::to_json(&crate::local_api::openapi::document())),
    )
}

pub fn router(state: LocalApi) -> Router {
    routes()
        .split_for_parts()
        .0
        .fallback(|| async { ErrorAnswer(ApiError::new(ErrorCode::NotFound, "no such route")) })
        // A 1 MiB value, JSON-escaped, with room for the grant.
        .layer(axum::extract::DefaultBodyLimit::max(8 * MAX_VALUE_LEN))
        .with_state(state)
}

/// The current snapshot; right after start, the first sync's (waited for).
pub(crate) async fn snapshot(state: &LocalApi) -> Result<Arc<PolicySnapshot>, ErrorAnswer> {
    let current = match state.policy.current() {
        Some(current) => Some(current),
        None if state.policy.is_revoked() => None,
        None => state.policy.refresh(OffsetDateTime::UNIX_EPOCH, REFRESH_WAIT).await,
    };
    current.ok_or_else(|| {
        ErrorAnswer(if state.policy.is_revoked() {
            revoked()
        } else {
            ApiError::new(
                ErrorCode::PolicyStale,
                "this Agent has not synced with the API yet; it decides nothing blind",
            )
        })
    })
}

fn revoked() -> ApiError {
    ApiError::new(ErrorCode::AgentRevoked, "this Agent was revoked: it serves no secret and stores none")
}

/// How long a request waits for the sync it asked for.
pub(crate) const REFRESH_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// `decide` with the current snapshot; if it does not know the
/// certificate, secret or environment, once more after a sync asked for now.
pub(crate) async fn with_fresh<T>(
    state: &LocalApi,
    decide: impl Fn(&PolicySnapshot) -> Result<T, ApiError>,
) -> Result<(Arc<PolicySnapshot>, T), ErrorAnswer> {
    let snap = snapshot(state).await?;
    match decide(&snap) {
        Err(e) if matches!(e.code, ErrorCode::NotFound | ErrorCode::Unauthenticated) => {
            let fresh = match state.policy.refresh(snap.received_at(), REFRESH_WAIT).await {
                Some(fresh) => fresh,
                None if state.policy.is_revoked() => return Err(ErrorAnswer(revoked())),
                None => snap,
            };
            let decided = decide(&fresh)?;
            Ok((fresh, decided))
        }
        other => Ok((snap.clone(), other?)),
    }
}

#[utoipa::path(
    get,
    path = "/v1/health",
    tag = "agent",
    operation_id = "agent_health",
    summary = "Check that the Agent is up",
    description = "Answers `ok`, the Agent's id and when it last received policies from the API (absent \
        before its first sync). No credential is needed.",
    security(()),
    responses((status = 200, description = "The Agent is up; its id and when its policy last synced", body = Object), HealthErrors),
)]
async fn health(State(state): State<LocalApi>) -> Json<serde_json::Value> {
    let synced = state.policy.current().map(|p| p.received_at());
    Json(serde_json::json!({
        "status": "ok",
        "agent": state.agent,
        "policy_synced_at": synced.and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok()),
    }))
}

/// The CA's statement of this Agent's local-API certificates, from its
/// last sync: program clients check it and pin what it lists before they
/// send a token (`heimdall_core::local_api_status`).
#[utoipa::path(
    get,
    path = "/v1/certificate-status",
    tag = "agent",
    operation_id = "agent_certificate_status",
    summary = "Get the signed status of this Agent's certificates",
    description = "The installation CA's signed statement of which certificates this Agent's local API may \
        present, as of its last sync, with the Agent's id: a program checks it and pins what it lists before \
        sending a token. `POLICY_STALE` until the Agent has such a statement from the API.",
    security(()),
    responses((status = 200, description = "The signed statement (`status`) and this Agent's id", body = Object), crate::local_api::openapi::StatusErrors),
)]
async fn certificate_status(State(state): State<LocalApi>) -> Result<Json<serde_json::Value>, ErrorAnswer> {
    let snap = snapshot(&state).await?;
    let status = snap.local_api_status().ok_or_else(|| {
        ErrorAnswer(ApiError::new(
            ErrorCode::PolicyStale,
            "this Agent has no certificate statement from the API yet; programs wait for its next sync",
        ))
    })?;
    Ok(Json(serde_json::json!({ "agent": state.agent, "status": status })))
}

pub(crate) fn to_u32_version(version: i64) -> Result<u32, ErrorAnswer> {
    u32::try_from(version)
        .ok()
        .filter(|v| *v >= 1)
        .ok_or_else(|| ErrorAnswer(ApiError::invalid_input("version starts at 1")))
}

#[utoipa::path(
    put,
    path = "/v1/secrets/{name}/value",
    tag = "values",
    operation_id = "write_value",
    summary = "Store a secret value",
    description = "Stores a value of the secret, sealed at rest: a person sends it with the version and the \
        write grant the API issued for this Agent; a program token that may write sends only the environment \
        and the value, and the Agent gets the version and grant from the API on its behalf. Versions are \
        never overwritten: a grant that does not match is refused `GRANT_INVALID`, and a different value at \
        the same version `ALREADY_EXISTS`.",
    params(("name" = String, Path, description = "A secret name")),
    request_body = WriteValue,
    responses((status = 201, description = "Stored, sealed under the master key", body = Object), WriteErrors),
)]
async fn write(
    State(state): State<LocalApi>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<serde_json::Value>), ErrorAnswer> {
    let cert = match caller(&state, &peer, &headers)? {
        Caller::Person(cert) => cert,
        Caller::Program { scope, accessor } => {
            return crate::local_api::program_writes::write(&state, &scope, &accessor, &name, &body).await;
        }
    };
    // One strict parse (`heimdall_wire::body`): trailing bytes and
    // duplicate keys are refused, and no error quotes the input, which
    // holds a secret.
    let body: WriteValue = heimdall_wire::body::decode(&body)?;
    let (snap, writer) = with_fresh(&state, |s| s.reader(&cert.cert_sha256)).await?;
    let writer_id = heimdall_core::grant::GrantWriter::Member(writer.member);
    let grant = heimdall_core::grant::parse(body.grant.expose()).map_err(ApiError::from)?;
    // Her personal secret asked for by the name she gave it.
    let name = if grant.claims.secret == heimdall_core::secrets::personal_key(writer.member, &name) {
        grant.claims.secret.clone()
    } else {
        name
    };
    let version = to_u32_version(body.version)?;
    // Every claim, in `WriteGrantClaims::check`: organization, this Agent,
    // secret, environment (by id or name, as asked), version, the writer by
    // member id and, for a personal secret, the writer's key.
    let target = GrantTarget {
        org: snap.org(),
        agent: state.agent,
        secret: &name,
        environment: &body.environment,
        version: body.version,
        writer: writer_id,
        writer_key: Some(&cert.key_sha256),
    };
    state.grants.verify(&grant, &target, state.clock.now()).map_err(ApiError::from)?;
    // The environment's id from the verified grant: a value can be
    // written to an environment created since the last sync.
    let (environment_id, environment) = (grant.claims.environment_id, grant.claims.environment.clone());
    check_size(body.value.expose())?;
    with_fresh(&state, |s| s.may_store(&name, grant.claims.secret_id, environment_id, body.version)).await?;
    let at = ValueAddress { org: snap.org(), secret: name.clone(), environment: environment_id, version };
    store_granted(&state, &at, body.value.expose().as_bytes()).await?;
    tracing::info!(secret = %name, environment = %environment, version, writer = %writer.email, "value stored");
    Ok((
        StatusCode::CREATED,
        Json(serde_json::json!({ "name": name, "environment": environment, "version": version })),
    ))
}

/// A value is at most [`MAX_VALUE_LEN`] bytes.
pub(crate) fn check_size(value: &str) -> Result<(), ErrorAnswer> {
    if value.len() > MAX_VALUE_LEN {
        return Err(ErrorAnswer(ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("a value is at most {MAX_VALUE_LEN} bytes"),
        )));
    }
    Ok(())
}

/// Stores a value whose grant was verified, at its address.
pub(crate) async fn store_granted(
    state: &LocalApi,
    at: &ValueAddress,
    value: &[u8],
) -> Result<(), ErrorAnswer> {
    match state.store.put_value(at, value).await {
        Ok(()) => {}
        // Agents sharing one store are each sent the value: the first
        // stores it, and the same bytes at the same address are no
        // overwrite. Anything else at that address is refused.
        Err(ValueStoreError::AlreadyExists { .. })
            if state.store.get_value(at).await.ok().flatten().is_some_and(|held| {
                use subtle::ConstantTimeEq;
                bool::from(held.as_slice().ct_eq(value))
            }) => {}
        Err(e) => return Err(store_refusal(e)),
    }
    Ok(())
}

#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ReadQuery {
    environment: String,
    version: Option<i64>,
}

impl heimdall_wire::body::Query for ReadQuery {}

#[utoipa::path(
    get,
    path = "/v1/secrets/{name}/value",
    tag = "values",
    operation_id = "read_value",
    summary = "Read a secret value",
    description = "The value of the secret in an environment (the latest version, or the one asked), if the \
        synced policies let the caller read it. The read is recorded in the access trail before the value is \
        served (`AUDIT_UNAVAILABLE` and no value if it cannot be); a deactivated version is `410 \
        VERSION_DEACTIVATED`, a version replaced by a newer one and erased after its overlap `410 \
        VERSION_SUPERSEDED`.",
    params(("name" = String, Path, description = "A secret name"), ReadQuery),
    responses((status = 200, description = "The value, recorded in the access trail before it is served", body = ValueAnswer), ReadErrors),
)]
async fn read(
    State(state): State<LocalApi>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
    Path(name): Path<String>,
    QueryParams(query): QueryParams<ReadQuery>,
) -> Result<Json<ValueAnswer>, ErrorAnswer> {
    let read = async {
        let caller = caller(&state, &peer, &headers)?;
        Ok(Json(read_one(&state, &peer, &caller, &name, &query.environment, query.version).await?.answer()?))
    };
    counted(&state, read.await, 1)
}

/// One read, decided, loaded and recorded (durable first: nothing is
/// served that was not recorded), not yet served.
pub(crate) async fn read_one(
    state: &LocalApi,
    peer: &Peer,
    caller: &Caller,
    name: &str,
    environment: &str,
    version: Option<i64>,
) -> Result<Loaded, ErrorAnswer> {
    let now = state.clock.now();
    let loaded = load(state, caller, name, environment, version, now).await?;
    record(state, vec![loaded.record(peer, state.agent, now)], &loaded.allowed.secret).await?;
    Ok(loaded)
}

/// Counts reads served (`served` of them) or the refusal.
pub(crate) fn counted<T>(
    state: &LocalApi,
    result: Result<T, ErrorAnswer>,
    served: usize,
) -> Result<T, ErrorAnswer> {
    if let Some(metrics) = &state.metrics {
        metrics.reads(result.as_ref().err().map(|ErrorAnswer(e)| e.code), served);
    }
    result
}

/// At most this many secrets in one `POST /v1/values` (one commit).
pub(crate) const MAX_READ_VALUES: usize = crate::values::recorder::MAX_BATCH;

/// `POST /v1/values`: the latest version of each secret, decided and
/// loaded one by one, then every read recorded in one commit, and only
/// then the values. Any refusal refuses the whole request, names the
/// secret and records nothing.
#[utoipa::path(
    post,
    path = "/v1/values",
    tag = "values",
    operation_id = "read_values",
    summary = "Read several secret values at once",
    description = "The latest value of each named secret in one environment, all or none: each is decided \
        and loaded, every read is recorded in one commit, and only then are the values served. Any refusal \
        refuses the whole request, names the secret and records nothing.",
    request_body = ReadValues,
    responses((status = 200, description = "Every value asked for, each recorded before any is served", body = ValuesAnswer), ReadErrors),
)]
async fn read_many(
    State(state): State<LocalApi>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Json<ValuesAnswer>, ErrorAnswer> {
    let answer = async { read_all(&state, &peer, &caller(&state, &peer, &headers)?, &body).await }.await;
    let served = answer.as_ref().map_or(1, |Json(a)| a.values.len());
    counted(&state, answer, served)
}

/// [`read_many`]'s work, uncounted.
async fn read_all(
    state: &LocalApi,
    peer: &Peer,
    caller: &Caller,
    body: &[u8],
) -> Result<Json<ValuesAnswer>, ErrorAnswer> {
    let body: ReadValues = heimdall_wire::body::decode(body)?;
    if body.secrets.is_empty() || body.secrets.len() > MAX_READ_VALUES {
        return Err(ErrorAnswer(ApiError::invalid_input(format!(
            "secrets[] names 1 to {MAX_READ_VALUES} secrets"
        ))));
    }
    let loaded = load_all(state, peer, caller, &body.secrets, &body.environment).await?;
    let values = loaded.into_iter().map(Loaded::answer).collect::<Result<Vec<_>, _>>()?;
    Ok(Json(ValuesAnswer { values }))
}

/// The latest version of each of `names`, each decided and loaded, then
/// every read recorded in one commit; one refusal (naming its secret)
/// refuses all and records nothing.
pub(crate) async fn load_all(
    state: &LocalApi,
    peer: &Peer,
    caller: &Caller,
    names: &[String],
    environment: &str,
) -> Result<Vec<Loaded>, ErrorAnswer> {
    let now = state.clock.now();
    let mut loaded = Vec::with_capacity(names.len());
    for name in names {
        let one = load(state, caller, name, environment, None, now)
            .await
            .map_err(|ErrorAnswer(e)| ErrorAnswer(ApiError::new(e.code, format!("{name}: {}", e.message))))?;
        loaded.push(one);
    }
    record_all(state, peer, &loaded, environment, now).await?;
    Ok(loaded)
}

/// Records every one of `loaded` in one commit (none: nothing to do).
pub(crate) async fn record_all(
    state: &LocalApi,
    peer: &Peer,
    loaded: &[Loaded],
    what: &str,
    now: OffsetDateTime,
) -> Result<(), ErrorAnswer> {
    if loaded.is_empty() {
        return Ok(());
    }
    record(state, loaded.iter().map(|l| l.record(peer, state.agent, now)).collect(), what).await
}

/// A read decided and its value decrypted, not yet recorded nor served.
pub(crate) struct Loaded {
    allowed: crate::access::AllowedRead,
    version: u32,
    value: zeroize::Zeroizing<Vec<u8>>,
}

impl Loaded {
    fn record(&self, peer: &Peer, agent: AgentId, now: OffsetDateTime) -> ServedRead {
        ServedRead {
            accessor: self.allowed.reader.clone(),
            at_micros: i64::try_from(now.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX),
            secret: self.allowed.secret.clone(),
            environment: self.allowed.environment_id,
            version: self.version,
            source: peer.addr.ip().to_string(),
            served_by: agent,
        }
    }

    pub(crate) fn answer(self) -> Result<ValueAnswer, ErrorAnswer> {
        let text = String::from_utf8(self.value.to_vec()).map_err(|_| {
            ErrorAnswer(ApiError::new(ErrorCode::Internal, "the stored value is not UTF-8 text"))
        })?;
        Ok(ValueAnswer {
            name: self.allowed.secret,
            environment: self.allowed.environment,
            version: i64::from(self.version),
            value: Redacted::new(text),
        })
    }
}

/// Decides a read of `name` in `environment` (its `version`, else the
/// latest) and loads the value.
pub(crate) async fn load(
    state: &LocalApi,
    caller: &Caller,
    name: &str,
    environment: &str,
    version: Option<i64>,
    now: OffsetDateTime,
) -> Result<Loaded, ErrorAnswer> {
    let allowed = decide(state, caller, name, environment, now).await?;
    let shown = heimdall_core::secrets::display_name(&allowed.secret);
    let no_value = |version: Option<u32>| {
        let which = version.map_or_else(|| "no value".to_owned(), |v| format!("no version {v}"));
        ErrorAnswer(ApiError::new(
            ErrorCode::NotFound,
            format!("this Agent holds {which} of {} in {}", allowed.secret, allowed.environment),
        ))
    };
    let (version, value) = match version {
        Some(v) => {
            let version = to_u32_version(v)?;
            let at = ValueAddress {
                org: allowed.org,
                secret: allowed.secret.clone(),
                environment: allowed.environment_id,
                version,
            };
            let mut value = state.store.get_value(&at).await.map_err(store_refusal)?;
            if value.is_none() && allowed.current == Some(v) && fetched(state, &allowed, v).await {
                value = state.store.get_value(&at).await.map_err(store_refusal)?;
            }
            match value {
                Some(value) => (version, value),
                // Another holder may have it: the client asks the next.
                None => {
                    return Err(current::missing_version(shown, v, allowed.current)
                        .map_or_else(|| no_value(Some(version)), ErrorAnswer))
                }
            }
        }
        None => {
            let latest_here =
                || state.store.latest_value(allowed.org, &allowed.secret, allowed.environment_id);
            let mut latest = latest_here().await.map_err(store_refusal)?;
            let held = |latest: &Option<(u32, _)>| latest.as_ref().map(|(v, _)| i64::from(*v));
            // Never an older version as the latest (`heimdall_core::current`):
            // fetch it first if the last sync planned it, else refuse.
            if let (Err(_), Some(current)) =
                (current::check_latest(shown, held(&latest), allowed.current), allowed.current)
            {
                if fetched(state, &allowed, current).await {
                    latest = latest_here().await.map_err(store_refusal)?;
                }
            }
            current::check_latest(shown, held(&latest), allowed.current).map_err(ErrorAnswer)?;
            latest.ok_or_else(|| no_value(None))?
        }
    };
    Ok(Loaded { allowed, version, value })
}

/// Whether the current `version` the read asked for was just fetched from
/// another holder (`Replication::fetch_now`, bounded).
async fn fetched(state: &LocalApi, allowed: &crate::access::AllowedRead, version: i64) -> bool {
    match &state.replication {
        Some(replication) => replication.fetch_now(&allowed.secret, allowed.environment_id, version).await,
        None => false,
    }
}

/// Decides a read of `name` in `environment` by `caller`, loading nothing.
pub(crate) async fn decide(
    state: &LocalApi,
    caller: &Caller,
    name: &str,
    environment: &str,
    now: OffsetDateTime,
) -> Result<crate::access::AllowedRead, ErrorAnswer> {
    let (_, allowed) = with_fresh(state, |s| match caller {
        Caller::Person(cert) => s.decide_read(&cert.cert_sha256, &cert.key_sha256, name, environment, now),
        Caller::Program { scope, accessor } => {
            s.decide_program(scope, accessor, heimdall_core::program::Verb::Read, name, environment, now)
        }
    })
    .await?;
    Ok(allowed)
}

/// Makes `records` durable in one commit, or refuses (`AUDIT_UNAVAILABLE`):
/// nothing is served that was not recorded. `what` names them in the log.
pub(crate) async fn record(
    state: &LocalApi,
    records: Vec<ServedRead>,
    what: &str,
) -> Result<(), ErrorAnswer> {
    if let Err(e) = state.recorder.record_all(records).await {
        tracing::error!(error = %e, what, "read refused: its access record was not written");
        return Err(ErrorAnswer(ApiError::new(
            ErrorCode::AuditUnavailable,
            "the read could not be recorded, so nothing is served; try again later",
        )));
    }
    Ok(())
}

/// TLS for the local API: the certificate `resolver` serves (swapped on
/// renewal), and a client certificate from `ca_pem` required.
pub fn tls_config(
    resolver: Arc<dyn rustls::server::ResolvesServerCert>,
    ca_pem: &str,
) -> Result<rustls::ServerConfig, LocalCertError> {
    let provider = heimdall_tls::verify::provider();
    let roots = heimdall_tls::verify::roots(ca_pem).map_err(LocalCertError::Ca)?;
    // A certificate, when presented, must chain to the CA; a connection
    // without one can only use a program token (`caller`).
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| LocalCertError::Tls(format!("client verifier: {e}")))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| LocalCertError::Tls(e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Serves `app` on `listener` until `stop` turns true (`heimdall_tls::server`:
/// handshake and header timeouts, a connection cap, graceful shutdown);
/// each connection's verified client certificate becomes a [`Peer`] on
/// its requests.
pub async fn serve(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    app: Router,
    limits: heimdall_tls::server::Limits,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let admit = |certs: Option<&[rustls::pki_types::CertificateDer<'static>]>, addr| {
        let cert = match certs.and_then(|c| c.first()) {
            None => None,
            // A verified certificate whose key cannot be read: refused.
            Some(cert) => Some(PeerCert {
                cert_sha256: heimdall_tls::identity::sha256_hex(cert.as_ref()),
                key_sha256: heimdall_tls::identity::spki_sha256(cert.as_ref())?,
                agent: heimdall_tls::identity::agent_of(cert.as_ref()),
            }),
        };
        Some(Peer { cert, addr })
    };
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    heimdall_tls::server::serve(listener, Some(config), admit, app, limits, stopped).await;
}
