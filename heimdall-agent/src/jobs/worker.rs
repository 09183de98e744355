//! The Agent's loop: long-poll for a job, run it with heartbeats and a
//! streamed log, report how it ended. On SIGTERM it stops claiming and
//! lets running jobs finish before exiting.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use heimdall_core::ids::{JobId, LeaseId};
use heimdall_core::queue;
use heimdall_wire::{ClaimedJob, FinishOutcome};
use tokio::sync::{mpsc, watch};

use crate::channel::Channel;
use crate::config::AgentConfig;
use crate::jobs::completed::{Completed, CompletedJobs};
use crate::jobs::job_credentials::{self, CredentialSource};
use crate::jobs::terraform;
use crate::metrics::Metrics;

/// How long a claim waits at the API when nothing is queued. A claim in
/// flight is always awaited, even on shutdown (dropping it could lose a
/// job the API already handed out), so this also bounds how long an idle
/// Agent takes to stop.
const CLAIM_WAIT: Duration = Duration::from_secs(10);

/// Runs `config.concurrency` workers until `stop` turns true, then waits
/// for the jobs in hand.
pub async fn run(
    config: AgentConfig,
    channel: Channel,
    credentials: Option<CredentialSource>,
    metrics: Option<Arc<Metrics>>,
    mut stop: watch::Receiver<bool>,
) {
    let config = Arc::new(config);
    let credentials = Arc::new(credentials);
    let mut workers = Vec::new();
    for n in 0..config.concurrency {
        let (config, channel, stop) = (config.clone(), channel.clone(), stop.clone());
        let (credentials, metrics) = (credentials.clone(), metrics.clone());
        workers
            .push(tokio::spawn(async move { worker(n, config, channel, credentials, metrics, stop).await }));
    }
    let _ = stop.wait_for(|s| *s).await;
    tracing::info!("stopping: no new jobs; waiting for running jobs to finish");
    for w in workers {
        let _ = w.await;
    }
}

async fn worker(
    n: usize,
    config: Arc<AgentConfig>,
    channel: Channel,
    credentials: Arc<Option<CredentialSource>>,
    metrics: Option<Arc<Metrics>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = Duration::from_millis(500);
    loop {
        if *stop.borrow() {
            return;
        }
        match channel.claim(CLAIM_WAIT).await {
            Ok(Some(job)) => {
                backoff = Duration::from_millis(500);
                run_job(&config, &channel, credentials.as_ref().as_ref(), metrics.as_deref(), job).await;
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(worker = n, error = %e, "claim failed; retrying");
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                backoff = (backoff * 2).min(Duration::from_secs(15));
            }
        }
    }
}

/// Sends log lines in batches (every 500 ms or 64 KiB); what is left when
/// the run ends is returned, to go with the finish.
async fn ship_logs(
    channel: Channel,
    job: JobId,
    lease: LeaseId,
    mut rx: mpsc::UnboundedReceiver<String>,
) -> String {
    let mut buf = String::new();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            line = rx.recv() => match line {
                Some(line) => {
                    buf.push_str(&line);
                    if buf.len() < 64 * 1024 { continue; }
                }
                None => break,
            },
            _ = tick.tick() => {}
        }
        if !buf.is_empty() {
            if let Err(e) = channel.log(job, lease, std::mem::take(&mut buf)).await {
                tracing::warn!(%job, error = %e, "could not ship log lines");
            }
        }
    }
    buf
}

/// Renews the lease until the run ends (this task is aborted then), and
/// returns when the run must stop: the API refused a renewal (the job was
/// handed on), or none was accepted for [`queue::RUN_STOPS_AFTER`].
async fn heartbeats(
    channel: Channel,
    job: JobId,
    lease: LeaseId,
    lock: watch::Receiver<Option<String>>,
    claimed_at: std::time::Instant,
) {
    let to_std = |d: time::Duration| Duration::try_from(d).unwrap_or(Duration::ZERO);
    let mut renewed = claimed_at;
    let mut wait = to_std(queue::HEARTBEAT_EVERY);
    loop {
        let stop_at = renewed + to_std(queue::RUN_STOPS_AFTER);
        tokio::time::sleep_until(tokio::time::Instant::from_std(
            (std::time::Instant::now() + wait).min(stop_at),
        ))
        .await;
        let sent = std::time::Instant::now();
        let lock_id = lock.borrow().clone();
        // A renewal that hangs (packets dropped) is given up at the deadline.
        let answer = tokio::time::timeout_at(
            tokio::time::Instant::from_std(stop_at),
            channel.heartbeat(job, lease, lock_id),
        )
        .await;
        match answer {
            Ok(Ok(_)) => {
                renewed = sent;
                wait = to_std(queue::HEARTBEAT_EVERY);
            }
            Ok(Err(e)) if e.is_fenced() => {
                tracing::warn!(%job, "lease lost; abandoning the run");
                return;
            }
            Ok(Err(e)) => {
                tracing::warn!(%job, error = %e, "heartbeat failed; will retry");
                wait = to_std(queue::HEARTBEAT_RETRY);
            }
            Err(_) => {}
        }
        let since = time::Duration::try_from(renewed.elapsed()).unwrap_or(time::Duration::MAX);
        if !queue::run_may_continue(since) {
            tracing::warn!(
                %job,
                seconds = since.whole_seconds(),
                "no heartbeat reached the API: stopping the run before its job is handed on to another Agent"
            );
            return;
        }
    }
}

/// Stops the heartbeat however the run ends, a panic included: the lease
/// then runs out and the reaper hands the job on, instead of the job
/// staying `running` on a heartbeat with nothing behind it.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn run_job(
    config: &AgentConfig,
    channel: &Channel,
    credentials: Option<&CredentialSource>,
    metrics: Option<&Metrics>,
    claimed: ClaimedJob,
) {
    let ClaimedJob { job, lease, stale_lock_id, dead_attempts, credentials: federated, .. } = claimed;
    let completed = CompletedJobs::new(&config.work_dir);
    if let Some(done) = completed.get(job.id) {
        // Handed out again after it completed here: the API lost the
        // result (a restore, or a finish that never reached it). Its result
        // again, and nothing runs a second time.
        tracing::warn!(job = %job.id, completed_at = %done.at, "this job completed here already; reporting its result again, running nothing");
        let note = format!(
            "Heimdall: this Agent completed this job at {}; the API did not have its result (was its database \
             restored from a backup?), so it is reported again and nothing ran a second time.\n",
            done.at
        );
        let outcome = FinishOutcome::Completed { outputs: done.outputs };
        if let Err(e) = channel.finish(job.id, lease, outcome, note).await {
            tracing::warn!(job = %job.id, error = %e, "could not report the result");
        }
        return;
    }
    tracing::info!(job = %job.id, attempt = job.attempts, operation = %job.operation, resource = %job.request.resource_name, "running job");
    let (log_tx, log_rx) = mpsc::unbounded_channel();
    let shipper = tokio::spawn(ship_logs(channel.clone(), job.id, lease, log_rx));
    let (lock_tx, lock_rx) = watch::channel::<Option<String>>(None);

    // Heartbeats: every third of the lease. A refusal means we were fenced
    // out (reaped), and the run must stop; so must a run whose lease could
    // not be renewed for a while (a partitioned Agent), before the API can
    // hand the job on (`heimdall_core::queue::run_may_continue`).
    let (fenced_tx, fenced_rx) = tokio::sync::oneshot::channel::<()>();
    let hb_channel = channel.clone();
    let job_id = job.id;
    // The claim's answer just came: the lease began a moment before.
    let claimed_at = std::time::Instant::now();
    let heartbeat = AbortOnDrop(tokio::spawn(async move {
        heartbeats(hb_channel, job_id, lease, lock_rx, claimed_at).await;
        let _ = fenced_tx.send(());
    }));

    let dir: PathBuf = config.work_dir.join(format!("{}-{}", job.id, job.attempts));
    let mut phases = terraform::Phases::default();
    let mut prepared = Duration::ZERO;
    let outcome = async {
        let module = terraform::preflight(config, &job.request).await?;
        let place = heimdall_core::credentials::JobPlace {
            dir: &dir.to_string_lossy(),
            gcp_token_url: config.federation.gcp_token_url(),
        };
        let secrets = job_credentials::for_job(credentials, &job, federated.as_ref(), place).await?;
        std::fs::create_dir_all(&dir).map_err(|e| terraform::RunFailure {
            code: None,
            reason: format!("cannot create {}: {e}", dir.display()),
            retryable: true,
        })?;
        let run = terraform::JobRun {
            request: &job.request,
            module: &module,
            credentials: secrets.credentials.as_ref(),
            secret_inputs: &secrets.inputs,
            stale_lock: stale_lock_id.as_deref(),
            dead_attempts: &dead_attempts,
            attempt: job.attempts,
        };
        let began = std::time::Instant::now();
        prepared = began - claimed_at;
        let ran = terraform::execute(config, &dir, &run, &log_tx, &lock_tx, &mut phases).await;
        if let Some(metrics) = metrics {
            metrics.job(job.operation, ran.is_ok(), began.elapsed().as_secs_f64());
        }
        ran
    };
    let result = tokio::select! {
        r = outcome => Some(r),
        _ = fenced_rx => None,
    };
    drop(heartbeat);
    drop(log_tx);
    let log_tail = shipper.await.unwrap_or_default();
    let Some(result) = result else {
        // Fenced: another attempt owns the job now, or will soon. What
        // the run left (credential files among it) goes.
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let outcome = match result {
        Ok(outputs) => {
            // Before the report: a report lost on the way still finds it.
            let done = Completed { at: time::OffsetDateTime::now_utc(), outputs };
            if let Err(e) = completed.record(job.id, &done) {
                tracing::warn!(job = %job.id, error = %e, "could not keep the job's result; a job handed out again would run again");
            }
            FinishOutcome::Completed { outputs: done.outputs }
        }
        Err(f) => FinishOutcome::Failed { reason: f.reason, code: f.code, retryable: f.retryable },
    };
    let reporting = std::time::Instant::now();
    if let Err(e) = channel.finish(job.id, lease, outcome, log_tail).await {
        tracing::warn!(job = %job.id, error = %e, "could not report the result");
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    tracing::info!(
        job = %job.id,
        prepare_ms = ms(prepared),
        files_ms = ms(phases.files),
        init_ms = ms(phases.init),
        takeover_ms = ms(phases.takeover),
        apply_ms = ms(phases.apply),
        outputs_ms = ms(phases.outputs),
        finish_ms = ms(reporting.elapsed()),
        total_ms = ms(claimed_at.elapsed()),
        "job phases"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
