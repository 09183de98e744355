//! Following a Resource or a job until it settles.

use std::time::{Duration, Instant};

use heimdall_core::ids::JobId;
use heimdall_core::wire::{Job, JobStatus, Resource, ResourceStatus};

use crate::{Client, Error, Result};

/// First pause between polls; each pause is 1.5 times the last, up to [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(500);
const MAX_POLL: Duration = Duration::from_secs(2);
/// How often a waiting caller hears from [`wait_for_resource`] between polls
/// (a spinner moves at this pace).
pub const TICK: Duration = Duration::from_millis(100);

/// Work is still going on: an Agent has (or will have) a job for it.
/// Everything else, `pending_approval` included, is where a wait ends.
pub fn in_progress(status: ResourceStatus) -> bool {
    matches!(status, ResourceStatus::Queued | ResourceStatus::Applying | ResourceStatus::Deleting)
}

/// How a wait ended.
#[derive(Debug)]
pub enum Waited<T> {
    /// It settled: this is how it ended.
    Settled(T),
    /// The time ran out first; this is how it was last seen (its work goes on).
    TimedOut(T),
}

/// Where a wait stands, for a progress line.
#[derive(Debug)]
pub struct JobProgress<'a> {
    pub resource: &'a Resource,
    /// The last poll got no answer (the API restarting); polling goes on.
    pub api_unreachable: bool,
    pub elapsed: Duration,
}

/// Polls a Resource until it is no longer [`in_progress`] or `timeout`
/// passes, telling `progress` where it stands every [`TICK`]. A poll that
/// gets no answer (the API restarting) is retried until the deadline; an
/// answer that is an error ends the wait with it.
pub async fn wait_for_resource(
    api: &Client,
    start: Resource,
    timeout: Duration,
    mut progress: impl FnMut(JobProgress<'_>),
) -> Result<Waited<Resource>> {
    if !in_progress(start.status) {
        return Ok(Waited::Settled(start));
    }
    let began = Instant::now();
    let deadline = began + timeout;
    let id = start.id.to_string();
    let mut last = start;
    let mut api_unreachable = false;
    let mut pause = FIRST_POLL;
    loop {
        progress(JobProgress { resource: &last, api_unreachable, elapsed: began.elapsed() });
        let now = Instant::now();
        if now >= deadline {
            return Ok(Waited::TimedOut(last));
        }
        let until = (now + pause).min(deadline);
        while Instant::now() < until {
            tokio::time::sleep(TICK.min(until.saturating_duration_since(Instant::now()))).await;
            progress(JobProgress { resource: &last, api_unreachable, elapsed: began.elapsed() });
        }
        pause = (pause * 3 / 2).min(MAX_POLL);
        // A slow answer must not carry the wait past its deadline.
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(answer) = tokio::time::timeout(left, api.get_resource(&id)).await else {
            continue;
        };
        match answer {
            Ok(detail) => {
                api_unreachable = false;
                last = detail.resource;
                if !in_progress(last.status) {
                    return Ok(Waited::Settled(last));
                }
            }
            Err(Error::Transport(_)) => api_unreachable = true,
            Err(err) => return Err(err),
        }
    }
}

/// Polls a job until it is completed, failed or cancelled, or `timeout`
/// passes.
pub async fn wait_for_job(api: &Client, job: JobId, timeout: Duration) -> Result<Waited<Job>> {
    let deadline = Instant::now() + timeout;
    let mut pause = FIRST_POLL;
    loop {
        let state = api.get_job(job).await?;
        if !matches!(state.status, JobStatus::Queued | JobStatus::Running) {
            return Ok(Waited::Settled(state));
        }
        if Instant::now() >= deadline {
            return Ok(Waited::TimedOut(state));
        }
        tokio::time::sleep(pause.min(deadline.saturating_duration_since(Instant::now()))).await;
        pause = (pause * 3 / 2).min(MAX_POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_end_anywhere_but_queued_applying_deleting() {
        let waiting: Vec<&str> =
            ResourceStatus::ALL.iter().filter(|s| in_progress(**s)).map(|s| s.as_str()).collect();
        assert_eq!(waiting, ["queued", "applying", "deleting"]);
        assert!(!in_progress(ResourceStatus::PendingApproval));
    }
}
