//! The Agent channel, served only on the mTLS listener. The Agent is who
//! its verified client certificate says it is (never a header), and only
//! while that exact certificate is the one issued to it and it is not
//! revoked.

mod database_tasks;
pub(crate) mod program_writes;

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, Router};
use heimdall_core::access::{Report, LEGACY_EPOCH};
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{AgentId, CatalogId, LeaseId, OrgId};
use heimdall_core::infra::Agent;
use heimdall_core::names::validate_text;
use heimdall_core::queue::service as jobs;
use heimdall_core::queue::MAX_LOG_BYTES;
use heimdall_core::server_names::service as local_names;
use heimdall_core::{ApiError, ErrorCode};
use heimdall_wire::{
    AgentLocation, Claim, ClaimedJob, DeactivatedVersion, FinishJob, FinishOutcome, Heartbeat,
    IssuedCertificate, LeaseExtended, LogChunk, ServerCertificateRequest, SyncCatalogEntry, SyncEnvironment,
    SyncMember, SyncRequest, SyncResponse, SyncSecret,
};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::http::error::{ErrorAnswer, HttpResult};
use crate::http::extract::JsonBody;
use crate::http::openapi::errors;
use crate::http::AppState;
use heimdall_core::standing::Standing;

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
                .routes(routes!(sync))
                .layer(axum::extract::DefaultBodyLimit::max(MAX_SYNC_BODY_BYTES)),
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
errors!(public body SyncErrors: Unauthenticated, AgentRevoked);
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
            let credentials = match crate::federation::credentials(
                state.federation.as_ref(),
                state.store.as_ref(),
                &job,
                now,
            )
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

/// Most records one sync may carry; an Agent with more sends them over
/// several syncs.
pub const MAX_SYNC_RECORDS: usize = 10_000;

/// Most versions (values and tombstones) one Agent's inventory may report:
/// an Agent holding more is refused every sync. Versions erased by
/// retention are not reported.
pub const MAX_INVENTORY_ITEMS: usize = 200_000;

/// The largest sync request: a full inventory (about 100 bytes an item)
/// and a batch of records.
pub const MAX_SYNC_BODY_BYTES: usize = 32 * 1024 * 1024;

/// The Agent reports the reads it served and what its store holds, and
/// receives who may read what. No value travels here: [`SyncRequest`]
/// has no field for one and refuses unknown fields.
#[utoipa::path(
    post,
    path = "/v1/agent/sync",
    tag = "agent-channel",
    operation_id = "sync_agent",
    summary = "Sync reads and inventory, get metadata (Agent)",
    description = "The Agent reports the reads it served, the versions its store holds, its alerts and the \
        program tokens it revoked; it gets back what it decides reads with: members and their certificates, \
        policies, secrets, the catalog, assignments, and the current, deactivated and deleted versions. No \
        secret value travels either way (unknown fields are refused). A revoked Agent's reads are still \
        recorded, then it is refused `AGENT_REVOKED`.",
    request_body = SyncRequest,
    security(()),
    responses((status = 200, description = "The metadata the Agent's environments need (never a value)", body = SyncResponse), SyncErrors),
)]
async fn sync(
    State(state): State<AppState>,
    Extension(peer): Extension<PeerAgent>,
    JsonBody(body): JsonBody<SyncRequest>,
) -> HttpResult<Json<SyncResponse>> {
    // A revoked Agent still reports the reads it served until now (they
    // are stored like any others); then it is told it was revoked, and
    // gets nothing to decide with.
    let agent = jobs::enrolled(&*state.store, &peer).await?;
    if body.records.len() > MAX_SYNC_RECORDS {
        return Err(ApiError::invalid_input(format!("at most {MAX_SYNC_RECORDS} records per sync")).into());
    }
    if let Some(epoch) = &body.epoch {
        validate_text("epoch", epoch, 64)?;
    }
    for record in &body.records {
        if record.seq < 1 {
            return Err(ApiError::invalid_input("records[].seq starts at 1").into());
        }
        if record.version < 1 {
            return Err(ApiError::invalid_input("records[].version starts at 1").into());
        }
        validate_text("records[].accessor", &record.accessor, 320)?;
        validate_text("records[].secret", &record.secret, 200)?;
        validate_text("records[].environment", &record.environment, 200)?;
        validate_text("records[].from", &record.from, 100)?;
    }
    if body.inventory.len() > MAX_INVENTORY_ITEMS {
        return Err(ApiError::invalid_input(format!(
            "at most {MAX_INVENTORY_ITEMS} inventory items per sync"
        ))
        .into());
    }
    for item in &body.inventory {
        validate_text("inventory[].secret", &item.secret, 200)?;
        validate_text("inventory[].environment", &item.environment, 200)?;
    }
    if let Some(url) = &body.local_url {
        validate_text("local_url", url, 300)?;
        if !url.starts_with("https://") {
            return Err(ApiError::invalid_input("local_url must be an https:// URL").into());
        }
    }
    let org = agent.org_id;
    let now = state.clock.now();
    state.store.touch_agent(agent.id, now).await?;
    let environments = state.store.list_catalog(org, CatalogKind::Environment, None).await?;
    let names: Vec<(String, String)> =
        environments.iter().map(|e| (e.id.to_string(), e.name.clone())).collect();
    let epoch = body.epoch.as_deref().unwrap_or(LEGACY_EPOCH);
    let report = Report { epoch, after: body.records_after, records: &body.records };
    let outcome = state.store.record_access(org, &agent, report, &names, now).await?;
    for event in &outcome.events {
        tracing::warn!(agent = %agent.name, action = %event.action(), detail = %event.detail(&agent.name), "access records");
    }
    // What it holds now, revoked or not: a delete waits on what it still holds.
    let reported: Vec<heimdall_core::ports::Reported> = body
        .inventory
        .iter()
        .map(|i| heimdall_core::ports::Reported {
            secret: i.secret.clone(),
            environment: i.environment.clone(),
            version: i.version,
            deactivated: i.deactivated,
        })
        .collect();
    let at = heimdall_core::ports::ReportedAt { now, applied_through: body.applied_through };
    state.store.store_inventory(org, &agent, &reported, at).await?;
    if body.alerts.len() > 100 {
        return Err(ApiError::invalid_input("at most 100 alerts per sync").into());
    }
    for alert in &body.alerts {
        alert.check()?;
        tracing::error!(agent = %agent.name, ?alert, "an Agent raised an alert");
        let event = state.planned_event(&format!("agent:{}", agent.name), alert.event(&agent));
        state.store.record_event(org, event).await?;
    }
    if !body.revoked_program_tokens.is_empty() {
        if body.revoked_program_tokens.len() > MAX_SYNC_RECORDS {
            return Err(ApiError::invalid_input("too many revoked_program_tokens").into());
        }
        let actor = format!("agent:{}", agent.name);
        state.store.revoke_program_tokens(org, agent.id, &body.revoked_program_tokens, now, &actor).await?;
    }
    if agent.revoked_at.is_some() {
        tracing::warn!(agent = %agent.name, stored = outcome.stored, "a revoked Agent reported its reads");
        return Err(jobs::revoked(&agent).into());
    }

    if let Some(url) = &body.local_url {
        if url != agent.local_url.as_deref().unwrap_or_default() {
            state.store.set_agent_local_url(agent.id, Some(url)).await?;
        }
    }

    let certificates = state.store.active_member_certificates(org, now).await?;
    let local_api: Vec<heimdall_core::Sha256Hex> = state
        .store
        .active_agent_certificates(org, now)
        .await?
        .into_iter()
        .filter(|c| c.agent_id == agent.id)
        .map(|c| c.sha256)
        .collect();
    let members = state
        .store
        .list_members(org)
        .await?
        .into_iter()
        .map(|m| SyncMember {
            certificates: certificates
                .iter()
                .filter(|c| c.member_id == m.id)
                .map(|c| c.sha256.clone())
                .collect(),
            id: m.id,
            email: m.email,
            role: m.role,
        })
        .collect();
    let policies = state.store.list_policies(org).await?;
    // Only what changed since the list the Agent holds (`heimdall_core::sync_delta`).
    let changes = state.store.secret_changes(org, body.secrets_known).await?;
    if let Some(metrics) = &state.metrics {
        metrics.sync_answer(changes.since.is_some());
    }
    let secrets: Vec<SyncSecret> = changes
        .changed
        .into_iter()
        .map(|s| SyncSecret {
            id: s.id,
            name: s.name,
            // Never an email (see `SyncSecret::personal_owner`).
            personal_owner: s.owner_id.map(|id| format!("member:{id}")),
            owner_id: s.owner_id,
            owner_keys: s.owner_keys,
            components: s.components,
        })
        .collect();
    let mut catalog = Vec::new();
    for kind in [CatalogKind::Domain, CatalogKind::System, CatalogKind::Component] {
        catalog.extend(
            state.store.list_catalog(org, kind, None).await?.into_iter().map(|e| SyncCatalogEntry {
                id: e.id,
                kind: e.kind,
                parent_id: e.parent_id,
            }),
        );
    }
    let standing = Standing::load(&*state.store, org, environments).await?;
    let (current, planned, superseded) = {
        let (held, assigned) = (standing.held(), standing.assigned());
        let current = standing.current(&held, &assigned);
        let behind = heimdall_core::lagging::behind(&current, &held, &assigned);
        let planned = heimdall_core::transfer::plan(agent.id, &behind, &held, &assigned);
        note_lag(&state, org, &standing, &behind, planned.len(), now).await?;
        let superseded = superseded(&state, org, agent.id, &current, &held, now).await?;
        let mine: Vec<CatalogId> =
            assigned.iter().filter(|a| a.agent == agent.id).map(|a| a.environment).collect();
        let current: Vec<_> = current.into_iter().filter(|c| mine.contains(&c.environment)).collect();
        // An Agent that asks is told only what its own report does not
        // already say (`heimdall_core::current_delta`).
        let current = if body.current_omits_held {
            let reported: Vec<heimdall_core::current_delta::Reported<'_>> =
                body.inventory.iter().filter_map(heimdall_wire::InventoryItem::reported).collect();
            heimdall_core::current_delta::answered(&current, &reported, &mine)
        } else {
            heimdall_core::current_delta::Answered { listed: current, none: Vec::new() }
        };
        (current, planned, superseded)
    };
    let Standing {
        environments,
        assignments,
        deactivated: deactivated_versions,
        deleted_secrets,
        environment_deletions,
        ..
    } = standing;
    let transfers = transfers(&state, &agent, planned, now).await?;
    let deactivated = deactivated_versions
        .into_iter()
        .filter_map(|(secret, env_id, version)| {
            let env = environments.iter().find(|e| e.id == env_id)?;
            Some(DeactivatedVersion { secret, environment: env.name.clone(), version })
        })
        .collect();
    tracing::info!(
        agent = %agent.name,
        stored = outcome.stored,
        duplicates = outcome.duplicates,
        secrets = secrets.len(),
        delta = changes.since.is_some(),
        "Agent synced"
    );
    Ok(Json(SyncResponse {
        org_id: org,
        at: now,
        members,
        secrets,
        secrets_generation: Some(changes.through),
        secrets_since: changes.since,
        removed_secrets: changes.removed,
        environments: environments
            .iter()
            .map(|e| SyncEnvironment { id: e.id, name: e.name.clone() })
            .collect(),
        catalog,
        policies,
        assignments,
        deactivated,
        current_versions: current.listed,
        current_omits_held: body.current_omits_held,
        no_current: current.none,
        transfers,
        superseded,
        deleted_secrets,
        deleted_in_environments: environment_deletions
            .into_iter()
            // Still sent a while after it is done, for a late write made
            // with a grant from before it (`deletion::KEEP_SENDING_DONE`).
            .filter(|d| heimdall_core::deletion::still_sent(d.status, d.deleted_at, now))
            .map(|d| heimdall_wire::DeletedInEnvironment {
                secret: d.secret,
                environment: d.environment_id,
                through_version: d.through_version,
            })
            .collect(),
        released_environments: state.store.released_environments(org, agent.id).await?,
        received_through: outcome.received_through,
        local_api_status: match &state.ca {
            Some(ca) => {
                let status =
                    heimdall_core::local_api_status::CertificateStatus::new(agent.id, local_api.clone(), now);
                let signed = heimdall_core::local_api_status::encode(&status, |m| ca.sign_statement(m))
                    .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
                Some(signed)
            }
            None => None,
        },
        local_api_certificates: Some(local_api),
        live_program_tokens: Some(
            state
                .store
                .program_tokens(org, agent.id)
                .await?
                .into_iter()
                .filter(|t| t.is_live(now))
                .map(|t| t.id)
                .collect(),
        ),
    }))
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

/// Counts who is behind, and raises `secret.holder_lagging` for an Agent
/// behind too long in an environment (`heimdall_core::lagging::alerts`:
/// once a day per Agent and environment at most).
async fn note_lag(
    state: &AppState,
    org: OrgId,
    standing: &Standing,
    behind: &[heimdall_core::lagging::Behind],
    planned: usize,
    now: time::OffsetDateTime,
) -> Result<(), ApiError> {
    if let Some(metrics) = &state.metrics {
        metrics.convergence(org, behind, planned, now);
    }
    if !behind.iter().any(|b| heimdall_core::lagging::is_lagging(b.since, now)) {
        return Ok(());
    }
    let query = heimdall_core::ports::EventQuery {
        limit: 500,
        before: None,
        action_prefix: Some(heimdall_core::lagging::ALERT_EVENT.as_str().to_owned()),
    };
    let recent: Vec<(AgentId, CatalogId, time::OffsetDateTime)> = state
        .store
        .list_events(org, &query)
        .await?
        .into_iter()
        .filter_map(|e| {
            let agent = e.detail["agent_id"].as_str()?.parse().ok()?;
            let environment = e.detail["environment_id"].as_str()?.parse().ok()?;
            Some((agent, environment, e.at))
        })
        .collect();
    let alerts = heimdall_core::lagging::alerts(behind, &recent, now);
    if alerts.is_empty() {
        return Ok(());
    }
    for alert in alerts {
        let agent = standing.agents.iter().find(|a| a.id == alert.agent).map_or("", |a| a.name.as_str());
        let environment =
            standing.environments.iter().find(|e| e.id == alert.environment).map_or("", |e| e.name.as_str());
        let since = alert.since;
        tracing::warn!(agent, environment, secrets = alert.secrets, %since, "an Agent lags behind the current versions");
        let event = state.planned_event("system", alert.event(agent, environment));
        state.store.record_event(org, event).await?;
    }
    Ok(())
}

/// What `agent` erases now (`heimdall_core::retention`): the versions are
/// loaded only for the secrets where it holds a value below the current
/// one, which is usually none.
async fn superseded(
    state: &AppState,
    org: OrgId,
    agent: AgentId,
    current: &[heimdall_core::current::CurrentVersion],
    held: &[heimdall_core::current::Held<'_>],
    now: time::OffsetDateTime,
) -> Result<Vec<heimdall_core::retention::Superseded>, ApiError> {
    let wanted = heimdall_core::retention::candidates(agent, current, held);
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let mut overlaps = std::collections::BTreeMap::<_, Vec<_>>::new();
    for (secret, environment, overlap) in state.store.version_overlaps(org, &wanted).await? {
        overlaps.entry((secret, environment)).or_default().push(overlap);
    }
    Ok(heimdall_core::retention::to_erase(agent, current, held, &overlaps, now))
}

/// The planned transfers as the Agent gets them: each source's local API
/// and certificates, and a grant the CA signs naming `agent`. Without a CA
/// (an API started without `--ca-dir`) there is nothing to sign with, and
/// no transfer.
async fn transfers(
    state: &AppState,
    agent: &Agent,
    planned: Vec<heimdall_core::transfer::PlannedTransfer>,
    now: time::OffsetDateTime,
) -> Result<Vec<heimdall_wire::Transfer>, ApiError> {
    let Some(ca) = state.ca.clone() else { return Ok(Vec::new()) };
    if planned.is_empty() {
        return Ok(Vec::new());
    }
    let agents = state.store.list_agents(agent.org_id).await?;
    let certificates = state.store.active_agent_certificates(agent.org_id, now).await?;
    let location = |id: AgentId| {
        agents.iter().find(|g| g.id == id && g.revoked_at.is_none()).map(|g| AgentLocation {
            agent_id: g.id,
            agent: g.name.clone(),
            url: g.local_url.clone(),
            certificates: Some(
                certificates.iter().filter(|c| c.agent_id == g.id).map(|c| c.sha256.clone()).collect(),
            ),
        })
    };
    let mut out = Vec::with_capacity(planned.len());
    for p in planned {
        let sources: Vec<AgentLocation> = p.sources.iter().filter_map(|id| location(*id)).collect();
        if sources.is_empty() {
            continue;
        }
        let claims =
            heimdall_core::transfer::TransferClaims::new(Uuid::new_v4(), agent.org_id, &p, agent.id, now);
        let grant = heimdall_core::transfer::encode(&claims, |m| ca.sign_statement(m))
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        out.push(heimdall_wire::Transfer {
            secret: p.secret,
            environment_id: p.environment,
            version: p.version,
            sources,
            grant,
        });
    }
    Ok(out)
}
