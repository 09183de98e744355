//! `POST /v1/agent/sync`: parses the report, runs
//! `heimdall_core::agents::sync`, and answers in the wire's shape; the
//! metrics and logs are this adapter's.

use axum::extract::State;
use axum::{Extension, Json};
use heimdall_core::agents::sync::{self as use_case, Notary, RaisedAlert, Report};
use heimdall_core::audit::EventPlan;
use heimdall_core::infra::Agent;
use heimdall_core::queue::service as jobs;
use heimdall_core::ApiError;
use heimdall_wire::{
    AgentAlert, AgentLocation, DeactivatedVersion, DeletedInEnvironment, SyncCatalogEntry, SyncEnvironment,
    SyncMember, SyncRequest, SyncResponse, SyncSecret, Transfer,
};
use uuid::Uuid;

use super::PeerAgent;
use crate::http::error::HttpResult;
use crate::http::extract::JsonBody;
use crate::http::openapi::errors;
use crate::http::AppState;

/// The largest sync request: a full inventory (about 100 bytes an item)
/// and a batch of records.
pub const MAX_SYNC_BODY_BYTES: usize = 32 * 1024 * 1024;

errors!(public body SyncErrors: Unauthenticated, AgentRevoked);

/// The wire's alert, as the use case raises it.
struct Alert<'a>(&'a AgentAlert);

impl RaisedAlert for Alert<'_> {
    fn check(&self) -> Result<(), ApiError> {
        self.0.check()
    }

    fn event(&self, agent: &Agent) -> EventPlan {
        self.0.event(agent)
    }
}

/// The installation CA signs grants and certificate statuses.
struct Ca<'a>(&'a crate::pki::Ca);

impl Notary for Ca<'_> {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, ApiError> {
        self.0.sign_statement(message).map_err(use_case::unsigned)
    }

    fn grant_id(&self) -> Uuid {
        Uuid::new_v4()
    }
}

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
pub(super) async fn sync(
    State(state): State<AppState>,
    Extension(peer): Extension<PeerAgent>,
    JsonBody(body): JsonBody<SyncRequest>,
) -> HttpResult<Json<SyncResponse>> {
    let alerts: Vec<Alert<'_>> = body.alerts.iter().map(Alert).collect();
    let report = Report {
        epoch: body.epoch.as_deref(),
        records_after: body.records_after,
        records: &body.records,
        inventory: body
            .inventory
            .iter()
            .map(|i| heimdall_core::ports::Reported {
                secret: i.secret.clone(),
                environment: i.environment.clone(),
                version: i.version,
                deactivated: i.deactivated,
            })
            .collect(),
        applied_through: body.applied_through,
        local_url: body.local_url.as_deref(),
        revoked_program_tokens: &body.revoked_program_tokens,
        alerts: &alerts,
        secrets_known: body.secrets_known,
        current_omits_held: body.current_omits_held,
    };
    let ca = state.ca.as_deref().map(Ca);
    let notary = ca.as_ref().map(|ca| ca as &dyn Notary);
    let synced = use_case::sync(&*state.store, &state, notary, &peer, report).await?;
    let agent = &synced.agent;
    for event in &synced.received.events {
        tracing::warn!(agent = %agent.name, action = %event.action(), detail = %event.detail(&agent.name), "access records");
    }
    for alert in &body.alerts {
        tracing::error!(agent = %agent.name, ?alert, "an Agent raised an alert");
    }
    let Some(answer) = synced.answer else {
        tracing::warn!(agent = %agent.name, stored = synced.received.stored, "a revoked Agent reported its reads");
        return Err(jobs::revoked(agent).into());
    };
    if let Some(metrics) = &state.metrics {
        metrics.sync_answer(answer.secrets.since.is_some());
        metrics.convergence(agent.org_id, &answer.behind, answer.planned, answer.at);
    }
    for lag in &answer.lagging {
        let (agent, environment, since) = (&lag.agent, &lag.environment, lag.alert.since);
        tracing::warn!(agent, environment, secrets = lag.alert.secrets, %since, "an Agent lags behind the current versions");
    }
    tracing::info!(
        agent = %agent.name,
        stored = synced.received.stored,
        duplicates = synced.received.duplicates,
        secrets = answer.secrets.changed.len(),
        delta = answer.secrets.since.is_some(),
        "Agent synced"
    );
    let flags = (synced.received.received_through, body.current_omits_held);
    Ok(Json(wire(agent.org_id, *answer, flags)))
}

/// The answer in the wire's shape.
fn wire(
    org_id: heimdall_core::ids::OrgId,
    answer: use_case::Answer,
    (received_through, current_omits_held): (i64, bool),
) -> SyncResponse {
    SyncResponse {
        org_id,
        at: answer.at,
        members: answer
            .members
            .into_iter()
            .map(|m| SyncMember {
                id: m.member.id,
                email: m.member.email,
                role: m.member.role,
                certificates: m.certificates,
            })
            .collect(),
        secrets_generation: Some(answer.secrets.through),
        secrets_since: answer.secrets.since,
        removed_secrets: answer.secrets.removed,
        secrets: answer
            .secrets
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
            .collect(),
        environments: answer
            .environments
            .iter()
            .map(|e| SyncEnvironment { id: e.id, name: e.name.clone() })
            .collect(),
        catalog: answer
            .catalog
            .into_iter()
            .map(|e| SyncCatalogEntry { id: e.id, kind: e.kind, parent_id: e.parent_id })
            .collect(),
        policies: answer.policies,
        assignments: answer.assignments,
        deactivated: answer
            .deactivated
            .into_iter()
            .map(|d| DeactivatedVersion { secret: d.secret, environment: d.environment, version: d.version })
            .collect(),
        current_versions: answer.current.listed,
        current_omits_held,
        no_current: answer.current.none,
        transfers: answer
            .transfers
            .into_iter()
            .map(|t| Transfer {
                secret: t.secret,
                environment_id: t.environment,
                version: t.version,
                sources: t
                    .sources
                    .into_iter()
                    .map(|s| AgentLocation {
                        agent_id: s.agent_id,
                        agent: s.agent,
                        url: s.url,
                        certificates: Some(s.certificates),
                    })
                    .collect(),
                grant: t.grant,
            })
            .collect(),
        superseded: answer.superseded,
        deleted_secrets: answer.deleted_secrets,
        deleted_in_environments: answer
            .deleted_in_environments
            .into_iter()
            .map(|d| DeletedInEnvironment {
                secret: d.secret,
                environment: d.environment_id,
                through_version: d.through_version,
            })
            .collect(),
        released_environments: answer.released_environments,
        received_through,
        local_api_status: answer.local_api_status,
        local_api_certificates: Some(answer.local_api_certificates),
        live_program_tokens: Some(answer.live_program_tokens),
    }
}
