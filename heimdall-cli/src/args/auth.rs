//! `heimdall login`, and stored profiles.

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The API's installation CA (PEM), when its HTTPS certificate is from it; only a server
    /// naming the API is then trusted. The token comes from HEIMDALL_TOKEN or standard input.
    #[arg(long, value_name = "FILE", conflicts_with = "ca_sha256")]
    pub ca_file: Option<std::path::PathBuf>,
    /// The installation CA's SHA-256 (from the API's operator): its CA is fetched, checked and kept
    #[arg(long, value_name = "HEX")]
    pub ca_sha256: Option<String>,
    /// Do not get a client certificate (needed only to write and read secret values on Agents)
    #[arg(long)]
    pub no_certificate: bool,
    /// Make a new key for the client certificate instead of keeping this profile's (personal
    /// secrets are bound to the key they were created with)
    #[arg(long)]
    pub new_key: bool,
}

#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// List stored profiles (tokens are never shown)
    List,
}
