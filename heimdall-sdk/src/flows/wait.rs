//! Following a Resource or a job until it settles.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use heimdall_core::ids::JobId;
use heimdall_wire::{Job, JobStatus, Resource, ResourceDetail, ResourceStatus};

use crate::{Client, Error, Result};

/// First pause between polls (of a job, or of an API without long polls,
/// or one that did not answer); each pause is 1.5 times the last, up to [`MAX_POLL`].
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

/// Follows a Resource until it is no longer [`in_progress`] or `timeout`
/// passes, telling `progress` where it stands every [`TICK`]. Each request
/// is a long poll (the API answers the moment the status changes), so the
/// wait ends as the job does. A request that gets no answer (the API
/// restarting) is retried until the deadline; an answer that is an error
/// ends the wait with it.
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
        let asked = Instant::now();
        if asked >= deadline {
            return Ok(Waited::TimedOut(last));
        }
        let left = deadline - asked;
        let wait = left.min(Duration::from_secs(crate::resources::MAX_LONG_POLL_SECONDS));
        // The API's shortest long poll is a second: with less left, a plain
        // read, so that a short wait ends at its deadline, not a second on.
        let plain = left < SHORTEST_LONG_POLL;
        let read: Pin<Box<dyn Future<Output = Result<ResourceDetail>> + Send + '_>> = match plain {
            true => Box::pin(api.get_resource(&id)),
            false => Box::pin(api.get_resource_changed_from(&id, last.status, wait)),
        };
        // A slow answer must not carry the wait far past its deadline.
        let call = tokio::time::timeout(left + ANSWER_GRACE, read);
        tokio::pin!(call);
        let answer = loop {
            tokio::select! {
                answer = &mut call => break answer,
                () = tokio::time::sleep(TICK) => {
                    progress(JobProgress { resource: &last, api_unreachable, elapsed: began.elapsed() });
                }
            }
        };
        let Ok(answer) = answer else { continue };
        let quick = plain || asked.elapsed() < wait / 2;
        match answer {
            Ok(detail) => {
                api_unreachable = false;
                let unchanged = detail.resource.status == last.status;
                last = detail.resource;
                if !in_progress(last.status) {
                    return Ok(Waited::Settled(last));
                }
                // Unchanged at once: an API without long polls. Poll it.
                if unchanged && quick {
                    pause_ticking(&mut pause, deadline, || {
                        progress(JobProgress { resource: &last, api_unreachable, elapsed: began.elapsed() })
                    })
                    .await;
                }
            }
            Err(Error::Transport(_)) => {
                api_unreachable = true;
                pause_ticking(&mut pause, deadline, || {
                    progress(JobProgress { resource: &last, api_unreachable, elapsed: began.elapsed() })
                })
                .await;
            }
            Err(err) => return Err(err),
        }
    }
}

/// The shortest wait a long poll asks the API for (`wait_seconds=1`).
const SHORTEST_LONG_POLL: Duration = Duration::from_secs(1);

/// How long past the long poll's own wait an answer may take to arrive.
const ANSWER_GRACE: Duration = Duration::from_secs(5);

/// Sleeps `pause` (at most to `deadline`), calling `tick` every [`TICK`],
/// and lengthens the next pause.
async fn pause_ticking(pause: &mut Duration, deadline: Instant, mut tick: impl FnMut()) {
    let until = (Instant::now() + *pause).min(deadline);
    while Instant::now() < until {
        tokio::time::sleep(TICK.min(until.saturating_duration_since(Instant::now()))).await;
        tick();
    }
    *pause = (*pause * 3 / 2).min(MAX_POLL);
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
