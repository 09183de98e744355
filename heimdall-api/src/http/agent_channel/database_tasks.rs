//! The Agent channel's side of database service users: one Agent holding
//! a database's environment claims a due task (create, rotate, retire,
//! drop) with a lease and reports how it ended. What is due is decided in
//! core (`heimdall_core::dbusers::due`); no password ever reaches the API.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use heimdall_core::dbusers::{self, ServiceUser, TaskVersion};
use heimdall_core::ids::{CatalogId, LeaseId, ServiceUserId};
use heimdall_core::ports::{ServiceUserTaskResult, StoreError};
use heimdall_core::secrets::VersionAsked;
use heimdall_core::{ApiError, ErrorCode};
use heimdall_wire::{DatabaseTask, DatabaseTaskOutcome, DatabaseTaskReport};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::{agent, PeerAgent};
use crate::http::error::HttpResult;
use crate::http::extract::JsonBody;
use crate::http::openapi::errors;
use crate::http::AppState;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(claim)).routes(routes!(report))
}

errors!(public ChannelErrors: Unauthenticated, Forbidden, AgentRevoked);
errors!(public body ReportErrors: Unauthenticated, Forbidden, AgentRevoked, NotFound, Conflict);

/// Who the Agent's work on database users is attributed to.
fn rotator(agent: &heimdall_core::infra::Agent) -> String {
    format!("database-rotation@{}", agent.id)
}

/// `POST /v1/agent/database-tasks/claim`: the first task due among the
/// users of databases in environments this Agent holds, leased to it
/// (`204` when none is). A creation or rotation carries its version,
/// numbered once and kept across retries, so a crashed rotation resumes
/// with the version it recorded.
#[utoipa::path(
    post,
    path = "/v1/agent/database-tasks/claim",
    tag = "agent-channel",
    operation_id = "claim_database_task",
    summary = "Claim a database task (Agent)",
    description = "Leases to the calling Agent the first task due (create, rotate or retire a login) among \
        the service users of databases in environments it holds, or answers `204` when none is due. A \
        creation or rotation carries the version to store, kept across retries, so a crashed rotation \
        resumes with the same version.",
    security(()),
    responses((status = 200, description = "A rotation to run", body = DatabaseTask), (status = 204, description = "Nothing due"), ChannelErrors),
)]
async fn claim(State(state): State<AppState>, Extension(peer): Extension<PeerAgent>) -> HttpResult<Response> {
    let agent = agent(&state, &peer).await?;
    let org = agent.org_id;
    let now = state.clock.now();
    let held: Vec<CatalogId> = state
        .store
        .list_all_assignments(org)
        .await?
        .into_iter()
        .filter(|a| a.agent_id == agent.id)
        .map(|a| a.environment_id)
        .collect();
    // What this Agent reported holding: a rotation goes only to a holder
    // of the user's current credential (`dbusers::claimable`).
    let holdings = state.store.holdings_of_agent(org, agent.id).await?;
    for user in state.store.service_users_in(&held).await? {
        if dbusers::due(&user, now).is_none() {
            continue; // told before its database is loaded
        }
        let database = state.store.get_database(org, user.database_id).await?;
        let Some(kind) = dbusers::claimable(&user, &database.environment, &holdings, now) else { continue };
        let lease = LeaseId::from_uuid(Uuid::new_v4());
        let until = now + dbusers::TASK_LEASE;
        if !state.store.lease_service_user(&user, agent.id, lease, kind, now, until).await? {
            continue; // another Agent works on it, or it changed since it was read
        }
        let version = match dbusers::task_version(&user, kind) {
            TaskVersion::None => None,
            TaskVersion::Kept(version) => Some(version),
            TaskVersion::ToNumber => {
                let numbered = dbusers::version_numbered(&database, &user, agent.id);
                let event = state.planned_event(&rotator(&agent), numbered);
                // The previous password stays readable while its login
                // works: the grace.
                let asked = VersionAsked {
                    created_by: &rotator(&agent),
                    bind: None,
                    keep_previous: time::Duration::seconds(user.grace_seconds),
                };
                let numbered = state
                    .store
                    .create_version(org, user.secret_id, database.environment_id, asked, event)
                    .await?;
                Some(state.store.set_pending_version(user.id, lease, numbered.version).await?)
            }
        };
        tracing::info!(database = %database.name, user = %user.name, ?kind, agent = %agent.name, "database task claimed");
        let task = DatabaseTask::leased(user, database, (lease, kind), version);
        return Ok(Json(task).into_response());
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /v1/agent/database-tasks/{user}/report`: how the leased task ended.
#[utoipa::path(
    post,
    path = "/v1/agent/database-tasks/{user}/report",
    tag = "agent-channel",
    operation_id = "report_database_task",
    summary = "Report how a database task ended (Agent)",
    description = "Reports the outcome of the leased task of a service user: done (with the login) or failed \
        (retried later). A done rotation makes its version current, and a done retirement deactivates the \
        old version. `409 CONFLICT` means the lease is no longer the Agent's.",
    params(("user" = String, Path, description = "A service user id")),
    request_body = DatabaseTaskReport,
    security(()),
    responses((status = 200, description = "The service user after the report", body = heimdall_wire::schemas::ServiceUser), ReportErrors),
)]
async fn report(
    State(state): State<AppState>,
    Extension(peer): Extension<PeerAgent>,
    Path(user): Path<ServiceUserId>,
    JsonBody(body): JsonBody<DatabaseTaskReport>,
) -> HttpResult<Json<ServiceUser>> {
    let agent = agent(&state, &peer).await?;
    let org = agent.org_id;
    let user = state.store.get_service_user(org, user).await?;
    let database = state.store.get_database(org, user.database_id).await?;
    let fenced = |e: StoreError| match e {
        StoreError::Fenced => ApiError::new(ErrorCode::Conflict, heimdall_core::ports::FENCED),
        other => other.into(),
    };
    let outcome = match &body.outcome {
        DatabaseTaskOutcome::Done { login } => dbusers::TaskOutcome::Done { login },
        DatabaseTaskOutcome::Failed { reason } => dbusers::TaskOutcome::Failed { reason },
    };
    let (rotator, now) = (rotator(&agent), state.clock.now());
    let (result, event) = match dbusers::report(&database, &user, (agent.id, body.lease_id), outcome, now)? {
        dbusers::ReportPlan::Dropped { event, secret_event } => {
            let (event, secret_event) =
                (state.planned_event(&rotator, event), state.planned_event(&rotator, secret_event));
            state
                .store
                .finish_user_drop(user.id, body.lease_id, event, secret_event)
                .await
                .map_err(fenced)?;
            return Ok(Json(user));
        }
        dbusers::ReportPlan::Finished { result, event, deactivate } => {
            if let ServiceUserTaskResult::Failed { reason, .. } = &result {
                tracing::warn!(database = %database.name, user = %user.name, %reason, "database task failed");
            }
            // Deactivated first (idempotent): a crash before the finish
            // below retires again, never leaves the version readable.
            if let Some((retiring, deactivated)) = deactivate {
                let deactivated = state.planned_event(&rotator, deactivated);
                let (secret, environment) = (user.secret_id, database.environment_id);
                state
                    .store
                    .deactivate_version(agent.org_id, secret, environment, retiring, deactivated)
                    .await?;
            }
            (result, state.planned_event(&rotator, event))
        }
    };
    let user =
        state.store.finish_service_user_task(user.id, body.lease_id, &result, event).await.map_err(fenced)?;
    Ok(Json(user))
}
