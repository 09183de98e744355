//! Deleting a secret without leaving a copy behind. The API knows what
//! each Agent's store holds from the inventory it reported last; a delete
//! may start only when every Agent that holds the secret will sync again
//! (and so delete it), and it is done when no Agent's inventory lists it.

use time::{Duration, OffsetDateTime};

use crate::error::{ApiError, ErrorCode};

/// An Agent not seen for longer than this is taken as one that will not
/// sync again (its store may be gone, or may come back): the default.
pub const STALE_AFTER: Duration = Duration::days(7);

/// An Agent whose last inventory lists the secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub agent: String,
    pub revoked: bool,
    pub last_seen_at: Option<OffsetDateTime>,
}

/// Whether `holder` may never sync again at `now`.
pub fn will_not_sync(holder: &Holder, now: OffsetDateTime, stale_after: Duration) -> bool {
    holder.revoked || holder.last_seen_at.is_none_or(|seen| now - seen > stale_after)
}

/// Refuses the delete of `secret` (`VALUE_MAY_PERSIST`, naming each such
/// Agent and how to resolve it) while an Agent that will not sync again
/// may hold a copy.
pub fn may_delete(
    secret: &str,
    holders: &[Holder],
    now: OffsetDateTime,
    stale_after: Duration,
) -> Result<(), ApiError> {
    let mut stuck: Vec<&str> =
        holders.iter().filter(|h| will_not_sync(h, now, stale_after)).map(|h| h.agent.as_str()).collect();
    stuck.sort_unstable();
    stuck.dedup();
    if stuck.is_empty() {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::ValueMayPersist,
        format!(
            "{secret} may still be held by {}, which will not sync again (revoked, or not seen for over {} days); \
             bring it back so it deletes the value, or, if its store is destroyed, have an owner run \
             `heimdall agent forget AGENT --confirm-store-destroyed`",
            stuck.join(", "),
            stale_after.whole_days()
        ),
    ))
}

/// Refuses taking `agent` off `environment` (`CONFLICT`) while it is the
/// only Agent there holding a current version of a secret: a value is
/// written to the Agents that hold the environment at the time, and no
/// other Agent would ever get that one. `holdings` are what the
/// environment's Agents last reported there; `current` is each secret's
/// highest version in the environment.
pub fn may_unassign(
    agent: crate::ids::AgentId,
    environment: &str,
    holdings: &[crate::ports::Holding],
    current: impl Fn(&str) -> Option<i64>,
) -> Result<(), ApiError> {
    let mut only_here: Vec<String> = holdings
        .iter()
        .filter(|h| h.agent_id == agent && !h.deactivated && current(&h.secret) == Some(h.version))
        .filter(|mine| {
            !holdings.iter().any(|h| {
                h.agent_id != agent && h.secret == mine.secret && h.version == mine.version && !h.deactivated
            })
        })
        .map(|h| format!("{} v{}", h.secret, h.version))
        .collect();
    only_here.sort();
    if only_here.is_empty() {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::Conflict,
        format!(
            "this Agent is the only one in {environment} holding {}: unassigned, it would delete the last copy; \
             write a new version while another Agent holds {environment}, or delete the secret",
            only_here.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(days: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap() + Duration::days(days)
    }

    #[test]
    fn a_delete_waits_for_no_agent_that_syncs_and_names_those_that_will_not() {
        let now = at(30);
        let live = Holder { agent: "edge-1".into(), revoked: false, last_seen_at: Some(at(29)) };
        assert!(may_delete("db", std::slice::from_ref(&live), now, STALE_AFTER).is_ok());
        assert!(may_delete("db", &[], now, STALE_AFTER).is_ok(), "nobody holds it");

        let revoked = Holder { agent: "edge-2".into(), revoked: true, last_seen_at: Some(at(29)) };
        let gone = Holder { agent: "edge-0".into(), revoked: false, last_seen_at: Some(at(22)) };
        let err =
            may_delete("db", &[live.clone(), revoked, gone.clone(), gone], now, STALE_AFTER).unwrap_err();
        assert_eq!(err.code, ErrorCode::ValueMayPersist);
        assert!(
            err.message.contains("edge-0, edge-2,") && !err.message.contains("edge-1"),
            "{}",
            err.message
        );
        assert!(err.message.contains("agent forget"), "{}", err.message);
        // Exactly at the horizon it still counts as syncing.
        let edge = Holder { agent: "edge-3".into(), revoked: false, last_seen_at: Some(at(23)) };
        assert!(may_delete("db", &[edge], now, STALE_AFTER).is_ok());
        let never = Holder { agent: "edge-4".into(), revoked: false, last_seen_at: None };
        assert!(will_not_sync(&never, now, STALE_AFTER));
    }

    #[test]
    fn the_last_agent_holding_a_current_version_stays() {
        use crate::ids::AgentId;
        use crate::ports::Holding;
        let (a, b) =
            (AgentId::from_uuid(uuid::Uuid::from_u128(1)), AgentId::from_uuid(uuid::Uuid::from_u128(2)));
        let held = |agent: AgentId, secret: &str, version: i64, deactivated: bool| Holding {
            agent_id: agent,
            agent: format!("{agent}"),
            secret: secret.into(),
            environment: "prod".into(),
            version,
            deactivated,
            reported_at: at(0),
            agent_revoked: false,
            agent_last_seen_at: None,
        };
        let current = |secret: &str| if secret == "db" { Some(2) } else { Some(1) };
        // Both hold db v2: either may go.
        let both = [held(a, "db", 2, false), held(b, "db", 2, false)];
        assert!(may_unassign(a, "prod", &both, current).is_ok());
        // Only a holds db v2, and api v1; an old version or a tombstone does not count.
        let only = [
            held(a, "db", 2, false),
            held(a, "db", 1, false),
            held(b, "db", 1, false),
            held(a, "api", 1, false),
        ];
        let err = may_unassign(a, "prod", &only, current).unwrap_err();
        assert_eq!(err.code, ErrorCode::Conflict);
        assert!(err.message.contains("api v1, db v2") && !err.message.contains("db v1"), "{}", err.message);
        assert!(may_unassign(b, "prod", &only, current).is_ok(), "b holds only an old version");
        let tombstoned = [held(a, "db", 2, true)];
        assert!(may_unassign(a, "prod", &tombstoned, current).is_ok());
    }
}
