//! Which version of a secret is current in an environment, and what an
//! Agent may serve as "the latest" knowing it.
//!
//! The API numbers a version before any Agent holds it, and a write can
//! reach some holders and not others (one was down). So the current
//! version is the newest that an Agent holding the environment reported
//! holding, not deactivated: one no Agent ever stored makes nothing
//! unreadable. Each sync tells every Agent the current versions of the
//! environments it holds; an Agent that lacks one answers
//! `VERSION_NOT_HELD` instead of serving an older version as the latest,
//! and clients ask the next holder. No read returns a superseded value as
//! current once the holder that has the new one reported it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ErrorCode};
use crate::ids::{AgentId, CatalogId};

/// One version an Agent reported holding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held<'a> {
    pub agent: AgentId,
    pub secret: &'a str,
    pub environment: CatalogId,
    pub version: i64,
    /// Reported as a tombstone (deactivated on that Agent).
    pub deactivated: bool,
    /// When that Agent first reported it.
    pub since: time::OffsetDateTime,
}

/// An Agent assigned an environment, since when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assigned {
    pub agent: AgentId,
    pub environment: CatalogId,
    pub at: time::OffsetDateTime,
}

/// A deletion: of the secret everywhere (`environment: None`), or in one
/// environment of the versions through `through_version` (`None`: all).
/// What it covers is current nowhere, even while a holder still reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deleted<'a> {
    pub secret: &'a str,
    pub environment: Option<CatalogId>,
    pub through_version: Option<i64>,
}

impl Deleted<'_> {
    fn covers(&self, h: &Held<'_>) -> bool {
        self.secret == h.secret
            && self.environment.is_none_or(|e| e == h.environment)
            && self.through_version.is_none_or(|v| h.version <= v)
    }
}

/// A secret's current version in one environment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurrentVersion {
    pub secret: String,
    pub environment: CatalogId,
    pub version: i64,
}

/// The current version of each (secret, environment) in `environments`:
/// the newest that an Agent assigned to it (`assigned`: Agent, environment)
/// holds, leaving out versions deactivated (`deactivated`: secret,
/// environment, version), tombstones, and what a deletion covers.
pub fn current_versions(
    held: &[Held<'_>],
    assigned: &[Assigned],
    deactivated: &[(String, CatalogId, i64)],
    deleted: &[Deleted<'_>],
    environments: &[CatalogId],
) -> Vec<CurrentVersion> {
    let assigned: std::collections::BTreeSet<(AgentId, CatalogId)> =
        assigned.iter().map(|a| (a.agent, a.environment)).collect();
    let mut newest: BTreeMap<(&str, CatalogId), i64> = BTreeMap::new();
    for h in held {
        if h.deactivated
            || deleted.iter().any(|d| d.covers(h))
            || !environments.contains(&h.environment)
            || !assigned.contains(&(h.agent, h.environment))
            || deactivated.iter().any(|(s, e, v)| s == h.secret && *e == h.environment && *v == h.version)
        {
            continue;
        }
        let entry = newest.entry((h.secret, h.environment)).or_insert(h.version);
        *entry = (*entry).max(h.version);
    }
    newest
        .into_iter()
        .map(|((secret, environment), version)| CurrentVersion {
            secret: secret.to_owned(),
            environment,
            version,
        })
        .collect()
}

/// Whether an Agent asked for the latest may serve `held_latest`, the
/// newest version it holds (`None`: nothing), knowing `current` (`None`:
/// the API named none yet).
pub fn check_latest(secret: &str, held_latest: Option<i64>, current: Option<i64>) -> Result<(), ApiError> {
    match (held_latest, current) {
        (Some(held), Some(current)) if held < current => Err(not_held(secret, current)),
        (None, Some(current)) => Err(not_held(secret, current)),
        _ => Ok(()),
    }
}

/// An Agent asked for `version` that it does not hold: `VERSION_NOT_HELD`
/// when another holder may hold it (it is not newer than the current one),
/// else `None` (the caller answers that it does not exist here).
pub fn missing_version(secret: &str, version: i64, current: Option<i64>) -> Option<ApiError> {
    current.filter(|current| version <= *current).map(|_| {
        ApiError::new(
            ErrorCode::VersionNotHeld,
            format!("this Agent does not hold version {version} of {secret}; another holder may"),
        )
    })
}

fn not_held(secret: &str, current: i64) -> ApiError {
    ApiError::new(
        ErrorCode::VersionNotHeld,
        format!("this Agent does not hold the current version ({current}) of {secret}; another holder may"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn the_current_version_is_the_newest_an_assigned_agent_holds() {
        let (a, b, gone) = (
            AgentId::from_uuid(Uuid::new_v4()),
            AgentId::from_uuid(Uuid::new_v4()),
            AgentId::from_uuid(Uuid::new_v4()),
        );
        let (prod, dev) = (CatalogId::from_uuid(Uuid::new_v4()), CatalogId::from_uuid(Uuid::new_v4()));
        let held = |agent, version, deactivated| Held {
            agent,
            secret: "db",
            environment: prod,
            version,
            deactivated,
            since: time::OffsetDateTime::UNIX_EPOCH,
        };
        let assigned =
            [a, b].map(|agent| Assigned { agent, environment: prod, at: time::OffsetDateTime::UNIX_EPOCH });
        // a has 3, b lags at 2; an unassigned Agent's 9 and a tombstone's 4 do not count.
        let all =
            [held(a, 2, false), held(a, 3, false), held(b, 2, false), held(gone, 9, false), held(b, 4, true)];
        let current = current_versions(&all, &assigned, &[], &[], &[prod, dev]);
        assert_eq!(current, vec![CurrentVersion { secret: "db".into(), environment: prod, version: 3 }]);
        // 3 deactivated at the API: 2 is current again.
        let current = current_versions(&all, &assigned, &[("db".into(), prod, 3)], &[], &[prod]);
        assert_eq!(current[0].version, 2);
        // Only the environments asked for.
        assert!(current_versions(&all, &assigned, &[], &[], &[dev]).is_empty());
        // Deleted in prod through 2: 3 stays current; deleted through 3, or the whole secret: none.
        let through = |v| [Deleted { secret: "db", environment: Some(prod), through_version: Some(v) }];
        assert_eq!(current_versions(&all, &assigned, &[], &through(2), &[prod])[0].version, 3);
        assert!(current_versions(&all, &assigned, &[], &through(3), &[prod]).is_empty());
        let whole = [Deleted { secret: "db", environment: None, through_version: None }];
        assert!(current_versions(&all, &assigned, &[], &whole, &[prod]).is_empty());
    }

    #[test]
    fn an_agent_never_serves_an_older_version_as_the_latest() {
        assert!(check_latest("db", Some(3), Some(3)).is_ok());
        assert!(check_latest("db", Some(4), Some(3)).is_ok(), "newer than the API knows: just written here");
        assert!(check_latest("db", Some(2), None).is_ok(), "the API names none yet");
        assert_eq!(check_latest("db", Some(2), Some(3)).unwrap_err().code, ErrorCode::VersionNotHeld);
        assert_eq!(check_latest("db", None, Some(3)).unwrap_err().code, ErrorCode::VersionNotHeld);
        assert_eq!(missing_version("db", 3, Some(3)).map(|e| e.code), Some(ErrorCode::VersionNotHeld));
        assert!(missing_version("db", 5, Some(3)).is_none(), "newer than current: not anywhere");
        assert!(missing_version("db", 1, None).is_none());
    }
}
