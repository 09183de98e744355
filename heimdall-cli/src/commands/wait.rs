//! `--wait`: poll a Resource until it settles, with a spinner on a
//! terminal, then say how it ended.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use heimdall_sdk::flows::{self, Waited};
use heimdall_sdk::Client;
use heimdall_wire::{Resource, ResourceStatus};

use crate::error::{CliError, Result};
use crate::output::{self, Out};

const FRAMES: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Polls the Resource until it is no longer in progress, or `timeout`
/// passes (an error, exit 1), with a spinner on a terminal. A request that
/// gets no answer (the API restarting) is retried until then; an answer
/// that is an error ends the wait.
pub async fn until_settled(
    client: &Client,
    out: &Out,
    start: Resource,
    timeout: Duration,
) -> Result<Resource> {
    let mut spinner = Progress::new(!out.is_json() && std::io::stderr().is_terminal());
    let waited = flows::wait_for_resource(client, start, timeout, |at| {
        let note = if at.api_unreachable { ", API unreachable, retrying" } else { "" };
        spinner.show(&format!(
            "{}: {}{note} ({}s)",
            at.resource.name,
            progress_label(at.resource.status),
            at.elapsed.as_secs()
        ));
    })
    .await;
    spinner.clear();
    match waited? {
        Waited::Settled(resource) => Ok(resource),
        Waited::TimedOut(last) => Err(CliError::local(format!(
            "timed out after {} waiting for Resource {}: it is still {}; its job goes on \
             (see `heimdall job list --resource {}`)",
            human(timeout),
            last.name,
            last.status,
            last.id
        ))),
    }
}

/// What the spinner says about a status still in progress.
fn progress_label(status: ResourceStatus) -> String {
    match status {
        ResourceStatus::Queued => "queued, waiting for an Agent".to_owned(),
        status => status.to_string(),
    }
}

/// Says how a wait ended: `✓ Resource N is provisioned …`, or the final
/// Resource in JSON mode. A `failed` Resource is an error, `FAILED: <reason>`
/// (exit 1), after the JSON in JSON mode.
pub fn report(out: &Out, r: &Resource) -> Result<()> {
    if r.status == ResourceStatus::Failed {
        if out.is_json() {
            output::json(r)?;
        }
        let reason = r.reason.as_deref().filter(|s| !s.trim().is_empty()).unwrap_or("no reason was recorded");
        return Err(CliError::local(format!("FAILED: {reason}")));
    }
    let line = match r.status {
        ResourceStatus::Provisioned => {
            format!("Resource {} is provisioned (revision {})", r.name, r.revision)
        }
        ResourceStatus::PendingApproval => format!(
            "Resource {} is pending_approval: revision {} waits for another person's approval",
            r.name, r.revision
        ),
        status => format!("Resource {} is {status}", r.name),
    };
    out.done(r, &line, &[])
}

/// `10m`, `1h30m`, `45s`, `500ms`.
fn human(d: Duration) -> String {
    let secs = d.as_secs();
    if secs == 0 {
        return format!("{}ms", d.as_millis());
    }
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut text = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            text.push_str(&format!("{n}{unit}"));
        }
    }
    text
}

/// One spinner line on stderr, redrawn in place; nothing when disabled.
struct Progress {
    enabled: bool,
    frame: usize,
    drawn: bool,
}

impl Progress {
    fn new(enabled: bool) -> Self {
        Self { enabled, frame: 0, drawn: false }
    }

    fn show(&mut self, message: &str) {
        if !self.enabled {
            return;
        }
        let frame = FRAMES[self.frame % FRAMES.len()];
        self.frame += 1;
        let mut stderr = std::io::stderr().lock();
        // Progress is decoration: a failed write is not worth an error.
        let _ = write!(stderr, "\r\x1b[2K{frame} {}", output::cell(message));
        let _ = stderr.flush();
        self.drawn = true;
    }

    fn clear(&mut self) {
        if self.enabled && self.drawn {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[2K");
            let _ = stderr.flush();
            self.drawn = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Polls a job until it is completed, failed or cancelled, or `timeout`
/// passes (an error, exit 1).
pub async fn until_job_ends(
    client: &Client,
    job: heimdall_core::ids::JobId,
    timeout: Duration,
) -> Result<heimdall_wire::Job> {
    match flows::wait_for_job(client, job, timeout).await? {
        Waited::Settled(job) => Ok(job),
        Waited::TimedOut(state) => Err(CliError::local(format!(
            "timed out after {} waiting for job {job}: it is still {}",
            human(timeout),
            state.status
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_the_flag() {
        assert_eq!(human(Duration::from_secs(600)), "10m");
        assert_eq!(human(Duration::from_secs(5400)), "1h30m");
        assert_eq!(human(Duration::from_secs(61)), "1m1s");
        assert_eq!(human(Duration::from_millis(500)), "500ms");
    }
}
