//! `heimdall run --watch`: COMMAND runs as a child instead of replacing
//! heimdall, and the Agent is long-polled (`POST /v1/values/watch`) for the
//! named secrets. A new version restarts the child with the new values
//! (SIGTERM, up to [`GRACE`], then SIGKILL); a secret that can no longer be
//! read (deactivated after a leak, or refused) stops it, and heimdall ends
//! naming it. Ctrl-C and SIGTERM are passed to the child; heimdall's exit
//! status is the child's.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use heimdall_sdk::AgentClient;
use heimdall_wire::ValueAnswer;
use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, SignalKind};

use crate::error::{CliError, Result};

/// How long the child has to stop after SIGTERM.
pub const GRACE: Duration = Duration::from_secs(10);

/// What is watched, and what runs with it.
pub struct Watched<'a> {
    pub agent: AgentClient,
    pub environment: String,
    pub secrets: Vec<String>,
    pub variables: Vec<&'a String>,
    pub program: &'a OsString,
    pub arguments: &'a [OsString],
}

pub async fn supervise(watched: Watched<'_>, first: Vec<ValueAnswer>) -> Result<()> {
    let listen = |kind| signal(kind).map_err(|e| CliError::local(format!("cannot listen for signals: {e}")));
    let (mut interrupt, mut terminate) = (listen(SignalKind::interrupt())?, listen(SignalKind::terminate())?);
    let Watched { agent, environment, secrets, .. } = &watched;
    let mut fingerprint = agent.watch_values(environment, secrets, None).await?.fingerprint;
    let mut values = first;
    loop {
        let mut child = start(&watched, &values)?;
        loop {
            tokio::select! {
                status = child.wait() => {
                    let status = status.map_err(|e| CliError::local(format!("waiting for the program: {e}")))?;
                    exit_as(status);
                }
                _ = interrupt.recv() => exit_as(stop(&mut child).await),
                _ = terminate.recv() => exit_as(stop(&mut child).await),
                answer = agent.watch_values(environment, secrets, Some(&fingerprint)) => match answer {
                    Ok(answer) if answer.changed => {
                        fingerprint = answer.fingerprint;
                        break;
                    }
                    Ok(answer) => fingerprint = answer.fingerprint,
                    // The Agent's decision (a policy now refuses a secret):
                    // read again, which stops the program if it is refused.
                    Err(heimdall_sdk::Error::Api(_)) => break,
                    // The Agent away for a moment: the program keeps running.
                    Err(err) => {
                        eprintln!("warning: heimdall run --watch: {err}; asking again in 1 s");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                },
            }
        }
        match agent.get_values(environment, secrets).await {
            Ok(new) => {
                eprintln!("heimdall run: a secret has a new version; restarting the program");
                stop(&mut child).await;
                values = new;
            }
            Err(err) => {
                eprintln!("heimdall run: a secret can no longer be read; stopping the program");
                stop(&mut child).await;
                return Err(err.into());
            }
        }
    }
}

fn start(watched: &Watched<'_>, values: &[ValueAnswer]) -> Result<Child> {
    let mut command = Command::new(watched.program);
    command.args(watched.arguments).kill_on_drop(true);
    for credential in super::run::CREDENTIALS_ENV {
        command.env_remove(credential);
    }
    for (variable, answer) in watched.variables.iter().zip(values) {
        command.env(variable, answer.value.expose());
    }
    command
        .spawn()
        .map_err(|e| CliError::local(format!("cannot run {}: {e}", watched.program.to_string_lossy())))
}

/// SIGTERM, up to [`GRACE`] to exit, then SIGKILL; how it ended.
async fn stop(child: &mut Child) -> ExitStatus {
    if let Some(pid) = child.id() {
        // `kill` the command: this crate has no unsafe code, so no libc::kill.
        let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status().await;
        if let Ok(Ok(status)) = tokio::time::timeout(GRACE, child.wait()).await {
            return status;
        }
    }
    let _ = child.kill().await;
    child.wait().await.unwrap_or_else(|_| ExitStatus::from_raw(137 << 8))
}

/// Ends heimdall with the child's status (128 + its signal if it was killed).
fn exit_as(status: ExitStatus) -> ! {
    std::process::exit(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(9)))
}
