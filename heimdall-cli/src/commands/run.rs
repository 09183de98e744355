//! `heimdall run [--environment E] [--file heimdall.yaml] -- COMMAND ARGS…`:
//! reads every secret `heimdall.yaml` names from an Agent in one request
//! (every read recorded in one commit before any value is sent), then
//! becomes COMMAND with them in its environment (`exec`: the exit status
//! and signals are the program's own). Nothing is written to disk; one
//! secret refused refuses the start, naming it.

use std::os::unix::process::CommandExt;

use super::values::{ask_holders, Ask};
use super::Context;
use crate::args::RunArgs;
use crate::error::{CliError, Result};
use crate::run_file::RunFile;

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
    let values = ask_holders(ctx, &environment, agent_url.as_deref(), Ask::Many(&secrets)).await?;
    if values.len() != pairs.len() {
        return Err(CliError::local("the Agent did not answer every secret asked for; nothing was started"));
    }
    let mut command = std::process::Command::new(program);
    command.args(arguments);
    for ((variable, _), answer) in pairs.iter().zip(&values) {
        command.env(variable, answer.value.expose());
    }
    // Only returns if the program could not be started.
    let err = command.exec();
    Err(CliError::local(format!("cannot run {}: {err}", program.to_string_lossy())))
}
