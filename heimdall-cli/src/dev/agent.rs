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
use super::{build_hint, client_addr, locate_binary, Dev, LOG_FILE};
use crate::args::DevArgs;

pub(super) const AGENT_BINARY: &str = "heimdall-agent";
/// The dev Agent's name in the organization.
pub(super) const AGENT_NAME: &str = "dev";
pub(super) const AGENT_LOG_FILE: &str = "agent.log";
/// `heimdall-agent dev-setup`'s exit code when it finds no Terraform.
const NO_TERRAFORM_EXIT: i32 = 3;
pub(super) const INSTALL_TERRAFORM: &str = "run `bash scripts/install-test-tools.sh` in the Heimdall \
    repository (it installs terraform in ./.venv), or put any terraform on PATH (or pass --terraform \
    PATH), then restart `heimdall dev`";

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

/// The Agent as it is after start-up.
pub(super) enum AgentState {
    /// `config`: its settings, as `heimdall-agent dev-setup` printed them.
    Running {
        service: Box<Service>,
        config_file: PathBuf,
        config: Value,
        enrolled_now: bool,
    },
    Off(Off),
}

impl AgentState {
    pub(super) fn service(&mut self) -> Option<&mut Service> {
        match self {
            AgentState::Running { service, .. } => Some(service),
            AgentState::Off(_) => None,
        }
    }

    /// Where the running Agent serves values (`dev-setup` always sets it).
    pub(super) fn local_api_url(&self) -> Option<&str> {
        match self {
            AgentState::Running { config, .. } => config["local_api"]["url"].as_str(),
            AgentState::Off(_) => None,
        }
    }
}

/// Sets the Agent up, runs it, and waits until it reaches the API. Nothing
/// here stops the API: any trouble becomes [`AgentState::Off`] (printed in
/// the banner) or a warning.
pub(super) async fn start(args: &DevArgs, client: &Client, dev: &Dev) -> AgentState {
    let started = async {
        let binary = locate_binary(AGENT_BINARY);
        let ready = setup(&binary, args, client, dev).await?;
        let config_file = PathBuf::from(ready["path"].as_str().unwrap_or_default());
        for note in ready["notes"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            eprintln!("note: {note}");
        }
        let log = dev.data.join(AGENT_LOG_FILE);
        let mut command = Command::new(&binary);
        command.args(["run", "--config"]).arg(&config_file);
        let since = time::OffsetDateTime::now_utc() - time::Duration::milliseconds(1);
        let mut service = Service::spawn(AGENT_BINARY, command, &log)
            .map_err(|err| Off { why: err.to_string(), fix: log_fix(&log) })?;
        // An error drops the service, which kills what is left of it.
        if !supervisor::wait_until_connected(client, &mut service, &dev.data.join("agent"), since).await? {
            let (secs, log) = (supervisor::AGENT_READY.as_secs(), log.display());
            eprintln!(
                "warning: the Agent has not reached the API within {secs}s; it keeps trying (log: {log})"
            );
        }
        let enrolled_now = ready["enrolled_now"] == true;
        let config = ready["config"].clone();
        Ok(AgentState::Running { service: Box::new(service), config_file, config, enrolled_now })
    };
    started.await.unwrap_or_else(AgentState::Off)
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
    if !data.join("agent/agent.toml").exists() {
        let registration = client.create_agent_registration(AGENT_NAME).await.map_err(|err| Off {
            why: format!("cannot make its registration token: {err}"),
            fix: log_fix(&data.join(LOG_FILE)),
        })?;
        let token = Redacted::new(registration.token.clone());
        command.args(["--ca-sha256", registration.ca_sha256.as_deref().unwrap_or_default()]);
        command.env("HEIMDALL_REGISTRATION_TOKEN", token.expose());
    }
    let name = format!("{AGENT_BINARY} dev-setup");
    let stdout = supervisor::run_step(&name, command, &log).await.map_err(|failed| Off {
        fix: match failed.exit.map(|status| status.code()) {
            None => build_hint(AGENT_BINARY) + ", then restart `heimdall dev`",
            Some(Some(NO_TERRAFORM_EXIT)) => INSTALL_TERRAFORM.to_owned(),
            Some(_) => log_fix(&log),
        },
        why: failed.why,
    })?;
    serde_json::from_str(&stdout)
        .map_err(|err| Off { why: format!("`{name}` printed no JSON ({err})"), fix: log_fix(&log) })
}
