//! `heimdall dev`: the quickstart. Runs `heimdall-api` on SQLite under a
//! data directory, bootstraps an organization once, makes a `dev` profile
//! current, runs an Agent enrolled with that organization, and stays in the
//! foreground until Ctrl-C, SIGTERM or SIGHUP.
//!
//! Files under the data directory: `heimdall.db` (the API's database),
//! `owner.token` (the owner's token, mode 0600, written once by the
//! bootstrap; its presence means "already bootstrapped"), `api.log` (the
//! API's output), `ca/` (the installation CA, made by the API), `agent/`
//! (the Agent's key, certificate and `agent.toml`, written once by
//! `heimdall-agent enroll`; `agent/agent.toml` means "already enrolled"),
//! `state/` (Terraform state, one file per Resource: the dev Agent uses
//! Terraform's local backend, so no bucket is needed), `agent.log`,
//! `agent-values.db` (the Agent's encrypted value store) and `master.key`
//! (its 32-byte master key as hex, mode 0600, made on the first run).
//!
//! The dev profile gets a client certificate on every start (a fresh key,
//! like `heimdall login`), before the Agent starts, so the Agent's first
//! sync already knows it and `heimdall secret set|get` work at once.
//!
//! The Agent channel (mTLS) listens on the port after `--listen`'s and the
//! Agent's local API (where values are written and read) on the one after
//! that (`[values]` and `[local_api]` in `agent.toml`, added by `heimdall
//! dev` when missing; sync every 2 s). The
//! Agent's Terraform is `--terraform`, else `$HEIMDALL_TERRAFORM`, else
//! `./.venv/bin/terraform` (what `scripts/install-test-tools.sh` installs
//! in the Heimdall repository), else `terraform` on `PATH`; with none, or
//! without the `heimdall-agent` binary, the API runs alone and the banner
//! says that jobs stay queued and what to install. The Agent runs modules
//! whose source matches `--allow-module` (default `<current dir>/**`: any
//! local module under the directory `heimdall dev` runs in).
//!
//! The children run in their own process groups, so a Ctrl-C in the
//! terminal reaches only `heimdall dev`, which stops them in order: the
//! Agent first (SIGTERM: it finishes the jobs it is running, for up to
//! 30 s), then the API.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use heimdall_core::wire::Bootstrapped;
use heimdall_core::{ErrorCode, Redacted};
use heimdall_sdk::Client;
use serde::Deserialize;
use std::io::Write;
use time::OffsetDateTime;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::args::DevArgs;
use crate::commands::Context;
use crate::config::{self, Config, Profile};
use crate::error::{CliError, Result};

pub const DEV_PROFILE: &str = "dev";
const API_BINARY: &str = "heimdall-api";
const AGENT_BINARY: &str = "heimdall-agent";
const TOKEN_FILE: &str = "owner.token";
const LOG_FILE: &str = "api.log";
const AGENT_LOG_FILE: &str = "agent.log";
const AGENT_DIR: &str = "agent";
const AGENT_CONFIG: &str = "agent.toml";
const STATE_DIR: &str = "state";
const CA_DIR: &str = "ca";
const VALUES_DB: &str = "agent-values.db";
const MASTER_KEY_FILE: &str = "master.key";
/// How often the dev Agent syncs: reads reach `secret access-log` quickly.
const DEV_SYNC_SECONDS: u64 = 2;
/// The dev Agent's name in the organization.
const AGENT_NAME: &str = "dev";
const TERRAFORM_ENV: &str = "HEIMDALL_TERRAFORM";
const REGISTRATION_TOKEN_ENV: &str = "HEIMDALL_REGISTRATION_TOKEN";
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the Agent has to reach the API before the banner says so.
const AGENT_READY_TIMEOUT: Duration = Duration::from_secs(15);
const GRACEFUL_STOP: Duration = Duration::from_secs(5);
/// The Agent finishes the jobs it is running before it exits.
const AGENT_STOP: Duration = Duration::from_secs(30);
const TAIL_LINES: usize = 20;
const INSTALL_TERRAFORM: &str = "run `bash scripts/install-test-tools.sh` in the Heimdall repository \
    (it installs terraform in ./.venv), or put any terraform on PATH (or pass --terraform PATH), \
    then restart `heimdall dev`";

pub async fn run(ctx: &Context, args: DevArgs) -> Result<()> {
    // Listening from the start: a Ctrl-C during start-up stops the children
    // too (they are in their own process groups, out of the terminal's reach).
    let mut signals = Signals::listen()?;
    let Running { mut api, mut agent, data } = tokio::select! {
        running = start(ctx, &args) => running?,
        stop = signals.recv() => {
            // Dropping `start` killed whatever it had started.
            return Err(CliError::local(format!("{stop} while starting; nothing is left running")));
        }
    };
    wait_for_stop(&mut signals, &mut api, &mut agent).await?;
    if let AgentState::Running { service, .. } = agent {
        eprintln!("Stopping the Agent (it finishes the jobs it is running first)…");
        match service.terminate(AGENT_STOP, &mut signals).await {
            Ended::Exited => {}
            Ended::Killed(why) => eprintln!(
                "warning: the Agent was killed ({why}); any job it was running is retried once its \
                 lease expires"
            ),
        }
    }
    eprintln!("Stopping the API…");
    if let Ended::Killed(why) = api.terminate(GRACEFUL_STOP, &mut signals).await {
        eprintln!("warning: the API was killed ({why})");
    }
    eprintln!("✓ Stopped. Data kept in {}.", data.display());
    Ok(())
}

/// What `start` leaves running.
struct Running {
    api: Service,
    agent: AgentState,
    data: PathBuf,
}

async fn start(ctx: &Context, args: &DevArgs) -> Result<Running> {
    let api_binary = locate_binary(API_BINARY).ok_or_else(|| {
        CliError::local(format!(
            "cannot find the `{API_BINARY}` binary next to `heimdall` or on PATH; \
             build it with `cargo build -p heimdall-api` (it lands next to `heimdall`)"
        ))
    })?;
    let config_dir = ctx.config_dir()?;
    let cwd = std::env::current_dir()
        .map_err(|err| CliError::local(format!("cannot tell the current directory: {err}")))?;
    let data = prepare_data_dir(&args.data)?;
    let database_url = format!("sqlite://{}", data.join("heimdall.db").display());
    let agent_listen = agent_listen_addr(args.listen)?;
    let local_api_listen = agent_listen_addr(agent_listen).map_err(|_| {
        CliError::usage("--listen's port must leave room for the Agent channel and its local API after it")
    })?;
    ensure_port_free(args.listen, "--listen")?;
    ensure_port_free(agent_listen, "the Agent channel, on the port after --listen's")?;
    // Before anything runs: a wrong --terraform is a usage error.
    let plan = plan_agent(args, &data, &cwd)?;
    if !matches!(plan, AgentPlan::Off(_)) {
        ensure_port_free(local_api_listen, "the Agent's local API, two ports after --listen's")?;
    }

    let token = ensure_bootstrapped(&api_binary, &data, &database_url).await?;

    let log_path = data.join(LOG_FILE);
    let agent_url = format!("https://{}", client_addr(agent_listen));
    let mut command = Command::new(&api_binary);
    command
        .args(["serve", "--database-url", &database_url, "--listen", &args.listen.to_string()])
        .args(["--agent-listen", &agent_listen.to_string(), "--agent-public-url", &agent_url])
        .arg("--ca-dir")
        .arg(data.join(CA_DIR));
    if agent_listen.ip().is_unspecified() {
        // The URL Agents dial names loopback: the certificate must too.
        command.args(["--agent-tls-name", &client_addr(agent_listen).ip().to_string()]);
    }
    let mut api = Service::spawn(API_BINARY, command, &log_path)?;
    // HTTPS with a certificate from the installation CA, which the API
    // makes in `ca/` on its first start; the dev profile trusts only it.
    let api_url = format!("https://{}", client_addr(args.listen));
    let ca_pem = wait_until_healthy(&mut api, &api_url, &data.join(CA_DIR).join("ca.pem")).await?;

    let client = Client::with_ca(&api_url, Some(token.expose().as_str()), &ca_pem)?;
    let me = match client.whoami().await {
        Ok(me) => me,
        Err(err) if err.code() == Some(ErrorCode::Unauthenticated) => {
            return Err(CliError::local(format!(
                "{} does not open {}: the two are from different runs; remove {} to start over",
                data.join(TOKEN_FILE).display(),
                data.join("heimdall.db").display(),
                data.display()
            )));
        }
        Err(err) => return Err(err.into()),
    };

    let mut config = Config::load(&config_dir)?;
    config
        .profiles
        .insert(DEV_PROFILE.to_owned(), Profile { api_url: api_url.clone(), token, ca: Some(ca_pem) });
    config.current_profile = Some(DEV_PROFILE.to_owned());
    let config_path = config.save(&config_dir)?;
    // Before the Agent starts: its first sync then knows this certificate.
    let certificate = match crate::identity::issue(&client, &config_dir, DEV_PROFILE, false).await {
        Ok(issued) => Some(issued),
        Err(err) => {
            eprintln!(
                "warning: no client certificate for the dev profile ({err}); `heimdall secret set|get` \
                 need one: run `heimdall login` with the dev profile's URL and token"
            );
            None
        }
    };

    let agent = start_agent(plan, &client, &api_url, &agent_url, local_api_listen, &data, &cwd).await;
    let local_api_url = agent.local_api_url();

    if ctx.out.is_json() {
        crate::output::json(&serde_json::json!({
            "api_url": api_url,
            "agent_api_url": agent_url,
            "data_dir": data,
            "log_file": log_path,
            "profile": DEV_PROFILE,
            "config_file": config_path,
            "organization": me.organization,
            "member": me.member,
            "agent": agent.describe(&data),
            "agent_local_api_url": local_api_url,
            "certificate": certificate.as_ref().map(|c| serde_json::json!({
                "sha256": c.sha256,
                "not_after": crate::output::timestamp(c.not_after),
                "dir": crate::identity::profile_dir(&config_dir, DEV_PROFILE),
            })),
        }))?;
    } else {
        let text = format!(
            "✓ Heimdall API running at {api_url} (SQLite in {data})\n\
             ✓ Profile \"{DEV_PROFILE}\" is current: {email}, {role} of organization {org}\n\
             {certificate}\
             {agent_status}\
             \n\
             Try, in another terminal:\n\
             \x20 heimdall whoami\n\
             \x20 heimdall domain create payments\n\
             \x20 heimdall system create checkout --domain payments\n\
             \x20 heimdall component create api --system checkout\n\
             \x20 heimdall environment create prod\n\
             \x20 heimdall member add ana@example.com --role admin\n\
             \x20 heimdall event list\n\
             {infra}\
             {secrets}\
             \n\
             API log: {log}\n\
             {agent_log}\
             Press Ctrl-C to stop (the data stays; run `heimdall dev` again to carry on).\n",
            data = data.display(),
            email = me.member.email,
            role = me.member.role,
            org = me.organization.name,
            certificate = match &certificate {
                Some(c) => format!(
                    "✓ Client certificate for \"{DEV_PROFILE}\" valid until {} (key in {})\n",
                    crate::output::timestamp(c.not_after),
                    crate::identity::profile_dir(&config_dir, DEV_PROFILE).display()
                ),
                None => String::new(),
            },
            agent_status = agent.banner(&data),
            infra = if agent.is_running() { infra_tour(&cwd, &data) } else { String::new() },
            secrets = match &local_api_url {
                Some(url) if agent.is_running() => secrets_tour(url),
                _ => String::new(),
            },
            log = log_path.display(),
            agent_log = if agent.is_running() || data.join(AGENT_LOG_FILE).exists() {
                format!("Agent log: {}\n", data.join(AGENT_LOG_FILE).display())
            } else {
                String::new()
            },
        );
        write_stdout(&text)?;
    }
    Ok(Running { api, agent, data })
}

/// The Resource half of the banner's "Try": the Agent needs a cloud account
/// linked for the environment even though, in dev, it keeps state on disk.
/// Uses the repository's example schema and offline module when `heimdall
/// dev` runs in the Heimdall repository.
fn infra_tour(cwd: &Path, data: &Path) -> String {
    let schema = cwd.join("examples/schemas/bucket.json");
    let module = cwd.join("tests/fixtures/modules/bucket");
    let (schema_line, resource_line) = if schema.is_file() && module.join("main.tf").is_file() {
        (
            format!(
                "heimdall schema create --type bucket --input-schema {} --module-source {} \
                 --module-version 1.0.0",
                schema.display(),
                module.display()
            ),
            "heimdall resource create --component api --schema bucket --environment dev --name receipts \
             --input '{\"bucket\":\"acme-receipts\"}' --wait"
                .to_owned(),
        )
    } else {
        (
            format!(
                "heimdall schema create --type <type> --input-schema <schema.json> --module-source {}/<module dir> \
                 --module-version 1.0.0",
                cwd.display()
            ),
            "heimdall resource create --component api --schema <type> --environment dev --name <name> \
             --input '<json>' --wait"
                .to_owned(),
        )
    };
    format!(
        "\n\
         Then a Resource, applied by the Agent (state in {state}; in dev the account's bucket and\n\
         secret are never read, but every Resource needs an account linked for its environment):\n\
         \x20 heimdall environment create dev\n\
         \x20 heimdall cloud-account create local --provider aws --region us-east-1 --state-bucket local-state --auth static --secret none\n\
         \x20 heimdall cloud-account link local --scope organization --environment dev\n\
         \x20 {schema_line}\n\
         \x20 {resource_line}\n",
        state = data.join(STATE_DIR).display(),
    )
}

/// The secret half of the banner's "Try": the value goes to the Agent's
/// local API and is read back from it; the API only numbers versions and
/// keeps the trail.
fn secrets_tour(local_api_url: &str) -> String {
    format!(
        "\n\
         Then a secret, whose value only the Agent holds (its local API: {local_api_url}):\n\
         \x20 heimdall environment assign-agent dev {AGENT_NAME}\n\
         \x20 heimdall secret create db-password\n\
         \x20 printf 's3cret-value' | heimdall secret set db-password --environment dev\n\
         \x20 heimdall secret get db-password --environment dev\n\
         \x20 heimdall secret access-log db-password   # reads arrive with the Agent's next sync ({DEV_SYNC_SECONDS} s)\n"
    )
}

fn write_stdout(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

// ---- the Agent -----------------------------------------------------------------

/// What to do about the Agent, decided before anything starts.
#[derive(Debug, PartialEq, Eq)]
enum AgentPlan {
    /// `agent/agent.toml` exists: run it as it is.
    Enrolled { binary: PathBuf },
    /// First time: enroll with this Terraform and these module globs, then run.
    Enroll { binary: PathBuf, terraform: PathBuf, modules: Vec<String> },
    /// No Agent this time.
    Off(Off),
}

/// Why there is no Agent, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Off {
    why: String,
    fix: String,
}

fn plan_agent(args: &DevArgs, data: &Path, cwd: &Path) -> Result<AgentPlan> {
    let agent_dir = data.join(AGENT_DIR);
    let config_path = agent_dir.join(AGENT_CONFIG);
    let env_terraform = std::env::var_os(TERRAFORM_ENV).filter(|v| !v.is_empty());
    let Some(binary) = locate_binary(AGENT_BINARY) else {
        return Ok(AgentPlan::Off(Off {
            why: format!("cannot find the `{AGENT_BINARY}` binary next to `heimdall` or on PATH"),
            fix: "build it with `cargo build -p heimdall-agent` (it lands next to `heimdall`), \
                  then restart `heimdall dev`"
                .to_owned(),
        }));
    };
    if config_path.exists() {
        if args.terraform.is_some() || !args.allow_modules.is_empty() {
            eprintln!(
                "warning: --terraform and --allow-module count only when the Agent is enrolled, and it \
                 already is: edit {} (the terraform pin is its sha256), or remove {} to enroll it again",
                config_path.display(),
                agent_dir.display()
            );
        }
        return Ok(AgentPlan::Enrolled { binary });
    }
    if agent_dir.join("agent.key").exists() {
        return Ok(AgentPlan::Off(Off {
            why: format!(
                "{} holds an enrollment that did not finish (no {AGENT_CONFIG})",
                agent_dir.display()
            ),
            fix: format!(
                "remove {} and restart `heimdall dev` to enroll the Agent again",
                agent_dir.display()
            ),
        }));
    }
    let path_env = std::env::var_os("PATH");
    let Some(terraform) = find_terraform(args.terraform.as_deref(), env_terraform, cwd, path_env)? else {
        return Ok(AgentPlan::Off(Off {
            why: "no terraform found (looked for --terraform, $HEIMDALL_TERRAFORM, ./.venv/bin/terraform, \
                  then terraform on PATH)"
                .to_owned(),
            fix: INSTALL_TERRAFORM.to_owned(),
        }));
    };
    let modules = if args.allow_modules.is_empty() {
        vec![default_module_glob(cwd)]
    } else {
        args.allow_modules.clone()
    };
    Ok(AgentPlan::Enroll { binary, terraform, modules })
}

/// Where the Agent's Terraform comes from: the flag, else the environment
/// variable, else `./.venv/bin/terraform`, else `terraform` on `PATH`.
/// A path that was asked for by name and is not there is an error; finding
/// none by looking is not.
fn find_terraform(
    flag: Option<&Path>,
    env: Option<OsString>,
    cwd: &Path,
    path_env: Option<OsString>,
) -> Result<Option<PathBuf>> {
    let named =
        flag.map(|p| (p.to_path_buf(), "--terraform")).or(env.map(|p| (PathBuf::from(p), TERRAFORM_ENV)));
    if let Some((named, from)) = named {
        let found = if named.components().count() > 1 {
            Some(cwd.join(&named)).filter(|p| is_executable(p))
        } else {
            on_path(&named.to_string_lossy(), path_env, cwd)
        };
        return found
            .map(Some)
            .ok_or_else(|| CliError::usage(format!("{from} {}: not an executable file", named.display())));
    }
    let venv = cwd.join(".venv/bin/terraform");
    if is_executable(&venv) {
        return Ok(Some(venv));
    }
    Ok(on_path("terraform", path_env, cwd))
}

/// Every local module under `dir`: `<dir>/**`, with glob characters in
/// `dir` taken literally.
fn default_module_glob(dir: &Path) -> String {
    let dir = dir.to_string_lossy();
    let mut glob = String::new();
    for c in dir.trim_end_matches('/').chars() {
        match c {
            '*' | '?' | '[' | ']' | '{' | '}' => {
                glob.push('[');
                glob.push(c);
                glob.push(']');
            }
            '\\' => glob.push_str("\\\\"),
            c => glob.push(c),
        }
    }
    glob.push_str("/**");
    glob
}

/// What `agent.toml` says, as far as `heimdall dev` cares. Read leniently:
/// the Agent owns the format and checks it.
#[derive(Debug, Default, Deserialize)]
struct AgentToml {
    #[serde(default)]
    api_url: Option<String>,
    #[serde(default)]
    terraform: Option<TerraformToml>,
    #[serde(default)]
    modules: Option<ModulesToml>,
    #[serde(default)]
    values: Option<ValuesToml>,
    #[serde(default)]
    local_api: Option<LocalApiToml>,
}

#[derive(Debug, Deserialize)]
struct ValuesToml {
    #[serde(default)]
    sqlite_path: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
struct LocalApiToml {
    listen: String,
    #[serde(default)]
    url: Option<String>,
}

impl LocalApiToml {
    /// The URL people use: `url`, else what the Agent derives
    /// (`https://localhost:<port>`).
    fn public_url(&self) -> String {
        match &self.url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => {
                let port = self.listen.rsplit_once(':').map_or("7482", |(_, port)| port);
                format!("https://localhost:{port}")
            }
        }
    }
}

#[derive(Debug, Deserialize)]
struct TerraformToml {
    path: PathBuf,
    #[serde(default)]
    version: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ModulesToml {
    #[serde(default)]
    allowed_sources: Vec<String>,
}

impl AgentToml {
    fn read(path: &Path) -> Self {
        std::fs::read_to_string(path).ok().and_then(|text| toml::from_str(&text).ok()).unwrap_or_default()
    }
}

/// The Agent as it is after start-up.
enum AgentState {
    Running { service: Box<Service>, config: PathBuf, enrolled_now: bool },
    Off(Off),
}

impl AgentState {
    fn is_running(&self) -> bool {
        matches!(self, AgentState::Running { .. })
    }

    /// Where the running Agent serves values, from its `agent.toml`.
    fn local_api_url(&self) -> Option<String> {
        match self {
            AgentState::Running { config, .. } => AgentToml::read(config).local_api.map(|l| l.public_url()),
            AgentState::Off(_) => None,
        }
    }

    fn banner(&self, data: &Path) -> String {
        match self {
            AgentState::Running { config, enrolled_now, .. } => {
                let toml = AgentToml::read(config);
                let terraform = match &toml.terraform {
                    Some(t) => {
                        format!("Terraform {} ({})", t.version.as_deref().unwrap_or("?"), t.path.display())
                    }
                    None => "Terraform".to_owned(),
                };
                let modules = toml.modules.map(|m| m.allowed_sources).unwrap_or_default();
                let modules = if modules.is_empty() { "none".to_owned() } else { modules.join(", ") };
                let values = match (&toml.local_api, toml.values.and_then(|v| v.sqlite_path)) {
                    (Some(local), Some(db)) => format!(
                        "✓ Agent local API at {} (values encrypted in {})\n",
                        local.public_url(),
                        db.display()
                    ),
                    (Some(local), None) => format!("✓ Agent local API at {}\n", local.public_url()),
                    (None, _) => String::new(),
                };
                format!(
                    "✓ Agent \"{AGENT_NAME}\" {state}: {terraform}; modules allowed: {modules}\n\
                     \x20 (state in {state_dir}; settings in {config})\n\
                     {values}",
                    state = if *enrolled_now { "enrolled and running" } else { "running" },
                    state_dir = data.join(STATE_DIR).display(),
                    config = config.display(),
                )
            }
            AgentState::Off(off) => format!(
                "! No Agent: {why}.\n\
                 \x20 Resources can be requested, but their jobs stay queued until an Agent runs.\n\
                 \x20 To run one: {fix}.\n",
                why = off.why,
                fix = off.fix,
            ),
        }
    }

    fn describe(&self, data: &Path) -> serde_json::Value {
        match self {
            AgentState::Running { config, enrolled_now, .. } => serde_json::json!({
                "running": true,
                "name": AGENT_NAME,
                "enrolled_now": enrolled_now,
                "config_file": config,
                "log_file": data.join(AGENT_LOG_FILE),
                "state_dir": data.join(STATE_DIR),
                "local_api_url": self.local_api_url(),
                "values_file": AgentToml::read(config).values.and_then(|v| v.sqlite_path),
            }),
            AgentState::Off(off) => serde_json::json!({
                "running": false,
                "reason": off.why,
                "fix": off.fix,
            }),
        }
    }
}

/// Enrolls the Agent if it never was, runs it, and waits until it reaches
/// the API. Nothing here stops the API from running: any trouble becomes
/// [`AgentState::Off`] (printed in the banner) or a warning.
async fn start_agent(
    plan: AgentPlan,
    client: &Client,
    api_url: &str,
    agent_url: &str,
    local_api_listen: SocketAddr,
    data: &Path,
    cwd: &Path,
) -> AgentState {
    let agent_dir = data.join(AGENT_DIR);
    let config = agent_dir.join(AGENT_CONFIG);
    let log_path = data.join(AGENT_LOG_FILE);
    let (binary, enrolled_now) = match plan {
        AgentPlan::Off(off) => return AgentState::Off(off),
        AgentPlan::Enrolled { binary } => {
            sync_agent_url(&config, agent_url);
            (binary, false)
        }
        AgentPlan::Enroll { binary, terraform, modules } => {
            let enrolled =
                enroll(&binary, client, api_url, &agent_dir, &terraform, &modules, data, cwd).await;
            if let Err(off) = enrolled {
                return AgentState::Off(off);
            }
            (binary, true)
        }
    };
    if let Err(off) = configure_values(&config, data, local_api_listen) {
        return AgentState::Off(off);
    }
    let terraform = AgentToml::read(&config).terraform.map(|t| t.path);
    let mut command = Command::new(&binary);
    command.args(["run", "--config"]).arg(&config);
    terraform_env(&mut command, terraform.as_deref(), cwd);
    let since = OffsetDateTime::now_utc() - time::Duration::milliseconds(1);
    let mut service = match Service::spawn(AGENT_BINARY, command, &log_path) {
        Ok(service) => service,
        Err(err) => return AgentState::Off(Off { why: err.to_string(), fix: log_fix(&log_path) }),
    };
    match wait_until_connected(client, &mut service, &agent_dir, since).await {
        Ok(true) => {}
        Ok(false) => eprintln!(
            "warning: the Agent has not reached the API within {}s; it keeps trying (log: {})",
            AGENT_READY_TIMEOUT.as_secs(),
            log_path.display()
        ),
        // Dropping the service kills what is left of it.
        Err(off) => return AgentState::Off(off),
    }
    AgentState::Running { service: Box::new(service), config, enrolled_now }
}

fn log_fix(log_path: &Path) -> String {
    format!("see {}, then restart `heimdall dev`", log_path.display())
}

/// `heimdall-agent enroll` with a registration token made here (passed in
/// the environment, never on the command line), state on local disk.
#[allow(clippy::too_many_arguments)]
async fn enroll(
    binary: &Path,
    client: &Client,
    api_url: &str,
    agent_dir: &Path,
    terraform: &Path,
    modules: &[String],
    data: &Path,
    cwd: &Path,
) -> std::result::Result<(), Off> {
    let log_path = data.join(AGENT_LOG_FILE);
    let retry = format!("remove {} if it exists, then restart `heimdall dev`", agent_dir.display());
    let state_dir = data.join(STATE_DIR);
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&state_dir).map_err(|err| Off {
        why: format!("cannot create {}: {err}", state_dir.display()),
        fix: retry.clone(),
    })?;
    let registration = client.create_agent_registration(AGENT_NAME).await.map_err(|err| Off {
        why: format!("cannot make its registration token: {err}"),
        fix: log_fix(&data.join(LOG_FILE)),
    })?;
    let token = Redacted::new(registration.token.clone());
    let ca_sha256 = registration.ca_sha256.clone().unwrap_or_default();
    drop(registration);
    let mut command = Command::new(binary);
    command
        .args(["enroll", "--api", api_url, "--ca-sha256", &ca_sha256, "--data"])
        .arg(agent_dir)
        .arg("--terraform")
        .arg(terraform)
        .arg("--local-state")
        .arg(&state_dir);
    for glob in modules {
        command.args(["--allow-module", glob]);
    }
    terraform_env(&mut command, Some(terraform), cwd);
    let output = command
        .env(REGISTRATION_TOKEN_ENV, token.expose())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|err| Off { why: format!("cannot run {}: {err}", binary.display()), fix: retry.clone() })?;
    drop(token);
    // Its output names the Agent and its files, never the token.
    let lines: Vec<String> = [&output.stdout, &output.stderr]
        .iter()
        .flat_map(|bytes| String::from_utf8_lossy(bytes).lines().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    if let Ok(mut log) = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(&log_path) {
        for line in &lines {
            let _ = writeln!(log, "{line}");
        }
    }
    if !output.status.success() {
        return Err(Off {
            why: format!(
                "`{AGENT_BINARY} enroll` failed ({}){}",
                output.status,
                tail_block(lines.into_iter(), Some(&log_path))
            ),
            fix: retry,
        });
    }
    Ok(())
}

/// Terraform's environment for the Agent: no update checks, and the CLI
/// configuration of the virtualenv the terraform comes from (the Heimdall
/// repository's `.venv/terraformrc` keeps provider installs offline), if any.
fn terraform_env(command: &mut Command, terraform: Option<&Path>, cwd: &Path) {
    command.env("CHECKPOINT_DISABLE", "1");
    let beside = terraform
        .and_then(|t| t.parent()?.parent().map(Path::to_path_buf))
        .filter(|venv| venv.file_name().is_some_and(|n| n == ".venv"))
        .map(|venv| venv.join("terraformrc"));
    let rc = beside.into_iter().chain([cwd.join(".venv/terraformrc")]).find(|rc| rc.is_file());
    if let Some(rc) = rc {
        command.env("TF_CLI_CONFIG_FILE", rc);
    }
}

/// The Agent dials the URL written in its `agent.toml` at enrollment; a
/// later `heimdall dev --listen` elsewhere moves the Agent channel, so the
/// URL follows it.
fn sync_agent_url(config: &Path, agent_url: &str) {
    let Ok(text) = std::fs::read_to_string(config) else { return };
    let Some(old) = AgentToml::read(config).api_url else { return };
    if old == agent_url {
        return;
    }
    let old_line = format!("api_url = {}", toml::Value::String(old.clone()));
    let new_line = format!("api_url = {}", toml::Value::String(agent_url.to_owned()));
    let updated = (text.matches(&old_line).count() == 1)
        .then(|| text.replacen(&old_line, &new_line, 1))
        .map(|text| write_replacing(config, text.as_bytes()));
    match updated {
        Some(Ok(())) => {
            eprintln!("note: the Agent channel moved from {old} to {agent_url}; updated {}", config.display())
        }
        Some(Err(err)) => eprintln!("warning: cannot update {}: {err}", config.display()),
        None => eprintln!(
            "warning: {} says api_url = {old}, but the Agent channel is {agent_url}; edit it",
            config.display()
        ),
    }
}

/// Gives the dev Agent a value store and its local API: `[values]` (SQLite
/// in `DIR/agent-values.db`, the master key in `DIR/master.key`, made once,
/// sync every 2 s) and `[local_api]` on `local_api_listen`, each added
/// when missing. A `[local_api]` that `heimdall dev` wrote for another
/// `--listen` follows it, as the channel URL does.
fn configure_values(
    config: &Path,
    data: &Path,
    local_api_listen: SocketAddr,
) -> std::result::Result<(), Off> {
    let retry =
        |why: String| Off { why, fix: format!("fix {}, then restart `heimdall dev`", config.display()) };
    let db = data.join(VALUES_DB);
    let key_file = data.join(MASTER_KEY_FILE);
    let text = std::fs::read_to_string(config)
        .map_err(|err| retry(format!("cannot read {}: {err}", config.display())))?;
    let table: toml::Table = toml::from_str(&text)
        .map_err(|err| retry(format!("{} is not valid: {}", config.display(), err.message())))?;
    let quoted = |s: &str| toml::Value::String(s.to_owned()).to_string();
    let listen = local_api_listen.to_string();
    let url = format!("https://{}", client_addr(local_api_listen));
    // The certificate names what the URL names (the Agent's default is localhost and 127.0.0.1).
    let names = if local_api_listen.is_ipv6() { "names = [\"localhost\", \"::1\"]\n" } else { "" };
    let mut updated = text.clone();

    if !table.contains_key("values") {
        ensure_master_key(&key_file, &db)?;
        if !updated.ends_with('\n') {
            updated.push('\n');
        }
        updated.push_str(&format!(
            "\n# Added by `heimdall dev`: the Agent's encrypted value store.\n\
             [values]\n\
             sqlite_path = {}\n\
             master_key_file = {}\n\
             sync_seconds = {DEV_SYNC_SECONDS}\n",
            quoted(&db.to_string_lossy()),
            quoted(&key_file.to_string_lossy()),
        ));
    }
    match AgentToml::read(config).local_api {
        None => updated.push_str(&format!(
            "\n# Added by `heimdall dev`: where people write and read values (HTTPS, client certificates).\n\
             [local_api]\n\
             listen = {}\n\
             url = {}\n\
             {names}",
            quoted(&listen),
            quoted(&url),
        )),
        Some(local) if local.listen != listen => {
            // Moved by a new --listen: follow it, if the lines are the ones we wrote.
            let old_listen = format!("listen = {}", quoted(&local.listen));
            let old_url = local.url.as_deref().map(|u| format!("url = {}", quoted(u)));
            let ours = updated.matches(&old_listen).count() == 1
                && old_url.as_ref().is_none_or(|line| updated.matches(line.as_str()).count() == 1);
            if ours {
                updated = updated.replacen(&old_listen, &format!("listen = {}", quoted(&listen)), 1);
                if let Some(line) = old_url {
                    updated = updated.replacen(&line, &format!("url = {}", quoted(&url)), 1);
                }
                eprintln!(
                    "note: the Agent's local API moved from {} to {listen}; updated {}",
                    local.listen,
                    config.display()
                );
            } else {
                eprintln!(
                    "warning: {} says [local_api] listen = {}, not {listen}; leaving it as it is",
                    config.display(),
                    local.listen
                );
            }
        }
        Some(_) => {}
    }
    if updated != text {
        write_replacing(config, updated.as_bytes())
            .map_err(|err| retry(format!("cannot update {}: {err}", config.display())))?;
    }
    Ok(())
}

/// `DIR/master.key`: 32 random bytes as 64 hex characters, mode 0600,
/// made once. A store whose key is gone cannot be opened, so a missing key
/// next to an existing store is an error, not a new key.
fn ensure_master_key(key_file: &Path, db: &Path) -> std::result::Result<(), Off> {
    if key_file.exists() {
        return Ok(());
    }
    if db.exists() {
        return Err(Off {
            why: format!("{} exists but its master key {} is gone", db.display(), key_file.display()),
            fix: format!(
                "put {} back, or remove {} to start with no values, then restart `heimdall dev`",
                key_file.display(),
                db.display()
            ),
        });
    }
    let mut bytes = zeroize::Zeroizing::new([0u8; 32]);
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, bytes.as_mut());
    let hexed = zeroize::Zeroizing::new(hex::encode(bytes.as_ref()));
    let text = zeroize::Zeroizing::new(format!("{}\n", hexed.as_str()));
    let dir = key_file.parent().unwrap_or(Path::new("."));
    config::write_private(dir, key_file, text.as_bytes()).map_err(|err| Off {
        why: err.to_string(),
        fix: "check the data directory's permissions, then restart `heimdall dev`".to_owned(),
    })
}

/// Writes a file whole: a temporary file beside it, then a rename.
fn write_replacing(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
    let tmp = path.with_extension("toml.tmp");
    let mut file =
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Until the dev Agent's first claim reaches the API (its `last_seen_at`
/// moves past `since`): `Ok(true)`; `Ok(false)` if that takes longer than
/// [`AGENT_READY_TIMEOUT`]. An Agent that exits, or was revoked, is `Err`.
async fn wait_until_connected(
    client: &Client,
    agent: &mut Service,
    agent_dir: &Path,
    since: OffsetDateTime,
) -> std::result::Result<bool, Off> {
    let deadline = tokio::time::Instant::now() + AGENT_READY_TIMEOUT;
    loop {
        if let Ok(Some(status)) = agent.child.try_wait() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Err(Off {
                why: agent.exited(status, "at start").to_string(),
                fix: log_fix(&agent.log_path),
            });
        }
        if let Ok(agents) = client.list_agents().await {
            let mine: Vec<_> = agents.iter().filter(|a| a.name == AGENT_NAME).collect();
            if mine.iter().any(|a| a.revoked_at.is_none() && a.last_seen_at.is_some_and(|at| at >= since)) {
                return Ok(true);
            }
            if !mine.is_empty() && mine.iter().all(|a| a.revoked_at.is_some()) {
                return Err(Off {
                    why: format!("the Agent \"{AGENT_NAME}\" was revoked"),
                    fix: format!(
                        "remove {} and restart `heimdall dev` to enroll a new one",
                        agent_dir.display()
                    ),
                });
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ---- processes -------------------------------------------------------------------

/// `name` next to this executable (as `cargo build` lays them out), else
/// on `PATH`.
fn locate_binary(name: &str) -> Option<PathBuf> {
    let name = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let sibling = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|dir| dir.join(&name)));
    if let Some(sibling) = sibling.filter(|p| is_executable(p)) {
        return Some(sibling);
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    on_path(&name, std::env::var_os("PATH"), &cwd)
}

/// The first executable `name` in the directories of `path_env`, made
/// absolute against `cwd`.
fn on_path(name: &str, path_env: Option<OsString>, cwd: &Path) -> Option<PathBuf> {
    let dirs: Vec<PathBuf> = path_env.map(|path| std::env::split_paths(&path).collect()).unwrap_or_default();
    dirs.into_iter().map(|dir| cwd.join(dir).join(name)).find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Creates the data directory (0700) and returns its absolute path.
fn prepare_data_dir(dir: &Path) -> Result<PathBuf> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|err| {
        CliError::local(format!("cannot create the data directory {}: {err}", dir.display()))
    })?;
    dir.canonicalize().map_err(|err| CliError::local(format!("cannot resolve {}: {err}", dir.display())))
}

fn ensure_port_free(addr: SocketAddr, what: &str) -> Result<()> {
    match std::net::TcpListener::bind(addr) {
        Ok(listener) => {
            drop(listener);
            Ok(())
        }
        Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => Err(CliError::local(format!(
            "{addr} ({what}) is already in use (another `heimdall dev`?); stop it, or pick another \
             address with --listen 127.0.0.1:PORT"
        ))),
        Err(err) => Err(CliError::local(format!("cannot listen on {addr} ({what}): {err}"))),
    }
}

/// The Agent channel: the port after the API's.
fn agent_listen_addr(listen: SocketAddr) -> Result<SocketAddr> {
    match listen.port() {
        0 => Err(CliError::usage("--listen needs a port (the Agent channel takes the one after it)")),
        port => port.checked_add(1).map(|next| SocketAddr::new(listen.ip(), next)).ok_or_else(|| {
            CliError::usage("--listen's port must leave room for the Agent channel on the port after it")
        }),
    }
}

/// Where a client reaches a server listening on `addr`.
fn client_addr(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), addr.port()),
        IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::new(Ipv6Addr::LOCALHOST.into(), addr.port()),
        _ => addr,
    }
}

/// The owner's token: read from `DIR/owner.token`, or made by running
/// `heimdall-api bootstrap` once and kept there (0600).
async fn ensure_bootstrapped(api_binary: &Path, data: &Path, database_url: &str) -> Result<Redacted<String>> {
    let token_path = data.join(TOKEN_FILE);
    match std::fs::read_to_string(&token_path) {
        Ok(text) if !text.trim().is_empty() => return Ok(Redacted::new(text.trim().to_owned())),
        Ok(_) => {
            return Err(CliError::local(format!(
                "{} is empty; remove {} to start over",
                token_path.display(),
                data.display()
            )))
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(CliError::local(format!("cannot read {}: {err}", token_path.display()))),
    }

    let output = Command::new(api_binary)
        .args(["bootstrap", "--database-url", database_url, "--org", "dev", "--owner", "dev@localhost"])
        .args(["--output", "json"])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|err| CliError::local(format!("cannot run {}: {err}", api_binary.display())))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        if stderr.contains(ErrorCode::AlreadyBootstrapped.as_str()) {
            return Err(CliError::local(format!(
                "{db} was bootstrapped before, but {token} is gone, so the owner's token is lost; \
                 remove {data} to start over",
                db = data.join("heimdall.db").display(),
                token = token_path.display(),
                data = data.display(),
            )));
        }
        return Err(CliError::local(format!(
            "`{API_BINARY} bootstrap` failed ({}){}",
            output.status,
            tail_block(stderr.lines().map(str::to_owned), None)
        )));
    }
    // stdout holds the token: never quote it in an error.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let parsed: Option<Bootstrapped> = serde_json::from_str(stdout.trim()).ok().or_else(|| {
        stdout
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .and_then(|l| serde_json::from_str(l).ok())
    });
    let Some(bootstrapped) = parsed else {
        return Err(CliError::local(format!(
            "`{API_BINARY} bootstrap` succeeded but its output is not the expected JSON; \
             remove {} to start over",
            data.display()
        )));
    };
    let token = Redacted::new(bootstrapped.token.clone());
    let mut contents = format!("{}\n", token.expose());
    let written = config::write_private(data, &token_path, contents.as_bytes());
    zeroize::Zeroize::zeroize(&mut contents);
    written?;
    Ok(token)
}

/// Why the foreground wait ended.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Interrupt,
    Terminate,
    Hangup,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stop::Interrupt => "interrupted",
            Stop::Terminate => "terminated",
            Stop::Hangup => "hung up",
        })
    }
}

/// SIGINT (Ctrl-C), SIGTERM and SIGHUP (the terminal closed): each stops
/// `heimdall dev` in order.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    fn listen() -> Result<Self> {
        let listen = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|err| CliError::local(format!("cannot listen for {name}: {err}")))
        };
        Ok(Self {
            interrupt: listen(SignalKind::interrupt(), "Ctrl-C")?,
            terminate: listen(SignalKind::terminate(), "SIGTERM")?,
            hangup: listen(SignalKind::hangup(), "SIGHUP")?,
        })
    }

    async fn recv(&mut self) -> Stop {
        tokio::select! {
            _ = self.interrupt.recv() => Stop::Interrupt,
            _ = self.terminate.recv() => Stop::Terminate,
            _ = self.hangup.recv() => Stop::Hangup,
        }
    }
}

/// Until a signal, or the API dying on its own (an error). The Agent dying
/// on its own is a warning: the API carries on without it.
async fn wait_for_stop(signals: &mut Signals, api: &mut Service, agent: &mut AgentState) -> Result<Stop> {
    loop {
        let agent_exit = async {
            match agent {
                AgentState::Running { service, .. } => service.child.wait().await,
                AgentState::Off(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            stop = signals.recv() => return Ok(stop),
            status = api.child.wait() => {
                let status = status.map_err(|err| CliError::local(err.to_string()))?;
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(api.exited(status, "unexpectedly"));
            }
            status = agent_exit => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if let AgentState::Running { service, .. } = agent {
                    let why = match status {
                        Ok(status) => service.exited(status, "unexpectedly").to_string(),
                        Err(err) => format!("{AGENT_BINARY}: {err}"),
                    };
                    eprintln!("warning: {why}\nJobs stay queued until `heimdall dev` restarts.");
                    *agent = AgentState::Off(Off { why, fix: log_fix(&service.log_path) });
                }
            }
        }
    }
}

/// How a child ended when asked to stop.
#[derive(Debug)]
enum Ended {
    Exited,
    Killed(String),
}

/// A child process (the API or the Agent), its output copied to a log
/// file, and the tail of that output kept for error messages.
struct Service {
    name: &'static str,
    child: Child,
    tail: Arc<Mutex<VecDeque<String>>>,
    log_path: PathBuf,
}

impl Service {
    /// Starts `command` in its own process group (a terminal's Ctrl-C
    /// reaches only `heimdall dev`, which stops the children in order),
    /// appending its output to `log_path`.
    fn spawn(name: &'static str, mut command: Command, log_path: &Path) -> Result<Self> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(log_path)
            .map_err(|err| CliError::local(format!("cannot open {}: {err}", log_path.display())))?;
        let mut child = command
            // Plain text in the log, not terminal colours.
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| CliError::local(format!("cannot start {name}: {err}")))?;
        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_LINES)));
        let log = Arc::new(Mutex::new(log));
        if let Some(stdout) = child.stdout.take() {
            tokio::spawn(pump(stdout, Arc::clone(&log), Arc::clone(&tail)));
        }
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(pump(stderr, log, Arc::clone(&tail)));
        }
        Ok(Self { name, child, tail, log_path: log_path.to_owned() })
    }

    fn tail(&self) -> String {
        let lines = self.tail.lock().map(|t| t.iter().cloned().collect::<Vec<_>>()).unwrap_or_default();
        tail_block(lines.into_iter(), Some(&self.log_path))
    }

    fn exited(&self, status: ExitStatus, when: &str) -> CliError {
        CliError::local(format!("{} exited {when} ({status}){}", self.name, self.tail()))
    }

    /// SIGTERM, then up to `grace` for it to exit; then (or at a second
    /// signal) SIGKILL.
    async fn terminate(mut self, grace: Duration, signals: &mut Signals) -> Ended {
        if let Ok(Some(_)) = self.child.try_wait() {
            return Ended::Exited;
        }
        let Some(pid) = self.child.id() else { return Ended::Exited };
        // `kill` the command: this crate has no unsafe code, so no libc::kill.
        let sent = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .is_ok_and(|status| status.success());
        let why = if sent {
            tokio::select! {
                exited = tokio::time::timeout(grace, self.child.wait()) => match exited {
                    Ok(_) => return Ended::Exited,
                    Err(_) => format!("still running {}s after SIGTERM", grace.as_secs()),
                },
                stop = signals.recv() => format!("{stop} again"),
            }
        } else {
            "SIGTERM could not be sent".to_owned()
        };
        let _ = self.child.kill().await;
        Ended::Killed(why)
    }
}

/// Waits for the API to make its CA (first start) and answer its health
/// check over HTTPS with a certificate from that CA; returns the CA (PEM).
async fn wait_until_healthy(api: &mut Service, api_url: &str, ca_file: &Path) -> Result<String> {
    let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
    loop {
        if let Some(status) = api.child.try_wait().map_err(|err| CliError::local(err.to_string()))? {
            // Let the pumps catch the last lines.
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Err(api.exited(status, "before it was ready"));
        }
        if let Ok(ca_pem) = std::fs::read_to_string(ca_file) {
            let probe = Client::with_ca(api_url, None, &ca_pem)?;
            if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), probe.health()).await {
                return Ok(ca_pem);
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(CliError::local(format!(
                "{API_BINARY} did not answer {api_url}/v1/health within {}s{}",
                READY_TIMEOUT.as_secs(),
                api.tail()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn pump(
    stream: impl AsyncRead + Unpin,
    log: Arc<Mutex<std::fs::File>>,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        // Small appends to a local file: fine to do inline.
        if let Ok(mut log) = log.lock() {
            let _ = writeln!(log, "{line}");
        }
        if let Ok(mut tail) = tail.lock() {
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }
}

fn tail_block(lines: impl Iterator<Item = String>, log: Option<&Path>) -> String {
    let lines: Vec<String> = lines.collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    let lines = &lines[start..];
    if lines.is_empty() {
        return match log {
            Some(log) => format!("; it printed nothing (log: {})", log.display()),
            None => "; it printed nothing".to_owned(),
        };
    }
    let mut text = match log {
        Some(log) => format!("\n--- last lines of its output (full log: {}) ---", log.display()),
        None => "\n--- last lines of its output ---".to_owned(),
    };
    for line in lines {
        text.push_str("\n  ");
        text.push_str(line);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_port_is_named() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let err = ensure_port_free(addr, "--listen").unwrap_err().to_string();
        assert!(err.contains(&addr.to_string()) && err.contains("already in use"), "{err}");
        drop(taken);
    }

    #[test]
    fn clients_dial_loopback_for_unspecified_addresses() {
        assert_eq!(client_addr("0.0.0.0:7480".parse().unwrap()).to_string(), "127.0.0.1:7480");
        assert_eq!(client_addr("[::]:7480".parse().unwrap()).to_string(), "[::1]:7480");
        assert_eq!(client_addr("127.0.0.2:1".parse().unwrap()).to_string(), "127.0.0.2:1");
    }

    #[test]
    fn the_agent_channel_takes_the_next_port() {
        let next = |addr: &str| agent_listen_addr(addr.parse().unwrap()).map(|a| a.to_string());
        assert_eq!(next("127.0.0.1:7480").unwrap(), "127.0.0.1:7481");
        assert_eq!(next("[::]:9000").unwrap(), "[::]:9001");
        assert!(next("127.0.0.1:65535").is_err());
        assert!(next("127.0.0.1:0").is_err());
    }

    #[test]
    fn tails_are_bounded() {
        let text = tail_block((0..50).map(|i| format!("line {i}")), None);
        assert!(text.contains("line 49") && !text.contains("line 29\n"), "{text}");
        assert_eq!(tail_block(std::iter::empty(), None), "; it printed nothing");
    }

    fn executable(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn terraform_is_looked_for_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let (cwd, bin) = (tmp.path().join("repo"), tmp.path().join("bin"));
        std::fs::create_dir_all(&cwd).unwrap();
        let path = || Some(OsString::from(bin.as_os_str()));
        let find = |flag: Option<&str>, env: Option<&str>| {
            find_terraform(flag.map(Path::new), env.map(OsString::from), &cwd, path())
        };

        // Nothing anywhere: none, and no error.
        assert_eq!(find(None, None).unwrap(), None);
        // PATH.
        executable(&bin.join("terraform"));
        assert_eq!(find(None, None).unwrap(), Some(bin.join("terraform")));
        // ./.venv/bin/terraform before PATH.
        executable(&cwd.join(".venv/bin/terraform"));
        assert_eq!(find(None, None).unwrap(), Some(cwd.join(".venv/bin/terraform")));
        // The environment before that, the flag before everything; relative to the current directory.
        executable(&cwd.join("tools/tf"));
        executable(&tmp.path().join("other/tf"));
        let other = tmp.path().join("other/tf");
        assert_eq!(find(None, Some("tools/tf")).unwrap(), Some(cwd.join("tools/tf")));
        assert_eq!(find(Some(other.to_str().unwrap()), Some("tools/tf")).unwrap(), Some(other));
        // A bare name is looked up on PATH.
        assert_eq!(find(Some("terraform"), None).unwrap(), Some(bin.join("terraform")));
        // Named but not there: a usage error naming where it came from.
        let err = find(None, Some("./nope")).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::exit::USAGE);
        assert!(err.to_string().contains(TERRAFORM_ENV), "{err}");
        let err = find(Some("tf-1.9"), None).unwrap_err();
        assert!(err.to_string().starts_with("--terraform tf-1.9:"), "{err}");
    }

    #[test]
    fn the_default_allowlist_is_everything_under_the_directory() {
        assert_eq!(default_module_glob(Path::new("/home/ana/infra")), "/home/ana/infra/**");
        assert_eq!(default_module_glob(Path::new("/")), "/**");
        assert_eq!(default_module_glob(Path::new("/srv/a*b/[x]{y}")), "/srv/a[*]b/[[]x[]][{]y[}]/**");
    }

    #[test]
    fn terraform_gets_the_cli_configuration_of_its_virtualenv() {
        let tmp = tempfile::tempdir().unwrap();
        let venv = tmp.path().join("repo/.venv");
        executable(&venv.join("bin/terraform"));
        std::fs::write(venv.join("terraformrc"), "disable_checkpoint = true\n").unwrap();
        let env_of = |terraform: Option<&Path>, cwd: &Path| {
            let mut command = Command::new("true");
            terraform_env(&mut command, terraform, cwd);
            let envs: Vec<(String, Option<String>)> = command
                .as_std()
                .get_envs()
                .map(|(k, v)| (k.to_string_lossy().into_owned(), v.map(|v| v.to_string_lossy().into_owned())))
                .collect();
            envs
        };
        let rc = venv.join("terraformrc").to_string_lossy().into_owned();
        let elsewhere = tmp.path().join("elsewhere");
        let envs = env_of(Some(&venv.join("bin/terraform")), &elsewhere);
        assert!(envs.contains(&("TF_CLI_CONFIG_FILE".into(), Some(rc.clone()))), "{envs:?}");
        assert!(envs.contains(&("CHECKPOINT_DISABLE".into(), Some("1".into()))), "{envs:?}");
        let envs = env_of(Some(Path::new("/usr/bin/terraform")), &tmp.path().join("repo"));
        assert!(envs.contains(&("TF_CLI_CONFIG_FILE".into(), Some(rc))), "./.venv/terraformrc: {envs:?}");
        let envs = env_of(Some(Path::new("/usr/bin/terraform")), &elsewhere);
        assert!(!envs.iter().any(|(k, _)| k == "TF_CLI_CONFIG_FILE"), "{envs:?}");
    }

    #[test]
    fn a_moved_agent_channel_is_written_to_agent_toml() {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("agent.toml");
        let text = "# header\napi_url = \"https://127.0.0.1:7481\"\ncert = \"/x/agent.pem\"\n";
        std::fs::write(&config, text).unwrap();
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
        sync_agent_url(&config, "https://127.0.0.1:9001");
        let written = std::fs::read_to_string(&config).unwrap();
        assert_eq!(written, text.replace("7481", "9001"));
        assert_eq!(std::fs::metadata(&config).unwrap().permissions().mode() & 0o777, 0o644);
        sync_agent_url(&config, "https://127.0.0.1:9001");
        assert_eq!(std::fs::read_to_string(&config).unwrap(), written);
    }

    #[test]
    fn the_dev_agent_gets_a_value_store_and_a_local_api_once() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path();
        let config = data.join("agent.toml");
        let enrolled = "# header\napi_url = \"https://127.0.0.1:7481\"\nconcurrency = 2\n\n[terraform]\npath = \"/x/terraform\"\n";
        std::fs::write(&config, enrolled).unwrap();
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();

        configure_values(&config, data, "127.0.0.1:7482".parse().unwrap()).unwrap();
        let written = std::fs::read_to_string(&config).unwrap();
        assert!(written.starts_with(enrolled), "what enroll wrote stays: {written}");
        let table: toml::Table = toml::from_str(&written).unwrap();
        let values = table["values"].as_table().unwrap();
        assert_eq!(values["sqlite_path"].as_str().unwrap(), data.join(VALUES_DB).to_str().unwrap());
        assert_eq!(values["master_key_file"].as_str().unwrap(), data.join(MASTER_KEY_FILE).to_str().unwrap());
        assert_eq!(values["sync_seconds"].as_integer(), Some(2));
        let local = table["local_api"].as_table().unwrap();
        assert_eq!(local["listen"].as_str(), Some("127.0.0.1:7482"));
        assert_eq!(local["url"].as_str(), Some("https://127.0.0.1:7482"));
        assert_eq!(std::fs::metadata(&config).unwrap().permissions().mode() & 0o777, 0o644);

        // The master key: 64 hex characters (what the Agent's MasterKey::from_text reads), 0600.
        let key_path = data.join(MASTER_KEY_FILE);
        let key = std::fs::read_to_string(&key_path).unwrap();
        assert_eq!(key.len(), 65, "64 hex characters and a newline");
        assert!(key.trim_end().bytes().all(|b| b.is_ascii_hexdigit()), "hex");
        assert_eq!(std::fs::metadata(&key_path).unwrap().permissions().mode() & 0o777, 0o600);

        // Again: nothing changes, the key stays.
        configure_values(&config, data, "127.0.0.1:7482".parse().unwrap()).unwrap();
        assert_eq!(std::fs::read_to_string(&config).unwrap(), written);
        assert_eq!(std::fs::read_to_string(&key_path).unwrap(), key);

        // A new --listen moves the local API with it.
        configure_values(&config, data, "127.0.0.1:9002".parse().unwrap()).unwrap();
        let moved = std::fs::read_to_string(&config).unwrap();
        assert_eq!(moved, written.replace("7482", "9002"));
        assert_eq!(std::fs::read_to_string(&key_path).unwrap(), key);

        // A store whose key is gone is not given a new key.
        let other = tmp.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        let config = other.join("agent.toml");
        std::fs::write(&config, enrolled).unwrap();
        std::fs::write(other.join(VALUES_DB), b"").unwrap();
        let off = configure_values(&config, &other, "127.0.0.1:7482".parse().unwrap()).unwrap_err();
        assert!(off.why.contains("master key"), "{off:?}");
        assert!(!other.join(MASTER_KEY_FILE).exists());
        assert_eq!(std::fs::read_to_string(&config).unwrap(), enrolled, "left as it was");
    }

    #[test]
    fn the_banner_shows_the_secrets_tour() {
        let tour = secrets_tour("https://127.0.0.1:7482");
        assert!(tour.contains("its local API: https://127.0.0.1:7482"), "{tour}");
        assert!(tour.contains("printf 's3cret-value' | heimdall secret set db-password --environment dev"));
        assert!(tour.contains("heimdall environment assign-agent dev dev"), "{tour}");
    }

    #[test]
    fn without_an_agent_the_banner_says_what_to_do() {
        let off = AgentState::Off(Off { why: "no terraform found".into(), fix: INSTALL_TERRAFORM.into() });
        let banner = off.banner(Path::new("/data"));
        assert!(banner.starts_with("! No Agent: no terraform found.\n"), "{banner}");
        assert!(banner.contains("jobs stay queued"), "{banner}");
        assert!(banner.contains("bash scripts/install-test-tools.sh"), "{banner}");
        assert!(banner.contains("restart `heimdall dev`"), "{banner}");
        assert_eq!(off.describe(Path::new("/data"))["running"], false);
    }
}
