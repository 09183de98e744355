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
    Show {
        /// The Agent (id or name)
        agent: String,
    },
    /// Approve a host name for an Agent's local-API certificate (owner). The CA
    /// signs no other name for it but localhost and loopback addresses: clients
    /// that check host names (browsers, curl, the External Secrets Operator)
    /// trust the installation CA. Recorded
    AllowName {
        /// The Agent (id or name)
        agent: String,
        /// A DNS name or IP address, e.g. edge-1.acme.internal
        name: String,
    },
    /// Withdraw an approved name (owner); certificates carrying it are revoked
    DisallowName {
        /// The Agent (id or name)
        agent: String,
        /// The name to allow no more
        name: String,
    },
    /// Let an Agent's programs write or delete secrets (owner). Without an
    /// allowance its program tokens only read; the API refuses any write or
    /// deletion outside one, whoever holds the Agent's key. Recorded
    AllowPrograms {
        /// The Agent (id or name)
        agent: String,
        /// The environment (name or id)
        #[arg(long)]
        environment: String,
        /// A secret name or glob, e.g. 'billing-*'
        #[arg(long)]
        secret: String,
        /// What its programs may do (repeatable)
        #[arg(long = "verb", value_enum, required = true)]
        verbs: Vec<ProgramVerbArg>,
    },
    /// Withdraw an allowance (owner): the API refuses what it allowed from now on
    DisallowPrograms {
        /// The Agent (id or name)
        agent: String,
        /// The environment (name or id)
        #[arg(long)]
        environment: String,
        /// The allowance's secret name or glob, as it was given
        #[arg(long)]
        secret: String,
    },
    /// What an Agent's programs may write or delete, and the program tokens it
    /// registered (ids and scopes, never a token)
    Programs {
        /// The Agent (id or name)
        agent: String,
    },
    /// Say an Agent's value store is destroyed (owner): what it held no longer
    /// holds up a `secret delete`. Recorded in the audit feed
    Forget {
        /// The Agent (id or name)
        agent: String,
        /// Required: you confirm the Agent's store, and every copy of it, is gone
        #[arg(long)]
        confirm_store_destroyed: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgramVerbArg {
    /// A new version, numbered by the API
    Write,
    /// Every version in the environment
    Delete,
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
