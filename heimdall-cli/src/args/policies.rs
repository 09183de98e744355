//! `heimdall policy`.

use std::path::PathBuf;

use clap::Subcommand;

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
    /// Show one policy, its version and its text
    Show {
        /// The policy's id or name
        policy: String,
    },
    /// Change a policy's text or description in place, as its next version; takes effect on the
    /// next request (at Agents, their next sync)
    Update {
        /// The policy's id or name
        policy: String,
        /// The new Cedar file, or `-` for standard input
        #[arg(long, value_name = "FILE", required_unless_present = "description")]
        file: Option<PathBuf>,
        /// A new description
        #[arg(long)]
        description: Option<String>,
        /// Refuse (STALE_REVISION) unless the policy is still at this version
        #[arg(long, value_name = "N")]
        expected_version: Option<i64>,
    },
    /// List a policy's versions, newest first
    Versions {
        /// The policy's id or name
        policy: String,
    },
    /// Delete a policy; takes effect on the next request
    Delete {
        /// The policy's id or name
        policy: String,
    },
}
