//! `heimdall event`.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum EventCommand {
    /// List events, newest first
    List {
        /// At most this many
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        limit: Option<u32>,
        /// Only events before this instant (RFC 3339, e.g. 2025-01-31T12:00:00Z)
        #[arg(long, value_name = "TIME")]
        before: Option<String>,
        /// Only actions starting with this, e.g. `member.`
        #[arg(long, value_name = "PREFIX")]
        action: Option<String>,
    },
}
