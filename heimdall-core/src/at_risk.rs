//! When someone leaves: which secrets their reads put at risk, and what
//! clears a mark. Pure: the adapter loads the reads, the members who ever
//! had the reader's email, and each environment's current version, and
//! stores what [`marks`] returns in the transaction that loaded them.
//!
//! A read is attributed to a member by the email it carries *and* the time
//! it happened: to the member with that email who had joined by then and
//! was the last to do so. So a person removed and later added again (a new
//! member id, the same email) is two people, and the reads of one never
//! mark, or clear, on behalf of the other.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::ids::MemberId;

/// A read as the API holds it (from an Agent's access records).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    pub accessor: String,
    pub at: OffsetDateTime,
    pub secret: String,
    pub environment: String,
    pub version: i64,
}

/// A member's time in the organization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Membership {
    pub member: MemberId,
    pub email: String,
    pub joined: OffsetDateTime,
    pub removed: Option<OffsetDateTime>,
}

/// A secret put at risk in one environment by one removed member: the
/// versions they read that are still that environment's current one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    pub secret: String,
    pub environment: String,
    pub member: MemberId,
    pub email: String,
    pub versions: Vec<i64>,
}

/// Who made `read`: the member with its email who joined last, at or before it.
pub fn reader<'a>(read: &Read, memberships: &'a [Membership]) -> Option<&'a Membership> {
    memberships.iter().filter(|m| m.email == read.accessor && m.joined <= read.at).max_by_key(|m| m.joined)
}

/// The marks `reads` make: each read by a member who has been removed, of a
/// version that is still the current one of its environment (`current`:
/// the highest version number there; a deactivated version is still the
/// current one until a new one is written), marks that secret in that
/// environment. One mark per secret, environment and member.
pub fn marks(
    reads: &[Read],
    memberships: &[Membership],
    current: impl Fn(&str, &str) -> Option<i64>,
) -> Vec<Mark> {
    let mut found: BTreeMap<(String, String, MemberId), Mark> = BTreeMap::new();
    for read in reads {
        let Some(who) = reader(read, memberships).filter(|m| m.removed.is_some()) else { continue };
        if current(&read.secret, &read.environment) != Some(read.version) {
            continue;
        }
        let key = (read.secret.clone(), read.environment.clone(), who.member);
        let mark = found.entry(key).or_insert_with(|| Mark {
            secret: read.secret.clone(),
            environment: read.environment.clone(),
            member: who.member,
            email: who.email.clone(),
            versions: Vec::new(),
        });
        if !mark.versions.contains(&read.version) {
            mark.versions.push(read.version);
            mark.versions.sort_unstable();
        }
    }
    found.into_values().collect()
}

/// Whether a new version written in `written` clears a mark held in
/// `marked`: only in its own environment.
pub fn cleared_by_new_version(marked: &str, written: &str) -> bool {
    marked == written
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn at(minute: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000 + minute * 60).unwrap()
    }

    fn member(n: u128, email: &str, joined: i64, removed: Option<i64>) -> Membership {
        Membership {
            member: MemberId::from_uuid(Uuid::from_u128(n)),
            email: email.into(),
            joined: at(joined),
            removed: removed.map(at),
        }
    }

    fn read(who: &str, minute: i64, secret: &str, environment: &str, version: i64) -> Read {
        Read {
            accessor: who.into(),
            at: at(minute),
            secret: secret.into(),
            environment: environment.into(),
            version,
        }
    }

    #[test]
    fn a_removed_readers_current_versions_are_marked_in_each_environment() {
        let ana = member(1, "ana@example.com", 0, Some(100));
        let bo = member(2, "bo@example.com", 0, None);
        let current = |secret: &str, env: &str| match (secret, env) {
            ("db", "dev") => Some(2),
            ("db", "prod") => Some(5),
            ("api-key", "prod") => Some(3),
            _ => None,
        };
        let reads = [
            read("ana@example.com", 10, "db", "dev", 2),
            read("ana@example.com", 11, "db", "dev", 2),
            read("ana@example.com", 12, "db", "prod", 5),
            // Changed since she read it: not at risk.
            read("ana@example.com", 13, "api-key", "prod", 2),
            // Bo is still a member.
            read("bo@example.com", 14, "api-key", "prod", 3),
        ];
        let found = marks(&reads, &[ana.clone(), bo], current);
        let places: Vec<(&str, &str, &[i64])> = found
            .iter()
            .map(|m| (m.secret.as_str(), m.environment.as_str(), m.versions.as_slice()))
            .collect();
        assert_eq!(places, [("db", "dev", &[2][..]), ("db", "prod", &[5][..])]);
        assert!(found.iter().all(|m| m.member == ana.member && m.email == ana.email));
    }

    #[test]
    fn an_email_added_again_is_another_person() {
        // Ana left at minute 100 and came back at 200: a new member.
        let (before, after) =
            (member(1, "ana@example.com", 0, Some(100)), member(3, "ana@example.com", 200, None));
        let all = [before.clone(), after.clone()];
        let current = |_: &str, _: &str| Some(1);
        // Her reads after she came back are the new member's, who is not removed.
        assert!(marks(&[read("ana@example.com", 250, "db", "dev", 1)], &all, current).is_empty());
        // A read made before she left, reported late, is still the first member's.
        let late = marks(&[read("ana@example.com", 90, "db", "dev", 1)], &all, current);
        assert_eq!(late.iter().map(|m| m.member).collect::<Vec<_>>(), [before.member]);
        // A read between leaving and the Agent learning of it is still hers.
        let window = marks(&[read("ana@example.com", 101, "db", "dev", 1)], &all, current);
        assert_eq!(window.len(), 1);
        // Removing the second Ana marks only what the second Ana read.
        let removed_again = [before, Membership { removed: Some(at(300)), ..after.clone() }];
        let reads =
            [read("ana@example.com", 50, "db", "dev", 1), read("ana@example.com", 250, "db", "prod", 1)];
        let second = marks(&reads, &removed_again, current);
        let mine: Vec<_> =
            second.iter().filter(|m| m.member == after.member).map(|m| &m.environment).collect();
        assert_eq!(mine, ["prod"]);
        // Before anyone with that email joined: nobody's.
        assert!(reader(&read("ana@example.com", -5, "db", "dev", 1), &removed_again).is_none());
    }

    #[test]
    fn a_new_version_clears_only_its_own_environment() {
        assert!(cleared_by_new_version("prod", "prod"));
        assert!(!cleared_by_new_version("dev", "prod"));
    }
}
