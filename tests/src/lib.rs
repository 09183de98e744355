//! Helpers for the end-to-end tests: find the built binaries, start
//! `heimdall dev`, run CLI commands the way a person would.
#![forbid(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The directory holding `heimdall` and `heimdall-api`: the target dir of
/// this test binary (`…/debug/deps/e2e-…` → `…/debug`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir").to_path_buf();
    for bin in ["heimdall", "heimdall-api"] {
        assert!(
            dir.join(bin).exists(),
            "{} is missing: build the binaries first (`cargo build --workspace --bins`, as scripts/test.sh does)",
            dir.join(bin).display()
        );
    }
    dir
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repo root").to_path_buf()
}

/// A free port for `heimdall dev --listen` whose next two ports (the Agent
/// channel and the Agent's local API) are free too.
pub fn free_port() -> u16 {
    free_port_and(2)
}

/// A free port whose `after` next ports are free too (`--metrics` takes
/// four after `--listen`'s).
pub fn free_port_and(after: u16) -> u16 {
    loop {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let next_free = |n: u16| {
            port.checked_add(n).is_some_and(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
        };
        if (1..=after).all(next_free) {
            return port;
        }
    }
}

/// A `heimdall dev` in the foreground of a child process, with its own
/// data and config directories.
#[derive(Debug)]
pub struct Dev {
    pub child: Child,
    pub config_dir: PathBuf,
    pub banner: String,
    pub bin_dir: PathBuf,
}

impl Dev {
    pub fn start(data: &Path, config_dir: &Path, port: u16) -> Dev {
        Self::start_with(data, config_dir, port, &[])
    }

    /// [`Dev::start`] with more arguments for `heimdall dev`.
    pub fn start_with(data: &Path, config_dir: &Path, port: u16, extra: &[&str]) -> Dev {
        let bin_dir = bin_dir();
        // From the repository root, as docs/operations.md ("What `heimdall dev`
        // runs") says: the dev Agent then finds `.venv/bin/terraform` and may
        // run the fixture module.
        let mut child = Command::new(bin_dir.join("heimdall"))
            .current_dir(repo_root())
            .args(["dev", "--data"])
            .arg(data)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(extra)
            .env("HEIMDALL_CONFIG_DIR", config_dir)
            .env_remove("HEIMDALL_API_URL")
            .env_remove("HEIMDALL_TOKEN")
            .env_remove("HEIMDALL_PROFILE")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start heimdall dev");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut banner = String::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                banner.push_str(&line);
                banner.push('\n');
                if line.starts_with("Press Ctrl-C") {
                    let _ = tx.send(banner.clone());
                }
            }
        });
        let banner = rx.recv_timeout(Duration::from_secs(90)).unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("heimdall dev did not print its banner within 90 s")
        });
        Dev { child, config_dir: config_dir.to_path_buf(), banner, bin_dir }
    }

    /// Runs one shell line with the binaries first on `PATH` and this dev
    /// profile's config, from the repository root.
    pub fn sh(&self, line: &str) -> Output {
        self.sh_in(&repo_root(), line)
    }

    /// [`Dev::sh`] from the directory `cwd`.
    pub fn sh_in(&self, cwd: &Path, line: &str) -> Output {
        sh_with(&self.config_dir, cwd, line)
    }

    /// Sends SIGINT (what Ctrl-C sends) and waits for a clean exit.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-INT", &pid]).status().expect("kill");
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("heimdall dev did not stop within 30 s of SIGINT");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Dev {
    /// A test that fails before [`Dev::stop`] still stops dev the way
    /// Ctrl-C does, so that it stops its API and Agent; a SIGKILL would
    /// leave them running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = Command::new("kill").args(["-INT", &self.child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(15);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs one shell line from `cwd` with the built binaries first on `PATH`
/// and the CLI configuration in `config_dir` (no profile, URL or token from
/// the caller's environment).
pub fn sh_with(config_dir: &Path, cwd: &Path, line: &str) -> Output {
    let path = format!("{}:{}", bin_dir().display(), std::env::var("PATH").unwrap_or_default());
    Command::new("sh")
        .args(["-c", line])
        .current_dir(cwd)
        .env("PATH", path)
        .env("HEIMDALL_CONFIG_DIR", config_dir)
        .env_remove("HEIMDALL_API_URL")
        .env_remove("HEIMDALL_TOKEN")
        .env_remove("HEIMDALL_PROFILE")
        .output()
        .expect("run sh")
}

/// The shell lines of the README's tour block: those that run `heimdall`,
/// alone or at the end of a pipe (`printf '…' | heimdall secret set …`).
pub fn readme_tour() -> Vec<String> {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let start = readme.find("<!-- tour:start").expect("README has a tour:start marker");
    let end = readme.find("<!-- tour:end -->").expect("README has a tour:end marker");
    readme[start..end]
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("heimdall ") || l.contains("| heimdall "))
        .map(str::to_owned)
        .collect()
}

/// A fenced block of a guide under `docs/` whose commands the guide test
/// runs: `sh` (a script; it must exit 0) or `console` (a transcript: each
/// `$ ` command, then what it prints).
#[derive(Debug)]
pub struct GuideBlock {
    /// `docs/secrets.md:30`, for messages.
    pub place: String,
    pub kind: BlockKind,
    /// `Some(why)` for a block fenced as `sh not-run: why` (production
    /// hosts, system packages): read, never run, and the reason is shown.
    pub not_run: Option<String>,
    pub lines: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    Sh,
    Console,
}

/// The `sh`, `bash` and `console` blocks of `docs/NAME`, in order.
pub fn guide_blocks(name: &str) -> Vec<GuideBlock> {
    let text = std::fs::read_to_string(repo_root().join("docs").join(name)).expect("read the guide");
    let mut blocks = Vec::new();
    let mut open: Option<GuideBlock> = None;
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            if let Some(block) = open.as_mut() {
                block.lines.push(line.to_owned());
            }
            continue;
        };
        if fenced {
            fenced = false;
            blocks.extend(open.take());
            continue;
        }
        fenced = true;
        let (lang, rest) = info.trim().split_once(' ').unwrap_or((info.trim(), ""));
        let kind = match lang {
            "sh" | "bash" => BlockKind::Sh,
            "console" => BlockKind::Console,
            _ => continue,
        };
        let not_run = rest.trim().strip_prefix("not-run:").map(|why| why.trim().to_owned());
        assert!(
            rest.trim().is_empty() || not_run.as_ref().is_some_and(|why| !why.is_empty()),
            "docs/{name}:{}: a block's info string is `{lang}` or `{lang} not-run: why`, not {info:?}",
            n + 1
        );
        let place = format!("docs/{name}:{}", n + 1);
        open = Some(GuideBlock { place, kind, not_run, lines: Vec::new() });
    }
    assert!(!fenced, "docs/{name}: a fence is not closed");
    blocks
}
