//! Retention: how long a version replaced by a newer one stays in the
//! Agents' stores.
//!
//! The writer of a version decides how long the one it replaces stays
//! readable (`secret set --keep-previous 1h`; a database rotation keeps
//! the previous password for its grace; default: not at all). Once the
//! current version has been written for that long, every Agent that
//! still holds an older value erases it (its ciphertext goes, a tombstone
//! says "superseded") and answers `410 VERSION_SUPERSEDED` for it.
//!
//! An overlap asked for by an earlier writer is not cut short by a later
//! one: a version stays until the latest end of the overlaps asked for by
//! the versions written after it, up to the current one.
//!
//! A version written before versions were erased at all (a release before
//! this rule) keeps the promise it was written under: the version it
//! replaced stays, until the secret is deleted or the version deactivated.
//! An upgrade erases nothing by itself.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use crate::current::{CurrentVersion, Held};
use crate::error::ApiError;
use crate::ids::{AgentId, CatalogId};

/// The longest overlap a writer may ask for.
pub const MAX_KEEP_PREVIOUS: Duration = Duration::days(30);

/// `--keep-previous`: `0` (the default: none), or a number and s, m, h or
/// d, at most [`MAX_KEEP_PREVIOUS`].
pub fn parse_keep_previous(text: &str) -> Result<Duration, ApiError> {
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    // The message names the field, never what was sent (errors echo no input).
    let keep = crate::dbusers::parse_period(text).map_err(|_| {
        ApiError::invalid_input(
            "keep_previous (--keep-previous): give 0, or a number and s, m, h or d (e.g. 1h)",
        )
    })?;
    if keep > MAX_KEEP_PREVIOUS {
        return Err(ApiError::invalid_input(format!(
            "keep_previous (--keep-previous): at most {} days",
            MAX_KEEP_PREVIOUS.whole_days()
        )));
    }
    Ok(keep)
}

/// The stored `keep_previous_seconds` of a version written before versions
/// were erased (set by the migration that brought this rule to an existing
/// database): the versions before it are kept.
pub const KEEPS_PREVIOUS: i64 = -1;

/// A version as numbered at the API: when, and the overlap its writer
/// asked for the versions before it (`None`: kept, [`KEEPS_PREVIOUS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overlap {
    pub version: i64,
    pub created_at: OffsetDateTime,
    pub keep_previous: Option<Duration>,
}

impl Overlap {
    /// From the stored row: a negative `keep_previous_seconds` is
    /// [`KEEPS_PREVIOUS`].
    pub fn stored(version: i64, created_at: OffsetDateTime, keep_previous_seconds: i64) -> Self {
        let keep_previous = (keep_previous_seconds >= 0).then(|| Duration::seconds(keep_previous_seconds));
        Overlap { version, created_at, keep_previous }
    }
}

/// Until when `version`, below `current`, is kept: the latest end of the
/// overlaps of the versions after it up to `current` (`None`: none of them
/// is known, or one of them keeps it, so nothing says it may go).
pub fn kept_until(overlaps: &[Overlap], version: i64, current: i64) -> Option<OffsetDateTime> {
    let mut until = None;
    for o in overlaps.iter().filter(|o| o.version > version && o.version <= current) {
        until = until.max(Some(o.created_at + o.keep_previous?));
    }
    until
}

/// A version an Agent is told to erase.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Superseded {
    pub secret: String,
    pub environment: CatalogId,
    pub version: i64,
}

/// The values `agent` reported holding (not tombstones) that are below the
/// current version of their secret and past their overlap at `now`: what
/// it erases. `overlaps` holds each (secret, environment)'s versions.
pub fn to_erase(
    agent: AgentId,
    current: &[CurrentVersion],
    held: &[Held<'_>],
    overlaps: &BTreeMap<(String, CatalogId), Vec<Overlap>>,
    now: OffsetDateTime,
) -> Vec<Superseded> {
    let current = newest(current);
    held.iter()
        .filter(|h| h.agent == agent && !h.deactivated)
        .filter_map(|h| {
            let newest = *current.get(&(h.secret, h.environment))?;
            if h.version >= newest {
                return None;
            }
            let versions = overlaps.get(&(h.secret.to_owned(), h.environment))?;
            let until = kept_until(versions, h.version, newest)?;
            (now >= until).then(|| Superseded {
                secret: h.secret.to_owned(),
                environment: h.environment,
                version: h.version,
            })
        })
        .collect()
}

/// Of `erase`, those a newer current version in `current` replaced: an
/// Agent erases nothing else, whatever an answer asks (a value that is
/// the newest it knows is never erased as superseded).
pub fn replaced<'a>(current: &[CurrentVersion], erase: &'a [Superseded]) -> Vec<&'a Superseded> {
    let current = newest(current);
    erase
        .iter()
        .filter(|s| {
            current.get(&(s.secret.as_str(), s.environment)).is_some_and(|newest| s.version < *newest)
        })
        .collect()
}

fn newest(current: &[CurrentVersion]) -> BTreeMap<(&str, CatalogId), i64> {
    current.iter().map(|c| ((c.secret.as_str(), c.environment), c.version)).collect()
}

/// The (secret, environment) pairs whose versions [`to_erase`] needs:
/// those where `agent` holds a value below the current one. Usually none,
/// so the adapter loads nothing.
pub fn candidates<'a>(
    agent: AgentId,
    current: &[CurrentVersion],
    held: &[Held<'a>],
) -> Vec<(&'a str, CatalogId)> {
    // Looked up, not scanned: an Agent may hold tens of thousands.
    let current = newest(current);
    let mut wanted: Vec<(&str, CatalogId)> = held
        .iter()
        .filter(|h| h.agent == agent && !h.deactivated)
        .filter(|h| current.get(&(h.secret, h.environment)).is_some_and(|newest| h.version < *newest))
        .map(|h| (h.secret, h.environment))
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    wanted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;
    use uuid::Uuid;

    fn at(seconds: i64) -> OffsetDateTime {
        OffsetDateTime::UNIX_EPOCH + Duration::seconds(seconds)
    }

    fn overlap(version: i64, created: i64, keep: i64) -> Overlap {
        Overlap::stored(version, at(created), keep)
    }

    #[test]
    fn keep_previous_is_zero_or_a_bounded_period() {
        assert_eq!(parse_keep_previous("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_keep_previous("90m").unwrap(), Duration::minutes(90));
        assert_eq!(parse_keep_previous("30d").unwrap(), MAX_KEEP_PREVIOUS);
        for bad in ["31d", "-1h", "1y", "", "h", "0s"] {
            assert_eq!(parse_keep_previous(bad).unwrap_err().code, ErrorCode::InvalidInput, "{bad}");
        }
    }

    #[test]
    fn a_version_is_kept_until_the_latest_overlap_asked_after_it() {
        // v2 kept v1 for an hour; v3 asked for nothing.
        let all = [overlap(1, 0, 0), overlap(2, 100, 3600), overlap(3, 200, 0)];
        assert_eq!(kept_until(&all, 2, 3), Some(at(200)), "v2 goes as soon as v3 is current");
        assert_eq!(kept_until(&all, 1, 3), Some(at(3700)), "v3 does not cut v1's hour short");
        assert_eq!(kept_until(&all, 1, 2), Some(at(3700)));
        assert_eq!(kept_until(&all, 3, 3), None, "the current version is not superseded");
        assert_eq!(kept_until(&[], 1, 3), None, "unknown: nothing says it may go");
    }

    #[test]
    fn a_version_written_before_retention_keeps_the_ones_before_it() {
        // v2 and v3 came from a release that kept every version; v4 is new
        // and asks for nothing.
        let k = KEEPS_PREVIOUS;
        let all = [overlap(1, 0, k), overlap(2, 100, k), overlap(3, 200, k), overlap(4, 300, 0)];
        assert_eq!(kept_until(&all, 1, 4), None, "v2's promise keeps v1");
        assert_eq!(kept_until(&all, 2, 4), None, "v3's promise keeps v2");
        assert_eq!(kept_until(&all, 3, 4), Some(at(300)), "v4 asked nothing: v3 goes");
        assert_eq!(kept_until(&all, 2, 3), None);
    }

    #[test]
    fn an_agent_erases_only_its_values_below_current_past_their_overlap() {
        let (me, other) = (AgentId::from_uuid(Uuid::new_v4()), AgentId::from_uuid(Uuid::new_v4()));
        let env = CatalogId::from_uuid(Uuid::new_v4());
        let held = |agent, secret, version, deactivated| Held {
            agent,
            secret,
            environment: env,
            version,
            deactivated,
            since: at(0),
        };
        let current = [
            CurrentVersion { secret: "db".into(), environment: env, version: 3 },
            CurrentVersion { secret: "api".into(), environment: env, version: 2 },
        ];
        let all = [
            held(me, "db", 1, false),
            held(me, "db", 2, true), // a tombstone already
            held(me, "db", 3, false),
            held(other, "db", 1, false),
            held(me, "api", 1, false),
            held(me, "api", 2, false),
            held(me, "gone", 1, false), // no current version: nothing to erase against
        ];
        let overlaps = BTreeMap::from([
            (("db".to_owned(), env), vec![overlap(1, 0, 0), overlap(2, 10, 0), overlap(3, 20, 0)]),
            (("api".to_owned(), env), vec![overlap(1, 0, 0), overlap(2, 10, 60)]),
        ]);
        assert_eq!(candidates(me, &current, &all), vec![("api", env), ("db", env)]);
        let erase = to_erase(me, &current, &all, &overlaps, at(30));
        assert_eq!(erase, vec![Superseded { secret: "db".into(), environment: env, version: 1 }]);
        let later = to_erase(me, &current, &all, &overlaps, at(70));
        assert_eq!(later.len(), 2, "api v1 goes once v2's minute is over: {later:?}");
        assert!(to_erase(me, &current, &all, &BTreeMap::new(), at(70)).is_empty(), "unknown versions: kept");
    }

    #[test]
    fn an_agent_erases_nothing_its_answer_does_not_show_replaced() {
        let env = CatalogId::from_uuid(Uuid::new_v4());
        let gone = |secret: &str, version| Superseded { secret: secret.into(), environment: env, version };
        let current = [CurrentVersion { secret: "db".into(), environment: env, version: 3 }];
        let asked = [gone("db", 2), gone("db", 3), gone("db", 4), gone("api", 1)];
        // The current version itself, a newer one, a secret with no current
        // version: kept, whatever the answer asks.
        assert_eq!(replaced(&current, &asked), vec![&gone("db", 2)]);
    }
}
