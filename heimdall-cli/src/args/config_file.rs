//! `heimdall plan`, `heimdall apply`, `heimdall export-config`: the
//! organization's configuration kept in a file.

use std::path::PathBuf;

use clap::Args;

/// `heimdall plan -f FILE`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The configuration (YAML or JSON; `-` reads standard input)
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: PathBuf,
    /// Also delete what a section of the file no longer names
    #[arg(long)]
    pub prune: bool,
    /// Exit 0 when nothing would change and 2 when something would (as
    /// `terraform plan -detailed-exitcode`); errors exit with their own status
    #[arg(long)]
    pub detailed_exitcode: bool,
}

/// `heimdall apply -f FILE`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The configuration (YAML or JSON; `-` reads standard input, with --auto-approve)
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: PathBuf,
    /// Also delete what a section of the file no longer names (never without it)
    #[arg(long)]
    pub prune: bool,
    /// Apply without asking (needed off a terminal)
    #[arg(long)]
    pub auto_approve: bool,
}
