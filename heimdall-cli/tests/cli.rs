//! The `heimdall` binary, run as a user would, against a real API server
//! (SQLite, started in-process by `heimdall_api::testing::TestApi`). One
//! test binary for the whole CLI.
//!
//! Snapshots (`tests/snapshots/`) hold whole transcripts, with ids,
//! timestamps, tokens, ports and temp paths redacted. Update them with
//! `INSTA_UPDATE=always cargo test -p heimdall-cli --test cli` (or
//! `cargo insta review`) and read the diff.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use heimdall_api::testing::TestApi;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_heimdall");

/// One run of the binary.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Who the binary runs as: an API URL and token from the environment (or
/// none), and a private config directory.
struct Heimdall {
    url: Option<String>,
    token: Option<String>,
    config_dir: PathBuf,
}

impl Heimdall {
    fn with_env(api: &TestApi, token: &str, config_dir: &Path) -> Self {
        Self { url: Some(api.url.clone()), token: Some(token.to_owned()), config_dir: config_dir.to_owned() }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env_remove("HEIMDALL_API_URL")
            .env_remove("HEIMDALL_TOKEN")
            .env_remove("HEIMDALL_PROFILE")
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

    async fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, None).await
    }

    async fn run_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let mut cmd = self.command(args);
        if stdin.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd.spawn().expect("run heimdall");
        if let Some(input) = stdin {
            let mut pipe = child.stdin.take().expect("stdin");
            pipe.write_all(input.as_bytes()).await.expect("write stdin");
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
struct Transcript(String);

impl Transcript {
    async fn run(&mut self, h: &Heimdall, args: &[&str]) -> Run {
        let run = h.run(args).await;
        self.record(args, &run);
        run
    }

    fn record(&mut self, args: &[&str], run: &Run) {
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

/// Redacts what changes from run to run. `extra` adds literal replacements
/// (temp paths).
fn snapshot(name: &str, text: &str, extra: &[(&str, &str)]) {
    let mut settings = insta::Settings::clone_current();
    for (literal, replacement) in extra {
        settings.add_filter(&regex_escape(literal), *replacement);
    }
    // Same-width stand-ins keep the tables aligned.
    settings.add_filter(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
    );
    settings.add_filter(
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
        "YYYY-MM-DDThh:mm:ssZ",
    );
    settings.add_filter(r"hmd_[A-Za-z0-9_-]{43}", "hmd_[TOKEN]");
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT");
    settings.bind(|| insta::assert_snapshot!(name, text));
}

fn regex_escape(literal: &str) -> String {
    literal.chars().fold(String::new(), |mut out, c| {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

fn cedar_file(dir: &Path, text: &str) -> String {
    let path = dir.join("policy.cedar");
    std::fs::write(&path, text).expect("write policy file");
    path.to_str().expect("utf-8 temp path").to_owned()
}

const NO_PROD_DELETES: &str = r#"forbid(principal, action == Heimdall::Action::"resource.delete", resource)
when { context.environment == "prod" };
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tour_in_tables() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let policy = cedar_file(tmp.path(), NO_PROD_DELETES);
    let mut t = Transcript::default();

    t.run(&h, &["whoami"]).await;
    t.run(&h, &["domain", "create", "payments", "--description", "Money in, money out"]).await;
    t.run(&h, &["system", "create", "checkout", "--domain", "payments"]).await;
    t.run(&h, &["component", "create", "api", "--system", "checkout", "--description", "The public API"])
        .await;
    t.run(&h, &["environment", "create", "dev"]).await;
    t.run(&h, &["environment", "create", "prod"]).await;
    t.run(&h, &["domain", "list"]).await;
    t.run(&h, &["system", "list", "--domain", "payments"]).await;
    t.run(&h, &["component", "list"]).await;
    t.run(&h, &["environment", "list"]).await;
    t.run(&h, &["system", "show", "checkout"]).await;
    t.run(&h, &["domain", "rename", "payments", "billing"]).await;
    t.run(&h, &["member", "add", "ana@example.com", "--role", "admin"]).await;
    t.run(&h, &["member", "list"]).await;
    t.run(&h, &["member", "set-role", "ana@example.com", "--role", "member"]).await;
    t.run(&h, &["policy", "create", "--name", "no-prod-deletes", "--file", &policy]).await;
    t.run(&h, &["policy", "list"]).await;
    t.run(&h, &["environment", "delete", "dev"]).await;
    t.run(&h, &["event", "list"]).await;
    t.run(&h, &["event", "list", "--action", "member.", "--limit", "1"]).await;
    t.run(&h, &["token", "list"]).await;

    snapshot("tour_table", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tour_in_json() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let policy = cedar_file(tmp.path(), NO_PROD_DELETES);
    let mut t = Transcript::default();
    let json = |args: &[&'static str]| -> Vec<&'static str> { [args, &["--output", "json"][..]].concat() };

    t.run(&h, &json(&["whoami"])).await;
    t.run(&h, &json(&["domain", "create", "payments"])).await;
    t.run(&h, &json(&["system", "create", "checkout", "--domain", "payments"])).await;
    t.run(&h, &json(&["component", "create", "api", "--system", "checkout"])).await;
    t.run(&h, &json(&["environment", "create", "prod"])).await;
    t.run(&h, &json(&["domain", "list"])).await;
    t.run(&h, &json(&["system", "list"])).await;
    t.run(&h, &json(&["component", "list", "--system", "checkout"])).await;
    t.run(&h, &json(&["environment", "list"])).await;
    t.run(&h, &json(&["member", "add", "ana@example.com", "--role", "admin"])).await;
    t.run(&h, &json(&["member", "list"])).await;
    t.run(&h, &["policy", "create", "--name", "no-prod-deletes", "--file", &policy, "--output", "json"])
        .await;
    t.run(&h, &json(&["policy", "list"])).await;
    t.run(&h, &json(&["event", "list", "--action", "domain."])).await;
    t.run(&h, &json(&["domain", "show", "nope"])).await;
    t.run(&h, &json(&["domain", "list"])).await;

    // Every stdout above is one JSON document; lists are arrays.
    for chunk in t.0.split("\n\n").filter(|c| c.contains("[exit 0]")) {
        let body: Vec<&str> =
            chunk.lines().skip(1).filter(|l| !l.starts_with("[exit") && !l.starts_with("stderr|")).collect();
        let body = body.join("\n");
        let value: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {chunk}"));
        if chunk.starts_with("$ heimdall ") && chunk.lines().next().is_some_and(|l| l.contains(" list")) {
            assert!(value.is_array(), "{chunk}");
        }
    }
    snapshot("tour_json", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_print_the_code_and_exit_with_its_status() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let owner = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let mut t = Transcript::default();

    let added =
        owner.run(&["member", "add", "bob@example.com", "--role", "member", "--output", "json"]).await;
    assert_eq!(added.code, 0, "{added:?}");
    let added: serde_json::Value = serde_json::from_str(&added.stdout).expect("json");
    let member_token = added["token"].as_str().expect("token").to_owned();
    let member = Heimdall::with_env(&api, &member_token, tmp.path());

    t.run(&owner, &["domain", "create", "payments"]).await;
    t.run(&owner, &["system", "create", "checkout", "--domain", "payments"]).await;
    // 5 NOT_FOUND
    t.run(&owner, &["domain", "show", "nope"]).await;
    t.run(&owner, &["member", "show", "nobody@example.com"]).await;
    // 4 FORBIDDEN: a member may read the catalog but not change it.
    t.run(&member, &["domain", "list"]).await;
    t.run(&member, &["domain", "create", "mine"]).await;
    t.run(&member, &["member", "add", "eve@example.com", "--role", "owner", "--output", "json"]).await;
    // 6 conflicts
    t.run(&owner, &["domain", "create", "payments"]).await;
    t.run(&owner, &["domain", "delete", "payments"]).await;
    t.run(&owner, &["member", "remove", "owner@example.com"]).await;
    // 7 invalid input, with the fields of a refused policy
    t.run(&owner, &["domain", "create", "Not A Name"]).await;
    let bad_policy = cedar_file(tmp.path(), "permit(principal, action resource);\n");
    t.run(&owner, &["policy", "create", "--name", "broken", "--file", &bad_policy]).await;
    // 3 UNAUTHENTICATED
    let stranger = Heimdall::with_env(&api, &format!("hmd_{}", "A".repeat(43)), tmp.path());
    t.run(&stranger, &["whoami"]).await;
    let nobody = Heimdall { url: None, token: None, config_dir: tmp.path().join("empty") };
    t.run(&nobody, &["whoami"]).await;
    t.run(&nobody, &["whoami", "--output", "json"]).await;
    // 2 usage
    t.run(&owner, &["system", "create", "orphan"]).await;
    t.run(&owner, &["event", "list", "--before", "yesterday"]).await;
    t.run(&owner, &["policy", "show", "not-a-uuid"]).await;
    // 1 transport
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed_url = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let unreachable = Heimdall { url: Some(closed_url), token: Some(api.owner_token.clone()), ..nobody };
    t.run(&unreachable, &["whoami"]).await;

    let expected_codes: Vec<i32> =
        t.0.lines()
            .filter_map(|l| l.strip_prefix("[exit ").and_then(|l| l.strip_suffix(']')))
            .map(|c| c.parse().expect("exit code"))
            .collect();
    assert_eq!(expected_codes, [0, 0, 5, 5, 0, 4, 4, 6, 6, 6, 7, 7, 3, 3, 3, 2, 2, 2, 1]);
    for token in [&api.owner_token, &member_token] {
        assert!(!t.0.contains(token.as_str()), "a token leaked into output");
    }
    snapshot("errors", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_profiles_and_logout() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let config_dir = tmp.path().join("config");
    let plain = Heimdall { url: None, token: None, config_dir: config_dir.clone() };
    let mut t = Transcript::default();

    // Token on the command line, into the default profile.
    let login = ["--api-url", api.url.as_str(), "login", "--token", api.owner_token.as_str()];
    let run = plain.run(&login).await;
    t.record(&["--api-url", "URL", "login", "--token", "TOKEN"], &run);
    let config_file = config_dir.join("config.toml");
    let mode = std::fs::metadata(&config_file).expect("config written").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "config.toml is private");
    let text = std::fs::read_to_string(&config_file).expect("read config");
    assert!(text.contains("current_profile = \"default\""), "{text}");
    assert!(text.contains(&api.owner_token), "the token is stored for later runs");

    // The stored profile is enough: no environment.
    t.run(&plain, &["whoami"]).await;

    // A member's token, read from stdin, into a second profile that becomes current.
    let added = plain.run(&["member", "add", "ana@example.com", "--role", "admin", "--output", "json"]).await;
    let ana_token = serde_json::from_str::<serde_json::Value>(&added.stdout).expect("json")["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let args = ["--api-url", api.url.as_str(), "--profile", "ana", "login"];
    let run = plain.run_with_stdin(&args, Some(&format!("{ana_token}\n"))).await;
    t.record(&["--api-url", "URL", "--profile", "ana", "login", "<", "token"], &run);
    t.run(&plain, &["whoami"]).await;
    t.run(&plain, &["profile", "list"]).await;
    t.run(&plain, &["--profile", "default", "whoami"]).await;
    t.run(&plain, &["profile", "list", "--output", "json"]).await;

    // HEIMDALL_PROFILE picks a profile too; an unknown one is a clear error.
    let mut cmd = plain.command(&["whoami"]);
    cmd.env("HEIMDALL_PROFILE", "nope");
    let output = cmd.output().await.expect("run");
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no profile named \"nope\""));

    // A wrong token is refused and not stored.
    let run =
        plain.run(&["--api-url", api.url.as_str(), "--profile", "bad", "login", "--token", "hmd_nope"]).await;
    t.record(&["--api-url", "URL", "--profile", "bad", "login", "--token", "WRONG"], &run);
    t.run(&plain, &["logout"]).await;
    t.run(&plain, &["profile", "list"]).await;
    t.run(&plain, &["whoami"]).await;
    t.run(&plain, &["--profile", "default", "logout"]).await;
    t.run(&plain, &["logout"]).await;

    for token in [&api.owner_token, &ana_token] {
        assert!(!t.0.contains(token.as_str()), "a token leaked into output");
    }
    snapshot("login", &t.0, &[(&config_dir.display().to_string(), "[CONFIG_DIR]")]);
}

/// `heimdall dev` needs the `heimdall-api` binary next to `heimdall`:
/// `cargo test --workspace` builds it (it is heimdall-api's own binary);
/// `cargo test -p heimdall-cli` alone does not, and this test says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_quickstart_bootstraps_once_and_stops_on_a_signal() {
    let api_binary = Path::new(BIN).with_file_name("heimdall-api");
    if !api_binary.exists() {
        eprintln!(
            "SKIPPED: {} is not built; run `cargo build -p heimdall-api` (or the workspace's tests) first",
            api_binary.display()
        );
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let h = Heimdall { url: None, token: None, config_dir: tmp.path().join("config") };
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let listen = format!("127.0.0.1:{port}");
    let data_arg = data.to_str().expect("utf-8 path");
    let dev_args = ["dev", "--data", data_arg, "--listen", listen.as_str()];

    for round in 0..2 {
        let mut child = h.command(&dev_args).spawn().expect("start heimdall dev");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut banner = String::new();
        let ready = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.expect("read") {
                banner.push_str(&line);
                banner.push('\n');
                if line.starts_with("Press Ctrl-C") {
                    return true;
                }
            }
            false
        })
        .await;
        if ready != Ok(true) {
            let _ = child.start_kill();
            let out = child.wait_with_output().await.expect("output");
            panic!("heimdall dev did not come up: {banner}\n{}", String::from_utf8_lossy(&out.stderr));
        }
        assert!(banner.contains(&format!("http://{listen}")), "{banner}");
        assert!(banner.contains("heimdall domain create payments"), "{banner}");

        // The dev profile is current: plain commands work.
        let who = h.run(&["whoami", "--output", "json"]).await;
        assert_eq!(who.code, 0, "{who:?}");
        assert!(who.stdout.contains("\"email\": \"dev@localhost\""), "{}", who.stdout);
        let token_file = data.join("owner.token");
        assert_eq!(std::fs::metadata(&token_file).expect("token file").permissions().mode() & 0o777, 0o600);
        if round == 0 {
            let created = h.run(&["domain", "create", "payments"]).await;
            assert_eq!(created.code, 0, "{created:?}");
            // The port is taken now: a second `dev` says so.
            let busy = h.run(&dev_args).await;
            assert_eq!(busy.code, 1, "{busy:?}");
            assert!(busy.stderr.contains("already in use"), "{}", busy.stderr);
        } else {
            // Second round: no new bootstrap, same data.
            let listed = h.run(&["domain", "list", "--output", "json"]).await;
            assert!(listed.stdout.contains("\"payments\""), "{}", listed.stdout);
        }

        let signal = if round == 0 { "-TERM" } else { "-INT" };
        let pid = child.id().expect("pid").to_string();
        let status = std::process::Command::new("kill").args([signal, &pid]).status().expect("kill");
        assert!(status.success());
        let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
            .await
            .expect("heimdall dev stops within 20s")
            .expect("output");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("Stopped"), "{stderr}");
        // The API child is gone: its port is free again.
        let mut free = false;
        for _ in 0..50 {
            if std::net::TcpListener::bind(listen.as_str()).is_ok() {
                free = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(free, "the API still listens on {listen} after heimdall dev stopped");
    }
}
