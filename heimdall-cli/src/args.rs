//! The command line as typed: clap parses it here, `commands` validates
//! and lowers it (ripgrep style: parse, then check, then run).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use heimdall_core::ids::{JobId, PolicyId, TokenId};
use heimdall_core::wire::{LinkScope, Provider, ResourceStatus, Role};

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
    /// Store an API URL and token as a profile (verified with `whoami`), and get a client
    /// certificate for Agents' local APIs (the key is made here and never leaves this machine)
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
    /// Environments (dev, prod, …) of the organization, and the Agents that hold their secrets
    #[command(subcommand)]
    Environment(EnvironmentCommand),
    /// Cedar policies of the organization
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// The organization's audit feed
    #[command(subcommand)]
    Event(EventCommand),
    /// Resource schemas: what engineers may request, and its input rules
    #[command(subcommand)]
    Schema(SchemaCommand),
    /// Cloud accounts: where Terraform runs and keeps its state
    #[command(subcommand)]
    CloudAccount(CloudAccountCommand),
    /// Resources requested from schemas, their revisions and approvals
    #[command(subcommand)]
    Resource(ResourceCommand),
    /// Jobs that Agents run for Resources, and their logs
    #[command(subcommand)]
    Job(JobCommand),
    /// Agents: enroll one with a one-time token, list them, revoke one
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Certificates the installation CA issued (people's, Agents' local APIs): list, revoke
    #[command(subcommand)]
    Certificate(CertificateCommand),
    /// Secrets: names, types, tags and versions (values live only in Agents)
    #[command(subcommand)]
    Secret(SecretCommand),
    /// Quickstart: run a local API on SQLite and an Agent, and log in to it
    Dev(DevArgs),
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The API's installation CA (PEM), when its HTTPS certificate is from it; only a server
    /// naming the API is then trusted. The token comes from HEIMDALL_TOKEN or standard input.
    #[arg(long, value_name = "FILE", conflicts_with = "ca_sha256")]
    pub ca_file: Option<std::path::PathBuf>,
    /// The installation CA's SHA-256 (from the API's operator): its CA is fetched, checked and kept
    #[arg(long, value_name = "HEX")]
    pub ca_sha256: Option<String>,
    /// Do not get a client certificate (needed only to write and read secret values on Agents)
    #[arg(long)]
    pub no_certificate: bool,
    /// Make a new key for the client certificate instead of keeping this profile's (personal
    /// secrets are bound to the key they were created with)
    #[arg(long)]
    pub new_key: bool,
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

#[derive(Debug, Subcommand)]
pub enum SchemaCommand {
    /// Create a schema, or a new version of an existing type
    Create {
        /// The type name, e.g. s3-bucket (versions of one type share it)
        #[arg(long = "type", value_name = "TYPE")]
        type_name: String,
        /// The input's JSON Schema (draft 2020-12) file, or `-` for standard input
        #[arg(long, value_name = "FILE")]
        input_schema: PathBuf,
        /// Per-environment defaults laid under every input, a JSON file
        /// `{"<environment>": {…}}`, or `-` for standard input
        #[arg(long, value_name = "FILE")]
        defaults: Option<PathBuf>,
        /// Where the Terraform module comes from (the Agent decides whether it is allowed)
        #[arg(long, value_name = "SOURCE", requires = "module_version")]
        module_source: Option<String>,
        /// The module's version
        #[arg(long, value_name = "VERSION", requires = "module_source")]
        module_version: Option<String>,
        /// Creates and changes wait for another person's approval
        #[arg(long)]
        requires_approval: bool,
    },
    /// List schemas (every version)
    List {
        /// Only this type's versions
        #[arg(long = "type", value_name = "TYPE")]
        type_name: Option<String>,
    },
    /// Show a schema and its input schema (by id, or a type for its newest version)
    Show { schema: String },
}

#[derive(Debug, Subcommand)]
pub enum CloudAccountCommand {
    /// Register an account: a role to assume (oidc) or a secret's name in the Agent (static)
    Create {
        name: String,
        #[arg(long, value_enum)]
        provider: ProviderArg,
        /// Default region of the account's Resources
        #[arg(long)]
        region: String,
        /// Bucket holding Terraform state (one object per Resource)
        #[arg(long, value_name = "BUCKET")]
        state_bucket: String,
        /// S3-compatible endpoint for the state bucket
        #[arg(long, value_name = "URL")]
        state_endpoint: Option<String>,
        /// How the Agent gets credentials
        #[arg(long, value_enum)]
        auth: AuthArg,
        /// With --auth oidc: the role to assume
        #[arg(long, value_name = "ARN")]
        role_arn: Option<String>,
        /// With --auth static: the name of the secret, in the Agent, that holds the credentials
        #[arg(long, value_name = "NAME")]
        secret: Option<String>,
    },
    /// Link an account to the organization, a domain or a system, for one environment
    Link {
        /// The account (id or name)
        account: String,
        /// `organization`, `domain:<id-or-name>` or `system:<id-or-name>`
        #[arg(long, value_parser = parse_scope)]
        scope: ScopeArg,
        /// The environment (id or name)
        #[arg(long)]
        environment: String,
    },
    /// List accounts
    List,
    /// Show an account and its links (by id or name)
    Show { account: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    Aws,
    Gcp,
    Azure,
    Kubernetes,
    Helm,
    Cloudflare,
}

impl From<ProviderArg> for Provider {
    fn from(provider: ProviderArg) -> Self {
        match provider {
            ProviderArg::Aws => Provider::Aws,
            ProviderArg::Gcp => Provider::Gcp,
            ProviderArg::Azure => Provider::Azure,
            ProviderArg::Kubernetes => Provider::Kubernetes,
            ProviderArg::Helm => Provider::Helm,
            ProviderArg::Cloudflare => Provider::Cloudflare,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AuthArg {
    /// Assume --role-arn with an identity token the API signs
    Oidc,
    /// Read credentials from the secret --secret in the Agent
    Static,
}

/// `--scope`: where a link attaches an account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeArg {
    pub scope: LinkScope,
    /// The domain or system (id or name); `None` for the organization.
    pub target: Option<String>,
}

fn parse_scope(text: &str) -> Result<ScopeArg, String> {
    const EXPECTED: &str = "expected `organization`, `domain:<id-or-name>` or `system:<id-or-name>`";
    let (kind, target) = match text.split_once(':') {
        Some((kind, target)) => (kind, Some(target.trim())),
        None => (text, None),
    };
    let scope = match kind.trim() {
        "organization" => LinkScope::Organization,
        "domain" => LinkScope::Domain,
        "system" => LinkScope::System,
        _ => return Err(EXPECTED.to_owned()),
    };
    match (scope, target) {
        (LinkScope::Organization, None) => Ok(ScopeArg { scope, target: None }),
        (LinkScope::Organization, Some(_)) => Err(format!("organization takes no id; {EXPECTED}")),
        (_, Some(target)) if !target.is_empty() => Ok(ScopeArg { scope, target: Some(target.to_owned()) }),
        (_, _) => Err(format!("{scope} needs an id or a name, e.g. `{scope}:payments`; {EXPECTED}")),
    }
}

/// `--wait` and `--timeout`, for commands that queue a job.
#[derive(Clone, Copy, Debug, Args)]
pub struct WaitArgs {
    /// Wait until the Resource settles (provisioned, failed, deleted, pending approval, …);
    /// exits 1 if it failed
    #[arg(long)]
    pub wait: bool,
    /// Give up waiting after this long, e.g. 30s, 10m, 1h30m
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration, requires = "wait")]
    pub timeout: Duration,
}

/// `30s`, `10m`, `1h30m`, `500ms`, or plain seconds (`90`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    const EXPECTED: &str = "expected a duration such as 30s, 10m or 1h30m";
    let text = text.trim();
    if text.is_empty() {
        return Err(EXPECTED.to_owned());
    }
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 {
            return Err(EXPECTED.to_owned());
        }
        let amount: u64 = rest[..digits].parse().map_err(|_| EXPECTED.to_owned())?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(1),
            "s" | "sec" | "secs" => Duration::from_secs(1),
            "m" | "min" | "mins" => Duration::from_secs(60),
            "h" | "hr" | "hrs" => Duration::from_secs(3600),
            _ => return Err(EXPECTED.to_owned()),
        };
        rest = &rest[unit_len..];
        let part = u32::try_from(amount).ok().and_then(|n| unit.checked_mul(n)).ok_or("duration too long")?;
        total = total.checked_add(part).ok_or("duration too long")?;
    }
    if total.is_zero() {
        return Err("the duration must be more than zero".to_owned());
    }
    Ok(total)
}

/// The input of a create or change: inline JSON or a file.
#[derive(Clone, Debug, Args)]
pub struct InputArgs {
    /// The input, a JSON object, e.g. '{"bucket":"checkout-recibos"}'
    #[arg(long, value_name = "JSON", required_unless_present = "input_file", conflicts_with = "input_file")]
    pub input: Option<String>,
    /// Read the input from a JSON file, or `-` for standard input
    #[arg(long, value_name = "FILE")]
    pub input_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ResourceCommand {
    /// Request a Resource from a schema
    Create {
        /// The component it belongs to (id or name)
        #[arg(long)]
        component: String,
        /// The schema (id, or a type for its newest version)
        #[arg(long)]
        schema: String,
        /// The environment (id or name)
        #[arg(long)]
        environment: String,
        /// The Resource's name
        #[arg(long)]
        name: String,
        #[command(flatten)]
        input: InputArgs,
        /// Run in this region rather than the account's
        #[arg(long)]
        region: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// List Resources (deleted ones stay listed)
    List {
        /// Only this component's (id or name)
        #[arg(long)]
        component: Option<String>,
        /// Only this environment's (id or name)
        #[arg(long)]
        environment: Option<String>,
        #[arg(long, value_enum)]
        status: Option<StatusArg>,
    },
    /// Show a Resource, its outputs and its revisions (by id or name)
    Show { resource: String },
    /// Change a Resource's input: a new revision
    Update {
        resource: String,
        #[command(flatten)]
        input: InputArgs,
        /// Run in this region from now on
        #[arg(long)]
        region: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Approve the pending revision (never your own request)
    Approve {
        resource: String,
        /// The revision you read; approving any other is refused (STALE_REVISION)
        #[arg(long, value_name = "N")]
        revision: i64,
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Refuse the pending revision (never your own request)
    Refuse {
        resource: String,
        /// The revision you read
        #[arg(long, value_name = "N")]
        revision: i64,
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Queue a failed Resource's last operation again
    Retry {
        resource: String,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Destroy a Resource (it stays listed as deleted); cancels any apply still queued
    Delete {
        resource: String,
        #[command(flatten)]
        wait: WaitArgs,
    },
}

/// `--status` of `resource list`: the names of [`ResourceStatus`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum StatusArg {
    PendingApproval,
    Queued,
    Applying,
    Provisioned,
    Failed,
    Refused,
    Deleting,
    Deleted,
}

impl From<StatusArg> for ResourceStatus {
    fn from(status: StatusArg) -> Self {
        match status {
            StatusArg::PendingApproval => ResourceStatus::PendingApproval,
            StatusArg::Queued => ResourceStatus::Queued,
            StatusArg::Applying => ResourceStatus::Applying,
            StatusArg::Provisioned => ResourceStatus::Provisioned,
            StatusArg::Failed => ResourceStatus::Failed,
            StatusArg::Refused => ResourceStatus::Refused,
            StatusArg::Deleting => ResourceStatus::Deleting,
            StatusArg::Deleted => ResourceStatus::Deleted,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// List jobs, oldest first
    List {
        /// Only jobs of this component's Resources (id or name)
        #[arg(long)]
        component: Option<String>,
        /// Only this Resource's jobs (id or name)
        #[arg(long)]
        resource: Option<String>,
    },
    /// Show one job
    Show { job: JobId },
    /// Print a job's Terraform output
    Log { job: JobId },
}

#[derive(Debug, Subcommand)]
pub enum CertificateCommand {
    /// List issued certificates (owners and admins see all; members their own)
    List,
    /// Revoke one certificate by its SHA-256
    Revoke { sha256: String },
}

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

/// Secrets. No flag here takes a value: the API never receives one, and
/// `secret set` reads it from a file or standard input, never the command line.
#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Create a secret (its metadata; the value goes to an Agent, never to the API)
    Create {
        name: String,
        /// A free classification, e.g. password, api-key, certificate
        #[arg(long = "type", value_name = "TYPE")]
        secret_type: Option<String>,
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
    List,
    /// Show a secret and its versions in every environment (by id or name)
    Show { secret: String },
    /// Change a secret's type, description, tags or components
    Update {
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
    },
    /// Read a value from an Agent that holds the environment; the read is recorded before it is
    /// served. Prints the value exactly as stored
    #[command(disable_version_flag = true)]
    Get {
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
        secret: String,
        /// The environment (id or name)
        #[arg(long)]
        environment: String,
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
        version: i64,
    },
    /// Who read a secret, when, which version, through which Agent (owner, admin)
    AccessLog {
        secret: String,
        /// Only reads in this environment (id or name)
        #[arg(long)]
        environment: Option<String>,
    },
}

#[derive(Debug, Args)]
#[command(after_help = "The Agent is enrolled once, the first time: its Terraform (pinned by SHA-256) and \
its allowed modules are then in DIR/agent/agent.toml; remove DIR/agent to enroll it again.")]
pub struct DevArgs {
    /// Where the database, the owner's token, the Agent, Terraform state and the logs live
    #[arg(long, value_name = "DIR", default_value = "./.heimdall-dev")]
    pub data: PathBuf,
    /// Address for the API to listen on; Agents dial the port after it
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7480")]
    pub listen: SocketAddr,
    /// The terraform executable for the Agent [env: HEIMDALL_TERRAFORM] (default:
    /// ./.venv/bin/terraform, else terraform on PATH; none: the API runs without an Agent)
    #[arg(long, value_name = "PATH")]
    pub terraform: Option<PathBuf>,
    /// A module source the Agent may run, as a glob; repeatable [default: <current directory>/**,
    /// every local module under the directory `heimdall dev` runs in]
    #[arg(long = "allow-module", value_name = "GLOB")]
    pub allow_modules: Vec<String>,
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
    fn value_enums_match_the_wire_names() {
        for status in StatusArg::value_variants() {
            let name = status.to_possible_value().expect("visible");
            assert_eq!(name.get_name(), ResourceStatus::from(*status).as_str());
        }
        assert_eq!(StatusArg::value_variants().len(), ResourceStatus::ALL.len());
        for provider in ProviderArg::value_variants() {
            let name = provider.to_possible_value().expect("visible");
            assert_eq!(name.get_name(), Provider::from(*provider).as_str());
        }
        assert_eq!(ProviderArg::value_variants().len(), Provider::ALL.len());
    }

    #[test]
    fn scopes() {
        let org = parse_scope("organization").unwrap();
        assert_eq!(org, ScopeArg { scope: LinkScope::Organization, target: None });
        let domain = parse_scope("domain:payments").unwrap();
        assert_eq!(domain, ScopeArg { scope: LinkScope::Domain, target: Some("payments".into()) });
        let system = parse_scope("system:0b7c3a0e-8f4e-4d0a-9c43-2d7f1c1e9a55").unwrap();
        assert_eq!(system.scope, LinkScope::System);
        for bad in ["", "org", "domain", "domain:", "organization:x", "team:a"] {
            assert!(parse_scope(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        let d = |s: &str| parse_duration(s).unwrap();
        assert_eq!(d("30s"), Duration::from_secs(30));
        assert_eq!(d("10m"), Duration::from_secs(600));
        assert_eq!(d("1h30m"), Duration::from_secs(5400));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d("90"), Duration::from_secs(90));
        assert_eq!(d(" 2min "), Duration::from_secs(120));
        for bad in ["", "m", "10x", "ten minutes", "-5s", "0s", "1.5m", "99999999999h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resource_create_needs_one_input() {
        let base =
            ["heimdall", "resource", "create", "--component", "c", "--schema", "s", "--environment", "e"];
        let with =
            |extra: &[&str]| Cli::try_parse_from(base.iter().chain(["--name", "n"].iter()).chain(extra));
        assert!(with(&[]).is_err());
        assert!(with(&["--input", "{}", "--input-file", "x.json"]).is_err());
        assert!(with(&["--timeout", "1m", "--input", "{}"]).is_err(), "--timeout needs --wait");
        let cli = with(&["--input-file", "-", "--wait", "--timeout", "30s"]).unwrap();
        match cli.command {
            Command::Resource(ResourceCommand::Create { input, wait, .. }) => {
                assert_eq!(input.input_file, Some(PathBuf::from("-")));
                assert!(wait.wait);
                assert_eq!(wait.timeout, Duration::from_secs(30));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn environments_keep_the_catalog_commands_and_add_agents() {
        let cli = Cli::try_parse_from(["heimdall", "environment", "create", "prod"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Environment(EnvironmentCommand::Catalog(PlainCatalogCommand::Create { .. }))
        ));
        let cli = Cli::try_parse_from(["heimdall", "environment", "assign-agent", "prod", "edge-1"]).unwrap();
        match cli.command {
            Command::Environment(EnvironmentCommand::AssignAgent { environment, agent }) => {
                assert_eq!((environment.as_str(), agent.as_str()), ("prod", "edge-1"));
            }
            other => panic!("{other:?}"),
        }
        assert!(Cli::try_parse_from(["heimdall", "domain", "assign-agent", "x", "y"]).is_err());
    }

    #[test]
    fn secret_flags() {
        let cli = Cli::try_parse_from([
            "heimdall",
            "secret",
            "create",
            "db",
            "--tag",
            "a=1",
            "--tag",
            "b=2",
            "--component",
            "api",
            "--personal",
        ])
        .unwrap();
        match cli.command {
            Command::Secret(SecretCommand::Create { tags, components, personal, .. }) => {
                assert_eq!(tags, ["a=1", "b=2"]);
                assert_eq!(components, ["api"]);
                assert!(personal);
            }
            other => panic!("{other:?}"),
        }
        let update =
            |extra: &[&str]| Cli::try_parse_from(["heimdall", "secret", "update", "db"].iter().chain(extra));
        assert!(update(&["--clear-tags"]).is_ok());
        assert!(update(&["--clear-tags", "--tag", "a=1"]).is_err());
        // No flag takes a value: the API never receives one.
        for flag in ["--value", "--from-file", "--data"] {
            assert!(
                Cli::try_parse_from(["heimdall", "secret", "create", "db", flag, "x"]).is_err(),
                "{flag}"
            );
        }
    }

    #[test]
    fn secret_values_never_come_from_a_flag() {
        let get = Cli::try_parse_from([
            "heimdall",
            "secret",
            "get",
            "db",
            "--environment",
            "dev",
            "--version",
            "3",
        ])
        .unwrap();
        match get.command {
            Command::Secret(SecretCommand::Get { version, agent_url, .. }) => {
                assert_eq!((version, agent_url), (Some(3), None));
            }
            other => panic!("{other:?}"),
        }
        let set = |extra: &[&str]| {
            Cli::try_parse_from(
                ["heimdall", "secret", "set", "db", "--environment", "dev"].iter().chain(extra),
            )
        };
        assert!(set(&[]).is_ok());
        assert!(set(&["--from-file", "v.txt", "--agent-url", "https://127.0.0.1:7482"]).is_ok());
        for flag in ["--value", "--data", "--secret"] {
            assert!(set(&[flag, "x"]).is_err(), "{flag}");
        }
        let deactivate = ["heimdall", "secret", "deactivate", "db", "--environment", "dev"];
        assert!(Cli::try_parse_from(deactivate).is_err(), "--version is required");
        assert!(Cli::try_parse_from(deactivate.iter().chain(&["--version", "0"])).is_err());
        assert!(Cli::try_parse_from(["heimdall", "login", "--no-certificate"]).is_ok());
    }

    #[test]
    fn global_flags_go_anywhere() {
        let cli = Cli::try_parse_from(["heimdall", "domain", "list", "--output", "json", "--profile", "p"])
            .unwrap();
        assert_eq!(cli.global.output, OutputFormat::Json);
        assert_eq!(cli.global.profile.as_deref(), Some("p"));
    }
}
