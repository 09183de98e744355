//! The children of `heimdall dev`: each in its own process group with its
//! output appended to a log file, waited for until ready, and stopped in
//! order on a signal.

use std::future::Future;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use heimdall_sdk::Client;
use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::time::{sleep, timeout, Instant};

use super::agent::{log_fix, Off};
use crate::error::{CliError, Result};

const TAIL_LINES: usize = 20;
/// How long the Agent has to reach the API before the banner says so.
pub(super) const AGENT_READY: Duration = Duration::from_secs(15);
const POLL: Duration = Duration::from_millis(100);

/// SIGINT (Ctrl-C), SIGTERM and SIGHUP (the terminal closed): each stops
/// `heimdall dev`, in order.
pub(super) struct Signals([Signal; 3]);

impl Signals {
    pub(super) fn listen() -> Result<Self> {
        let listen =
            |kind| signal(kind).map_err(|err| CliError::local(format!("cannot listen for signals: {err}")));
        Ok(Self([
            listen(SignalKind::interrupt())?,
            listen(SignalKind::terminate())?,
            listen(SignalKind::hangup())?,
        ]))
    }

    /// The next signal, as what it does to `heimdall dev`.
    pub(super) async fn recv(&mut self) -> &'static str {
        let [interrupt, terminate, hangup] = &mut self.0;
        tokio::select! {
            _ = interrupt.recv() => "interrupted",
            _ = terminate.recv() => "terminated",
            _ = hangup.recv() => "hung up",
        }
    }
}

/// Until a signal (`Ok`), or a child exiting on its own: an error naming
/// it, with the end of its log (`heimdall dev` then stops the other).
pub(super) async fn wait_for_stop(
    signals: &mut Signals,
    api: &mut Service,
    agent: Option<&mut Service>,
) -> Result<()> {
    let agent_exit = async move {
        let Some(agent) = agent else { return std::future::pending().await };
        let status = agent.child.wait().await;
        (&*agent, status)
    };
    let (service, status) = tokio::select! {
        _ = signals.recv() => return Ok(()),
        status = api.child.wait() => (&*api, status),
        exited = agent_exit => exited,
    };
    let status = status.map_err(|err| CliError::local(format!("{}: {err}", service.name)))?;
    Err(service.exited(status, "unexpectedly"))
}

/// A child process (the API or the Agent), its output appended to a log
/// file from where that file ended when it started.
pub(super) struct Service {
    name: &'static str,
    child: Child,
    log_path: PathBuf,
    log_start: u64,
}

impl Service {
    /// Starts `command` in its own process group (a terminal's Ctrl-C
    /// reaches only `heimdall dev`, which stops the children in order).
    pub(super) fn spawn(name: &'static str, mut command: Command, log_path: &Path) -> Result<Self> {
        let cannot = |err| CliError::local(format!("cannot open {}: {err}", log_path.display()));
        let log = open_log(log_path).map_err(cannot)?;
        let log_start = log.metadata().map_err(cannot)?.len();
        // Plain text in the log, not terminal colours.
        command
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(cannot)?)
            .stderr(log);
        let child = command.process_group(0).kill_on_drop(true).spawn();
        let child = child.map_err(|err| CliError::local(format!("cannot start {name}: {err}")))?;
        Ok(Self { name, child, log_path: log_path.to_owned(), log_start })
    }

    /// The end of what this child wrote, for an error message.
    fn tail(&self) -> String {
        let mut bytes = Vec::new();
        let read = std::fs::File::open(&self.log_path).and_then(|mut log| {
            log.seek(SeekFrom::Start(self.log_start))?;
            log.read_to_end(&mut bytes)
        });
        let text = if read.is_ok() { String::from_utf8_lossy(&bytes) } else { "".into() };
        tail_block(text.lines().map(str::to_owned), Some(&self.log_path))
    }

    fn exited(&self, status: ExitStatus, when: &str) -> CliError {
        CliError::local(format!("{} exited {when} ({status}){}", self.name, self.tail()))
    }

    /// Polls `ready` until it answers, for up to `limit` (then `None`); the
    /// child exiting first is an error.
    async fn until<T, F: Future<Output = Option<T>>>(
        &mut self,
        limit: Duration,
        when: &str,
        mut ready: impl FnMut() -> F,
    ) -> Result<Option<T>> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().map_err(|err| CliError::local(err.to_string()))? {
                return Err(self.exited(status, when));
            }
            match ready().await {
                Some(answer) => return Ok(Some(answer)),
                None if Instant::now() >= deadline => return Ok(None),
                None => sleep(POLL).await,
            }
        }
    }

    /// SIGTERM, then up to `grace` for it to exit; then (or at a second
    /// signal) SIGKILL, and why.
    pub(super) async fn terminate(mut self, grace: Duration, signals: &mut Signals) -> Option<String> {
        if let Ok(Some(_)) = self.child.try_wait() {
            return None;
        }
        let pid = self.child.id()?.to_string();
        // `kill` the command: this crate has no unsafe code, so no libc::kill.
        let why = match Command::new("kill").args(["-TERM", &pid]).output().await {
            Ok(out) if out.status.success() => tokio::select! {
                exited = timeout(grace, self.child.wait()) => match exited {
                    Ok(_) => return None,
                    Err(_) => format!("still running {}s after SIGTERM", grace.as_secs()),
                },
                stop = signals.recv() => format!("{stop} again"),
            },
            _ => "SIGTERM could not be sent".to_owned(),
        };
        let _ = self.child.kill().await;
        Some(why)
    }
}

/// Waits for the API to make its CA (first start) and answer its health
/// check over HTTPS with a certificate from that CA; returns the CA (PEM).
pub(super) async fn wait_until_healthy(api: &mut Service, api_url: &str, ca_file: &Path) -> Result<String> {
    let ready = move || async move {
        // Not there yet, or not all written yet: try again.
        let ca_pem = std::fs::read_to_string(ca_file).ok()?;
        let probe = Client::with_ca(api_url, None, &ca_pem).ok()?;
        matches!(timeout(Duration::from_secs(2), probe.health()).await, Ok(Ok(_))).then_some(ca_pem)
    };
    let limit = Duration::from_secs(30);
    match api.until(limit, "before it was ready", ready).await? {
        Some(ca_pem) => Ok(ca_pem),
        None => Err(CliError::local(format!(
            "{} did not answer {api_url}/v1/health within {}s{}",
            api.name,
            limit.as_secs(),
            api.tail()
        ))),
    }
}

/// Until the dev Agent (by its id, not its name) first reaches the API
/// (its `last_seen_at` moves past `since`): `Ok(true)`; `Ok(false)` if that
/// takes longer than [`AGENT_READY`]. An Agent that exits, or was revoked, is `Err`.
pub(super) async fn wait_until_connected(
    client: &Client,
    agent: &mut Service,
    (agent_id, agent_dir): (&str, &Path),
    since: time::OffsetDateTime,
) -> std::result::Result<bool, Off> {
    let ready = move || async move {
        let agent = client.get_agent(agent_id).await.ok()?.agent;
        let fix = format!("remove {} and restart `heimdall dev` to enroll a new one", agent_dir.display());
        match (agent.revoked_at, agent.last_seen_at) {
            (Some(_), _) => Some(Err(Off { why: format!("the Agent {agent_id} was revoked"), fix })),
            (None, Some(at)) if at >= since => Some(Ok(true)),
            (None, _) => None,
        }
    };
    match agent.until(AGENT_READY, "at start", ready).await {
        Ok(answer) => answer.unwrap_or(Ok(false)),
        Err(err) => Err(Off { why: err.to_string(), fix: log_fix(&agent.log_path) }),
    }
}

/// Why a set-up step failed, and the way out if it said (`fix:`); `exit`
/// is `None` when it could not be started.
pub(super) struct StepFailed {
    pub why: String,
    pub fix: Option<String>,
    pub exit: Option<ExitStatus>,
}

/// A set-up step (`heimdall-api bootstrap`, `heimdall-agent dev-setup`) run
/// to its end, its output appended to `log` (it names files, never a
/// secret). Its standard output on success; else the `error:` line it
/// printed, or the end of its output.
pub(super) async fn run_step(
    name: &str,
    mut command: Command,
    log: &Path,
) -> std::result::Result<String, StepFailed> {
    let output = command.env("NO_COLOR", "1").stdin(Stdio::null()).kill_on_drop(true).output().await;
    let output = output.map_err(|err| StepFailed {
        why: format!("cannot run {name}: {err}"),
        fix: None,
        exit: None,
    })?;
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let lines: Vec<String> = stdout.lines().chain(stderr.lines()).map(str::to_owned).collect();
    if let Ok(mut file) = open_log(log) {
        lines.iter().for_each(|line| drop(writeln!(file, "{line}")));
    }
    if output.status.success() {
        return Ok(stdout.into_owned());
    }
    let said = |prefix| lines.iter().rev().find_map(|line| line.strip_prefix(prefix)).map(str::to_owned);
    let (error, fix) = (said("error: "), said("fix: "));
    let why = error.unwrap_or_else(|| {
        let tail = tail_block(lines.into_iter(), Some(log));
        format!("`{name}` failed ({}){tail}", output.status)
    });
    Err(StepFailed { why, fix, exit: Some(output.status) })
}

/// A log file, appended to, readable only by its owner.
fn open_log(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)
}

/// The last lines of a child's output, to end an error message with.
pub(super) fn tail_block(lines: impl Iterator<Item = String>, log: Option<&Path>) -> String {
    let lines: Vec<String> = lines.collect();
    let log = log.map(|log| log.display().to_string());
    if lines.is_empty() {
        return log.map_or("; it printed nothing".into(), |log| format!("; it printed nothing (log: {log})"));
    }
    let full_log = log.map_or(String::new(), |log| format!(" (full log: {log})"));
    let last: String =
        lines[lines.len().saturating_sub(TAIL_LINES)..].iter().map(|l| format!("\n  {l}")).collect();
    format!("\n--- last lines of its output{full_log} ---{last}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn tails_are_bounded() {
        let text = super::tail_block((0..50).map(|i| format!("line {i}")), None);
        assert!(
            text.starts_with("\n--- last lines of its output ---\n  line 30\n") && text.ends_with("line 49")
        );
        assert_eq!(super::tail_block(std::iter::empty(), None), "; it printed nothing");
    }
}
