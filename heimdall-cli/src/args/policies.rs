//! `heimdall policy`.

use std::path::PathBuf;

use clap::Subcommand;
use heimdall_core::ids::PolicyId;

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Create a policy from a Cedar file (validated by the API)
    Create {
        #[arg(long)]
        name: String,
        /// The Cedar file, or `-` for standard input
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        #[arg(long)]
        description: Option<String>,
    },
    /// List policies
    List,
    /// Show one policy and its text
    Show { id: PolicyId },
    /// Delete a policy; takes effect on the next request
    Delete { id: PolicyId },
}
