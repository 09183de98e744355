//! Drift: what exists no longer matches what Heimdall applied. A drift
//! check is a plan job, never applied; its result marks the Resource, and
//! a clean check or an apply of the revision clears the mark.

use serde_json::Value;
use time::OffsetDateTime;

use crate::error::{ApiError, ErrorCode};
use crate::infra::{Job, JobOperation, JobStatus, Resource, ResourceStatus};

/// The key of a drift check's result in the outputs its Agent reports.
pub const DRIFTED: &str = "drifted";

/// The Agent's report for a drift check: `{"drifted": bool}`.
pub fn report(drifted: bool) -> Value {
    serde_json::json!({ DRIFTED: drifted })
}

/// The shortest schedule: a check is a full refreshing plan.
pub const MIN_EVERY_SECONDS: i64 = 10;

/// `30s`, `15m`, `24h`, `7d` (one number, one unit) as seconds, at least
/// [`MIN_EVERY_SECONDS`]; `INVALID_INPUT` otherwise.
pub fn parse_every(text: &str) -> Result<i64, ApiError> {
    let bad = || {
        ApiError::invalid_input(format!(
            "drift_check_every must be a number and a unit (s, m, h, d), e.g. 24h, of at least {MIN_EVERY_SECONDS}s"
        ))
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: i64 = number.parse().map_err(|_| bad())?;
    let unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    let seconds = number.checked_mul(unit).filter(|s| (MIN_EVERY_SECONDS..=366 * 86_400).contains(s));
    seconds.ok_or_else(bad)
}

/// The schedule of a Resource: its schema's or its account's, the shorter
/// when both are set (either one may ask for checks; neither can make the
/// other's less frequent).
pub fn every(schema_seconds: Option<i64>, account_seconds: Option<i64>) -> Option<i64> {
    match (schema_seconds, account_seconds) {
        (Some(schema), Some(account)) => Some(schema.min(account)),
        (schema, account) => schema.or(account),
    }
}

/// Whether a scheduled check is due: `every` seconds after the Resource's
/// last check or apply (queued or finished), or now if it never had one.
pub fn due(every_seconds: i64, last: Option<OffsetDateTime>, now: OffsetDateTime) -> bool {
    last.is_none_or(|last| now - last >= time::Duration::seconds(every_seconds))
}

/// A check may run on a `provisioned` Resource that no job is working on.
pub fn check_allowed(resource: &Resource, jobs: &[Job]) -> Result<(), ApiError> {
    if resource.status != ResourceStatus::Provisioned {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("only a provisioned Resource can be checked for drift; this one is {}", resource.status),
        ));
    }
    if let Some(busy) = jobs.iter().find(|j| matches!(j.status, JobStatus::Queued | JobStatus::Running)) {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "job {} ({}) is {} for this Resource; check again once it ends",
                busy.id, busy.operation, busy.status
            ),
        ));
    }
    Ok(())
}

/// What a finished job does to the mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Keep,
    /// Marked now (it was not): write `resource.drifted`.
    Set(OffsetDateTime),
    /// Cleared (it was marked): write `resource.drift_cleared`.
    Clear,
}

/// What a job reports about the Resource it ran for.
#[derive(Clone, Copy, Debug)]
pub struct Finished<'a> {
    pub operation: JobOperation,
    /// The revision the job ran, and the Resource's current one.
    pub revision: i64,
    pub current_revision: i64,
    /// Where the Resource stands now: a check says nothing about one that
    /// is no longer `provisioned` (being changed or destroyed).
    pub current_status: ResourceStatus,
    pub outputs: &'a Value,
}

/// The mark after `job` completed, on a Resource marked `since`. A check
/// that found changes marks it (the first time only); a clean check or a
/// completed apply or import clears it. A check of a revision that is no
/// longer current, or of a Resource no longer provisioned, says nothing.
pub fn after(since: Option<OffsetDateTime>, job: Finished<'_>, now: OffsetDateTime) -> Mark {
    let found = match job.operation {
        JobOperation::DriftCheck
            if job.revision != job.current_revision || job.current_status != ResourceStatus::Provisioned =>
        {
            None
        }
        JobOperation::DriftCheck => job.outputs.get(DRIFTED).and_then(Value::as_bool),
        JobOperation::Apply | JobOperation::Import => Some(false),
        JobOperation::Destroy | JobOperation::Plan => None,
    };
    match (since, found) {
        (None, Some(true)) => Mark::Set(now),
        (Some(_), Some(false)) => Mark::Clear,
        _ => Mark::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job<'a>(operation: JobOperation, revision: i64, outputs: &'a Value) -> Finished<'a> {
        Finished {
            operation,
            revision,
            current_revision: 2,
            current_status: ResourceStatus::Provisioned,
            outputs,
        }
    }

    #[test]
    fn a_check_marks_once_and_a_clean_check_or_an_apply_clears() {
        let (t0, t1) = (OffsetDateTime::UNIX_EPOCH, OffsetDateTime::UNIX_EPOCH + time::Duration::hours(1));
        let (yes, no, none) = (report(true), report(false), serde_json::json!({}));
        assert_eq!(after(None, job(JobOperation::DriftCheck, 2, &yes), t0), Mark::Set(t0));
        assert_eq!(
            after(Some(t0), job(JobOperation::DriftCheck, 2, &yes), t1),
            Mark::Keep,
            "since the first"
        );
        assert_eq!(after(Some(t0), job(JobOperation::DriftCheck, 2, &no), t1), Mark::Clear);
        assert_eq!(after(None, job(JobOperation::DriftCheck, 2, &no), t1), Mark::Keep);
        assert_eq!(after(Some(t0), job(JobOperation::Apply, 2, &none), t1), Mark::Clear);
        assert_eq!(after(Some(t0), job(JobOperation::Import, 2, &none), t1), Mark::Clear);
        assert_eq!(after(Some(t0), job(JobOperation::Destroy, 2, &none), t1), Mark::Keep);
        // A report without the key, or about an older revision, decides nothing.
        assert_eq!(after(None, job(JobOperation::DriftCheck, 2, &none), t1), Mark::Keep);
        assert_eq!(after(None, job(JobOperation::DriftCheck, 1, &yes), t1), Mark::Keep);
        let deleted =
            Finished { current_status: ResourceStatus::Deleted, ..job(JobOperation::DriftCheck, 2, &yes) };
        assert_eq!(after(None, deleted, t1), Mark::Keep);
    }

    #[test]
    fn schedules_parse_strictly_and_fall_due_after_the_last_check() {
        assert_eq!(parse_every("24h").unwrap(), 86_400);
        assert_eq!(parse_every("15m").unwrap(), 900);
        assert_eq!(parse_every("10s").unwrap(), 10);
        for bad in ["", "24", "h", "5s", "1.5h", "24 h", "-1h", "400d", "99999999999999999999d", "1w"] {
            assert!(parse_every(bad).is_err(), "{bad:?}");
        }
        let t0 = OffsetDateTime::UNIX_EPOCH;
        assert!(due(60, None, t0));
        assert!(!due(60, Some(t0), t0 + time::Duration::seconds(59)));
        assert!(due(60, Some(t0), t0 + time::Duration::seconds(60)));
    }

    #[test]
    fn the_shorter_of_the_schema_and_account_schedules_applies() {
        assert_eq!(every(None, None), None);
        assert_eq!([every(Some(60), None), every(None, Some(60))], [Some(60), Some(60)]);
        assert_eq!([every(Some(60), Some(3600)), every(Some(3600), Some(60))], [Some(60), Some(60)]);
    }
}
