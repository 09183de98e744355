//! `heimdall agent`.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// One-time registration tokens, each enrolling one Agent
    #[command(subcommand)]
    Token(AgentTokenCommand),
    /// List Agents (revoked ones too)
    List,
    /// Revoke an Agent: the API refuses its certificate from its next request on
    Revoke {
        /// The Agent (id, or the name of an Agent not revoked)
        agent: String,
    },
    /// Show an Agent and what its value store held when it last synced
    Show { agent: String },
    /// Say an Agent's value store is destroyed (owner): what it held no longer
    /// holds up a `secret delete`. Recorded in the audit feed
    Forget {
        agent: String,
        /// Required: you confirm the Agent's store, and every copy of it, is gone
        #[arg(long)]
        confirm_store_destroyed: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentTokenCommand {
    /// Create a registration token (owner); printed once, with the command that enrolls the Agent
    Create {
        /// The Agent's name
        #[arg(long)]
        name: String,
    },
}
