//! `heimdall domain`, `system`, `component` and `environment`.

use clap::Subcommand;

/// Domains and environments: no parent.
#[derive(Debug, Subcommand)]
pub enum PlainCatalogCommand {
    /// Create one
    Create {
        name: String,
        #[arg(long)]
        description: Option<String>,
    },
    /// List them
    List,
    /// Show one (by id or name)
    Show { entry: String },
    /// Rename one; its id stays
    Rename { entry: String, new_name: String },
    /// Delete one (refused while anything lives in it)
    Delete { entry: String },
}

/// Environments: the catalog commands, plus which Agents hold their values.
#[derive(Debug, Subcommand)]
pub enum EnvironmentCommand {
    #[command(flatten)]
    Catalog(PlainCatalogCommand),
    /// Make an Agent hold this environment's secret values (owner)
    AssignAgent {
        /// The environment (id or name)
        environment: String,
        /// The Agent (id or name)
        agent: String,
    },
    /// Stop an Agent holding this environment (owner): it deletes its values there on its next
    /// sync; refused while it holds the only copy of a current version
    UnassignAgent {
        /// The environment (id or name)
        environment: String,
        /// The Agent (id or name)
        agent: String,
    },
    /// List the Agents that hold this environment's secret values
    Agents {
        /// The environment (id or name)
        environment: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum SystemCommand {
    /// Create a system in a domain
    Create {
        name: String,
        /// The domain (id or name)
        #[arg(long)]
        domain: String,
        #[arg(long)]
        description: Option<String>,
    },
    /// List systems, optionally of one domain
    List {
        /// Only this domain's (id or name)
        #[arg(long)]
        domain: Option<String>,
    },
    /// Show one (by id or name)
    Show { entry: String },
    /// Rename one; its id stays
    Rename { entry: String, new_name: String },
    /// Delete one (refused while it has components)
    Delete { entry: String },
}

#[derive(Debug, Subcommand)]
pub enum ComponentCommand {
    /// Create a component in a system
    Create {
        name: String,
        /// The system (id or name)
        #[arg(long)]
        system: String,
        #[arg(long)]
        description: Option<String>,
    },
    /// List components, optionally of one system
    List {
        /// Only this system's (id or name)
        #[arg(long)]
        system: Option<String>,
    },
    /// Show one (by id or name)
    Show { entry: String },
    /// Rename one; its id stays
    Rename { entry: String, new_name: String },
    /// Delete one (refused while anything lives in it)
    Delete { entry: String },
}
