//! `heimdall-agent`: enroll with an organization, configure, then run jobs
//! and serve values. Flags are parsed here; the work is in the library.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use heimdall_agent::runtime;
use heimdall_agent::setup::configure::{self, Settings};
use heimdall_agent::setup::{dev, enroll};

/// mimalloc: the read path allocates per request; cheaper than glibc's there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "heimdall-agent",
    version,
    about = "The Heimdall Agent: runs Terraform jobs in your network"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Enroll with the API using a one-time registration token
    /// (`heimdall agent token create`), read from HEIMDALL_REGISTRATION_TOKEN
    /// or standard input. The key is generated here and never sent.
    Enroll(enroll::EnrollArgs),
    /// Change agent.toml: checked as `run` would check it, written whole,
    /// only if something changed. Prints what changed.
    Configure {
        #[arg(long, env = "HEIMDALL_AGENT_CONFIG")]
        config: PathBuf,
        #[command(flatten)]
        settings: Settings,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make the Agent of `heimdall dev` ready under its data directory:
    /// enroll once (the token as for `enroll`), then configure this start.
    /// Prints JSON. `heimdall dev` runs this; people need not.
    #[command(hide = true)]
    DevSetup(dev::DevSetup),
    /// Seal every data key under a new master key (resumable), then name it in agent.toml.
    Rekey(heimdall_agent::setup::rekey::RekeyArgs),
    /// Program tokens for this Agent's local API: made, listed and revoked here.
    #[command(subcommand)]
    Token(heimdall_agent::setup::token_command::TokenCommand),
    /// Print the local API's OpenAPI document (JSON), as `GET /v1/openapi.json` serves it.
    Openapi,
    /// Run jobs (and serve values, with [values] and [local_api]) until SIGTERM or Ctrl-C.
    Run {
        /// The agent.toml written by `enroll`.
        #[arg(long, env = "HEIMDALL_AGENT_CONFIG")]
        config: PathBuf,
    },
}

fn main() -> ExitCode {
    // First of all: started as a Terraform guard, this process is only that.
    if let Some(code) = heimdall_agent::jobs::terraform_guard::main_or_enable() {
        return code;
    }
    if let Err(message) = heimdall_tls::logging::init() {
        eprintln!("error: {message}");
        return ExitCode::from(2);
    }
    // Each command's own error, printed here as one line.
    let result: Result<(), Box<dyn std::error::Error>> = match Cli::parse().command {
        Command::Run { config } => {
            // Before any thread starts: a master key held in the
            // environment is taken and removed, so Terraform never sees it.
            runtime::prepare(&config)
                .and_then(|prepared| {
                    let clock = Arc::new(runtime::SystemClock);
                    let runtime = tokio::runtime::Runtime::new().map_err(runtime::StartError::Runtime)?;
                    runtime.block_on(runtime::run(prepared, clock, heimdall_tls::server::shutdown_signal()))
                })
                .map_err(Into::into)
        }
        Command::DevSetup(options) => return dev::main(&options),
        Command::Token(command) => heimdall_agent::setup::token_command::main(command).map_err(Into::into),
        Command::Rekey(args) => heimdall_agent::setup::rekey::main(&args).map_err(Into::into),
        Command::Configure { config, settings, json } => configure::configure(&config, &settings)
            .map(|done| configure::print(&done, json))
            .map_err(Into::into),
        Command::Enroll(args) => enroll::main(args).map_err(Into::into),
        Command::Openapi => heimdall_agent::local_api::openapi::document()
            .to_pretty_json()
            .map(|text| println!("{text}"))
            .map_err(|e| format!("the document does not serialize: {e}").into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
