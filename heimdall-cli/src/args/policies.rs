//! `heimdall policy`.

use std::path::PathBuf;

use clap::Subcommand;
use heimdall_core::ids::PolicyId;

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Create a policy from a Cedar file (validated by the API)
    Create {
        /// The policy's name
        #[arg(long)]
        name: String,
        /// The Cedar file, or `-` for standard input
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// What the policy is for, in a sentence
        #[arg(long)]
        description: Option<String>,
    },
    /// List policies
    List,
    /// Show one policy and its text
    Show {
        /// The policy's id or name
        id: PolicyId,
    },
    /// Delete a policy; takes effect on the next request
    Delete {
        /// The policy's id or name
        id: PolicyId,
    },
}
