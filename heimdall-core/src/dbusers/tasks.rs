//! What an Agent's work on a service user records, as planners: the
//! version a claimed task numbers, and what its report does (the user's
//! new state, the version a retirement deactivates, the drop that ends the
//! user). The adapter applies each with its store calls, fenced by the
//! task's lease.

use serde_json::json;
use time::OffsetDateTime;

use super::{Database, ServiceUser, RETRY_AFTER};
use crate::audit::{AuditAction, EventPlan};
use crate::error::{ApiError, ErrorCode};
use crate::ids::{AgentId, LeaseId};
use crate::ports::{ServiceUserTaskResult, FENCED};

/// The task Agent may claim on `user` at `now`, its database in
/// `environment`: what is due ([`super::due`]), if the Agent already
/// reported holding the user's current credential there (`holdings`: what
/// it reported; [`super::may_claim`]), so that a rotation goes only to an
/// Agent that can serve what it replaces.
pub fn claimable(
    user: &ServiceUser,
    environment: &str,
    holdings: &[crate::ports::Holding],
    now: OffsetDateTime,
) -> Option<super::TaskKind> {
    let kind = super::due(user, now)?;
    let newest_held = holdings
        .iter()
        .filter(|h| !h.deactivated && h.secret == user.secret && h.environment == environment)
        .map(|h| h.version)
        .max();
    super::may_claim(user, kind, newest_held).then_some(kind)
}

/// The version a claimed task stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskVersion {
    /// A retirement or a drop stores none.
    None,
    /// Numbered by an earlier claim: a crashed rotation resumes with it.
    Kept(i64),
    /// To number now, once ([`version_numbered`]), and keep on the user.
    ToNumber,
}

/// Which version a claimed `kind` of task on `user` stores.
pub fn task_version(user: &ServiceUser, kind: super::TaskKind) -> TaskVersion {
    use super::TaskKind::{Create, Drop, Retire, Rotate};
    match (kind, user.pending_version) {
        (Retire | Drop, _) => TaskVersion::None,
        (Create | Rotate, Some(version)) => TaskVersion::Kept(version),
        (Create | Rotate, None) => TaskVersion::ToNumber,
    }
}

/// What numbering the version a create or rotation will store records.
pub fn version_numbered(database: &Database, user: &ServiceUser, agent: AgentId) -> EventPlan {
    crate::secrets::version_event((user.secret_id, &user.secret), &database.environment, Some(agent))
}

/// How a task ended, as the Agent reports it.
#[derive(Clone, Copy, Debug)]
pub enum TaskOutcome<'a> {
    Done { login: &'a str },
    Failed { reason: &'a str },
}

/// What a report does.
#[derive(Clone, Debug, PartialEq)]
pub enum ReportPlan {
    /// The drop's claim is done: the user is gone, and its secret starts deleting.
    Dropped { event: EventPlan, secret_event: EventPlan },
    /// The task's result; a retirement first deactivates `(version, event)`.
    Finished { result: ServiceUserTaskResult, event: EventPlan, deactivate: Option<(i64, EventPlan)> },
}

/// The longest failure reason kept (it is shown to every reader of the user).
const MAX_REASON_CHARS: usize = 500;

/// What `agent`'s report of the task it holds under `lease` does.
/// Refused `CONFLICT` when the lease is no longer the user's (the task was
/// handed on), or when a done task has nothing in flight.
pub fn report(
    database: &Database,
    user: &ServiceUser,
    (agent, lease): (AgentId, LeaseId),
    outcome: TaskOutcome<'_>,
    now: OffsetDateTime,
) -> Result<ReportPlan, ApiError> {
    if user.lease_id != Some(lease) {
        return Err(ApiError::new(ErrorCode::Conflict, FENCED));
    }
    let user_event =
        |action, detail| EventPlan { action, target: format!("database_user:{}", user.id), detail };
    let login_detail =
        |login: &str| json!({ "database": database.name, "user": user.name, "login": login, "agent": agent });
    let secret_target = format!("secret:{}", user.secret_id);
    match (outcome, user.drop_after, user.pending_version) {
        // Deletion ended every earlier claim: this one was the drop's.
        (TaskOutcome::Done { login }, Some(_), _) => Ok(ReportPlan::Dropped {
            event: user_event(AuditAction::DatabaseUserDeleted, login_detail(login)),
            secret_event: EventPlan {
                action: AuditAction::SecretDeletionStarted,
                target: secret_target,
                detail: json!({ "name": user.secret, "environment": null, "database_user": user.id }),
            },
        }),
        (TaskOutcome::Failed { reason }, _, _) => {
            let reason: String = reason.chars().take(MAX_REASON_CHARS).collect();
            let detail =
                json!({ "database": database.name, "user": user.name, "reason": reason, "agent": agent });
            Ok(ReportPlan::Finished {
                event: user_event(AuditAction::DatabaseRotationFailed, detail),
                result: ServiceUserTaskResult::Failed { reason, retry_at: now + RETRY_AFTER },
                deactivate: None,
            })
        }
        (TaskOutcome::Done { login }, None, Some(version)) => {
            let first = user.current_version.is_none();
            let grace_until = (!first).then(|| now + user.schedule().grace);
            let action =
                if first { AuditAction::DatabaseUserReady } else { AuditAction::DatabaseUserRotated };
            let mut detail = login_detail(login);
            detail["version"] = version.into();
            Ok(ReportPlan::Finished {
                result: ServiceUserTaskResult::Activated { version, at: now, grace_until },
                event: user_event(action, detail),
                deactivate: None,
            })
        }
        (TaskOutcome::Done { login }, None, None) => {
            let retiring = user
                .retiring_version
                .ok_or_else(|| ApiError::new(ErrorCode::Conflict, "no task of this user is in flight"))?;
            let deactivated = EventPlan {
                action: AuditAction::SecretVersionDeactivated,
                target: secret_target,
                detail: json!({ "name": user.secret, "environment": database.environment, "version": retiring }),
            };
            Ok(ReportPlan::Finished {
                result: ServiceUserTaskResult::Retired,
                event: user_event(AuditAction::DatabaseLoginRetired, login_detail(login)),
                deactivate: Some((retiring, deactivated)),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbusers::{create_user, register, Engine, NewDatabase, NewUser, Schedule, TaskKind};
    use crate::ids::{DatabaseId, MemberId, OrgId, SecretId, ServiceUserId};
    use crate::on_behalf::OnBehalfOf;
    use time::Duration;

    fn user_with_lease(lease: LeaseId) -> (Database, ServiceUser) {
        let new = NewDatabase {
            name: "orders".into(),
            engine: Engine::Postgres,
            host: "db.internal".into(),
            port: 5432,
            database: "orders".into(),
            tls: None,
            ca_pem: None,
        };
        let (id, org, now) = (
            DatabaseId::from_uuid(uuid::Uuid::nil()),
            OrgId::from_uuid(uuid::Uuid::nil()),
            OffsetDateTime::UNIX_EPOCH,
        );
        let env = crate::fixtures::environment("dev");
        let database = register(new, &env, "orders-admin".into(), id, org, "ana", now).unwrap().database;
        let user = NewUser {
            name: "app".into(),
            rotate_every: "1d".into(),
            grace: "1h".into(),
            schedule: Schedule::new(Duration::days(1), Duration::hours(1)).unwrap(),
            grants: None,
        };
        let ids = (
            ServiceUserId::from_uuid(uuid::Uuid::from_u128(1)),
            SecretId::from_uuid(uuid::Uuid::from_u128(2)),
        );
        let ana =
            OnBehalfOf { member_id: MemberId::from_uuid(uuid::Uuid::nil()), email: "ana@example.com".into() };
        let mut user = create_user(&database, user, ids, &ana, now).unwrap().user;
        user.lease_id = Some(lease);
        (database, user)
    }

    #[test]
    fn a_report_is_fenced_by_its_lease_and_says_what_the_task_did() {
        let (lease, other) =
            (LeaseId::from_uuid(uuid::Uuid::from_u128(7)), LeaseId::from_uuid(uuid::Uuid::from_u128(8)));
        let agent = AgentId::from_uuid(uuid::Uuid::from_u128(9));
        let now = OffsetDateTime::UNIX_EPOCH;
        let (database, mut user) = user_with_lease(lease);
        let done = TaskOutcome::Done { login: "app_a" };
        assert_eq!(
            report(&database, &user, (agent, other), done, now).unwrap_err().code,
            ErrorCode::Conflict
        );
        // Nothing in flight: a done report is refused.
        assert_eq!(
            report(&database, &user, (agent, lease), done, now).unwrap_err().code,
            ErrorCode::Conflict
        );
        // A failure keeps 500 characters of its reason and is retried.
        let long = "x".repeat(600);
        let ReportPlan::Finished { result, event, .. } =
            report(&database, &user, (agent, lease), TaskOutcome::Failed { reason: &long }, now).unwrap()
        else {
            panic!("a failure finishes the task")
        };
        assert_eq!(
            result,
            ServiceUserTaskResult::Failed { reason: "x".repeat(500), retry_at: now + RETRY_AFTER }
        );
        assert_eq!(event.action, AuditAction::DatabaseRotationFailed);
        // The first version: ready, no grace.
        user.pending_version = Some(1);
        let ReportPlan::Finished { result, event, deactivate } =
            report(&database, &user, (agent, lease), done, now).unwrap()
        else {
            panic!("a create finishes the task")
        };
        assert_eq!(result, ServiceUserTaskResult::Activated { version: 1, at: now, grace_until: None });
        assert_eq!((event.action, deactivate), (AuditAction::DatabaseUserReady, None));
        // A retirement deactivates the retiring version first.
        (user.pending_version, user.current_version, user.retiring_version) = (None, Some(2), Some(1));
        let ReportPlan::Finished { deactivate: Some((version, deactivated)), .. } =
            report(&database, &user, (agent, lease), done, now).unwrap()
        else {
            panic!("a retirement deactivates")
        };
        assert_eq!((version, deactivated.action), (1, AuditAction::SecretVersionDeactivated));
        // Being deleted: the done task was the drop.
        user.drop_after = Some(now);
        let plan = report(&database, &user, (agent, lease), done, now).unwrap();
        assert!(matches!(plan, ReportPlan::Dropped { .. }), "{plan:?}");
    }

    #[test]
    fn a_rotation_goes_only_to_an_agent_holding_the_current_credential_where_the_database_is() {
        let (database, mut user) = user_with_lease(LeaseId::from_uuid(uuid::Uuid::from_u128(7)));
        let (now, agent) = (OffsetDateTime::UNIX_EPOCH, crate::fixtures::agent(3, "edge-1"));
        // A creation needs nothing held, and numbers its version.
        assert_eq!(claimable(&user, &database.environment, &[], now), Some(TaskKind::Create));
        assert_eq!(task_version(&user, TaskKind::Create), TaskVersion::ToNumber);
        // A rotation under way: only an Agent holding version 1 in dev.
        (user.current_version, user.pending_version) = (Some(1), Some(2));
        let held = |environment: &str, version: i64, deactivated: bool| crate::ports::Holding {
            environment: environment.into(),
            deactivated,
            ..crate::fixtures::holding(&agent, &user.secret, version)
        };
        assert_eq!(claimable(&user, "dev", &[held("dev", 1, false)], now), Some(TaskKind::Rotate));
        for elsewhere in [held("prod", 1, false), held("dev", 1, true)] {
            assert_eq!(claimable(&user, "dev", std::slice::from_ref(&elsewhere), now), None, "{elsewhere:?}");
        }
        // Its version was numbered by the first claim: kept.
        assert_eq!(task_version(&user, TaskKind::Rotate), TaskVersion::Kept(2));
        assert_eq!(task_version(&user, TaskKind::Retire), TaskVersion::None);
    }
}
