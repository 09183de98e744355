//! The dev Agent: `heimdall-agent dev-setup` makes it ready (it enrolls
//! once, finds its Terraform and writes its own `agent.toml`), then
//! `heimdall-agent run` runs it. With no Terraform or no `heimdall-agent`,
//! the API runs alone.

use std::path::{Path, PathBuf};

use heimdall_core::Redacted;
use heimdall_sdk::Client;
use serde_json::Value;
use tokio::process::Command;

use super::supervisor::{self, Service};
use super::{build_hint, locate_binary, Dev, LOG_FILE};
use crate::args::{client_addr, DevArgs};

pub(super) const AGENT_BINARY: &str = "heimdall-agent";
/// The dev Agent's name in the organization.
pub(super) const AGENT_NAME: &str = "dev";
pub(super) const AGENT_LOG_FILE: &str = "agent.log";

/// Why there is no Agent, and what to do about it.
#[derive(Debug)]
pub(super) struct Off {
    pub why: String,
    pub fix: String,
}

pub(super) fn log_fix(log_path: &Path) -> String {
    format!("see {}, then restart `heimdall dev`", log_path.display())
}

type OrOff<T> = std::result::Result<T, Off>;

/// The Agent as it is after start-up: running, or off and why.
pub(super) type AgentState = OrOff<Running>;

pub(super) struct Running {
    pub service: Service,
    pub config_file: PathBuf,
    /// Its settings, as `heimdall-agent dev-setup` printed them.
    pub config: Value,
    pub enrolled_now: bool,
}

/// Sets the Agent up, runs it, and waits until it reaches the API. Nothing
/// here stops the API: any trouble becomes [`Off`] (printed in the banner)
/// or a warning.
pub(super) async fn start(args: &DevArgs, client: &Client, dev: &Dev) -> AgentState {
    let binary = locate_binary(AGENT_BINARY);
    let ready = setup(&binary, args, client, dev).await?;
    let config_file = PathBuf::from(ready["path"].as_str().unwrap_or_default());
    for note in ready["notes"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        eprintln!("note: {note}");
    }
    let log = dev.data.join(AGENT_LOG_FILE);
    let no_id = || Off { why: format!("`{AGENT_BINARY} dev-setup` printed no agent_id"), fix: log_fix(&log) };
    let agent_id = ready["agent_id"].as_str().ok_or_else(no_id)?;
    let mut command = Command::new(&binary);
    command.args(["run", "--config"]).arg(&config_file);
    let since = time::OffsetDateTime::now_utc() - time::Duration::milliseconds(1);
    let mut service = Service::spawn(AGENT_BINARY, command, &log)
        .map_err(|err| Off { why: err.to_string(), fix: log_fix(&log) })?;
    // An error drops the service, which kills what is left of it.
    let agent_dir = dev.data.join("agent");
    if !supervisor::wait_until_connected(client, &mut service, (agent_id, &agent_dir), since).await? {
        let (secs, log) = (supervisor::AGENT_READY.as_secs(), log.display());
        eprintln!("warning: the Agent has not reached the API within {secs}s; it keeps trying (log: {log})");
    }
    let enrolled_now = ready["enrolled_now"] == true;
    let config = ready["config"].clone();
    Ok(Running { service, config_file, config, enrolled_now })
}

/// `heimdall-agent dev-setup`, with a registration token made here (in
/// the environment, never on the command line) if it was never enrolled.
async fn setup(binary: &Path, args: &DevArgs, client: &Client, dev: &Dev) -> OrOff<Value> {
    let (data, log) = (&dev.data, dev.data.join(AGENT_LOG_FILE));
    let mut command = Command::new(binary);
    command.args(["dev-setup", "--data"]).arg(data).args(["--api", &dev.api_url]);
    command.args(["--agent-api", &dev.agent_url, "--local-api-listen", &dev.local_api.to_string()]);
    command.args(["--local-api-url", &format!("https://{}", client_addr(dev.local_api))]);
    command.args(args.terraform.iter().flat_map(|t| [Path::new("--terraform"), t]));
    command.args(args.allow_modules.iter().flat_map(|glob| ["--allow-module", glob]));
    if let Some((_, agent_metrics)) = dev.metrics {
        command.args(["--metrics-listen", &agent_metrics.to_string()]);
    }
    if !data.join("agent/agent.toml").exists() {
        let registration = client.create_agent_registration(AGENT_NAME).await.map_err(|err| Off {
            why: format!("cannot make its registration token: {err}"),
            fix: log_fix(&data.join(LOG_FILE)),
        })?;
        let token = Redacted::new(registration.token.clone());
        command.args(["--ca-sha256", registration.ca_sha256.as_ref().map_or("", |sha| sha.as_str())]);
        command.env("HEIMDALL_REGISTRATION_TOKEN", token.expose());
    }
    let name = format!("{AGENT_BINARY} dev-setup");
    let stdout = supervisor::run_step(&name, command, &log).await.map_err(|failed| Off {
        fix: match (failed.fix, failed.exit) {
            (Some(fix), _) => fix,
            (None, None) => build_hint(AGENT_BINARY) + ", then restart `heimdall dev`",
            (None, Some(_)) => log_fix(&log),
        },
        why: failed.why,
    })?;
    serde_json::from_str(&stdout)
        .map_err(|err| Off { why: format!("`{name}` printed no JSON ({err})"), fix: log_fix(&log) })
}
