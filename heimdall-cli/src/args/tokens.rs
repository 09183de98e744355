//! `heimdall token`.

use clap::Subcommand;
use heimdall_core::ids::TokenId;

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// List your tokens
    List,
    /// Create a token for yourself; printed once
    Create {
        #[arg(long)]
        name: String,
    },
    /// Revoke one of your tokens
    Revoke { id: TokenId },
}
