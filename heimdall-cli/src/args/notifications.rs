//! `heimdall notification`.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum NotificationCommand {
    /// Send the organization's notified events (secret.at_risk,
    /// resource.drifted, job.failed, database.rotation_failed) to a webhook (owner); prints its
    /// signing secret once
    Create {
        /// The channel's name
        #[arg(long, default_value = "default")]
        name: String,
        /// Where to POST: https://, or http:// to this machine only
        #[arg(long, value_name = "URL")]
        webhook: String,
    },
    /// List the organization's channels
    List,
    /// Rename a channel or point it at another webhook; its signing secret stays
    Update {
        /// The channel (id or name)
        channel: String,
        /// A new name
        #[arg(long, required_unless_present = "webhook")]
        name: Option<String>,
        /// A new webhook: https://, or http:// to this machine only
        #[arg(long, value_name = "URL")]
        webhook: Option<String>,
    },
    /// Remove a channel (by id or name); its pending deliveries are dropped
    Delete {
        /// The channel (id or name)
        channel: String,
    },
    /// What was sent where, newest first, and how it went
    Deliveries {
        /// At most this many
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: Option<u32>,
    },
}
