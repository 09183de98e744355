//! The Agent channel, served only on the mTLS listener. The Agent is who
//! its verified client certificate says it is (never a header), and only
//! while that exact certificate is the one issued to it and it is not
//! revoked.

mod database_tasks;
pub(crate) mod program_writes;
mod sync;

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, Router};
use heimdall_core::ids::LeaseId;
use heimdall_core::infra::Agent;
use heimdall_core::queue::service as jobs;
use heimdall_core::queue::MAX_LOG_BYTES;
use heimdall_core::server_names::service as local_names;
use heimdall_core::{ApiError, ErrorCode};
use heimdall_wire::{
    Claim, ClaimedJob, FinishJob, FinishOutcome, Heartbeat, IssuedCertificate, LeaseExtended, LogChunk,
    ServerCertificateRequest,
};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::http::error::{ErrorAnswer, HttpResult};
use crate::http::extract::JsonBody;
use crate::http::openapi::errors;
use crate::http::AppState;

/// The Agent the mTLS listener verified: its certificate's URI SAN and digest.
pub type PeerAgent = heimdall_core::queue::service::Peer;

/// Longest a claim is held open.
pub const MAX_WAIT: Duration = Duration::from_secs(30);

pub fn router(state: AppState) -> Router {
    let (routes, _) = document().split_for_parts();
    crate::metrics::layer(routes, "agents", state.metrics.clone())
        .fallback(|| async { ErrorAnswer(ApiError::new(ErrorCode::NotFound, "no such route")) })
        .layer(axum::extract::DefaultBodyLimit::max(MAX_LOG_BYTES + 64 * 1024))
        .with_state(state)
}

/// The Agent channel's routes, each with its document.
pub(crate) fn document() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(crate::http::openapi::AgentChannelApi::openapi())
        .routes(routes!(openapi_json))
        .routes(routes!(claim))
        // A sync carries the whole inventory: more room than a job's log.
        .merge(
            OpenApiRouter::new()
                .routes(routes!(sync::sync))
                .layer(axum::extract::DefaultBodyLimit::max(sync::MAX_SYNC_BODY_BYTES)),
        )
        .routes(routes!(server_certificate))
        .routes(routes!(heartbeat))
        .routes(routes!(log))
        .routes(routes!(finish))
        .routes(routes!(program_writes::version))
        .routes(routes!(program_writes::deletion))
        .routes(routes!(program_writes::register))
        .routes(routes!(program_writes::revoke))
        .merge(database_tasks::routes())
}

errors!(public body ClaimErrors: Unauthenticated, AgentRevoked);
errors!(public body JobErrors: Unauthenticated, AgentRevoked, NotFound, Conflict);
errors!(public body FinishErrors: Unauthenticated, AgentRevoked, NotFound, Conflict, StalePlan);
errors!(public body CertificateErrors: Unauthenticated, AgentRevoked, Forbidden);

/// The Agent channel's OpenAPI document, as `GET /v1/agent/openapi.json` serves it.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    document().split_for_parts().1
}

#[utoipa::path(get, path = "/v1/agent/openapi.json", tag = "agent-channel", operation_id = "get_agent_channel_document",
    summary = "Get the Agent channel's OpenAPI document",
    description = "This document (OpenAPI 3.1): every operation an enrolled Agent calls over mutual TLS, \
        identified by its client certificate.",
    responses((status = 200, description = "This document (OpenAPI 3.1)", body = Object), DocumentErrors))]
async fn openapi_json() -> axum::response::Response {
    static DOCUMENT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    crate::http::openapi::serve(DOCUMENT.get_or_init(|| crate::http::openapi::to_json(&openapi_document())))
}

errors!(public DocumentErrors);

/// The Agent, if it is enrolled and not revoked (`AGENT_REVOKED` tells a
/// revoked Agent to stop serving at once).
pub(super) async fn agent(state: &AppState, peer: &PeerAgent) -> Result<Agent, ApiError> {
    jobs::serving(&*state.store, peer).await
}

#[utoipa::path(
    post,
    path = "/v1/agent/claim",
    tag = "agent-channel",
    operation_id = "claim_job",
    summary = "Claim a job (Agent)",
    description = "Leases the next queued infrastructure job to the calling Agent, with the short-lived \
        cloud credentials it needs; every later call about the job carries the lease. When nothing is queued \
        the request is held open up to `wait_seconds` (at most 30), then answers `204`. An unknown \
        certificate is refused `UNAUTHENTICATED` and a revoked Agent `AGENT_REVOKED`: it must stop at once.",
    request_body = Claim,
    security(()),
    responses((status = 200, description = "A job, leased to this Agent, with its credentials", body = ClaimedJob), (status = 204, description = "No job within the wait"), ClaimErrors),
)]
async fn claim(
    State(state): State<AppState>,
    Extension(peer): Extension<PeerAgent>,
    JsonBody(body): JsonBody<Claim>,
) -> HttpResult<Response> {
    jobs::seen(&*state.store, &peer, state.clock.now()).await?;
    let wait = Duration::from_secs(u64::from(body.wait_seconds)).min(MAX_WAIT);
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        // Revocation takes effect even for a claim already waiting.
        let agent = agent(&state, &peer).await?;
        // Register for the wake-up before looking, so a job queued between
        // the look and the wait is not missed.
        let notified = state.jobs_queued.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let lease = LeaseId::from_uuid(Uuid::new_v4());
        let now = state.clock.now();
        if let Some(job) = jobs::claim(&*state.store, &agent, body.lock_holder.as_deref(), lease, now).await?
        {
            if let Some(metrics) = &state.metrics {
                metrics.claimed(now - job.queued_at);
            }
            let credentials =
                match crate::federation::credentials(state.federation.as_ref(), &*state.store, &job, now)
                    .await
                {
                    Ok(credentials) => credentials,
                    Err(refused) => {
                        // The attempt ends here, as a run that failed would; the
                        // Agent looks for another job.
                        tracing::warn!(job = %job.id, reason = %refused.reason, "no credentials for the job");
                        let why = (refused.reason, refused.retryable);
                        let ended =
                            jobs::without_credentials(&*state.store, (job.id, lease), why, state.clock.now())
                                .await?;
                        moved(&state, &ended);
                        continue;
                    }
                };
            let lease_expires_at = job.lease_expires_at.unwrap_or(now);
            let jobs::Claimed { job, lease, stale_lock_id, dead_attempts } =
                jobs::runnable(&*state.store, job, lease).await?;
            state.jobs_moved.notify_waiters();
            tracing::info!(job = %job.id, agent = %agent.name, attempt = job.attempts, "job claimed");
            let claimed =
                ClaimedJob { job, lease, lease_expires_at, stale_lock_id, dead_attempts, credentials };
            return Ok(Json(claimed).into_response());
        }
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        if remaining.is_zero() {
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        tokio::select! {
            () = &mut notified => {}
            // Woken by this process, or by another replica through
            // PostgreSQL (`db::listen_for_jobs`); the re-check is the fallback.
            () = tokio::time::sleep(remaining.min(state.claim_recheck)) => {}
        }
    }
}

/// Tells whoever waits that a job moved (and, queued again, that there is
/// work), and counts how it ended.
fn moved(state: &AppState, job: &heimdall_core::infra::Job) {
    if let Some(metrics) = &state.metrics {
        metrics.finished(job.operation, job.status);
    }
    if job.status == heimdall_core::infra::JobStatus::Queued {
        state.jobs_queued.notify_waiters();
    }
    state.jobs_moved.notify_waiters();
}

#[utoipa::path(
    post,
    path = "/v1/agent/jobs/{id}/heartbeat",
    tag = "agent-channel",
    operation_id = "heartbeat_job",
    summary = "Extend a job's lease (Agent)",
    description = "Keeps the lease on a claimed job alive while it runs, and records the Terraform state \
        lock the attempt holds, if any, so that a later attempt can tell it apart. `409 CONFLICT` means the \
        lease is gone (the job was reaped or claimed by another Agent): stop working on it.",
    params(("id" = String, Path, description = "An id")),
    request_body = Heartbeat,
    security(()),
    responses((status = 200, description = "The lease, extended", body = LeaseExtended), JobErrors),
)]
async fn heartbeat(
    State(state): State<AppState>,
    Extension(peer): Extension<PeerAgent>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Heartbeat>,
) -> HttpResult<Json<LeaseExtended>> {
    let (job, lock) = ((id.as_str(), body.lease), body.state_lock_id.as_deref());
    let until = jobs::heartbeat(&*state.store, &peer, job, lock, state.clock.now()).await?;
    Ok(Json(LeaseExtended { lease_expires_at: until }))
}

#[utoipa::path(
    post,
    path = "/v1/agent/jobs/{id}/log",
    tag = "agent-channel",
    operation_id = "append_job_log",
    summary = "Append to a job's log (Agent)",
    description = "Adds a chunk of output to the log of a job whose lease the Agent holds. `409 CONFLICT` \
        means the lease is gone (the job was reaped or claimed by another Agent).",
    params(("id" = String, Path, description = "An id")),
    request_body = LogChunk,
    security(()),
    responses((status = 204, description = "Appended"), JobErrors),
)]
async fn log(
    State(state): State<AppState>,
    Extension(peer): Extension<PeerAgent>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<LogChunk>,
) -> HttpResult<StatusCode> {
    jobs::append_log(&*state.store, &peer, (&id, body.lease), &body.chunk).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post,
    path = "/v1/agent/jobs/{id}/finish",
    tag = "agent-channel",
    operation_id = "finish_job",
    summary = "Report how a job attempt ended (Agent)",
    description = "Ends the leased attempt: `completed` with the Terraform outputs, or `failed` with a \
        reason, whether a retry may help and, for a refusal the Agent made itself, its error code; \
        `log_tail` is appended first. A failure with `STALE_PLAN` (the state moved under an approved plan) \
        sends the revision back for a new plan and approval. `409 CONFLICT` means the lease is gone.",
    params(("id" = String, Path, description = "An id")),
    request_body = FinishJob,
    security(()),
    responses((status = 200, description = "The job as it ended", body = heimdall_wire::schemas::Job), FinishErrors),
)]
async fn finish(
    State(state): State<AppState>,
    Extension(peer): Extension<PeerAgent>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<FinishJob>,
) -> HttpResult<Json<heimdall_core::infra::Job>> {
    let reported = match body.outcome {
        FinishOutcome::Completed { outputs } => jobs::Reported::Completed { outputs },
        FinishOutcome::Failed { reason, code, retryable } => {
            jobs::Reported::Failed { reason, code, retryable }
        }
    };
    let ended = (body.log_tail.as_str(), reported);
    let (agent, job) =
        jobs::finish(&*state.store, &peer, (&id, body.lease), ended, state.clock.now()).await?;
    moved(&state, &job);
    tracing::info!(job = %job.id, agent = %agent.name, status = %job.status, "job attempt finished");
    Ok(Json(job))
}

/// Signs the certificate the Agent's local API presents to people. Only
/// the CSR's public key and the names asked for are used; the Agent's id
/// goes in a URI SAN.
#[utoipa::path(
    post,
    path = "/v1/agent/server-certificate",
    tag = "agent-channel",
    operation_id = "issue_agent_server_certificate",
    summary = "Get a certificate for the Agent's local API (Agent)",
    description = "Signs, with the installation CA, the server certificate the Agent's local API presents to \
        people and programs, for the DNS names or IP addresses it answers on; only the CSR's public key is \
        used. Loopback names and names an owner approved for this Agent are signed, never the API's own: \
        anything else is refused `FORBIDDEN` and the refusal is recorded in the audit feed.",
    request_body = ServerCertificateRequest,
    security(()),
    responses((status = 200, description = "A server certificate for the Agent's local API", body = IssuedCertificate), CertificateErrors),
)]
async fn server_certificate(
    State(state): State<AppState>,
    Extension(peer): Extension<PeerAgent>,
    JsonBody(body): JsonBody<ServerCertificateRequest>,
) -> HttpResult<Json<IssuedCertificate>> {
    let agent = agent(&state, &peer).await?;
    let Some(ca) = state.ca.clone() else {
        return Err(ApiError::new(ErrorCode::Unavailable, "this API has no certificate authority").into());
    };
    let asked = (body.names.as_slice(), state.api_names.as_slice());
    let names = match local_names::signable(&*state.store, &state, &agent, asked).await {
        Ok(names) => names,
        Err(refused) => {
            tracing::warn!(agent = %agent.name, reason = %refused.message, "refused an Agent certificate");
            return Err(refused.into());
        }
    };
    let issued = ca
        .issue_agent_server_cert(&body.csr, agent.id, &names, state.clock.now())
        .map_err(|e| ApiError::invalid_input(e.to_string()))?;
    let signed = (issued.sha256.clone(), issued.not_after);
    let record = local_names::record_issued(&*state.store, &state, &agent, names, signed).await?;
    let names = &record.names;
    tracing::info!(agent = %agent.name, ?names, "issued the Agent's local API certificate");
    Ok(Json(IssuedCertificate {
        certificate: issued.pem,
        ca: ca.cert_pem().to_owned(),
        sha256: issued.sha256,
        not_after: issued.not_after,
    }))
}
