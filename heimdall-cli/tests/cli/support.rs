//! The binary, run as a user would, and what the tests share: transcripts,
//! temp files, JSON and table helpers, enrolling an Agent.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use heimdall_api::testing::TestApi;
use heimdall_core::ids::{AgentId, EventId, OrgId};
use heimdall_core::infra::Agent;
use heimdall_core::ports::{EnrollmentStore, NewEvent};
use heimdall_core::token::TokenHash;
use time::OffsetDateTime;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use uuid::Uuid;

pub const BIN: &str = env!("CARGO_BIN_EXE_heimdall");

/// One run of the binary.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Who the binary runs as: an API URL and token from the environment (or
/// none), and a private config directory.
pub struct Heimdall {
    pub url: Option<String>,
    pub token: Option<String>,
    pub config_dir: PathBuf,
}

impl Heimdall {
    pub fn with_env(api: &TestApi, token: &str, config_dir: &Path) -> Self {
        Self { url: Some(api.url.clone()), token: Some(token.to_owned()), config_dir: config_dir.to_owned() }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env_remove("HEIMDALL_API_URL")
            .env_remove("HEIMDALL_TOKEN")
            .env_remove("HEIMDALL_PROFILE")
            .env_remove("HEIMDALL_CONNECT_TIMEOUT")
            .env_remove("HEIMDALL_REQUEST_TIMEOUT")
            .env("HEIMDALL_CONFIG_DIR", &self.config_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(url) = &self.url {
            cmd.env("HEIMDALL_API_URL", url);
        }
        if let Some(token) = &self.token {
            cmd.env("HEIMDALL_TOKEN", token);
        }
        cmd
    }

    pub async fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, None).await
    }

    pub async fn run_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let mut cmd = self.command(args);
        if stdin.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd.spawn().expect("run heimdall");
        if let Some(input) = stdin {
            let mut pipe = child.stdin.take().expect("stdin");
            match pipe.write_all(input.as_bytes()).await {
                Ok(()) => {}
                // Refused before it read its input (a bad flag): what some tests check.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(e) => panic!("write stdin: {e}"),
            }
            drop(pipe);
        }
        let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("heimdall finished within 60s")
            .expect("heimdall output");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8(output.stdout).expect("utf-8 stdout"),
            stderr: String::from_utf8(output.stderr).expect("utf-8 stderr"),
        }
    }
}

/// `$ heimdall …`, its stdout, its stderr (each line marked), its exit code.
#[derive(Default)]
pub struct Transcript(pub String);

impl Transcript {
    pub async fn run(&mut self, h: &Heimdall, args: &[&str]) -> Run {
        let run = h.run(args).await;
        self.record(args, &run);
        run
    }

    pub fn record(&mut self, args: &[&str], run: &Run) {
        let shown: Vec<String> =
            args.iter().map(|a| if a.contains(' ') { format!("'{a}'") } else { (*a).to_owned() }).collect();
        self.0.push_str(&format!("$ heimdall {}\n", shown.join(" ")));
        self.0.push_str(&run.stdout);
        for line in run.stderr.lines() {
            self.0.push_str(&format!("stderr| {line}\n"));
        }
        self.0.push_str(&format!("[exit {}]\n\n", run.code));
    }
}

pub fn regex_escape(literal: &str) -> String {
    literal.chars().fold(String::new(), |mut out, c| {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

pub fn cedar_file(dir: &Path, text: &str) -> String {
    let path = dir.join("policy.cedar");
    std::fs::write(&path, text).expect("write policy file");
    path.to_str().expect("utf-8 temp path").to_owned()
}

pub fn write_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write temp file");
    path.to_str().expect("utf-8 temp path").to_owned()
}

/// A table's cells: columns are separated by two spaces or more.
pub fn cells(table: &str) -> Vec<Vec<&str>> {
    table.lines().map(|line| line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect()).collect()
}

/// Runs a command in JSON mode, outside the transcript, and returns its document.
pub async fn json_of(h: &Heimdall, args: &[&str]) -> serde_json::Value {
    let args = [args, &["--output", "json"][..]].concat();
    let run = h.run(&args).await;
    assert_eq!(run.code, 0, "{args:?}: {run:?}");
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", run.stdout))
}

/// What the API's enroll route does with a registration token, straight
/// through the store (the route itself wants a certificate request; the
/// Agent's own tests, and `heimdall dev` below, enroll for real).
pub async fn enroll(api: &TestApi, token: &str) -> Result<Agent, heimdall_core::ports::StoreError> {
    let now = OffsetDateTime::now_utc();
    let id = AgentId::from_uuid(Uuid::new_v4());
    let agent = Agent {
        id,
        org_id: OrgId::from_uuid(Uuid::nil()),
        name: String::new(),
        cert_sha256: heimdall_core::Sha256Hex::of(b"registration"),
        created_at: now,
        created_by: "registration".into(),
        revoked_at: None,
        last_seen_at: None,
        local_url: None,
    };
    let event = NewEvent {
        id: EventId::from_uuid(Uuid::new_v4()),
        at: now,
        actor: format!("agent:{id}"),
        action: heimdall_core::audit::AuditAction::AgentEnrolled,
        target: String::new(),
        detail: serde_json::Value::Null,
    };
    api.store.enroll_agent(&TokenHash::of(token), &agent, now, event).await
}

/// Enrolls an Agent called `name` as the owner would (a registration token
/// from the CLI, then the store, like the enroll route).
pub async fn enrolled_agent(api: &TestApi, h: &Heimdall, name: &str) -> Agent {
    let registration = json_of(h, &["agent", "token", "create", "--name", name]).await;
    enroll(api, registration["token"].as_str().expect("token")).await.expect("enroll")
}
