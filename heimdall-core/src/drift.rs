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
        JobOperation::Destroy => None,
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
}
