//! `heimdall domain`, `system`, `component` and `environment`.

use clap::Subcommand;

/// What every catalog noun does to one entry, by id or name.
#[derive(Debug, Subcommand)]
pub enum EntryCommand {
    /// Show one (by id or name)
    Show {
        /// Its id or name
        entry: String,
    },
    /// Rename one; its id stays
    Rename {
        /// Its id or name
        entry: String,
        /// The new name (the id stays)
        new_name: String,
    },
    /// Delete one (refused while anything lives in it: systems, components, Resources)
    Delete {
        /// Its id or name
        entry: String,
    },
}

/// Domains and environments: no parent.
#[derive(Debug, Subcommand)]
pub enum PlainCatalogCommand {
    /// Create one
    Create {
        /// Its name (unique among its kind)
        name: String,
        /// What it is for, in a sentence
        #[arg(long)]
        description: Option<String>,
    },
    /// List them
    List,
    #[command(flatten)]
    Entry(EntryCommand),
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
        /// Its name (unique among its kind)
        name: String,
        /// The domain (id or name)
        #[arg(long)]
        domain: String,
        /// What it is for, in a sentence
        #[arg(long)]
        description: Option<String>,
    },
    /// List systems, optionally of one domain
    List {
        /// Only this domain's (id or name)
        #[arg(long)]
        domain: Option<String>,
    },
    #[command(flatten)]
    Entry(EntryCommand),
}

#[derive(Debug, Subcommand)]
pub enum ComponentCommand {
    /// Create a component in a system
    Create {
        /// Its name (unique among its kind)
        name: String,
        /// The system (id or name)
        #[arg(long)]
        system: String,
        /// What it is for, in a sentence
        #[arg(long)]
        description: Option<String>,
    },
    /// List components, optionally of one system
    List {
        /// Only this system's (id or name)
        #[arg(long)]
        system: Option<String>,
    },
    #[command(flatten)]
    Entry(EntryCommand),
}
