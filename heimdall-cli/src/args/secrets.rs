//! `heimdall secret`.

use std::path::PathBuf;

use clap::Subcommand;

/// Secrets. No flag here takes a value: the API never receives one, and
/// `secret set` reads it from a file or standard input, never the command line.
#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Create a secret (its metadata; the value goes to an Agent, never to the API)
    Create {
        /// The secret's name (unique in the organization)
        name: String,
        /// A free classification, e.g. password, api-key, certificate
        #[arg(long = "type", value_name = "TYPE")]
        secret_type: Option<String>,
        /// What it is for, in a sentence
        #[arg(long)]
        description: Option<String>,
        /// A tag, KEY=VALUE (metadata, never the secret's value); repeatable
        #[arg(long = "tag", value_name = "KEY=VALUE")]
        tags: Vec<String>,
        /// A component that uses the secret (id or name); repeatable
        #[arg(long = "component", value_name = "COMPONENT")]
        components: Vec<String>,
        /// Only you will reach it: not other members, not the organization's owners
        #[arg(long)]
        personal: bool,
    },
    /// List secrets
    List {
        /// Only secrets a removed member's reads put at risk
        #[arg(long)]
        at_risk: bool,
        #[command(flatten)]
        page: super::PageArgs,
    },
    /// Show a secret and its versions in every environment (by id or name)
    Show {
        /// The secret (id or name)
        secret: String,
    },
    /// Change a secret's type, description, tags or components
    Update {
        /// The secret (id or name)
        secret: String,
        /// The new type
        #[arg(long = "type", value_name = "TYPE")]
        secret_type: Option<String>,
        /// The new description
        #[arg(long)]
        description: Option<String>,
        /// The tags become exactly these, KEY=VALUE; repeatable
        #[arg(long = "tag", value_name = "KEY=VALUE")]
        tags: Vec<String>,
        /// Remove every tag
        #[arg(long, conflicts_with = "tags")]
        clear_tags: bool,
        /// The linked components become exactly these (id or name); repeatable
        #[arg(long = "component", value_name = "COMPONENT")]
        components: Vec<String>,
    },
    /// Write a new version: the API numbers it, the Agents that hold the environment store the
    /// value. The value comes from --from-file or standard input (hidden prompt on a terminal)
    #[command(after_help = "The value is taken byte for byte: pipe it with printf, not echo \
(echo adds a newline that becomes part of the value). It must be UTF-8 text of 1 byte to 1 MiB; \
base64 binary values first. The API never receives it; it goes only to the Agents, over HTTPS \
with this profile's client certificate (`heimdall login`).")]
    Set {
        /// The secret (id or name)
        secret: String,
        /// The environment (id or name)
        #[arg(long)]
        environment: String,
        /// Read the value from this file (`-`: standard input)
        #[arg(long, value_name = "PATH")]
        from_file: Option<PathBuf>,
        /// Send the value to this Agent local API URL instead of the one the Agent reported
        /// (only when exactly one Agent holds the environment)
        #[arg(long, value_name = "URL")]
        agent_url: Option<String>,
        /// How long the version this one replaces stays readable (`0`, the default, or e.g.
        /// `1h`, at most `30d`); after it every Agent erases it (VERSION_SUPERSEDED)
        #[arg(long, value_name = "PERIOD")]
        keep_previous: Option<String>,
    },
    /// Read a value from an Agent that holds the environment; the read is recorded before it is
    /// served. Prints the value exactly as stored
    #[command(disable_version_flag = true)]
    Get {
        /// The secret (id or name)
        secret: String,
        /// The environment (id or name)
        #[arg(long)]
        environment: String,
        /// This version rather than the newest
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
        version: Option<i64>,
        /// Ask this Agent local API URL rather than the holders the API lists
        #[arg(long, value_name = "URL")]
        agent_url: Option<String>,
    },
    /// Deactivate a leaked version: every Agent replaces it with a tombstone on its next sync
    /// and refuses it (VERSION_DEACTIVATED); there is no fallback to an older version
    #[command(disable_version_flag = true)]
    Deactivate {
        /// The secret (id or name)
        secret: String,
        /// The environment (id or name)
        #[arg(long)]
        environment: String,
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
        version: i64,
    },
    /// Delete a secret in every environment: each Agent that holds it deletes its copies on its
    /// next sync; refused (VALUE_MAY_PERSIST) while an Agent that will not sync again may hold one
    Delete {
        /// The secret (id or name)
        secret: String,
        /// Only in this environment (id or name): the secret stays elsewhere
        #[arg(long)]
        environment: Option<String>,
        /// Wait until every Agent has reported its copies gone
        #[arg(long)]
        wait: bool,
    },
    /// Who read a secret, when, which version, through which Agent (owner, admin)
    AccessLog {
        /// The secret (id or name)
        secret: String,
        /// Only reads in this environment (id or name)
        #[arg(long)]
        environment: Option<String>,
        /// At most this many entries per page (default 100)
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: Option<u32>,
        /// Start after this cursor (printed under a page that has more)
        #[arg(long, value_name = "CURSOR", conflicts_with = "all")]
        after: Option<String>,
        /// Every page, newest first
        #[arg(long)]
        all: bool,
    },
}
