//! `completion SHELL` and `man`: generated from the same clap definition
//! the CLI parses with, so they never drift from the flags.

use std::io::Write;

use clap::CommandFactory;

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
