//! Job queue rules: attempts, leases, what the reaper does with a job whose
//! Agent went silent, and the job log cap. The SQL that applies them lives
//! in the API's store; the decisions live here.

pub mod service;

use time::{Duration, OffsetDateTime};

use crate::infra::{JobOperation, JobStatus, ResourceStatus};

/// A job is tried at most this many times.
pub const MAX_ATTEMPTS: i64 = 3;

/// How long a claim lasts without a heartbeat. Agents heartbeat every
/// `LEASE / 3`, so two lost heartbeats do not lose the job.
pub const LEASE: Duration = Duration::seconds(30);

/// How often an Agent renews its lease while a job runs.
pub const HEARTBEAT_EVERY: Duration = Duration::seconds(LEASE.whole_seconds() / 3);

/// How soon an Agent tries again after a renewal failed.
pub const HEARTBEAT_RETRY: Duration = Duration::seconds(2);

/// An Agent that has not renewed its lease for this long, counted from
/// when it sent the last renewal the API accepted, stops its run itself.
/// The API hands the job on only [`LEASE`] after it recorded that
/// renewal, which is later than it was sent: a partitioned Agent's
/// Terraform is gone a whole heartbeat before another attempt can start.
pub const RUN_STOPS_AFTER: Duration =
    Duration::seconds(LEASE.whole_seconds() - HEARTBEAT_EVERY.whole_seconds());

/// Whether a run may go on, `since_renewal` after the Agent sent the last
/// renewal of its lease that the API accepted (or its claim).
pub fn run_may_continue(since_renewal: Duration) -> bool {
    since_renewal < RUN_STOPS_AFTER
}

/// Job output kept per job.
pub const MAX_LOG_BYTES: usize = 1024 * 1024;

/// Appended once, when the cap is reached.
pub const TRUNCATION_MARKER: &str = "\n[heimdall: job log truncated at 1 MiB; later output was dropped]\n";

/// What the reaper does with a running job whose lease expired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReapDecision {
    /// Put it back in the queue for another attempt.
    Requeue,
    /// The last attempt is used: fail the job with this reason.
    Fail(String),
}

pub fn reap_decision(attempts: i64, max_attempts: i64, lease_expired_at: OffsetDateTime) -> ReapDecision {
    if attempts >= max_attempts {
        ReapDecision::Fail(format!(
            "attempt {attempts}/{max_attempts} lost its Agent (lease expired at {}); no attempts left",
            lease_expired_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
        ))
    } else {
        ReapDecision::Requeue
    }
}

/// After a failed run: retry if attempts remain.
pub fn after_failure(attempts: i64, max_attempts: i64, retryable: bool) -> JobStatus {
    if retryable && attempts < max_attempts {
        JobStatus::Queued
    } else {
        JobStatus::Failed
    }
}

/// The Resource status that follows a job's state.
pub fn resource_status_for(operation: JobOperation, status: JobStatus) -> Option<ResourceStatus> {
    use JobOperation::*;
    use JobStatus::*;
    match (operation, status) {
        (Apply | Import, Queued) => Some(ResourceStatus::Queued),
        (Apply | Import, Running) => Some(ResourceStatus::Applying),
        (Apply | Import, Completed) => Some(ResourceStatus::Provisioned),
        (Apply | Import, Failed) => Some(ResourceStatus::Failed),
        (Destroy, Queued | Running) => Some(ResourceStatus::Deleting),
        (Destroy, Completed) => Some(ResourceStatus::Deleted),
        (Destroy, Failed) => Some(ResourceStatus::Failed),
        // A drift check moves no status: it marks the Resource (`drift`).
        // A plan job runs while its revision waits for approval, which
        // the revision itself says (`resources::settle`).
        (DriftCheck | Plan, _) | (_, Cancelled) => None,
    }
}

/// How much of `chunk` fits in a log that holds `current` bytes, and
/// whether the truncation marker must be appended now. Cuts on a UTF-8
/// character boundary.
pub fn log_append(current: usize, already_truncated: bool, chunk: &str) -> (&str, bool) {
    if already_truncated {
        return ("", false);
    }
    let room = MAX_LOG_BYTES.saturating_sub(current);
    if chunk.len() <= room {
        return (chunk, false);
    }
    let mut cut = room;
    while cut > 0 && !chunk.is_char_boundary(cut) {
        cut -= 1;
    }
    (&chunk[..cut], true)
}

/// The lease's new expiry after a claim or heartbeat at `now`.
pub fn lease_until(now: OffsetDateTime) -> OffsetDateTime {
    now + LEASE
}

/// Which end of the job list comes first (`GET /v1/jobs?order=`): by
/// when each job was queued, then by id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobOrder {
    #[default]
    Oldest,
    Newest,
}

impl JobOrder {
    fn is_oldest(&self) -> bool {
        *self == Self::Oldest
    }
}

/// Where the next page of `GET /v1/jobs` starts: after this job, in the
/// list's order. The order is part of the cursor, so that a cursor of one
/// order is never read in the other (it would skip or repeat jobs).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobCursor {
    /// Microseconds since the epoch.
    pub queued_at: i64,
    pub id: crate::ids::JobId,
    /// Absent in cursors given before newest-first existed: oldest first.
    #[serde(default, skip_serializing_if = "JobOrder::is_oldest")]
    pub order: JobOrder,
}

impl JobCursor {
    pub fn after(job: &crate::infra::Job, order: JobOrder) -> Self {
        let micros = job.queued_at.unix_timestamp_nanos() / 1000;
        Self { queued_at: i64::try_from(micros).unwrap_or(i64::MAX), id: job.id, order }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reaper_requeues_until_the_last_attempt() {
        let t = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        assert_eq!(reap_decision(1, 3, t), ReapDecision::Requeue);
        assert_eq!(reap_decision(2, 3, t), ReapDecision::Requeue);
        assert!(matches!(reap_decision(3, 3, t), ReapDecision::Fail(r) if r.contains("3/3")));
    }

    #[test]
    fn a_cut_off_run_stops_a_heartbeat_before_its_job_can_be_handed_on() {
        // One lost heartbeat, and the retries after it, keep the run.
        assert!(run_may_continue(Duration::ZERO));
        assert!(run_may_continue(HEARTBEAT_EVERY + HEARTBEAT_RETRY * 4));
        assert!(!run_may_continue(RUN_STOPS_AFTER));
        assert!(!run_may_continue(LEASE));
        // The API hands the job on at the earliest LEASE after the renewal
        // was sent: the run is stopped a whole heartbeat before that.
        let sent = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        assert!(sent + RUN_STOPS_AFTER + HEARTBEAT_EVERY <= lease_until(sent));
        assert!(HEARTBEAT_RETRY < HEARTBEAT_EVERY);
    }

    #[test]
    fn failures_retry_while_attempts_remain() {
        assert_eq!(after_failure(1, 3, true), JobStatus::Queued);
        assert_eq!(after_failure(3, 3, true), JobStatus::Failed);
        assert_eq!(after_failure(1, 3, false), JobStatus::Failed);
    }

    #[test]
    fn log_cap_cuts_on_a_char_boundary_once() {
        let (taken, truncate) = log_append(MAX_LOG_BYTES - 1, false, "é");
        assert_eq!((taken, truncate), ("", true));
        let (taken, truncate) = log_append(MAX_LOG_BYTES - 3, false, "abcdef");
        assert_eq!((taken, truncate), ("abc", true));
        assert_eq!(log_append(0, false, "abc"), ("abc", false));
        assert_eq!(log_append(10, true, "abc"), ("", false));
    }

    #[test]
    fn resource_follows_jobs() {
        assert_eq!(
            resource_status_for(JobOperation::Apply, JobStatus::Completed),
            Some(ResourceStatus::Provisioned)
        );
        assert_eq!(
            resource_status_for(JobOperation::Destroy, JobStatus::Completed),
            Some(ResourceStatus::Deleted)
        );
        assert_eq!(resource_status_for(JobOperation::Apply, JobStatus::Cancelled), None);
    }
}
