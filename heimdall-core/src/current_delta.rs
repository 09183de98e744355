//! The current versions a sync answer carries, as a difference from what
//! the Agent reported holding in the same sync.
//!
//! An Agent that holds the current version of a secret, as most do most of
//! the time, needs not be told it: the answer lists only the (secret,
//! environment) pairs where the current version is not the newest value
//! the Agent reported there, and names those where it reported a value
//! but nothing is current (deactivated, being deleted). The Agent puts the
//! whole list back from its own report ([`restored`]), so it decides
//! reads exactly as with the whole list: `restored(answered(c, r), r) == c`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::current::CurrentVersion;
use crate::ids::CatalogId;

/// One version an Agent reported in its sync request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reported<'a> {
    pub secret: &'a str,
    pub environment: CatalogId,
    pub version: i64,
    /// Reported as a tombstone.
    pub deactivated: bool,
}

/// A (secret, environment) the Agent reported a value in and where no
/// version is current.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoCurrent {
    pub secret: String,
    pub environment: CatalogId,
}

/// What an answer carries of `current` (the versions current in the
/// environments this Agent holds, `mine`) for an Agent that reported
/// `reported`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answered {
    /// Current versions other than the newest value the Agent reported.
    pub listed: Vec<CurrentVersion>,
    /// Where it reported a value and nothing is current.
    pub none: Vec<NoCurrent>,
}

/// The newest value (not a tombstone) reported in each (secret,
/// environment) of `mine`.
fn newest_values<'a>(reported: &[Reported<'a>], mine: &[CatalogId]) -> BTreeMap<(&'a str, CatalogId), i64> {
    let mine: BTreeSet<CatalogId> = mine.iter().copied().collect();
    let mut newest: BTreeMap<(&str, CatalogId), i64> = BTreeMap::new();
    for r in reported.iter().filter(|r| !r.deactivated && mine.contains(&r.environment)) {
        let entry = newest.entry((r.secret, r.environment)).or_insert(r.version);
        *entry = (*entry).max(r.version);
    }
    newest
}

/// The API's side: `current` less what the Agent's own report says.
pub fn answered(current: &[CurrentVersion], reported: &[Reported<'_>], mine: &[CatalogId]) -> Answered {
    let newest = newest_values(reported, mine);
    let listed: Vec<CurrentVersion> = current
        .iter()
        .filter(|c| newest.get(&(c.secret.as_str(), c.environment)) != Some(&c.version))
        .cloned()
        .collect();
    let is_current: BTreeSet<(&str, CatalogId)> =
        current.iter().map(|c| (c.secret.as_str(), c.environment)).collect();
    let none = newest
        .keys()
        .filter(|key| !is_current.contains(*key))
        .map(|(secret, environment)| NoCurrent { secret: (*secret).to_owned(), environment: *environment })
        .collect();
    Answered { listed, none }
}

/// The Agent's side: the whole list back from an [`Answered`] and the
/// report it answered, ordered by (secret, environment) as the API orders
/// the whole list.
pub fn restored(answered: &Answered, reported: &[Reported<'_>], mine: &[CatalogId]) -> Vec<CurrentVersion> {
    let mut whole: BTreeMap<(String, CatalogId), i64> = newest_values(reported, mine)
        .into_iter()
        .map(|((secret, environment), version)| ((secret.to_owned(), environment), version))
        .collect();
    for gone in &answered.none {
        whole.remove(&(gone.secret.clone(), gone.environment));
    }
    for c in &answered.listed {
        whole.insert((c.secret.clone(), c.environment), c.version);
    }
    whole
        .into_iter()
        .map(|((secret, environment), version)| CurrentVersion { secret, environment, version })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn env(n: u128) -> CatalogId {
        CatalogId::from_uuid(Uuid::from_u128(n))
    }

    fn cv(secret: &str, environment: CatalogId, version: i64) -> CurrentVersion {
        CurrentVersion { secret: secret.into(), environment, version }
    }

    fn held(secret: &str, environment: CatalogId, version: i64, deactivated: bool) -> Reported<'_> {
        Reported { secret, environment, version, deactivated }
    }

    #[test]
    fn an_agent_holding_every_current_version_is_told_nothing_and_restores_them_all() {
        let prod = env(1);
        let current = vec![cv("api", prod, 2), cv("db", prod, 3)];
        let reported = [held("api", prod, 1, false), held("api", prod, 2, false), held("db", prod, 3, false)];
        let answer = answered(&current, &reported, &[prod]);
        assert_eq!(answer, Answered::default());
        assert_eq!(restored(&answer, &reported, &[prod]), current);
    }

    #[test]
    fn what_differs_from_the_report_is_listed_and_restored_exactly() {
        let (prod, dev, elsewhere) = (env(1), env(2), env(3));
        let current = vec![
            cv("api", prod, 5),   // the Agent holds 4: behind
            cv("cache", dev, 1),  // the Agent holds nothing there
            cv("db", prod, 3),    // held: omitted
            cv("queue", prod, 2), // its newest, 3, was deactivated: 2 is current
        ];
        let reported = [
            held("api", prod, 4, false),
            held("db", prod, 3, false),
            held("queue", prod, 3, false),
            held("queue", prod, 2, false),
            held("old", prod, 7, false), // deactivated by the API: nothing current
            held("gone", dev, 1, true),  // a tombstone: no value
            held("other", elsewhere, 9, false), // not an environment it holds
        ];
        let mine = [prod, dev];
        let answer = answered(&current, &reported, &mine);
        assert_eq!(answer.listed, vec![cv("api", prod, 5), cv("cache", dev, 1), cv("queue", prod, 2)]);
        assert_eq!(answer.none, vec![NoCurrent { secret: "old".into(), environment: prod }]);
        assert_eq!(restored(&answer, &reported, &mine), current);
    }
}
