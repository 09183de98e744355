//! The Agent channel's side of service users as use cases run once for
//! every adapter: an Agent holding a database's environment claims the
//! first task due (create, rotate, retire, drop) under a lease, and
//! reports how it ended. No password ever reaches the API.

use super::{claimable, due, report as plan_report, task_version, Database, ReportPlan, ServiceUser};
use super::{TaskKind, TaskOutcome, TaskVersion, TASK_LEASE};
use crate::error::{ApiError, ErrorCode};
use crate::ids::{LeaseId, ServiceUserId};
use crate::infra::Agent;
use crate::ports::{
    AssignmentStore, DatabaseRecordStore, DatabaseStore, HoldingStore, Recorder, SecretRecordStore,
    StoreError, VersionStore, FENCED,
};
use crate::secrets::VersionAsked;

/// Every port the Agents' database tasks read or write.
pub trait TaskStores:
    AssignmentStore + HoldingStore + DatabaseRecordStore + DatabaseStore + VersionStore + SecretRecordStore
{
}
impl<T> TaskStores for T where
    T: AssignmentStore
        + HoldingStore
        + DatabaseRecordStore
        + DatabaseStore
        + VersionStore
        + SecretRecordStore
        + ?Sized
{
}

/// Who the Agent's work on database users is attributed to.
fn rotator(agent: &Agent) -> String {
    format!("database-rotation@{}", agent.id)
}

/// A task leased to an Agent: the user, its database, the lease and the
/// version it writes (numbered once, kept across retries).
#[derive(Clone, Debug)]
pub struct Leased {
    pub user: ServiceUser,
    pub database: Database,
    pub lease: LeaseId,
    pub kind: TaskKind,
    pub version: Option<i64>,
}

/// The first task due among the users of databases in environments
/// `agent` holds, leased to it under `lease` (none when nothing is due).
/// A rotation goes only to a holder of the user's current credential
/// (`claimable`); a creation or rotation numbers its version here, once.
pub async fn claim<S: TaskStores + ?Sized>(
    store: &S,
    recorder: &dyn Recorder,
    agent: &Agent,
    lease: LeaseId,
) -> Result<Option<Leased>, ApiError> {
    let (org, now) = (agent.org_id, recorder.now());
    let held = crate::secrets::service::environments_held(store, org, agent.id).await?;
    let holdings = store.holdings_of_agent(org, agent.id).await?;
    for user in store.service_users_in(&held).await? {
        if due(&user, now).is_none() {
            continue; // told before its database is loaded
        }
        let database = store.get_database(org, user.database_id).await?;
        let Some(kind) = claimable(&user, &database.environment, &holdings, now) else { continue };
        if !store.lease_service_user(&user, agent.id, lease, kind, now, now + TASK_LEASE).await? {
            continue; // another Agent works on it, or it changed since it was read
        }
        let version = match task_version(&user, kind) {
            TaskVersion::None => None,
            TaskVersion::Kept(version) => Some(version),
            TaskVersion::ToNumber => Some(number(store, recorder, agent, (&database, &user), lease).await?),
        };
        return Ok(Some(Leased { user, database, lease, kind, version }));
    }
    Ok(None)
}

/// Numbers the version a creation or rotation writes; the previous
/// password stays readable while its login works (the grace).
async fn number<S: TaskStores + ?Sized>(
    store: &S,
    recorder: &dyn Recorder,
    agent: &Agent,
    (database, user): (&Database, &ServiceUser),
    lease: LeaseId,
) -> Result<i64, ApiError> {
    let by = rotator(agent);
    let event = recorder.event(&by, super::version_numbered(database, user, agent.id));
    let asked = VersionAsked {
        created_by: &by,
        bind: None,
        keep_previous: time::Duration::seconds(user.grace_seconds),
    };
    let numbered =
        store.create_version(agent.org_id, user.secret_id, database.environment_id, asked, event).await?;
    Ok(store.set_pending_version(user.id, lease, numbered.version).await?)
}

/// A lease that is gone is `CONFLICT`: the Agent stops.
fn fenced(e: StoreError) -> ApiError {
    match e {
        StoreError::Fenced => ApiError::new(ErrorCode::Conflict, FENCED),
        other => other.into(),
    }
}

/// What a report did: the user after it, and why its task failed if it did.
#[derive(Clone, Debug)]
pub struct Reported {
    pub database: Database,
    pub user: ServiceUser,
    pub failed: Option<String>,
}

/// How the task `agent` holds on `user` under `lease` ended; the user
/// after it. A done retirement deactivates the old version first (so a
/// crash before the finish retires again, never leaves it readable); a
/// done drop starts deleting the user's secret.
pub async fn report<S: TaskStores + ?Sized>(
    store: &S,
    recorder: &dyn Recorder,
    agent: &Agent,
    (user, lease): (ServiceUserId, LeaseId),
    outcome: TaskOutcome<'_>,
) -> Result<Reported, ApiError> {
    let (org, now, by) = (agent.org_id, recorder.now(), rotator(agent));
    let user = store.get_service_user(org, user).await?;
    let database = store.get_database(org, user.database_id).await?;
    let (result, event) = match plan_report(&database, &user, (agent.id, lease), outcome, now)? {
        ReportPlan::Dropped { event, secret_event } => {
            let (event, secret_event) = (recorder.event(&by, event), recorder.event(&by, secret_event));
            store.finish_user_drop(user.id, lease, event, secret_event).await.map_err(fenced)?;
            return Ok(Reported { database, user, failed: None });
        }
        ReportPlan::Finished { result, event, deactivate } => {
            if let Some((retiring, deactivated)) = deactivate {
                let deactivated = recorder.event(&by, deactivated);
                let (secret, environment) = (user.secret_id, database.environment_id);
                store.deactivate_version(org, secret, environment, retiring, deactivated).await?;
            }
            (result, recorder.event(&by, event))
        }
    };
    let failed = match &result {
        crate::ports::ServiceUserTaskResult::Failed { reason, .. } => Some(reason.clone()),
        _ => None,
    };
    let user = store.finish_service_user_task(user.id, lease, &result, event).await.map_err(fenced)?;
    Ok(Reported { database, user, failed })
}
