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

/// One page per command and subcommand (`heimdall-database-user-create.1`),
/// each with its own flags; prints the files written.
pub fn man_pages(dir: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::local(format!("cannot create {}: {e}", dir.display())))?;
    let mut written = Vec::new();
    write_pages(dir, Cli::command(), "heimdall", &mut written)?;
    let mut list = written.join("\n");
    list.push('\n');
    write(list.as_bytes())
}

fn write_pages(
    dir: &std::path::Path,
    command: clap::Command,
    name: &str,
    written: &mut Vec<String>,
) -> Result<()> {
    // clap names are `&'static str` (without its `string` feature): this
    // one-shot command leaks a few short names rather than add one.
    let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
    let command = command.name(name).bin_name(name.replace('-', " "));
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut page)
        .map_err(|e| CliError::local(format!("cannot render the manual page of {name}: {e}")))?;
    let file = dir.join(format!("{name}.1"));
    std::fs::write(&file, page)
        .map_err(|e| CliError::local(format!("cannot write {}: {e}", file.display())))?;
    written.push(file.display().to_string());
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        let sub_name = format!("{name}-{}", sub.get_name());
        write_pages(dir, sub.clone(), &sub_name, written)?;
    }
    Ok(())
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
