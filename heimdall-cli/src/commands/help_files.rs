//! `--version`, `completion SHELL` and `man`: the last two generated from
//! the same clap definition the CLI parses with, so they never drift from
//! the flags.

use std::io::Write;

use clap::CommandFactory;

use super::Context;
use crate::args::Cli;
use crate::error::{CliError, Result};

pub fn completion(shell: clap_complete::Shell) -> Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "heimdall", &mut out);
    write(&out)
}

pub fn man() -> Result<()> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .map_err(|e| CliError::local(format!("cannot render the manual page: {e}")))?;
    write(&out)
}

fn write(bytes: &[u8]) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes)?;
    Ok(stdout.flush()?)
}

/// This client's version, and the server's when its API answers within a
/// few seconds (with the profile's or the environment's URL and CA).
pub async fn version(ctx: &Context) -> Result<()> {
    let client_version = env!("CARGO_PKG_VERSION");
    let server = match ctx.client() {
        Ok(client) => {
            let health = tokio::time::timeout(std::time::Duration::from_secs(3), client.health()).await;
            match health {
                Ok(Ok(health)) => Ok(health.version),
                Ok(Err(err)) => Err(err.to_string()),
                Err(_) => Err("no answer within 3 s".to_owned()),
            }
        }
        Err(err) => Err(err.to_string()),
    };
    if ctx.out.is_json() {
        let (version, error) = match &server {
            Ok(v) => (Some(v.as_str()), None),
            Err(e) => (None, Some(e.as_str())),
        };
        let server = serde_json::json!({ "version": version, "unreachable": error });
        return crate::output::json(&serde_json::json!({ "client": client_version, "server": server }));
    }
    let server = match server {
        Ok(v) => format!("server {v}"),
        Err(why) => format!("server: not reached ({why})"),
    };
    write(format!("heimdall {client_version}\n{server}\n").as_bytes())
}
