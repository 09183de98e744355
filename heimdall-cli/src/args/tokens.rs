//! `heimdall token`.

use clap::Subcommand;
use heimdall_core::ids::TokenId;

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// List your tokens
    List,
    /// Create a token for yourself; printed once
    Create {
        /// What the token is for (a label; the token itself is printed once)
        #[arg(long)]
        name: String,
    },
    /// Revoke one of your tokens
    Revoke {
        /// The token's id (as `token list` prints it)
        id: TokenId,
    },
}
