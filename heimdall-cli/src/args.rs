//! The command line as typed: clap parses it here, `commands` validates
//! and lowers it (ripgrep style: parse, then check, then run).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use heimdall_core::ids::{PolicyId, TokenId};
use heimdall_core::wire::Role;

/// Heimdall: infrastructure and secrets, self-hosted.
#[derive(Debug, Parser)]
#[command(name = "heimdall", version, propagate_version = true, max_term_width = 100)]
#[command(after_help = "New here? `heimdall dev` starts a local API and logs you in to it.")]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// The profile to use [env: HEIMDALL_PROFILE] (default: the current one, see `heimdall profile list`)
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,

    /// How to print results
    #[arg(long, global = true, value_enum, default_value_t = OutputFormat::Table, value_name = "FORMAT")]
    pub output: OutputFormat,

    /// The API's URL, overriding the profile's [env: HEIMDALL_API_URL]. The token comes from
    /// HEIMDALL_TOKEN or the profile.
    #[arg(long, global = true, value_name = "URL")]
    pub api_url: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned columns for people
    #[default]
    Table,
    /// Pretty JSON on stdout (lists are arrays); errors as {"error":{…}} on stderr
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Store an API URL and token as a profile (verified with `whoami`)
    Login(LoginArgs),
    /// Forget the current (or --profile) profile and its token
    Logout,
    /// Show who the token belongs to
    Whoami,
    /// Stored profiles
    #[command(subcommand)]
    Profile(ProfileCommand),
    /// Members of the organization and their roles
    #[command(subcommand)]
    Member(MemberCommand),
    /// Your own API tokens
    #[command(subcommand)]
    Token(TokenCommand),
    /// Domains: the top of the catalog
    #[command(subcommand)]
    Domain(PlainCatalogCommand),
    /// Systems, each in a domain
    #[command(subcommand)]
    System(SystemCommand),
    /// Components, each in a system
    #[command(subcommand)]
    Component(ComponentCommand),
    /// Environments (dev, prod, …) of the organization
    #[command(subcommand)]
    Environment(PlainCatalogCommand),
    /// Cedar policies of the organization
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// The organization's audit feed
    #[command(subcommand)]
    Event(EventCommand),
    /// Quickstart: run a local API on SQLite and log in to it
    Dev(DevArgs),
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The API token; read from standard input when absent (safer: keeps it out of shell history)
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// List stored profiles (tokens are never shown)
    List,
}

/// A member's id or email.
pub type MemberRef = String;

#[derive(Debug, Subcommand)]
pub enum MemberCommand {
    /// List members
    List,
    /// Add a member; prints their first API token, once
    Add {
        email: String,
        #[arg(long, value_enum)]
        role: RoleArg,
    },
    /// Show one member (by id or email)
    Show { member: MemberRef },
    /// Change a member's role
    SetRole {
        member: MemberRef,
        #[arg(long, value_enum)]
        role: RoleArg,
    },
    /// Remove a member and revoke their tokens
    Remove { member: MemberRef },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RoleArg {
    Owner,
    Admin,
    Member,
}

impl From<RoleArg> for Role {
    fn from(role: RoleArg) -> Self {
        match role {
            RoleArg::Owner => Role::Owner,
            RoleArg::Admin => Role::Admin,
            RoleArg::Member => Role::Member,
        }
    }
}

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

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Create a policy from a Cedar file (validated by the API)
    Create {
        #[arg(long)]
        name: String,
        /// The Cedar file, or `-` for standard input
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        #[arg(long)]
        description: Option<String>,
    },
    /// List policies
    List,
    /// Show one policy and its text
    Show { id: PolicyId },
    /// Delete a policy; takes effect on the next request
    Delete { id: PolicyId },
}

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

#[derive(Debug, Args)]
pub struct DevArgs {
    /// Where the database, the owner's token and the API log live
    #[arg(long, value_name = "DIR", default_value = "./.heimdall-dev")]
    pub data: PathBuf,
    /// Address for the API to listen on
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7480")]
    pub listen: SocketAddr,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_go_anywhere() {
        let cli = Cli::try_parse_from(["heimdall", "domain", "list", "--output", "json", "--profile", "p"])
            .unwrap();
        assert_eq!(cli.global.output, OutputFormat::Json);
        assert_eq!(cli.global.profile.as_deref(), Some("p"));
    }
}
