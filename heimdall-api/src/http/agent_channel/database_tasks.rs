//! The Agent channel's side of database service users: one Agent holding
//! a database's environment claims a due task (create, rotate, retire,
//! drop) with a lease and reports how it ended. What is due is decided in
//! core (`heimdall_core::dbusers::due`); no password ever reaches the API.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use heimdall_core::dbusers::{self, agent_tasks, ServiceUser};
use heimdall_core::ids::{LeaseId, ServiceUserId};
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
    let lease = LeaseId::from_uuid(Uuid::new_v4());
    let Some(leased) = agent_tasks::claim(&*state.store, &state, &agent, lease).await? else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let agent_tasks::Leased { user, database, lease, kind, version } = leased;
    tracing::info!(database = %database.name, user = %user.name, ?kind, agent = %agent.name, "database task claimed");
    Ok(Json(DatabaseTask::leased(user, database, (lease, kind), version)).into_response())
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
    let outcome = match &body.outcome {
        DatabaseTaskOutcome::Done { login } => dbusers::TaskOutcome::Done { login },
        DatabaseTaskOutcome::Failed { reason } => dbusers::TaskOutcome::Failed { reason },
    };
    let task = (user, body.lease_id);
    let reported = agent_tasks::report(&*state.store, &state, &agent, task, outcome).await?;
    if let Some(reason) = &reported.failed {
        let (database, user) = (&reported.database.name, &reported.user.name);
        tracing::warn!(%database, %user, %reason, "database task failed");
    }
    Ok(Json(reported.user))
}
