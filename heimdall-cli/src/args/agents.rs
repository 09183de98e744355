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
