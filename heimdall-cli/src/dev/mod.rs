//! `heimdall dev`: the quickstart. Runs `heimdall-api` on SQLite under a
//! data directory (bootstrapped once: `owner.token` holds the owner's
//! token), makes a `dev` profile current with a client certificate (renewed
//! on every start, before the Agent starts, so that its first sync knows
//! it), runs the dev Agent (`heimdall-agent dev-setup` keeps its files
//! under the same directory), and stays in the foreground until Ctrl-C,
//! SIGTERM or SIGHUP. It spawns, supervises and prints: the API and the
//! Agent write their own files.
//!
//! The ports are `--listen`'s and the two after it ([`DevAddresses`]). The
//! children run in their own process groups, so a Ctrl-C in the terminal
//! reaches only `heimdall dev`, which stops them in order: the Agent (it
//! finishes the jobs it is running, for up to 30 s), then the API.

mod agent;
mod banner;
mod supervisor;

use std::net::SocketAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use heimdall_core::Redacted;
use heimdall_sdk::Client;
use heimdall_wire::{IssuedCertificate, WhoAmI};
use tokio::process::Command;

use crate::args::{client_addr, DevAddresses, DevArgs};
use crate::commands::Context;
use crate::config::{Config, Profile};
use crate::error::{CliError, Result};
use agent::AgentState;
use supervisor::{Service, Signals};

const DEV_PROFILE: &str = "dev";
const API_BINARY: &str = "heimdall-api";
const LOG_FILE: &str = "api.log";

/// What this start set up, and where.
struct Dev {
    data: PathBuf,
    config_dir: PathBuf,
    config_file: PathBuf,
    api_url: String,
    agent_url: String,
    local_api: SocketAddr,
    me: WhoAmI,
    certificate: Option<IssuedCertificate>,
    /// This start bootstrapped the organization: the banner shows the tour;
    /// later starts show where to carry on.
    first_run: bool,
    /// With `--metrics`: where the API's and the Agent's `/metrics` are.
    metrics: Option<(SocketAddr, SocketAddr)>,
}

pub async fn run(ctx: &Context, args: DevArgs) -> Result<()> {
    // From the start: a Ctrl-C during start-up stops the children too.
    let mut signals = Signals::listen()?;
    let (mut api, mut agent, data) = tokio::select! {
        started = start(ctx, &args) => started?,
        // Dropping `start` killed whatever it had started.
        stop = signals.recv() => {
            return Err(CliError::local(format!("{stop} while starting; nothing is left running")));
        }
    };
    let stopped =
        supervisor::wait_for_stop(&mut signals, &mut api, agent.as_mut().ok().map(|a| &mut a.service)).await;
    if let Ok(agent::Running { service, .. }) = agent {
        eprintln!("Stopping the Agent (it finishes the jobs it is running first)…");
        if let Some(why) = service.terminate(Duration::from_secs(30), &mut signals).await {
            eprintln!(
                "warning: the Agent was killed ({why}); any job it was running is retried once its \
                 lease expires"
            );
        }
    }
    eprintln!("Stopping the API…");
    if let Some(why) = api.terminate(Duration::from_secs(5), &mut signals).await {
        eprintln!("warning: the API was killed ({why})");
    }
    stopped?;
    eprintln!("✓ Stopped. Data kept in {}.", data.display());
    Ok(())
}

async fn start(ctx: &Context, args: &DevArgs) -> Result<(Service, AgentState, PathBuf)> {
    let api_binary = locate_binary(API_BINARY);
    let (dir, config_dir) = (&args.data, ctx.config_dir()?);
    let created = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
    created.map_err(|err| {
        CliError::local(format!("cannot create the data directory {}: {err}", dir.display()))
    })?;
    let data = dir
        .canonicalize()
        .map_err(|err| CliError::local(format!("cannot resolve {}: {err}", dir.display())))?;
    let database_url = format!("sqlite://{}", data.join("heimdall.db").display());
    let DevAddresses { api: listen, agent_channel: agent_listen, local_api, metrics } = args.addresses()?;
    let uses = ["--listen", "the Agent channel, on the port after --listen's", "its local API, on the next"];
    for (addr, what) in [listen, agent_listen, local_api].into_iter().zip(uses) {
        ensure_port_free(addr, what)?;
    }
    if let Some((api_metrics, agent_metrics)) = metrics {
        ensure_port_free(api_metrics, "--metrics: the API's, the third port after --listen's")?;
        ensure_port_free(agent_metrics, "--metrics: the Agent's, the fourth port after --listen's")?;
    }

    let first_run = !data.join("owner.token").exists();
    let token = ensure_bootstrapped(&api_binary, &data, &database_url).await?;
    let agent_url = format!("https://{}", client_addr(agent_listen));
    let mut command = Command::new(&api_binary);
    command.args(["serve", "--database-url", &database_url, "--listen", &listen.to_string()]);
    command.args(["--agent-listen", &agent_listen.to_string(), "--agent-public-url", &agent_url]);
    command.arg("--ca-dir").arg(data.join("ca"));
    if let Some((api_metrics, _)) = metrics {
        command.args(["--metrics-listen", &api_metrics.to_string()]);
    }
    let mut api = Service::spawn(API_BINARY, command, &data.join(LOG_FILE))?;
    // HTTPS with a certificate from the installation CA, which the API
    // makes in `ca/` on its first start; the dev profile trusts only it.
    let api_url = format!("https://{}", client_addr(listen));
    let ca_pem = supervisor::wait_until_healthy(&mut api, &api_url, &data.join("ca/ca.pem")).await?;
    let client = Client::with_ca(&api_url, Some(token.expose().as_str()), &ca_pem)?;
    let me = client.whoami().await?;

    let mut config = Config::load(&config_dir)?;
    let profile = Profile { api_url: api_url.clone(), token, ca: Some(ca_pem) };
    config.profiles.insert(DEV_PROFILE.to_owned(), profile);
    config.current_profile = Some(DEV_PROFILE.to_owned());
    let config_file = config.save(&config_dir)?;
    // Before the Agent starts: its first sync then knows this certificate.
    let issued = crate::identity::issue(&client, &config_dir, DEV_PROFILE, false).await;
    let certificate = issued
        .inspect_err(|err| {
            eprintln!(
                "warning: no client certificate for the dev profile ({err}); `heimdall secret set|get` \
                 need one: run `heimdall login` with the dev profile's URL and token"
            )
        })
        .ok();
    let dev = Dev {
        data,
        config_dir,
        config_file,
        api_url,
        agent_url,
        local_api,
        me,
        certificate,
        first_run,
        metrics,
    };
    let agent = agent::start(args, &client, &dev).await;
    banner::print(&dev, &agent, ctx.out.is_json())?;
    Ok((api, agent, dev.data))
}

/// The owner's token, in `DIR/owner.token`: `heimdall-api bootstrap --if-absent`
/// writes it (0600) once, then checks on every start that it opens the database.
async fn ensure_bootstrapped(api_binary: &Path, data: &Path, database_url: &str) -> Result<Redacted<String>> {
    let token_path = data.join("owner.token");
    let mut command = Command::new(api_binary);
    command.args(["bootstrap", "--if-absent", "--database-url", database_url, "--org", "dev"]);
    command.args(["--owner", "dev@localhost", "--token-file"]).arg(&token_path);
    let run = supervisor::run_step(&format!("{API_BINARY} bootstrap"), command, &data.join(LOG_FILE)).await;
    run.map_err(|failed| match failed.exit {
        None => CliError::local(format!("{}; {}", failed.why, build_hint(API_BINARY))),
        Some(_) => CliError::local(format!("{}; remove {} to start over", failed.why, data.display())),
    })?;
    let text = std::fs::read_to_string(&token_path);
    let text = text.map_err(|err| CliError::local(format!("cannot read {}: {err}", token_path.display())))?;
    Ok(Redacted::new(text.trim().to_owned()))
}

/// `name` next to this executable (as `cargo build` lays them out), else
/// the bare name, for `PATH`.
fn locate_binary(name: &str) -> PathBuf {
    let name = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let sibling = std::env::current_exe().ok().and_then(|exe| Some(exe.parent()?.join(&name)));
    sibling.filter(|p| p.is_file()).unwrap_or_else(|| name.into())
}

/// What to do when `binary` cannot be run.
fn build_hint(binary: &str) -> String {
    format!("build it with `cargo build -p {binary}` (it lands next to `heimdall`), or put it on PATH")
}

fn ensure_port_free(addr: SocketAddr, what: &str) -> Result<()> {
    match std::net::TcpListener::bind(addr) {
        Ok(_) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => Err(CliError::local(format!(
            "{addr} ({what}) is already in use (another `heimdall dev`?); stop it, or pick another \
             address with --listen 127.0.0.1:PORT"
        ))),
        Err(err) => Err(CliError::local(format!("cannot listen on {addr} ({what}): {err}"))),
    }
}
