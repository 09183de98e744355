//! The flags of `heimdall-api`, parsed by clap; `super::run` validates and acts.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(name = "heimdall-api", version, about = "The Heimdall API server")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the HTTP API (runs pending migrations first).
    Serve(ServeArgs),
    /// Add a new signing key for job identity tokens; it signs from the next
    /// start on, and the previous key stays published until the next rotation.
    RotateOidcKey {
        /// The directory given to `serve --ca-dir`.
        #[arg(long, env = "HEIMDALL_CA_DIR")]
        ca_dir: PathBuf,
    },
    /// Create the first organization and its owner; prints the owner's API
    /// token once. Refused on a database that already has an organization.
    Bootstrap(BootstrapArgs),
    /// Print an OpenAPI document (JSON) and exit: the people-facing API's
    /// (what `GET /v1/openapi.json` serves), or the Agent channel's.
    Openapi {
        #[arg(long, value_enum, default_value = "people")]
        document: Document,
    },
    /// Run pending migrations and exit.
    Migrate {
        #[arg(long, env = "HEIMDALL_DATABASE_URL", hide_env_values = true)]
        database_url: Option<String>,
        #[arg(long, env = "HEIMDALL_CONFIG")]
        config: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// postgres://… or sqlite://PATH
    #[arg(long, env = "HEIMDALL_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Address to listen on [default: 127.0.0.1:7480]
    #[arg(long, env = "HEIMDALL_LISTEN")]
    pub listen: Option<String>,
    /// TOML file with database_url, listen, max_body_bytes.
    #[arg(long, env = "HEIMDALL_CONFIG")]
    pub config: Option<PathBuf>,
    /// Also serve the Agent channel (mTLS) on this address.
    #[arg(long, env = "HEIMDALL_AGENT_LISTEN", requires = "ca_dir")]
    pub agent_listen: Option<String>,
    /// Directory with the installation CA (ca.pem, ca.key); created if empty.
    #[arg(long, env = "HEIMDALL_CA_DIR")]
    pub ca_dir: Option<PathBuf>,
    /// The URL Agents dial [default: https://<agent-listen>].
    #[arg(long, env = "HEIMDALL_AGENT_PUBLIC_URL")]
    pub agent_public_url: Option<String>,
    /// Extra DNS name or IP for the Agent listener's certificate, besides
    /// localhost, the listen address and --agent-public-url's host (repeatable).
    #[arg(long = "agent-tls-name")]
    pub agent_tls_names: Vec<String>,
    /// The people's HTTPS certificate chain (PEM), e.g. from your own CA or a public one.
    #[arg(long, env = "HEIMDALL_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Its private key (PEM).
    #[arg(long, env = "HEIMDALL_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Without --tls-cert: a DNS name or IP the certificate from the
    /// installation CA names, besides localhost and the listen address (repeatable).
    #[arg(long = "tls-name")]
    pub tls_names: Vec<String>,
    /// Serve people plain HTTP (only behind a proxy that terminates TLS).
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key", "tls_names"])]
    pub insecure_http: bool,
    /// The issuer URL of job identity tokens (`oidc` accounts): the
    /// people's HTTPS URL a cloud can reach, where /.well-known/ is
    /// served [default: https://<first --tls-name, else listen>].
    #[arg(long, env = "HEIMDALL_OIDC_ISSUER_URL")]
    pub oidc_issuer_url: Option<String>,
    /// Where STS is, for AWS `oidc` accounts [default: AWS's, by the account's region].
    #[arg(long, env = "HEIMDALL_STS_ENDPOINT_URL")]
    pub sts_endpoint_url: Option<String>,
    /// Serve `GET /metrics` (Prometheus, plain HTTP) on this address, e.g.
    /// 127.0.0.1:9480 [default: off]
    #[arg(long, env = "HEIMDALL_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
}

#[derive(Args, Debug)]
pub struct BootstrapArgs {
    #[arg(long, env = "HEIMDALL_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    #[arg(long, env = "HEIMDALL_CONFIG")]
    pub config: Option<PathBuf>,
    /// Organization name (lowercase letters, digits, '-', '_').
    #[arg(long)]
    pub org: String,
    /// The owner's email.
    #[arg(long)]
    pub owner: String,
    /// Write the owner's token to this new file (mode 0600) instead of
    /// printing it. An existing file is refused before anything is created.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// With --token-file: when that file is already there and opens this
    /// database, change nothing and succeed (for a script that runs on
    /// every start); a file from another database is refused.
    #[arg(long, requires = "token_file")]
    pub if_absent: bool,
    #[arg(long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Document {
    People,
    AgentChannel,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Output {
    Table,
    Json,
}
