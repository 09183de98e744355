//! A service user's tasks on any Agent that holds its environment.
//!
//! Each Agent records the phases of the rotations it runs in its own
//! store, so with two Agents on separate stores the one asked to rotate
//! may have recorded nothing (the user was created through the other), or
//! an older phase (the other rotated since). What every holder has is the
//! user's current credential: a rotation's new version reaches the other
//! holders by transfer (`crate::transfer`), and it names the login it is
//! for. So the phase a task resumes from is the newer of what this store
//! recorded and what the credential it holds says ([`resume_from`]); and
//! the API offers a task only to an Agent that reported holding the
//! user's current version ([`may_claim`]), never to one that would rotate
//! onto the login applications are using.

use super::{logins, Phase, ServiceUser, TaskKind};
use crate::error::{ApiError, ErrorCode};

/// The phase a held credential of version `version` implies: nothing in
/// flight, `username` the current login (`None`: not one of the user's).
pub fn held_phase(user: &str, version: i64, username: &str) -> Option<Phase> {
    let current = logins(user).iter().position(|login| login == username)?;
    Some(Phase::Idle { current, version })
}

fn version_of(phase: &Phase) -> i64 {
    match phase {
        Phase::Idle { version, .. } | Phase::Pending { version, .. } | Phase::Altered { version, .. } => {
            *version
        }
    }
}

/// The phase to plan a task from: what this store `recorded`, unless the
/// credential it holds (`held`, from [`held_phase`]) is as new or newer —
/// then another store rotated since, and whatever this one had in flight
/// for that version was superseded (its password was never stored as a
/// version). Refused while neither reaches `current`, the version the
/// API calls current: rotating from an older phase would put a new
/// password on the login applications use now.
pub fn resume_from(
    recorded: Option<Phase>,
    held: Option<Phase>,
    current: Option<i64>,
) -> Result<Option<Phase>, ApiError> {
    let phase = match (recorded, held) {
        (Some(recorded), Some(held)) => Some(match recorded {
            Phase::Idle { .. } if version_of(&held) > version_of(&recorded) => held,
            Phase::Pending { .. } | Phase::Altered { .. } if version_of(&held) >= version_of(&recorded) => {
                held
            }
            recorded => recorded,
        }),
        (recorded, held) => recorded.or(held),
    };
    // A rotation in flight here is to a version after the one it stands on.
    let reaches = |current: i64| match &phase {
        Some(Phase::Idle { version, .. }) => *version >= current,
        Some(Phase::Pending { version, .. } | Phase::Altered { version, .. }) => *version > current,
        None => false,
    };
    match current {
        Some(current) if !reaches(current) => Err(ApiError::new(
            ErrorCode::VersionNotHeld,
            format!(
                "this Agent does not hold version {current} of the user's credentials yet; \
                 it fetches it from the holder that made it"
            ),
        )),
        _ => Ok(phase),
    }
}

/// Whether an Agent that reported holding `held` (the newest version of
/// the user's secret in its environment, not deactivated) may take a task
/// of kind `kind`: a creation or a drop, any holder; a rotation or a
/// retirement, only one that holds the user's current version.
pub fn may_claim(user: &ServiceUser, kind: TaskKind, held: Option<i64>) -> bool {
    match kind {
        TaskKind::Create | TaskKind::Drop => true,
        TaskKind::Rotate | TaskKind::Retire => {
            user.current_version.is_none_or(|current| held.is_some_and(|held| held >= current))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Redacted;

    fn pending(version: i64) -> Phase {
        Phase::Pending { next: 1, version, password: Redacted::new("p".into()) }
    }

    #[test]
    fn a_held_credential_names_its_login() {
        assert_eq!(held_phase("app", 2, "app_b"), Some(Phase::Idle { current: 1, version: 2 }));
        assert_eq!(held_phase("app", 1, "app_a"), Some(Phase::Idle { current: 0, version: 1 }));
        assert_eq!(held_phase("app", 1, "other_a"), None);
    }

    #[test]
    fn a_store_that_recorded_nothing_resumes_from_the_credential_it_holds() {
        let held = Phase::Idle { current: 1, version: 2 };
        assert_eq!(resume_from(None, Some(held.clone()), Some(2)).unwrap(), Some(held));
    }

    #[test]
    fn a_newer_credential_from_another_store_wins_over_an_older_record() {
        let recorded = Phase::Idle { current: 0, version: 1 };
        let held = Phase::Idle { current: 1, version: 2 };
        assert_eq!(resume_from(Some(recorded.clone()), Some(held.clone()), Some(2)).unwrap(), Some(held));
        // This store's own record of the same version stays.
        let same = Phase::Idle { current: 1, version: 2 };
        assert_eq!(resume_from(Some(same.clone()), Some(same.clone()), Some(2)).unwrap(), Some(same));
        assert_eq!(
            resume_from(Some(recorded.clone()), Some(recorded.clone()), Some(1)).unwrap(),
            Some(recorded)
        );
    }

    #[test]
    fn a_rotation_in_flight_here_is_rolled_forward_unless_another_store_finished_it() {
        let older = Phase::Idle { current: 0, version: 1 };
        assert_eq!(resume_from(Some(pending(2)), Some(older), Some(1)).unwrap(), Some(pending(2)));
        let finished = Phase::Idle { current: 1, version: 2 };
        assert_eq!(resume_from(Some(pending(2)), Some(finished.clone()), Some(2)).unwrap(), Some(finished));
    }

    #[test]
    fn an_agent_behind_the_current_version_takes_no_task() {
        let older = Phase::Idle { current: 0, version: 1 };
        let refused = resume_from(Some(older.clone()), Some(older), Some(2)).unwrap_err();
        assert_eq!(refused.code, ErrorCode::VersionNotHeld);
        assert_eq!(resume_from(None, None, Some(1)).unwrap_err().code, ErrorCode::VersionNotHeld);
        // Before the creation, nothing is current: nothing is needed.
        assert_eq!(resume_from(None, None, None).unwrap(), None);
    }

    #[test]
    fn rotations_and_retirements_go_to_a_holder_of_the_current_version() {
        let mut user: ServiceUser = serde_json::from_value(serde_json::json!({
            "id": uuid::Uuid::nil(), "org_id": uuid::Uuid::nil(), "database_id": uuid::Uuid::nil(),
            "database": "orders", "name": "app", "secret": "db-orders-app", "secret_id": uuid::Uuid::nil(),
            "rotate_every_seconds": 86400, "grace_seconds": 60, "current_version": 2,
            "next_rotation_at": "2026-01-01T00:00:00Z", "created_at": "2026-01-01T00:00:00Z",
            "created_by": "ana@example.com",
        }))
        .unwrap();
        for kind in [TaskKind::Rotate, TaskKind::Retire] {
            assert!(may_claim(&user, kind, Some(2)));
            assert!(!may_claim(&user, kind, Some(1)), "{kind:?} by a lagging holder");
            assert!(!may_claim(&user, kind, None));
        }
        assert!(may_claim(&user, TaskKind::Drop, None));
        user.current_version = None;
        assert!(may_claim(&user, TaskKind::Create, None));
        assert!(may_claim(&user, TaskKind::Rotate, None));
    }
}
