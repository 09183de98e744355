//! Which state lock a new attempt of a job may take over.
//!
//! An attempt whose Agent died holding the state lock leaves it in the
//! bucket, and the next attempt fails on it unless it forces it. Forcing
//! another writer's lock would let two applies write one state, so a lock
//! is taken over only when it is provably a dead attempt's of a job of
//! this Resource (jobs of one Resource never run at once): the one it
//! reported (by ID), or one whose holder (`Who`, which Terraform writes as
//! `user@host`) is the one a dead attempt's Agent announced and whose
//! creation falls inside that attempt's lease. Anything else (a person's
//! `terraform` on the same state, a lock older than those attempts) is
//! left where it is, and the attempt fails on it.

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

/// How far the Agent's clock (which stamps `Created`) may be off the
/// API's (which stamps the attempts).
pub const CLOCK_SKEW: Duration = Duration::seconds(30);

/// A state lock, as Terraform describes it in a refusal ("Lock Info:").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockInfo {
    pub id: String,
    pub path: String,
    pub operation: String,
    pub who: String,
    pub created: Option<OffsetDateTime>,
}

impl LockInfo {
    /// The "Lock Info:" block of Terraform's "Error acquiring the state
    /// lock", or `None` when `text` has none.
    pub fn from_terraform_error(text: &str) -> Option<LockInfo> {
        let at = text.find("Lock Info:")?;
        let field = |name: &str| {
            text[at..].lines().skip(1).map(str::trim).find_map(|line| {
                let (key, value) = line.split_once(':')?;
                (key.trim() == name).then(|| value.trim().to_owned())
            })
        };
        let id = field("ID").filter(|id| !id.is_empty())?;
        Some(LockInfo {
            id,
            path: field("Path").unwrap_or_default(),
            operation: field("Operation").unwrap_or_default(),
            who: field("Who").unwrap_or_default(),
            created: field("Created").as_deref().and_then(parse_go_time),
        })
    }
}

/// Go's `time.Time.String()` form, which Terraform prints:
/// `2026-12-02 12:00:00.123456789 +0000 UTC` (fraction optional).
fn parse_go_time(text: &str) -> Option<OffsetDateTime> {
    let mut parts = text.split_whitespace();
    let (date, clock, offset) = (parts.next()?, parts.next()?, parts.next()?);
    let (clock, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    // RFC 3339 takes at most nine fraction digits, as Go writes.
    let fraction = if fraction.is_empty() { String::new() } else { format!(".{fraction}") };
    let offset = match offset.as_bytes() {
        [sign @ (b'+' | b'-'), rest @ ..] if rest.len() == 4 && rest.iter().all(u8::is_ascii_digit) => {
            format!("{}{}:{}", char::from(*sign), &offset[1..3], &offset[3..5])
        }
        _ => return None,
    };
    OffsetDateTime::parse(
        &format!("{date}T{clock}{fraction}{offset}"),
        &time::format_description::well_known::Rfc3339,
    )
    .ok()
}

/// One attempt of a job: when it began, when it ended (its lease ran out,
/// or its Agent reported), and how its Agent's Terraform names itself in a
/// lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub attempt: i64,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    /// `None` while the attempt has not ended (it cannot be, for a job
    /// claimed again; then the claim's time bounds it).
    #[serde(default, with = "time::serde::rfc3339::option", skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<OffsetDateTime>,
    /// Terraform's `Who` on that Agent (`user@host`), as it announced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_holder: Option<String>,
}

/// Whether `found` was made by `attempt`: its holder is the attempt's
/// Agent's, and it was made while the attempt ran (`now` bounds one still
/// running). A lock someone else holds while the attempt waits for it is
/// not the attempt's, so an attempt reports (and a later one forces) only
/// a lock this says it made.
pub fn made_by(found: &LockInfo, attempt: &Attempt, now: OffsetDateTime) -> bool {
    let Some(created) = found.created else {
        return false;
    };
    attempt.lock_holder.as_deref().is_some_and(|holder| !holder.is_empty() && holder == found.who)
        && created >= attempt.started_at - CLOCK_SKEW
        && created <= attempt.ended_at.unwrap_or(now) + CLOCK_SKEW
}

/// How many of a Resource's dead attempts (the most recent) a claim
/// carries: two jobs' worth, this one's and the one before it (which may
/// have run out of attempts with its lock left behind).
pub const DEAD_ATTEMPTS_KEPT: i64 = crate::queue::MAX_ATTEMPTS * 2;

/// What the new attempt does with the lock it found on its state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Takeover {
    /// Force exactly this lock: a dead attempt's.
    Force { id: String, why: String },
    /// Leave it: it is not provably a dead attempt's.
    Leave { why: String },
}

/// Decides over `found`, the lock on the job's state, given the lock a
/// dead attempt reported (`reported`), the Resource's dead attempts, and
/// `now` (the bound of an attempt that has no end yet).
pub fn takeover(
    found: &LockInfo,
    reported: Option<&str>,
    earlier: &[Attempt],
    now: OffsetDateTime,
) -> Takeover {
    if reported == Some(found.id.as_str()) {
        return Takeover::Force {
            id: found.id.clone(),
            why: "the lock an earlier attempt of this job reported holding".into(),
        };
    }
    if found.created.is_none() {
        return Takeover::Leave { why: format!("lock {} says nothing of when it was made", found.id) };
    }
    match earlier.iter().find(|a| made_by(found, a, now)) {
        Some(a) => Takeover::Force {
            id: found.id.clone(),
            why: format!("made by {} during attempt {}, whose Agent died", found.who, a.attempt),
        },
        None => Takeover::Leave {
            why: format!(
                "lock {} (held by {}) was not made by a dead attempt of this Resource's jobs; it is left for its holder",
                found.id, found.who
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const REFUSAL: &str = "\
Error: Error acquiring the state lock

Error message: operation error S3: PutObject, https response error StatusCode: 412
Lock Info:
  ID:        8c5f2a9e-1b7d-4c1e-9a0f-3e2d1c0b9a87
  Path:      states/heimdall/r-1.tfstate
  Operation: OperationTypeApply
  Who:       heimdall@agent-host
  Version:   1.9.8
  Created:   2026-12-02 12:00:05.123456789 +0000 UTC
  Info:

Terraform acquires a state lock to protect the state from being written
";

    fn attempt(n: i64, start: OffsetDateTime, end: Option<OffsetDateTime>, who: &str) -> Attempt {
        Attempt { attempt: n, started_at: start, ended_at: end, lock_holder: Some(who.into()) }
    }

    #[test]
    fn reads_terraforms_lock_info() {
        let info = LockInfo::from_terraform_error(REFUSAL).unwrap();
        assert_eq!(info.id, "8c5f2a9e-1b7d-4c1e-9a0f-3e2d1c0b9a87");
        assert_eq!(info.path, "states/heimdall/r-1.tfstate");
        assert_eq!(info.operation, "OperationTypeApply");
        assert_eq!(info.who, "heimdall@agent-host");
        assert_eq!(info.created, Some(datetime!(2026-12-02 12:00:05.123456789 UTC)));
        assert_eq!(LockInfo::from_terraform_error("Error: something else"), None);
        let other_zone = REFUSAL.replace("+0000 UTC", "-0130 XYZ").replace(".123456789", "");
        let created = LockInfo::from_terraform_error(&other_zone).unwrap().created;
        assert_eq!(created, Some(datetime!(2026-12-02 13:30:05 UTC)));
        let unreadable = REFUSAL.replace("2026-12-02 12:00:05.123456789 +0000 UTC", "yesterday");
        assert_eq!(LockInfo::from_terraform_error(&unreadable).unwrap().created, None);
    }

    #[test]
    fn only_a_dead_attempts_lock_is_forced() {
        let found = LockInfo::from_terraform_error(REFUSAL).unwrap();
        let now = datetime!(2026-12-02 12:10 UTC);
        let window = attempt(
            1,
            datetime!(2026-12-02 12:00 UTC),
            Some(datetime!(2026-12-02 12:00:35 UTC)),
            "heimdall@agent-host",
        );
        assert!(matches!(takeover(&found, None, std::slice::from_ref(&window), now), Takeover::Force { .. }));
        // The reported ID is enough, whoever holds it.
        let elsewhere = attempt(1, window.started_at, window.ended_at, "someone@else");
        assert!(matches!(
            takeover(&found, Some(found.id.as_str()), std::slice::from_ref(&elsewhere), now),
            Takeover::Force { .. }
        ));
        // Another holder, a lock older or younger than every attempt, a
        // holder the Agent never announced, no attempt at all: left.
        assert!(matches!(takeover(&found, Some("other-id"), &[elsewhere], now), Takeover::Leave { .. }));
        let before = attempt(1, datetime!(2026-12-02 12:01 UTC), None, "heimdall@agent-host");
        assert!(matches!(takeover(&found, None, &[before], now), Takeover::Leave { .. }));
        let ended = attempt(
            1,
            datetime!(2026-12-02 11:50 UTC),
            Some(datetime!(2026-12-02 11:59 UTC)),
            "heimdall@agent-host",
        );
        assert!(matches!(takeover(&found, None, std::slice::from_ref(&ended), now), Takeover::Leave { .. }));
        let silent = Attempt { lock_holder: None, ..window.clone() };
        assert!(matches!(takeover(&found, None, &[silent], now), Takeover::Leave { .. }));
        let empty = Attempt { lock_holder: Some(String::new()), ..window.clone() };
        let nobody = LockInfo { who: String::new(), ..found.clone() };
        assert!(matches!(takeover(&nobody, None, &[empty], now), Takeover::Leave { .. }));
        assert!(matches!(takeover(&found, None, &[], now), Takeover::Leave { .. }));
        // Any of the earlier attempts may be the one that died holding it;
        // the clock skew allowance is the edge.
        let skewed = attempt(2, datetime!(2026-12-02 12:00:35 UTC), None, "heimdall@agent-host");
        assert!(matches!(takeover(&found, None, &[ended, skewed], now), Takeover::Force { .. }));
        let undated = LockInfo { created: None, ..found };
        assert!(matches!(takeover(&undated, None, &[window], now), Takeover::Leave { .. }));
    }

    #[test]
    fn an_attempt_owns_only_a_lock_it_made_while_it_ran() {
        let found = LockInfo::from_terraform_error(REFUSAL).unwrap();
        let running = |start, holder: &str| Attempt {
            attempt: 2,
            started_at: start,
            ended_at: None,
            lock_holder: Some(holder.into()),
        };
        let now = datetime!(2026-12-02 12:00:08 UTC);
        assert!(made_by(&found, &running(datetime!(2026-12-02 12:00:03 UTC), "heimdall@agent-host"), now));
        // Waiting on a lock made well before it began, or by someone else:
        // not its own, so never reported as its own.
        assert!(!made_by(&found, &running(datetime!(2026-12-02 12:01 UTC), "heimdall@agent-host"), now));
        assert!(!made_by(&found, &running(datetime!(2026-12-02 12:00:03 UTC), "alice@laptop"), now));
    }
}
