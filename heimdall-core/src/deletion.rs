//! Deleting a secret without leaving a copy behind. The API knows what
//! each Agent's store holds from the inventory it reported last; a delete
//! may start only when every Agent that holds the secret will sync again
//! (and so delete it) ([`may_delete`]), and it is done only when every
//! Agent that may hold it has heard of it and holds none of it ([`is_done`]).

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

impl From<&crate::ports::Holding> for Holder {
    fn from(h: &crate::ports::Holding) -> Self {
        Holder { agent: h.agent.clone(), revoked: h.agent_revoked, last_seen_at: h.agent_last_seen_at }
    }
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

/// Whether deleting `what` (secret `secret`, or it in one environment) may
/// start: every holder there will sync again ([`may_delete`]), and the
/// secret is not already being deleted or deleted (`CONFLICT`). The Agents
/// that hold it, each once, for the deletion's event.
pub fn may_start(
    what: &str,
    (secret, status): (&str, crate::secrets::SecretStatus),
    holders: &[Holder],
    now: OffsetDateTime,
    stale_after: Duration,
) -> Result<Vec<String>, ApiError> {
    use crate::secrets::SecretStatus;
    may_delete(what, holders, now, stale_after)?;
    if matches!(status, SecretStatus::Deleting | SecretStatus::Deleted) {
        return Err(ApiError::new(ErrorCode::Conflict, format!("{secret} is already {}", status.as_str())));
    }
    let mut agents: Vec<String> = holders.iter().map(|h| h.agent.clone()).collect();
    agents.dedup();
    Ok(agents)
}

/// An Agent that must hear of a deletion before it is done: one that holds
/// the environment (for a whole secret, any environment), or whose last
/// inventory listed the secret there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hearer {
    /// The API's clock when it answered the last sync this Agent applied
    /// before taking the inventory it last reported (`None`: it never said).
    pub applied_through: Option<OffsetDateTime>,
    /// Whether that inventory still lists the secret (there).
    pub still_holds: bool,
}

/// Whether a deletion started at `started_at` is done: every Agent that
/// may hold a copy applied a sync answer given at or after the start
/// (which named the deletion), and reported an inventory since that holds
/// none of it. An inventory alone says nothing of a value stored after it
/// was taken (a write just before the delete): the deletion is sent to
/// every Agent that holds the environment until each has heard it.
pub fn is_done(started_at: OffsetDateTime, hearers: &[Hearer]) -> bool {
    hearers.iter().all(|h| !h.still_holds && h.applied_through.is_some_and(|at| at >= started_at))
}

/// How long after a deletion in an environment is done it is still sent to
/// Agents: longer than a write grant lives (plus clock skew), so a write
/// made with a grant issued before the deletion (`version <= through`) is
/// refused, or deleted, wherever it arrives late.
pub const KEEP_SENDING_DONE: Duration = Duration::hours(1);

/// Where a secret stands in its life, as a whole or in one environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    Active,
    /// Every holder drops it on its next sync; done once all have ([`is_done`]).
    Deleting,
    Deleted,
}

impl Lifecycle {
    pub fn as_str(self) -> &'static str {
        match self {
            Lifecycle::Active => "active",
            Lifecycle::Deleting => "deleting",
            Lifecycle::Deleted => "deleted",
        }
    }

    /// A stored lifecycle, if it is one.
    pub fn parse(stored: &str) -> Option<Lifecycle> {
        match stored {
            "active" => Some(Lifecycle::Active),
            "deleting" => Some(Lifecycle::Deleting),
            "deleted" => Some(Lifecycle::Deleted),
            _ => None,
        }
    }
}

impl std::fmt::Display for Lifecycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether Agents are still told of a deletion in an environment at `now`:
/// while it runs, and for [`KEEP_SENDING_DONE`] after it is done.
pub fn still_sent(status: Lifecycle, deleted_at: Option<OffsetDateTime>, now: OffsetDateTime) -> bool {
    status == Lifecycle::Deleting || deleted_at.is_some_and(|at| now - at < KEEP_SENDING_DONE)
}

/// Refuses a new version of `secret` (`CONFLICT`) once it is being
/// deleted or deleted as a whole (`whole`), or while its deletion in
/// `environment` runs (`here`): the version would be deleted as it lands.
pub fn may_take_version(
    secret: &str,
    whole: Lifecycle,
    environment: &str,
    here: Option<Lifecycle>,
) -> Result<(), ApiError> {
    if here == Some(Lifecycle::Deleting) {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "{secret} is being deleted in {environment}: it takes a new version there once that is done"
            ),
        ));
    }
    if whole != Lifecycle::Active {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("{secret} is {whole}: it takes no new version"),
        ));
    }
    Ok(())
}

/// Whether an Agent may store a value written with a grant for `version`
/// of `secret` (the grant names the secret by `granted` id): the Agent's
/// last sync lists the secret (`known`, `NOT_FOUND` otherwise: a sync is
/// asked for first) under that id, not being deleted (`being_deleted`),
/// and no deletion in that environment covers the version
/// (`covering`: each such deletion's `through_version`, `None` for
/// every version). A grant issued before a delete, used after it, stores
/// nothing (`CONFLICT`).
pub fn may_store(
    secret: &str,
    known: Option<crate::ids::SecretId>,
    granted: crate::ids::SecretId,
    being_deleted: bool,
    mut covering: impl Iterator<Item = Option<i64>>,
    version: i64,
) -> Result<(), ApiError> {
    let known = known.ok_or_else(|| ApiError::not_found("secret"))?;
    let covered = covering.any(|through| through.is_none_or(|t| version <= t));
    if known != granted || being_deleted || covered {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("{secret} is deleted (or being deleted) there: its value is not stored"),
        ));
    }
    Ok(())
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
        .map(|h| match h.secret.starts_with(crate::secrets::PERSONAL_PREFIX) {
            // Another member's personal secret is named to nobody.
            true => format!("a personal secret v{}", h.version),
            false => format!("{} v{}", h.secret, h.version),
        })
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
    fn a_value_is_stored_only_for_a_listed_secret_no_deletion_covers() {
        use crate::ids::SecretId;
        let id = SecretId::from_uuid(uuid::Uuid::from_u128(1));
        let other = SecretId::from_uuid(uuid::Uuid::from_u128(2));
        let code = |r: Result<(), ApiError>| r.err().map(|e| e.code);
        assert_eq!(code(may_store("db", Some(id), id, false, std::iter::empty(), 3)), None);
        assert_eq!(code(may_store("db", None, id, false, std::iter::empty(), 3)), Some(ErrorCode::NotFound));
        // Another secret of the same name: the grant was for the deleted one.
        assert_eq!(
            code(may_store("db", Some(other), id, false, std::iter::empty(), 3)),
            Some(ErrorCode::Conflict)
        );
        assert_eq!(
            code(may_store("db", Some(id), id, true, std::iter::empty(), 3)),
            Some(ErrorCode::Conflict)
        );
        // A deletion through v3 covers v3, not v4; one of every version covers all.
        assert_eq!(
            code(may_store("db", Some(id), id, false, [Some(3)].into_iter(), 3)),
            Some(ErrorCode::Conflict)
        );
        assert_eq!(code(may_store("db", Some(id), id, false, [Some(3)].into_iter(), 4)), None);
        assert_eq!(
            code(may_store("db", Some(id), id, false, [None].into_iter(), 40)),
            Some(ErrorCode::Conflict)
        );
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
    fn a_deletion_starts_once_and_names_each_holder_once() {
        use crate::secrets::SecretStatus;
        let now = at(30);
        let holder = |agent: &str| Holder { agent: agent.into(), revoked: false, last_seen_at: Some(at(29)) };
        let holders = [holder("edge-1"), holder("edge-1"), holder("edge-2")];
        for status in [SecretStatus::Active, SecretStatus::AtRisk] {
            let agents = may_start("db in prod", ("db", status), &holders, now, STALE_AFTER).unwrap();
            assert_eq!(agents, ["edge-1", "edge-2"]);
        }
        for status in [SecretStatus::Deleting, SecretStatus::Deleted] {
            let err = may_start("db", ("db", status), &holders, now, STALE_AFTER).unwrap_err();
            assert_eq!(err.code, ErrorCode::Conflict);
            assert_eq!(err.message, format!("db is already {}", status.as_str()));
        }
        // A holder that will never sync refuses first, whatever the status.
        let gone = Holder { agent: "edge-0".into(), revoked: true, last_seen_at: None };
        let err = may_start("db", ("db", SecretStatus::Deleting), &[gone], now, STALE_AFTER).unwrap_err();
        assert_eq!(err.code, ErrorCode::ValueMayPersist);
    }

    #[test]
    fn a_deletion_is_done_once_every_agent_heard_it_and_holds_none() {
        let start = at(10);
        let heard = |days: i64, still_holds| Hearer { applied_through: Some(at(days)), still_holds };
        assert!(is_done(start, &[]), "nobody may hold it");
        assert!(is_done(start, &[heard(10, false), heard(11, false)]));
        // An inventory with no copy, taken before the Agent heard of the
        // deletion: a value written just before it may not be in it.
        assert!(!is_done(start, &[heard(11, false), heard(9, false)]));
        assert!(!is_done(start, &[Hearer { applied_through: None, still_holds: false }]));
        assert!(!is_done(start, &[heard(11, true)]), "heard it, still holds it");
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
            held_since: None,
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
