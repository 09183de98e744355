//! `heimdall terraform`.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum TerraformCommand {
    /// Write a Resource's last applied root module as a package plain `terraform` runs against
    /// the same state: main.tf, backend.tf, terraform.tfvars.json, README.md. No credential is
    /// in it; secret inputs are variables left to fill
    Export {
        /// The Resource (id or name)
        resource: String,
        /// The directory to write (created; must be empty if it exists)
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}
