//! `heimdall dev`: the quickstart. Runs `heimdall-api` on SQLite under a
//! data directory, bootstraps an organization once, makes a `dev` profile
//! current, and stays in the foreground until Ctrl-C or SIGTERM.
//!
//! Files under the data directory: `heimdall.db` (the API's database),
//! `owner.token` (the owner's token, mode 0600, written once by the
//! bootstrap; its presence means "already bootstrapped") and `api.log`
//! (the API's output).

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use heimdall_core::wire::Bootstrapped;
use heimdall_core::{ErrorCode, Redacted};
use heimdall_sdk::Client;
use std::io::Write;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, SignalKind};

use crate::args::DevArgs;
use crate::commands::Context;
use crate::config::{self, Config, Profile};
use crate::error::{CliError, Result};

pub const DEV_PROFILE: &str = "dev";
const API_BINARY: &str = "heimdall-api";
const TOKEN_FILE: &str = "owner.token";
const LOG_FILE: &str = "api.log";
const READY_TIMEOUT: Duration = Duration::from_secs(30);
const GRACEFUL_STOP: Duration = Duration::from_secs(5);
const TAIL_LINES: usize = 20;

pub async fn run(ctx: &Context, args: DevArgs) -> Result<()> {
    let api_binary = locate_api_binary()?;
    let config_dir = ctx.config_dir()?;
    let data = prepare_data_dir(&args.data)?;
    let database_url = format!("sqlite://{}", data.join("heimdall.db").display());
    ensure_port_free(args.listen)?;

    let token = ensure_bootstrapped(&api_binary, &data, &database_url).await?;

    let log_path = data.join(LOG_FILE);
    let mut api = Api::spawn(&api_binary, &database_url, args.listen, &log_path).await?;
    let api_url = format!("http://{}", client_addr(args.listen));
    api.wait_until_healthy(&api_url).await?;

    let client = Client::new(&api_url, token.expose().as_str())?;
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
    config.profiles.insert(DEV_PROFILE.to_owned(), Profile { api_url: api_url.clone(), token });
    config.current_profile = Some(DEV_PROFILE.to_owned());
    let config_path = config.save(&config_dir)?;

    if ctx.out.is_json() {
        crate::output::json(&serde_json::json!({
            "api_url": api_url,
            "data_dir": data,
            "log_file": log_path,
            "profile": DEV_PROFILE,
            "config_file": config_path,
            "organization": me.organization,
            "member": me.member,
        }))?;
    } else {
        let text = format!(
            "✓ Heimdall API running at {api_url} (SQLite in {data})\n\
             ✓ Profile \"{DEV_PROFILE}\" is current: {email}, {role} of organization {org}\n\
             \n\
             Try, in another terminal:\n\
             \x20 heimdall whoami\n\
             \x20 heimdall domain create payments\n\
             \x20 heimdall system create checkout --domain payments\n\
             \x20 heimdall component create api --system checkout\n\
             \x20 heimdall environment create prod\n\
             \x20 heimdall member add ana@example.com --role admin\n\
             \x20 heimdall event list\n\
             \n\
             API log: {log}\n\
             Press Ctrl-C to stop (the data stays; run `heimdall dev` again to carry on).\n",
            data = data.display(),
            email = me.member.email,
            role = me.member.role,
            org = me.organization.name,
            log = log_path.display(),
        );
        write_stdout(&text)?;
    }

    let stop = api.wait_for_stop().await?;
    eprintln!("Stopping the API…");
    api.stop(stop).await;
    eprintln!("✓ Stopped. Data kept in {}.", data.display());
    Ok(())
}

fn write_stdout(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// `heimdall-api` next to this executable (as `cargo build` lays them
/// out), else on `PATH`.
fn locate_api_binary() -> Result<PathBuf> {
    let name = format!("{API_BINARY}{}", std::env::consts::EXE_SUFFIX);
    let sibling = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|dir| dir.join(&name)));
    if let Some(sibling) = sibling.filter(|p| is_executable(p)) {
        return Ok(sibling);
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join(&name))
        .find(|p| is_executable(p));
    on_path.ok_or_else(|| {
        CliError::local(format!(
            "cannot find the `{API_BINARY}` binary next to `heimdall` or on PATH; \
             build it with `cargo build -p heimdall-api` (it lands next to `heimdall`)"
        ))
    })
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

fn ensure_port_free(addr: SocketAddr) -> Result<()> {
    match std::net::TcpListener::bind(addr) {
        Ok(listener) => {
            drop(listener);
            Ok(())
        }
        Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => Err(CliError::local(format!(
            "{addr} is already in use (another `heimdall dev`?); stop it, or pick another address \
             with --listen 127.0.0.1:PORT"
        ))),
        Err(err) => Err(CliError::local(format!("cannot listen on {addr}: {err}"))),
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
#[derive(Debug)]
enum Stop {
    Interrupt,
    Terminate,
}

/// The running `heimdall-api serve` child and the tail of its output.
struct Api {
    child: Child,
    tail: Arc<Mutex<VecDeque<String>>>,
    log_path: PathBuf,
}

impl Api {
    async fn spawn(
        api_binary: &Path,
        database_url: &str,
        listen: SocketAddr,
        log_path: &Path,
    ) -> Result<Self> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(log_path)
            .map_err(|err| CliError::local(format!("cannot open {}: {err}", log_path.display())))?;
        let listen = listen.to_string();
        let mut child = Command::new(api_binary)
            .args(["serve", "--database-url", database_url, "--listen", &listen])
            // Plain text in api.log, not terminal colours.
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| CliError::local(format!("cannot start {}: {err}", api_binary.display())))?;
        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_LINES)));
        let log = Arc::new(Mutex::new(log));
        if let Some(stdout) = child.stdout.take() {
            tokio::spawn(pump(stdout, Arc::clone(&log), Arc::clone(&tail)));
        }
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(pump(stderr, log, Arc::clone(&tail)));
        }
        Ok(Self { child, tail, log_path: log_path.to_owned() })
    }

    fn tail(&self) -> String {
        let lines = self.tail.lock().map(|t| t.iter().cloned().collect::<Vec<_>>()).unwrap_or_default();
        tail_block(lines.into_iter(), Some(&self.log_path))
    }

    fn exited(&self, status: ExitStatus, when: &str) -> CliError {
        CliError::local(format!("{API_BINARY} exited {when} ({status}){}", self.tail()))
    }

    async fn wait_until_healthy(&mut self, api_url: &str) -> Result<()> {
        let probe = Client::unauthenticated(api_url)?;
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().map_err(|err| CliError::local(err.to_string()))? {
                // Let the pumps catch the last lines.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(self.exited(status, "before it was ready"));
            }
            if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), probe.health()).await {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(CliError::local(format!(
                    "{API_BINARY} did not answer {api_url}/v1/health within {}s{}",
                    READY_TIMEOUT.as_secs(),
                    self.tail()
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Until Ctrl-C, SIGTERM, or the API dying on its own (an error).
    async fn wait_for_stop(&mut self) -> Result<Stop> {
        let mut terminate = signal(SignalKind::terminate())
            .map_err(|err| CliError::local(format!("cannot listen for SIGTERM: {err}")))?;
        tokio::select! {
            result = tokio::signal::ctrl_c() => {
                result.map_err(|err| CliError::local(format!("cannot listen for Ctrl-C: {err}")))?;
                Ok(Stop::Interrupt)
            }
            _ = terminate.recv() => Ok(Stop::Terminate),
            status = self.child.wait() => {
                let status = status.map_err(|err| CliError::local(err.to_string()))?;
                tokio::time::sleep(Duration::from_millis(100)).await;
                Err(self.exited(status, "unexpectedly"))
            }
        }
    }

    /// Ctrl-C in a terminal reaches the whole process group, so the API
    /// is already shutting down: give it a moment. Otherwise, or if it
    /// lingers, kill it.
    async fn stop(mut self, stop: Stop) {
        if matches!(stop, Stop::Interrupt)
            && tokio::time::timeout(GRACEFUL_STOP, self.child.wait()).await.is_ok()
        {
            return;
        }
        let _ = self.child.kill().await;
    }
}

/// Copies a child's output to the log file and keeps its last lines.
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
        let err = ensure_port_free(addr).unwrap_err().to_string();
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
    fn tails_are_bounded() {
        let text = tail_block((0..50).map(|i| format!("line {i}")), None);
        assert!(text.contains("line 49") && !text.contains("line 29\n"), "{text}");
        assert_eq!(tail_block(std::iter::empty(), None), "; it printed nothing");
    }
}
