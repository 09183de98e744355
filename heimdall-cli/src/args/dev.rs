//! `heimdall dev`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
#[command(after_help = "The Agent is enrolled once, the first time: its Terraform (pinned by SHA-256) and \
its allowed modules are then in DIR/agent/agent.toml; remove DIR/agent to enroll it again.")]
pub struct DevArgs {
    /// Where the database, the owner's token, the Agent, Terraform state and the logs live
    #[arg(long, value_name = "DIR", default_value = "./.heimdall-dev")]
    pub data: PathBuf,
    /// Address for the API to listen on; Agents dial the port after it
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7480")]
    pub listen: SocketAddr,
    /// The terraform executable for the Agent [env: HEIMDALL_TERRAFORM] (default:
    /// ./.venv/bin/terraform, else terraform on PATH; none: the API runs without an Agent)
    #[arg(long, value_name = "PATH")]
    pub terraform: Option<PathBuf>,
    /// A module source the Agent may run, as a glob; repeatable [default: <current directory>/**,
    /// every local module under the directory `heimdall dev` runs in]
    #[arg(long = "allow-module", value_name = "GLOB")]
    pub allow_modules: Vec<String>,
}
