//! `job list|show|log`.

use heimdall_sdk::{JobOrder, JobQuery};
use heimdall_wire::Job;

use super::Context;
use crate::args::JobCommand;
use crate::error::Result;
use crate::output::{self, cell, optional_timestamp, timestamp, truncate};

/// This header, exactly, for one Resource's jobs: scripts read it.
const LIST_HEADERS: &[&str] = &["JOB ID", "OPERATION", "STATUS", "ATTEMPTS", "REASON", "QUEUED AT"];
/// Jobs of many Resources say whose each one is, after its id.
const LIST_HEADERS_WITH_RESOURCE: &[&str] =
    &["JOB ID", "RESOURCE", "OPERATION", "STATUS", "ATTEMPTS", "REASON", "QUEUED AT"];

/// A long reason (a Terraform error) is cut in the table; `job show` and
/// JSON have it whole.
const REASON_WIDTH: usize = 60;

pub async fn run(ctx: &Context, cmd: JobCommand) -> Result<()> {
    let out = &ctx.out;
    match cmd {
        JobCommand::List { component, resource, newest_first, page } => {
            let order = if newest_first { JobOrder::Newest } else { JobOrder::Oldest };
            let of_one_resource = resource.is_some();
            let (client, query) = (ctx.client()?, JobQuery { resource, component, order });
            let jobs = if page.one_page() {
                let (jobs, next) = client.list_jobs_page(&query, page.limit, page.after.as_deref()).await?;
                super::say_next_page(next.as_deref());
                jobs
            } else {
                client.list_jobs(&query).await?
            };
            let headers = if of_one_resource { LIST_HEADERS } else { LIST_HEADERS_WITH_RESOURCE };
            out.list(&jobs, headers, |j: &Job| {
                let resource = (!of_one_resource).then(|| cell(&j.request.resource_name));
                [j.id.to_string()]
                    .into_iter()
                    .chain(resource)
                    .chain([
                        j.operation.to_string(),
                        j.status.to_string(),
                        attempts(j),
                        truncate(&cell(j.reason.as_deref().unwrap_or_default()), REASON_WIDTH),
                        timestamp(j.queued_at),
                    ])
                    .collect()
            })
        }
        JobCommand::Show { job } => {
            let j = ctx.client()?.get_job(job).await?;
            let request = &j.request;
            out.record(
                &j,
                &[
                    ("JOB ID", j.id.to_string()),
                    ("OPERATION", j.operation.to_string()),
                    ("STATUS", j.status.to_string()),
                    ("ATTEMPTS", attempts(&j)),
                    ("REASON", j.reason.clone().unwrap_or_default()),
                    ("RESOURCE", format!("{} ({})", request.resource_name, j.resource_id)),
                    ("REVISION", request.revision.to_string()),
                    ("ACCOUNT", format!("{} {}", request.account.provider, request.account.id)),
                    ("REGION", request.region.clone()),
                    ("STATE", format!("{}/{}", request.account.state_bucket, request.state_key)),
                    (
                        "MODULE",
                        request
                            .module
                            .as_ref()
                            .map(|m| format!("{}@{}", m.source, m.version))
                            .unwrap_or_default(),
                    ),
                    ("AGENT", j.agent.clone().unwrap_or_default()),
                    ("QUEUED AT", timestamp(j.queued_at)),
                    ("STARTED AT", optional_timestamp(j.started_at)),
                    ("FINISHED AT", optional_timestamp(j.finished_at)),
                    ("LEASE EXPIRES AT", optional_timestamp(j.lease_expires_at)),
                ],
            )
        }
        JobCommand::Log { job, follow: true } => follow_log(ctx, job).await,
        JobCommand::Log { job, follow: false } => {
            let log = ctx.client()?.get_job_log(job).await?;
            if out.is_json() {
                return output::json(&log);
            }
            // Raw, as Terraform wrote it; notes go to stderr so that
            // `heimdall job log J > plan.txt` holds only the log.
            out.text(&log.content)?;
            if log.content.is_empty() {
                eprintln!("note: job {job} has no output yet");
            }
            if log.truncated {
                eprintln!("note: the log was truncated at 1 MiB; later output was dropped");
            }
            Ok(())
        }
    }
}

/// `1/3`: attempts so far (counted when an Agent claims the job) of the most.
fn attempts(j: &Job) -> String {
    format!("{}/{}", j.attempts, j.max_attempts)
}

/// How often `job log --follow` asks for more.
const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// Prints the log as it grows (what was printed is not printed again),
/// until the job is completed, failed or cancelled; then its status.
async fn follow_log(ctx: &Context, job: heimdall_core::ids::JobId) -> Result<()> {
    use heimdall_wire::JobStatus;
    let client = ctx.client()?;
    let mut printed = 0usize;
    loop {
        // The status first: a log read after the job ended holds all of it.
        let state = client.get_job(job).await?;
        let log = client.get_job_log(job).await?;
        if let Some(more) = log.content.get(printed..).filter(|more| !more.is_empty()) {
            if !ctx.out.is_json() {
                ctx.out.text(more)?;
            }
            printed = log.content.len();
        }
        match state.status {
            JobStatus::Queued | JobStatus::Running => tokio::time::sleep(FOLLOW_POLL).await,
            status => {
                if ctx.out.is_json() {
                    output::json(&serde_json::json!({ "job": state, "log": log }))?;
                } else if log.truncated {
                    eprintln!("note: the log was truncated at 1 MiB; later output was dropped");
                }
                return match status {
                    JobStatus::Completed => Ok(()),
                    _ => Err(crate::error::CliError::local(format!(
                        "job {job} {status}: {}",
                        state.reason.as_deref().unwrap_or("no reason given")
                    ))),
                };
            }
        }
    }
}
