//! One module per noun. Each handler validates its arguments, calls the
//! SDK, and prints through [`Out`].

mod accounts;
mod agents;
mod auth;
mod catalog;
mod certificates;
mod config_file;
mod console;
mod databases;
mod events;
mod help_files;
mod jobs;
mod members;
mod notifications;
mod policies;
mod resources;
mod run;
mod run_watch;
mod schemas;
mod secrets;
mod terraform;
mod tokens;
mod values;
mod wait;

use std::path::PathBuf;

use heimdall_core::Redacted;
use heimdall_sdk::{Client, Timeouts};
use heimdall_wire::CatalogKind;

use crate::args::{Cli, Command, EnvironmentCommand, GlobalArgs, ProfileCommand};
use crate::config::{self, Config};
use crate::error::{CliError, Result};
use crate::output::Out;

pub use catalog::CatalogAction;

/// Environment overrides. Read here rather than by clap so that a value
/// from the environment never shows in clap's usage lines.
pub const TOKEN_ENV: &str = "HEIMDALL_TOKEN";
pub const API_URL_ENV: &str = "HEIMDALL_API_URL";
pub const PROFILE_ENV: &str = "HEIMDALL_PROFILE";
/// A file holding the API's installation CA (PEM), overriding the profile's.
pub const CA_FILE_ENV: &str = "HEIMDALL_CA_FILE";
pub const CONNECT_TIMEOUT_ENV: &str = "HEIMDALL_CONNECT_TIMEOUT";
pub const REQUEST_TIMEOUT_ENV: &str = "HEIMDALL_REQUEST_TIMEOUT";

/// What every command may need: how to print, and who to be.
#[derive(Debug)]
pub struct Context {
    pub out: Out,
    /// `--profile` / `HEIMDALL_PROFILE`.
    pub profile: Option<String>,
    /// `--api-url` / `HEIMDALL_API_URL`.
    pub api_url: Option<String>,
    /// `--connect-timeout`, `--request-timeout` (their variables are read by [`Context::timeouts`]).
    timeout_flags: (Option<std::time::Duration>, Option<std::time::Duration>),
}

impl Context {
    /// Flags win over the environment; empty values count as unset.
    pub fn new(global: GlobalArgs) -> Self {
        let non_empty = |s: Option<String>| s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        let env = |name: &str| non_empty(std::env::var(name).ok());
        Self {
            out: Out::new(global.output),
            profile: non_empty(global.profile).or_else(|| env(PROFILE_ENV)),
            api_url: non_empty(global.api_url).or_else(|| env(API_URL_ENV)),
            timeout_flags: (global.connect_timeout, global.request_timeout),
        }
    }

    /// How long every request to the API or an Agent may take: the flags,
    /// else their variables, else the SDK's defaults.
    pub fn timeouts(&self) -> Result<Timeouts> {
        let from_env = |name: &str| match std::env::var(name).ok().filter(|v| !v.trim().is_empty()) {
            Some(text) => crate::args::parse_duration(&text)
                .map(Some)
                .map_err(|why| CliError::usage(format!("{name}={text}: {why}"))),
            None => Ok(None),
        };
        let defaults = Timeouts::default();
        let connect = match self.timeout_flags.0 {
            Some(flag) => flag,
            None => from_env(CONNECT_TIMEOUT_ENV)?.unwrap_or(defaults.connect),
        };
        let request = match self.timeout_flags.1 {
            Some(flag) => flag,
            None => from_env(REQUEST_TIMEOUT_ENV)?.unwrap_or(defaults.request),
        };
        if connect.is_zero() || request.is_zero() {
            return Err(CliError::usage("a timeout must be longer than zero"));
        }
        Ok(Timeouts { connect, request })
    }

    pub fn config_dir(&self) -> Result<PathBuf> {
        config::config_dir()
    }

    /// A client for the resolved API URL and token: `--api-url`/env over the
    /// profile's URL, `HEIMDALL_TOKEN` over the profile's token. The config
    /// file is read only when something is missing.
    pub fn client(&self) -> Result<Client> {
        let timeouts = self.timeouts()?;
        let (url, token, ca) = self.target()?;
        connect(&url, token.expose().trim(), ca.as_deref(), timeouts)
    }

    /// The command someone else runs to log in to the API this profile
    /// uses: its URL, and the CA's SHA-256 when the profile trusts its own.
    pub fn login_command(&self) -> Result<String> {
        let (url, _, ca) = self.target()?;
        Ok(match ca.as_deref().and_then(Client::ca_sha256) {
            Some(pin) => format!("heimdall login --api-url {url} --ca-sha256 {pin}"),
            None => format!("heimdall login --api-url {url}"),
        })
    }

    /// The API's URL, the token and the CA (PEM) to trust: the flags and
    /// the environment, else the profile.
    fn target(&self) -> Result<(String, Redacted<String>, Option<String>)> {
        let env_token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.trim().is_empty());
        let env_ca = ca_from_env()?;
        if let (Some(url), Some(token)) = (&self.api_url, &env_token) {
            return Ok((url.clone(), Redacted::new(token.clone()), env_ca));
        }
        let dir = self.config_dir()?;
        let config = Config::load(&dir)?;
        let (_, profile) = config.profile(self.profile.as_deref())?;
        let url = self.api_url.clone().unwrap_or_else(|| profile.api_url.clone());
        let token = env_token.unwrap_or_else(|| profile.token.expose().clone());
        Ok((url, Redacted::new(token), env_ca.or_else(|| profile.ca.clone())))
    }

    /// The client certificate of the profile in use (`--profile` /
    /// `HEIMDALL_PROFILE`, else the current one), for Agents' local APIs.
    pub fn identity(&self) -> Result<heimdall_sdk::Identity> {
        Ok(self.identity_and_dir()?.0)
    }

    /// [`Self::identity`], and the profile's directory, where its key,
    /// certificate and the Agents it last read from are kept.
    pub fn identity_and_dir(&self) -> Result<(heimdall_sdk::Identity, PathBuf)> {
        let (config_dir, name) = (self.config_dir()?, self.profile_name()?);
        let identity = crate::identity::load(&config_dir, &name)?;
        Ok((identity, crate::identity::profile_dir(&config_dir, &name)))
    }

    /// `--profile` / `HEIMDALL_PROFILE`, else the current one.
    fn profile_name(&self) -> Result<String> {
        let name = match &self.profile {
            Some(name) => name.clone(),
            None => Config::load(&self.config_dir()?)?.current_profile.ok_or_else(|| {
                CliError::not_logged_in("no client certificate: there is no current profile")
            })?,
        };
        config::validate_profile_name(&name)?;
        Ok(name)
    }
}

/// The CA in `HEIMDALL_CA_FILE`, if set.
pub fn ca_from_env() -> Result<Option<String>> {
    match std::env::var_os(CA_FILE_ENV).filter(|v| !v.is_empty()) {
        Some(path) => std::fs::read_to_string(&path).map(Some).map_err(|e| {
            CliError::local(format!("cannot read {CA_FILE_ENV} ({}): {e}", PathBuf::from(path).display()))
        }),
        None => Ok(None),
    }
}

/// A client for `url`: trusting only `ca` (the installation CA, and only a
/// server that names the API) when given, else the system's roots; waiting
/// as long as `timeouts` says.
pub fn connect(url: &str, token: &str, ca: Option<&str>, timeouts: Timeouts) -> Result<Client> {
    let client = match ca {
        Some(pem) => Client::with_ca(url, Some(token), pem)?,
        None => Client::new(url, token)?,
    };
    Ok(client.with_timeouts(timeouts)?)
}

pub async fn run(cli: Cli) -> Result<()> {
    let ctx = Context::new(cli.global);
    let Some(command) = cli.command else {
        if cli.version {
            return help_files::version(&ctx).await;
        }
        return Err(CliError::usage("a command is needed: see `heimdall --help`"));
    };
    match command {
        Command::Login(args) => auth::login(&ctx, args).await,
        Command::Logout => auth::logout(&ctx),
        Command::Whoami => auth::whoami(&ctx).await,
        Command::Console(args) => console::run(&ctx, args).await,
        Command::Profile(ProfileCommand::List) => auth::profile_list(&ctx),
        Command::Member(cmd) => members::run(&ctx, cmd).await,
        Command::Token(cmd) => tokens::run(&ctx, cmd).await,
        Command::Domain(cmd) => catalog::run(&ctx, CatalogAction::plain(CatalogKind::Domain, cmd)).await,
        Command::Environment(EnvironmentCommand::Catalog(cmd)) => {
            catalog::run(&ctx, CatalogAction::plain(CatalogKind::Environment, cmd)).await
        }
        Command::Environment(EnvironmentCommand::AssignAgent { environment, agent }) => {
            secrets::assign_agent(&ctx, &environment, &agent).await
        }
        Command::Environment(EnvironmentCommand::UnassignAgent { environment, agent }) => {
            secrets::unassign_agent(&ctx, &environment, &agent).await
        }
        Command::Environment(EnvironmentCommand::Agents { environment }) => {
            secrets::list_assignments(&ctx, &environment).await
        }
        Command::System(cmd) => catalog::run(&ctx, CatalogAction::system(cmd)).await,
        Command::Component(cmd) => catalog::run(&ctx, CatalogAction::component(cmd)).await,
        Command::Policy(cmd) => policies::run(&ctx, cmd).await,
        Command::Event(cmd) => events::run(&ctx, cmd).await,
        Command::Notification(cmd) => notifications::run(&ctx, cmd).await,
        Command::Database(cmd) => databases::run(&ctx, cmd).await,
        Command::Schema(cmd) => schemas::run(&ctx, cmd).await,
        Command::CloudAccount(cmd) => accounts::run(&ctx, cmd).await,
        Command::Resource(cmd) => resources::run(&ctx, cmd).await,
        Command::Job(cmd) => jobs::run(&ctx, cmd).await,
        Command::Terraform(cmd) => terraform::run(&ctx, cmd).await,
        Command::Agent(cmd) => agents::run(&ctx, cmd).await,
        Command::Certificate(cmd) => certificates::run(&ctx, cmd).await,
        Command::Secret(cmd) => secrets::run(&ctx, cmd).await,
        Command::Run(args) => run::run(&ctx, args).await,
        Command::Plan(args) => config_file::plan(&ctx, args).await,
        Command::Apply(args) => config_file::apply(&ctx, args).await,
        Command::ExportConfig => config_file::export(&ctx).await,
        Command::Dev(args) => crate::dev::run(&ctx, args).await,
        Command::Completion { shell } => help_files::completion(shell),
        Command::Man { out_dir: None } => help_files::man(),
        Command::Man { out_dir: Some(dir) } => help_files::man_pages(&dir),
    }
}

/// Under one page of a list that has more: where the next one starts
/// (on standard error, so that `--output json` stays one document).
pub fn say_next_page(next: Option<&str>) {
    if let Some(cursor) = next {
        eprintln!("More: add --after {cursor} for the next page");
    }
}

/// Capitalized noun for `✓ Domain created: …` lines.
pub fn title(kind: CatalogKind) -> &'static str {
    match kind {
        CatalogKind::Domain => "Domain",
        CatalogKind::System => "System",
        CatalogKind::Component => "Component",
        CatalogKind::Environment => "Environment",
    }
}

/// Reads a whole file, or standard input for `-`.
pub fn read_file_or_stdin(path: &std::path::Path) -> Result<String> {
    use std::io::Read;
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|err| CliError::local(format!("cannot read standard input: {err}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(path)
        .map_err(|err| CliError::local(format!("cannot read {}: {err}", path.display())))
}

/// A JSON document from a file (or standard input for `-`), for `flag`.
/// A missing, unreadable or invalid file is a usage error naming the flag
/// and the file, and saying where the JSON breaks, never what it holds.
pub fn read_json_file(flag: &str, path: &std::path::Path) -> Result<serde_json::Value> {
    let shown =
        if path.as_os_str() == "-" { "standard input".to_owned() } else { path.display().to_string() };
    let text = read_file_or_stdin(path).map_err(|err| CliError::usage(format!("{flag}: {err}")))?;
    parse_json(&text).map_err(|why| CliError::usage(format!("{flag}: {shown} {why}")))
}

/// Parses JSON; the error says how and where (line, column) it breaks,
/// never the text around it. (Parsing into a `Value` fails only on syntax,
/// whose messages are fixed phrases such as "expected `,` or `}`".)
pub fn parse_json(text: &str) -> std::result::Result<serde_json::Value, String> {
    serde_json::from_str(text).map_err(|err| format!("is not valid JSON: {err}"))
}

/// Refuses `-` for two flags of one command: standard input is read once.
pub fn stdin_once(flags: &[(&str, Option<&std::path::Path>)]) -> Result<()> {
    let from_stdin: Vec<&str> =
        flags.iter().filter(|(_, p)| p.is_some_and(|p| p.as_os_str() == "-")).map(|(f, _)| *f).collect();
    if from_stdin.len() > 1 {
        return Err(CliError::usage(format!(
            "only one of {} can read standard input (`-`)",
            from_stdin.join(" and ")
        )));
    }
    Ok(())
}
