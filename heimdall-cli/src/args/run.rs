//! `heimdall run`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
#[command(after_help = "heimdall.yaml names the environment and the secrets, never a value:\n\
\n  environment: dev\n  secrets:\n    DB_PASSWORD: db-password\n\n\
or a list (`- db-password` becomes DB_PASSWORD; `- name: x` with `as: VAR` names it).\n\
The values are read from an Agent with this profile's client certificate, or with the program\n\
token in HEIMDALL_AGENT_TOKEN (then --agent-url or `agent_url:`, and HEIMDALL_CA_FILE, name the\n\
Agent and its CA; the token is not passed on to COMMAND). Every read is recorded before any is\n\
served, and COMMAND replaces heimdall (its exit status is COMMAND's).")]
pub struct RunArgs {
    /// The environment to read from [default: heimdall.yaml's `environment`]
    #[arg(long, short = 'e', value_name = "ENV")]
    pub environment: Option<String>,
    /// The file that names the secrets
    #[arg(long, short = 'f', value_name = "FILE", default_value = "heimdall.yaml")]
    pub file: PathBuf,
    /// Ask this Agent's local API (only when one Agent holds the environment)
    #[arg(long, value_name = "URL")]
    pub agent_url: Option<String>,
    /// Keep COMMAND running as a child, and restart it (SIGTERM, up to 10 s, then SIGKILL)
    /// with the new values when a named secret gets a new version; stop it when one is
    /// deactivated. Ctrl-C and SIGTERM reach it, and its exit status is heimdall's.
    #[arg(long)]
    pub watch: bool,
    /// The program to run, and its arguments
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}
