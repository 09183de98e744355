//! `heimdall`: the command-line interface. Thin: parse (`args`), validate
//! and run (`commands`, `dev`), print (`output`). Talks to the API only
//! through `heimdall-sdk`.
#![forbid(unsafe_code)]

mod args;
mod commands;
mod config;
mod dev;
mod error;
mod identity;
mod output;
mod run_file;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let format = cli.global.output;
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::from(error::exit::GENERAL);
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        // `heimdall … | head` closed the pipe: not an error.
        Err(err) if err.is_broken_pipe() => ExitCode::SUCCESS,
        Err(error::CliError::Status(status)) => ExitCode::from(status),
        Err(err) => {
            output::print_error(&err, format);
            ExitCode::from(err.exit_code())
        }
    }
}
