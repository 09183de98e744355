//! `heimdall run [--environment E] [--file heimdall.yaml] -- COMMAND ARGS…`:
//! reads every secret `heimdall.yaml` names from an Agent in one request
//! (every read recorded in one commit before any value is sent), then
//! becomes COMMAND with them in its environment (`exec`: the exit status
//! and signals are the program's own). Nothing is written to disk; one
//! secret refused refuses the start, naming it. With a program token in
//! `HEIMDALL_AGENT_TOKEN` (servers, CI) it asks the Agent at `--agent-url`
//! with that token instead of a person's certificate, and the token is
//! taken out of COMMAND's environment.

use std::os::unix::process::CommandExt;

use heimdall_core::Redacted;
use heimdall_sdk::AgentClient;

use super::values::{ask_holders, Ask};
use super::Context;
use crate::args::RunArgs;
use crate::error::{CliError, Result};
use crate::run_file::RunFile;

/// A program token (`heimdall-agent token create`), for servers and CI.
pub(super) const AGENT_TOKEN_ENV: &str = "HEIMDALL_AGENT_TOKEN";

/// Credentials of `heimdall`'s own that the program it starts never gets:
/// the Agent token it read with, and an API token.
pub(super) const CREDENTIALS_ENV: [&str; 2] = [AGENT_TOKEN_ENV, "HEIMDALL_TOKEN"];

/// Every secret from the Agent at `agent_url`, as the program the token is
/// for: trusting only the installation CA in `HEIMDALL_CA_FILE`, and only
/// the Agent the token names.
async fn with_token(
    ctx: &Context,
    token: &Redacted<String>,
    agent_url: Option<&str>,
    environment: &str,
    secrets: &[String],
) -> Result<(Vec<heimdall_wire::ValueAnswer>, AgentClient)> {
    let url = agent_url.ok_or_else(|| {
        CliError::usage(format!(
            "{AGENT_TOKEN_ENV} reads from one Agent: name it with --agent-url URL or `agent_url:` in heimdall.yaml"
        ))
    })?;
    let ca = super::ca_from_env()?.ok_or_else(|| {
        CliError::usage(format!(
            "{AGENT_TOKEN_ENV} needs the installation CA the Agent's certificate comes from: HEIMDALL_CA_FILE=ca.pem"
        ))
    })?;
    let agent = AgentClient::with_program_token(url, token.expose(), &ca)?.with_timeouts(ctx.timeouts()?)?;
    Ok((agent.get_values(environment, secrets).await?, agent))
}

pub async fn run(ctx: &Context, args: RunArgs) -> Result<()> {
    let file = RunFile::load(&args.file)?;
    let pairs = file.variables().map_err(|why| CliError::usage(format!("{}: {why}", args.file.display())))?;
    let environment = args.environment.or(file.environment).ok_or_else(|| {
        CliError::usage(format!(
            "which environment? --environment E, or `environment:` in {}",
            args.file.display()
        ))
    })?;
    let [program, arguments @ ..] = args.command.as_slice() else {
        return Err(CliError::usage("heimdall run -- COMMAND [ARGS…]: the command is missing"));
    };
    let secrets: Vec<String> = pairs.iter().map(|(_, secret)| secret.clone()).collect();
    let agent_url = args.agent_url.or(file.agent_url);
    let token = std::env::var(AGENT_TOKEN_ENV).ok().filter(|t| !t.is_empty()).map(Redacted::new);
    let (values, agent) = match &token {
        Some(token) => with_token(ctx, token, agent_url.as_deref(), &environment, &secrets).await?,
        None => ask_holders(ctx, &environment, agent_url.as_deref(), Ask::Many(&secrets)).await?,
    };
    if values.len() != pairs.len() {
        return Err(CliError::local("the Agent did not answer every secret asked for; nothing was started"));
    }
    let variables: Vec<&String> = pairs.iter().map(|(variable, _)| variable).collect();
    if args.watch {
        let watched =
            super::run_watch::Watched { agent, environment, secrets, variables, program, arguments };
        return super::run_watch::supervise(watched, values).await;
    }
    let mut command = std::process::Command::new(program);
    command.args(arguments);
    for credential in CREDENTIALS_ENV {
        command.env_remove(credential);
    }
    for (variable, answer) in variables.iter().zip(&values) {
        command.env(variable, answer.value.expose());
    }
    // Only returns if the program could not be started.
    let err = command.exec();
    Err(CliError::local(format!("cannot run {}: {err}", program.to_string_lossy())))
}
