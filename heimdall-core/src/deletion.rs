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
}
