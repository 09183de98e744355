//! `heimdall-api`: serve the API, or bootstrap its first organization. The
//! commands live in `heimdall_api::start`; this file parses and reports.

use std::process::ExitCode;

use clap::Parser;
use heimdall_api::start::{run, Cli};

fn main() -> ExitCode {
    if let Err(message) = heimdall_tls::logging::init() {
        eprintln!("error: {message}");
        return ExitCode::from(2);
    }
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}: {}", e.code.as_str(), e.message);
            ExitCode::FAILURE
        }
    }
}
