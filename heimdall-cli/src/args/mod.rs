//! The command line as typed: clap parses it here, `commands` validates
//! and lowers it (ripgrep style: parse, then check, then run).

mod accounts;
mod agents;
mod auth;
mod catalog;
mod certificates;
mod config_file;
mod databases;
mod dev;
mod events;
mod jobs;
mod members;
mod notifications;
mod policies;
mod resources;
mod run;
mod schemas;
mod secrets;
mod terraform;
mod tokens;
mod wait;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use accounts::*;
pub use agents::*;
pub use auth::*;
pub use catalog::*;
pub use certificates::*;
pub use config_file::*;
pub use databases::*;
pub use dev::*;
pub use events::*;
pub use jobs::*;
pub use members::*;
pub use notifications::*;
pub use policies::*;
pub use resources::*;
pub use run::*;
pub use schemas::*;
pub use secrets::*;
pub use terraform::*;
pub use tokens::*;
pub use wait::*;

/// Heimdall: infrastructure and secrets, self-hosted.
#[derive(Debug, Parser)]
#[command(
    name = "heimdall",
    disable_version_flag = true,
    arg_required_else_help = true,
    max_term_width = 100
)]
#[command(after_help = "New here? `heimdall dev` starts a local API and logs you in to it.")]
pub struct Cli {
    /// Print this client's version and, when the API is reachable, the server's
    #[arg(short = 'V', long = "version")]
    pub version: bool,
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// The profile to use [env: HEIMDALL_PROFILE] (default: the current one, see `heimdall profile list`)
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,

    /// How to print results
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = OutputFormat::Table, value_name = "FORMAT")]
    pub output: OutputFormat,

    /// The API's URL, overriding the profile's [env: HEIMDALL_API_URL]. The token comes from
    /// HEIMDALL_TOKEN or the profile.
    #[arg(long, global = true, value_name = "URL")]
    pub api_url: Option<String>,

    /// Give up connecting (TCP and TLS) to the API or an Agent after this long
    /// [env: HEIMDALL_CONNECT_TIMEOUT] [default: 5s]
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub connect_timeout: Option<std::time::Duration>,

    /// Give up on one request after this long [env: HEIMDALL_REQUEST_TIMEOUT] [default: 30s]
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub request_timeout: Option<std::time::Duration>,
}

/// `heimdall console`.
#[derive(Debug, Args)]
pub struct ConsoleArgs {
    /// Print the link instead of opening a browser (also when there is no display)
    #[arg(long)]
    pub no_open: bool,
}

/// One page of a long list instead of every page.
#[derive(Debug, Clone, Default, Args)]
pub struct PageArgs {
    /// One page of at most this many (1-1000) instead of every page
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub limit: Option<u32>,
    /// One page, after this cursor (printed under a page that has more)
    #[arg(long, value_name = "CURSOR")]
    pub after: Option<String>,
}

impl PageArgs {
    /// Whether one page was asked for, not the whole list.
    pub fn one_page(&self) -> bool {
        self.limit.is_some() || self.after.is_some()
    }
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
    /// Open the web Console signed in as you, with a link that works once, within a minute
    /// (the profile's token never goes to the browser)
    Console(ConsoleArgs),
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
    /// Where the organization's notifications go (webhooks), and their deliveries
    #[command(subcommand)]
    Notification(NotificationCommand),
    /// Databases whose service users' passwords the Agent creates and rotates
    #[command(subcommand)]
    Database(DatabaseCommand),
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
    /// A Resource's Terraform, for plain `terraform`: export
    #[command(subcommand)]
    Terraform(TerraformCommand),
    /// Agents: enroll one with a one-time token, list them, revoke one
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Certificates the installation CA issued (people's, Agents' local APIs): list, revoke
    #[command(subcommand)]
    Certificate(CertificateCommand),
    /// Secrets: names, types, tags and versions (values live only in Agents)
    #[command(subcommand)]
    Secret(SecretCommand),
    /// Run a program with the secrets heimdall.yaml names as environment variables
    Run(RunArgs),
    /// Show what applying a configuration file would change: `+` made, `~` changed, `-` deleted
    Plan(PlanArgs),
    /// Make the organization what a configuration file says (asks first; stops at the first refusal)
    Apply(ApplyArgs),
    /// Print the organization's configuration as a file `plan` and `apply` read
    ExportConfig,
    /// Print a shell completion script, e.g. `heimdall completion bash > /etc/bash_completion.d/heimdall`
    Completion {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `heimdall man | man -l -`; with
    /// --out-dir, write one page per command (heimdall-secret-get.1, …) there
    Man {
        /// Write one page per command into this directory instead
        #[arg(long, value_name = "DIR")]
        out_dir: Option<std::path::PathBuf>,
    },
    /// Quickstart: run a local API on SQLite and an Agent, and log in to it
    Dev(DevArgs),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

    use clap::CommandFactory;
    use heimdall_wire::{Provider, ResourceStatus};

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `--help` of every command describes each of its arguments, and the
    /// global flags stand apart under their own heading.
    #[test]
    fn every_argument_is_described_and_global_flags_stand_apart() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") || arg.is_hide_set() {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} <{id}>"));
                }
                if arg.is_global_set() {
                    assert_eq!(arg.get_help_heading(), Some("Global options"), "{path} --{id}");
                } else {
                    assert_ne!(arg.get_help_heading(), Some("Global options"), "{path} --{id}");
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut cli = Cli::command();
        cli.build();
        let mut missing = Vec::new();
        walk(&cli, "heimdall", &mut missing);
        assert!(missing.is_empty(), "arguments without a description:\n{}", missing.join("\n"));
    }

    /// Every `heimdall …` command in the `sh` blocks of the README and the
    /// guides under docs/ is one this CLI parses: a renamed flag or command
    /// fails here, not in a reader's terminal. (The README's tour also runs
    /// for real in tests/e2e.rs.)
    #[test]
    fn every_command_the_docs_show_parses() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repo root");
        let mut files = vec![root.join("README.md")];
        let docs = std::fs::read_dir(root.join("docs")).expect("docs/");
        files.extend(
            docs.map(|e| e.expect("entry").path()).filter(|p| p.extension().is_some_and(|x| x == "md")),
        );
        let (mut checked, mut broken) = (0, Vec::new());
        for file in &files {
            let text = std::fs::read_to_string(file).expect("read");
            let mut fence: Option<&str> = None;
            let mut joined = String::new();
            for line in text.lines() {
                let trimmed = line.trim_start();
                if let Some(info) = trimmed.strip_prefix("```") {
                    fence = if fence.is_some() { None } else { Some(info.trim()) };
                    continue;
                }
                // `sh` blocks are commands; `console` blocks are transcripts
                // whose commands follow a `$ `.
                // `sh not-run: why` is a block the guide test only reads.
                let line = match fence.and_then(|info| info.split_whitespace().next()) {
                    Some("sh" | "bash") => line,
                    Some("console") => match line.strip_prefix("$ ") {
                        Some(command) => command,
                        None => continue,
                    },
                    _ => continue,
                };
                // A continued line joins the next.
                if let Some(head) = line.strip_suffix('\\') {
                    joined.push_str(head);
                    continue;
                }
                joined.push_str(line);
                let shell_line = std::mem::take(&mut joined);
                for part in shell_line.split(['|', ';']).flat_map(|p| p.split("&&")) {
                    let part = part.trim().trim_start_matches("sudo ");
                    if !part.starts_with("heimdall ") {
                        continue;
                    }
                    let Some(words) = shlex::split(part) else {
                        broken.push(format!("{}: cannot split {part:?}", file.display()));
                        continue;
                    };
                    // Up to a comment or a redirection.
                    let words: Vec<String> = words
                        .into_iter()
                        .take_while(|w| !w.starts_with('#') && !w.starts_with('>') && !w.starts_with('<'))
                        .collect();
                    checked += 1;
                    if let Err(e) = Cli::try_parse_from(&words) {
                        if !matches!(
                            e.kind(),
                            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                        ) {
                            broken.push(format!("{}: {part}\n{}", file.display(), e.render()));
                        }
                    }
                }
            }
        }
        assert!(checked > 80, "only {checked} commands found in {files:?}");
        assert!(
            broken.is_empty(),
            "{} of {checked} commands do not parse:\n{}",
            broken.len(),
            broken.join("\n")
        );
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
    fn resource_create_needs_one_input() {
        let base =
            ["heimdall", "resource", "create", "--component", "c", "--schema", "s", "--environment", "e"];
        let with =
            |extra: &[&str]| Cli::try_parse_from(base.iter().chain(["--name", "n"].iter()).chain(extra));
        assert!(with(&[]).is_err());
        assert!(with(&["--input", "{}", "--input-file", "x.json"]).is_err());
        assert!(with(&["--timeout", "1m", "--input", "{}"]).is_err(), "--timeout needs --wait");
        let cli = with(&["--input-file", "-", "--wait", "--timeout", "30s"]).unwrap();
        match cli.command.unwrap() {
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
            cli.command.unwrap(),
            Command::Environment(EnvironmentCommand::Catalog(PlainCatalogCommand::Create { .. }))
        ));
        let cli = Cli::try_parse_from(["heimdall", "environment", "assign-agent", "prod", "edge-1"]).unwrap();
        match cli.command.unwrap() {
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
        match cli.command.unwrap() {
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
        match get.command.unwrap() {
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
