//! Deleting a service user (`database user delete`). From the request on
//! nothing rotates; applications keep the current login for a grace; then
//! one Agent holding the database's environment drops both logins and the
//! group role ([`TaskKind::Drop`](super::TaskKind::Drop)), and the API
//! forgets the user and deletes its secret. The drop uses the admin secret
//! as a read by whoever asked for the deletion
//! ([`ServiceUser::on_behalf_of`]).

use time::{Duration, OffsetDateTime};

use super::{check_grants, check_user_name, logins, statement, Engine, ServiceUser, Statement};
use crate::error::{ApiError, ErrorCode};

/// When the logins of `user` are dropped if its deletion is asked at
/// `now`: after `grace` (by default the user's own), so applications
/// still on the current login have time to move. Refused while it is
/// already being deleted.
pub fn request_deletion(
    user: &ServiceUser,
    grace: Option<Duration>,
    now: OffsetDateTime,
) -> Result<OffsetDateTime, ApiError> {
    if let Some(at) = user.drop_after {
        let when = at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "service user {} is already being deleted (its logins are dropped from {when})",
                user.name
            ),
        ));
    }
    Ok(now + grace.unwrap_or_else(|| user.schedule().grace))
}

/// Where a service user stands, as people are shown it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserStatus {
    /// Its Agent has not made it yet.
    Creating,
    Ready,
    /// A rotation is in flight.
    Rotating,
    /// The previous login still works, until `grace_until`.
    InGrace,
    /// The last task failed (`last_error` says why); it is tried again.
    Failed,
    /// `database user delete`: its logins are dropped from `drop_after`.
    Deleting,
}

impl UserStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            UserStatus::Creating => "creating",
            UserStatus::Ready => "ready",
            UserStatus::Rotating => "rotating",
            UserStatus::InGrace => "in grace",
            UserStatus::Failed => "failed",
            UserStatus::Deleting => "deleting",
        }
    }
}

/// The one rule for what a user's state is called.
pub fn status(user: &ServiceUser) -> UserStatus {
    if user.drop_after.is_some() {
        return UserStatus::Deleting;
    }
    match (&user.last_error, user.current_version, user.pending_version) {
        (Some(_), _, _) => UserStatus::Failed,
        (None, None, _) => UserStatus::Creating,
        (None, Some(_), Some(_)) => UserStatus::Rotating,
        (None, Some(_), None) if user.grace_until.is_some() => UserStatus::InGrace,
        _ => UserStatus::Ready,
    }
}

/// Drops both logins of `user` and its group role. Each statement can run
/// again (a drop that failed half-way is finished by running all of them
/// once more), and none drops data: on PostgreSQL the group's `grants` are
/// revoked first, and a role that still owns objects or holds privileges
/// granted by hand is refused by the server with the reason, which lands
/// in the user's `last_error`. Open sessions are not ended.
pub fn drop_statements(engine: Engine, user: &str, grants: Option<&str>) -> Result<Vec<Statement>, ApiError> {
    check_user_name(user)?;
    let [a, b] = logins(user);
    let mut out = Vec::new();
    match engine {
        Engine::Postgres => {
            if let Some(grants) = grants {
                check_grants(engine, grants)?;
                out.push(statement(
                    "revoke grants",
                    format!(
                        "DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{user}') THEN \
                         REVOKE {grants} FROM \"{user}\"; END IF; END $$"
                    ),
                ));
            }
            for name in [&a, &b] {
                out.push(statement("drop login", format!("DROP ROLE IF EXISTS \"{name}\"")));
            }
            out.push(statement("drop group role", format!("DROP ROLE IF EXISTS \"{user}\"")));
        }
        Engine::Mariadb => {
            for name in [&a, &b] {
                out.push(statement("drop login", format!("DROP USER IF EXISTS `{name}`@'%'")));
            }
            out.push(statement("drop group role", format!("DROP ROLE IF EXISTS `{user}`")));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::tests::user;
    use super::super::{due, may_rotate_now, plan, Phase, Step, Task, TaskKind};
    use super::*;
    use crate::ids::MemberId;

    #[test]
    fn a_deleted_user_rotates_no_more_and_is_dropped_after_the_grace_for_whoever_deleted_it() {
        let t0 = OffsetDateTime::UNIX_EPOCH + Duration::days(1);
        let mut u = user(t0);
        u.current_version = Some(2);
        u.retiring_version = Some(1);
        u.grace_until = Some(t0 + Duration::minutes(5));
        u.rotate_requested = true;
        assert_eq!(status(&u), UserStatus::InGrace);
        // The user's own grace (1 minute) unless another is asked for.
        assert_eq!(request_deletion(&u, None, t0).unwrap(), t0 + Duration::minutes(1));
        let drop_after = request_deletion(&u, Some(Duration::seconds(10)), t0).unwrap();
        assert_eq!(drop_after, t0 + Duration::seconds(10));
        let by = MemberId::from_uuid(uuid::Uuid::from_u128(77));
        u.drop_after = Some(drop_after);
        u.deleted_by = Some("d@example.com".into());
        u.deleted_by_id = Some(by);

        assert_eq!(status(&u), UserStatus::Deleting);
        assert_eq!(due(&u, t0), None, "no rotation nor retirement once deletion is asked");
        assert_eq!(due(&u, drop_after), Some(TaskKind::Drop));
        assert!(may_rotate_now(&u, t0 + Duration::hours(1)).is_err());
        let err = request_deletion(&u, None, t0).unwrap_err();
        assert_eq!(err.code, ErrorCode::Conflict);
        assert!(err.message.contains("already being deleted"), "{}", err.message);
        // The admin secret is used for the member who deleted it.
        let on_behalf = u.on_behalf_of().unwrap();
        assert_eq!((on_behalf.member_id, on_behalf.email.as_str()), (by, "d@example.com"));
        // A failed drop waits like any task, then comes back.
        u.retry_at = Some(drop_after + Duration::minutes(1));
        assert_eq!(due(&u, drop_after), None);
        assert_eq!(due(&u, drop_after + Duration::minutes(1)), Some(TaskKind::Drop));
    }

    #[test]
    fn a_drop_is_the_same_whatever_the_agent_recorded() {
        let pending = Phase::Pending { next: 1, version: 3, password: crate::Redacted::new("x".into()) };
        for phase in [None, Some(Phase::Idle { current: 0, version: 2 }), Some(pending)] {
            assert_eq!(plan(Task::Drop, phase.as_ref()).unwrap(), vec![Step::Drop]);
        }
    }

    #[test]
    fn the_drop_revokes_then_drops_both_logins_then_the_group_and_can_run_again() {
        let texts = |engine, grants| -> Vec<String> {
            drop_statements(engine, "app", grants).unwrap().iter().map(|s| s.sql.expose().clone()).collect()
        };
        assert_eq!(
            texts(Engine::Postgres, Some("SELECT ON ALL TABLES IN SCHEMA public")),
            [
                "DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'app') THEN \
                 REVOKE SELECT ON ALL TABLES IN SCHEMA public FROM \"app\"; END IF; END $$",
                "DROP ROLE IF EXISTS \"app_a\"",
                "DROP ROLE IF EXISTS \"app_b\"",
                "DROP ROLE IF EXISTS \"app\"",
            ]
        );
        assert_eq!(
            texts(Engine::Mariadb, Some("SELECT ON orders.*")),
            [
                "DROP USER IF EXISTS `app_a`@'%'",
                "DROP USER IF EXISTS `app_b`@'%'",
                "DROP ROLE IF EXISTS `app`"
            ]
        );
        // The revoke is built from text checked as a grant is, and a name
        // is checked before it is quoted.
        assert!(drop_statements(Engine::Postgres, "app", Some("SELECT ON t$$ x")).is_err());
        assert!(drop_statements(Engine::Postgres, "app\"; --", None).is_err());
    }
}
