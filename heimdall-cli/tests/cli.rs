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
    settings.add_filter(r"\b[0-9a-f]{64}\b", "[SHA256]");
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

    // Never on the command line: a token there shows in `ps` and shell history.
    let run = plain.run(&["--api-url", api.url.as_str(), "login", "--token", api.owner_token.as_str()]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(!run.stderr.contains(&api.owner_token), "{run:?}");

    // The token from HEIMDALL_TOKEN, into the default profile.
    let login = ["--api-url", api.url.as_str(), "login"];
    let login_with_env = || async {
        let mut cmd = plain.command(&login);
        cmd.env("HEIMDALL_TOKEN", &api.owner_token);
        let output = cmd.output().await.expect("run");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8(output.stdout).expect("utf-8"),
            stderr: String::from_utf8(output.stderr).expect("utf-8"),
        }
    };
    let run = login_with_env().await;
    t.record(&["--api-url", "URL", "login", "(HEIMDALL_TOKEN=TOKEN)"], &run);
    let config_file = config_dir.join("config.toml");
    let mode = std::fs::metadata(&config_file).expect("config written").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "config.toml is private");
    let text = std::fs::read_to_string(&config_file).expect("read config");
    assert!(text.contains("current_profile = \"default\""), "{text}");
    assert!(text.contains(&api.owner_token), "the token is stored for later runs");
    // The client certificate: a key made here (0600), its certificate, the CA.
    let certs = config_dir.join("profiles/default");
    let key = std::fs::read_to_string(certs.join("client.key")).expect("client.key written");
    assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"), "a PEM key");
    let mode = |name: &str| std::fs::metadata(certs.join(name)).expect(name).permissions().mode() & 0o777;
    assert_eq!(mode("client.key"), 0o600, "the key is private");
    let cert = std::fs::read_to_string(certs.join("client.pem")).expect("client.pem written");
    assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
    assert!(std::fs::read_to_string(certs.join("ca.pem")).expect("ca.pem").contains("BEGIN CERTIFICATE"));
    assert!(
        std::fs::read_dir(&certs).expect("dir").all(|e| !e
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp")),
        "no temporary file is left behind"
    );
    let key_body: String = key.lines().filter(|l| !l.starts_with("-----")).collect();
    assert!(run.stdout.contains("✓ Client certificate issued (valid until "), "{run:?}");
    assert!(!run.stdout.contains("PRIVATE KEY") && !run.stderr.contains("PRIVATE KEY"), "{run:?}");

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

    // Logging in again renews the certificate for the same key (personal
    // secrets are bound to it); --new-key makes a new one.
    let run = login_with_env().await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(certs.join("client.key")).expect("client.key"),
        key,
        "the key is kept"
    );
    let renewed_cert = std::fs::read_to_string(certs.join("client.pem")).expect("client.pem");
    assert_ne!(renewed_cert, cert, "a new certificate");
    let mut cmd = plain.command(&["--api-url", api.url.as_str(), "login", "--new-key"]);
    cmd.env("HEIMDALL_TOKEN", &api.owner_token);
    let rekeyed = cmd.output().await.expect("run");
    assert!(rekeyed.status.success(), "{rekeyed:?}");
    let renewed_key = std::fs::read_to_string(certs.join("client.key")).expect("client.key");
    assert_ne!(renewed_key, key, "a new key");
    assert_eq!(mode("client.key"), 0o600);
    for key in [&key_body, &renewed_key.lines().filter(|l| !l.starts_with("-----")).collect::<String>()] {
        let (out, err) = (String::from_utf8_lossy(&rekeyed.stdout), String::from_utf8_lossy(&rekeyed.stderr));
        assert!(!out.contains(key.as_str()) && !err.contains(key.as_str()), "key printed");
    }
    let ana_login = ["--profile", "ana", "login", "--api-url", api.url.as_str()];
    let run = plain.run_with_stdin(&ana_login, Some(&ana_token)).await;
    assert_eq!(run.code, 0, "{run:?}");

    // --no-certificate: a profile without one, which cannot reach Agents.
    let args = ["--api-url", api.url.as_str(), "--profile", "bare", "login", "--no-certificate"];
    let run = plain.run_with_stdin(&args, Some(&ana_token)).await;
    t.record(&["--api-url", "URL", "--profile", "bare", "login", "--no-certificate", "<", "token"], &run);
    assert!(!config_dir.join("profiles/bare").exists(), "no certificate without asking");
    let get = t.run(&plain, &["secret", "get", "db-password", "--environment", "dev"]).await;
    assert_eq!(get.code, 3, "{get:?}");
    assert!(get.stderr.contains("no client certificate for this profile: run `heimdall login`"), "{get:?}");
    t.run(&plain, &["logout"]).await;
    let run = plain.run_with_stdin(&ana_login, Some(&ana_token)).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(config_dir.join("profiles/ana/client.key").exists());

    // A wrong token is refused and not stored.
    let run = plain
        .run_with_stdin(&["--api-url", api.url.as_str(), "--profile", "bad", "login"], Some("hmd_nope"))
        .await;
    t.record(&["--api-url", "URL", "--profile", "bad", "login", "<", "WRONG"], &run);
    t.run(&plain, &["logout"]).await;
    t.run(&plain, &["profile", "list"]).await;
    t.run(&plain, &["whoami"]).await;
    t.run(&plain, &["--profile", "default", "logout"]).await;
    assert!(!certs.join("client.key").exists(), "logout forgets the profile's key");
    assert!(!config_dir.join("profiles/ana/client.key").exists(), "logout forgets the profile's key");
    t.run(&plain, &["logout"]).await;

    for token in [&api.owner_token, &ana_token] {
        assert!(!t.0.contains(token.as_str()), "a token leaked into output");
    }
    snapshot("login", &t.0, &[(&config_dir.display().to_string(), "[CONFIG_DIR]")]);
}

/// `heimdall dev` needs `heimdall-api` and `heimdall-agent` next to
/// `heimdall` (scripts/test.sh builds every binary first), and for its
/// Agent a Terraform: the repository's `.venv/bin/terraform`, which
/// `bash scripts/install-test-tools.sh` installs. It runs from the
/// repository's root, so that the default module allowlist (`<cwd>/**`)
/// covers the fixture module.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_quickstart_bootstraps_once_and_stops_on_a_signal() {
    for binary in ["heimdall-api", "heimdall-agent"] {
        let path = Path::new(BIN).with_file_name(binary);
        assert!(
            path.exists(),
            "{} is not built: run `cargo build --workspace --bins` first (scripts/test.sh does)",
            path.display()
        );
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repo root");
    // Physical paths, as the current directory of `heimdall dev` is.
    let repo = repo.canonicalize().expect("repo root");
    let with_terraform = repo.join(".venv/bin/terraform").exists();
    if !with_terraform {
        eprintln!(
            "NOTE: {} is missing (bash scripts/install-test-tools.sh): the Agent and Resource checks are skipped",
            repo.join(".venv/bin/terraform").display()
        );
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let h = Heimdall { url: None, token: None, config_dir: tmp.path().join("config") };
    // Two free ports in a row: the API's and the Agent channel's.
    let port = loop {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        if port < u16::MAX && std::net::TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            break port;
        }
    };
    let listen = format!("127.0.0.1:{port}");
    let agent_listen = format!("127.0.0.1:{}", port + 1);
    let data_arg = data.to_str().expect("utf-8 path");
    let dev_args = ["dev", "--data", data_arg, "--listen", listen.as_str()];
    let module = repo.join("tests/fixtures/modules/bucket");
    let schema = repo.join("examples/schemas/bucket.json");
    let mut resource_id = String::new();

    for round in 0..2 {
        let mut dev = h.command(&dev_args);
        dev.current_dir(&repo).env_remove("HEIMDALL_TERRAFORM").env_remove("TF_CLI_CONFIG_FILE");
        let mut child = dev.spawn().expect("start heimdall dev");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut banner = String::new();
        let ready = tokio::time::timeout(Duration::from_secs(90), async {
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
        assert!(banner.contains(&format!("https://{listen}")), "{banner}");
        assert!(banner.contains("heimdall domain create payments"), "{banner}");

        // The dev profile is current: plain commands work.
        let who = h.run(&["whoami", "--output", "json"]).await;
        assert_eq!(who.code, 0, "{who:?}");
        assert!(who.stdout.contains("\"email\": \"dev@localhost\""), "{}", who.stdout);
        let token_file = data.join("owner.token");
        assert_eq!(std::fs::metadata(&token_file).expect("token file").permissions().mode() & 0o777, 0o600);

        if with_terraform {
            // Enrolled the first time only, and connected both times.
            let expected = if round == 0 {
                "✓ Agent \"dev\" enrolled and running"
            } else {
                "✓ Agent \"dev\" running"
            };
            assert!(banner.contains(expected), "{banner}");
            assert!(data.join("agent/agent.toml").exists());
            let agents = json_of(&h, &["agent", "list"]).await;
            let agents = agents.as_array().expect("a list");
            assert_eq!(agents.len(), 1, "{agents:?}");
            assert_eq!(agents[0]["name"], "dev");
            assert!(agents[0].get("revoked_at").is_none(), "active: {agents:?}");
            assert!(agents[0]["last_seen_at"].is_string(), "it has claimed: {agents:?}");
            let table = h.run(&["agent", "list"]).await;
            assert_eq!(cells(&table.stdout)[1][1..3], ["dev", "active"], "{}", table.stdout);
            // Values: the Agent's local API two ports after the API's, and a
            // client certificate for the dev profile, renewed on every start.
            let local_api = format!("https://127.0.0.1:{}", port + 2);
            assert!(banner.contains(&format!("✓ Agent local API at {local_api}")), "{banner}");
            assert!(banner.contains("printf 's3cret-value' | heimdall secret set db-password"), "{banner}");
            assert!(banner.contains("✓ Client certificate for \"dev\" valid until "), "{banner}");
            let key = h.config_dir.join("profiles/dev/client.key");
            assert_eq!(std::fs::metadata(&key).expect("client.key").permissions().mode() & 0o777, 0o600);
            assert_eq!(
                std::fs::metadata(data.join("master.key")).expect("master.key").permissions().mode() & 0o777,
                0o600
            );
        } else {
            assert!(
                banner.contains("✓ Agent \"dev\"") || banner.contains("bash scripts/install-test-tools.sh"),
                "{banner}"
            );
        }

        if round == 0 {
            let created = h.run(&["domain", "create", "payments"]).await;
            assert_eq!(created.code, 0, "{created:?}");
            // The port is taken now: a second `dev` says so.
            let busy = h.run(&dev_args).await;
            assert_eq!(busy.code, 1, "{busy:?}");
            assert!(busy.stderr.contains("already in use"), "{}", busy.stderr);
            if with_terraform {
                // The banner's Resource example, with the repository's schema and offline module.
                assert!(banner.contains(&format!("--module-source {}", module.display())), "{banner}");
                let world: [&[&str]; 6] = [
                    &["system", "create", "checkout", "--domain", "payments"],
                    &["component", "create", "api", "--system", "checkout"],
                    &["environment", "create", "dev"],
                    &[
                        "cloud-account",
                        "create",
                        "local",
                        "--provider",
                        "aws",
                        "--region",
                        "us-east-1",
                        "--state-bucket",
                        "local-state",
                        "--auth",
                        "static",
                        "--secret",
                        "none",
                    ],
                    &["cloud-account", "link", "local", "--scope", "organization", "--environment", "dev"],
                    &[
                        "schema",
                        "create",
                        "--type",
                        "bucket",
                        "--input-schema",
                        schema.to_str().expect("utf-8"),
                        "--module-source",
                        module.to_str().expect("utf-8"),
                        "--module-version",
                        "1.0.0",
                    ],
                ];
                for args in world {
                    let run = h.run(args).await;
                    assert_eq!(run.code, 0, "{args:?}: {run:?}");
                }
                let create = [
                    "resource",
                    "create",
                    "--component",
                    "api",
                    "--schema",
                    "bucket",
                    "--environment",
                    "dev",
                    "--name",
                    "receipts",
                    "--input",
                    r#"{"bucket":"acme-receipts","tags":{"team":"payments"}}"#,
                    "--wait",
                    "--timeout",
                    "50s",
                ];
                let run = h.run(&create).await;
                let agent_log = std::fs::read_to_string(data.join("agent.log")).unwrap_or_default();
                assert_eq!(run.code, 0, "{run:?}\nagent.log:\n{agent_log}");
                assert!(run.stdout.ends_with("✓ Resource receipts is provisioned (revision 1)\n"), "{run:?}");
                let shown = json_of(&h, &["resource", "show", "receipts"]).await;
                let resource = &shown["resource"];
                assert_eq!(resource["status"], "provisioned", "{shown}");
                let outputs = &resource["outputs"];
                assert_eq!(outputs["bucket"], "acme-receipts", "{shown}");
                assert_eq!(outputs["arn"], "arn:aws:s3:::acme-receipts", "{shown}");
                assert_eq!(outputs["tags"], json!({ "team": "payments" }), "{shown}");
                assert_eq!(outputs["secret"], "<sensitive>", "{shown}");
                resource_id = resource["id"].as_str().expect("id").to_owned();
                let state = data.join("state").join(format!("{resource_id}.tfstate"));
                let state: serde_json::Value = serde_json::from_str(
                    &std::fs::read_to_string(&state).expect("state file under DATA/state"),
                )
                .expect("state is JSON");
                assert_eq!(state["outputs"]["bucket"]["value"], "acme-receipts", "{state}");

                // A value, written to the dev Agent and read back, byte for byte.
                for args in
                    [&["environment", "assign-agent", "dev", "dev"][..], &["secret", "create", "db-password"]]
                {
                    let run = h.run(args).await;
                    assert_eq!(run.code, 0, "{args:?}: {run:?}");
                }
                let set = h
                    .run_with_stdin(
                        &["secret", "set", "db-password", "--environment", "dev"],
                        Some(DEV_VALUE),
                    )
                    .await;
                assert_eq!(set.code, 0, "{set:?}");
                assert_eq!(set.stdout, "✓ db-password version 1 stored in dev on dev\n");
                let got = h.run(&["secret", "get", "db-password", "--environment", "dev"]).await;
                assert_eq!(got.stdout, DEV_VALUE, "exactly the bytes written, no newline added");
                let got = json_of(&h, &["secret", "get", "db-password", "--environment", "dev"]).await;
                assert_eq!(
                    got,
                    json!({"name": "db-password", "environment": "dev", "version": 1, "value": DEV_VALUE})
                );
            }
        } else {
            // Second round: no new bootstrap, same data.
            let listed = h.run(&["domain", "list", "--output", "json"]).await;
            assert!(listed.stdout.contains("\"payments\""), "{}", listed.stdout);
            if with_terraform {
                // The restarted Agent runs the destroy: the state is left with no resources.
                let run = h.run(&["resource", "delete", "receipts", "--wait", "--timeout", "50s"]).await;
                assert_eq!(run.code, 0, "{run:?}");
                assert!(run.stdout.ends_with("✓ Resource receipts is deleted\n"), "{run:?}");
                let state = data.join("state").join(format!("{resource_id}.tfstate"));
                let state: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&state).expect("state file"))
                        .expect("JSON");
                assert_eq!(state["resources"], json!([]), "{state}");

                // The value outlived the restart (same store, same master key);
                // a deactivated version is refused once the Agent has synced.
                let got = h.run(&["secret", "get", "db-password", "--environment", "dev"]).await;
                assert_eq!(got.stdout, DEV_VALUE);
                let run = h
                    .run(&["secret", "deactivate", "db-password", "--environment", "dev", "--version", "1"])
                    .await;
                assert_eq!(run.code, 0, "{run:?}");
                let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
                loop {
                    let got = h
                        .run(&["secret", "get", "db-password", "--environment", "dev", "--version", "1"])
                        .await;
                    if got.code == 5 && got.stderr.contains("VERSION_DEACTIVATED") {
                        assert_eq!(got.stdout, "", "nothing served");
                        break;
                    }
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "still served after deactivation: {got:?}"
                    );
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        }

        let signal = if round == 0 { "-TERM" } else { "-INT" };
        let pid = child.id().expect("pid").to_string();
        let status = std::process::Command::new("kill").args([signal, &pid]).status().expect("kill");
        assert!(status.success());
        let out = tokio::time::timeout(Duration::from_secs(45), child.wait_with_output())
            .await
            .expect("heimdall dev stops within 45s")
            .expect("output");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("Stopped"), "{stderr}");
        if with_terraform {
            assert!(stderr.contains("Stopping the Agent"), "{stderr}");
            let log = std::fs::read_to_string(data.join("agent.log")).expect("agent.log");
            assert!(log.trim_end().ends_with("agent stopped"), "the Agent stopped on its own:\n{log}");
        }
        // The children are gone: their ports are free again.
        for addr in [&listen, &agent_listen] {
            let mut free = false;
            for _ in 0..50 {
                if std::net::TcpListener::bind(addr.as_str()).is_ok() {
                    free = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert!(free, "something still listens on {addr} after heimdall dev stopped");
        }
    }
}

/// What the dev test stores: a newline inside and a space at the end, to
/// show that nothing is trimmed or added.
const DEV_VALUE: &str = "s3cret\nvalue ";

// ---- Infrastructure Manager --------------------------------------------------

use heimdall_core::ids::{JobId, LeaseId};
use heimdall_core::ports::{JobOutcome, JobQueue};
use heimdall_core::wire::Job;
use serde_json::json;
use time::OffsetDateTime;
use uuid::Uuid;

/// A JSON Schema with every kind of rule the refusals name.
const BUCKET_SCHEMA: &str = r#"{
  "type": "object",
  "required": ["bucket"],
  "properties": {
    "bucket": { "type": "string", "pattern": "^[a-z0-9][a-z0-9-]{2,62}$" },
    "tier": { "enum": ["standard", "archive"] },
    "versioning": { "type": "boolean" },
    "tags": { "type": "object", "additionalProperties": { "type": "string" } }
  },
  "additionalProperties": false
}
"#;

const DATABASE_SCHEMA: &str = r#"{
  "type": "object",
  "required": ["engine"],
  "properties": { "engine": { "enum": ["postgres", "mysql"] }, "size_gb": { "type": "integer", "minimum": 1 } },
  "additionalProperties": false
}
"#;

fn write_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write temp file");
    path.to_str().expect("utf-8 temp path").to_owned()
}

/// A table's cells: columns are separated by two spaces or more.
fn cells(table: &str) -> Vec<Vec<&str>> {
    table.lines().map(|line| line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect()).collect()
}

/// Runs a command in JSON mode, outside the transcript, and returns its document.
async fn json_of(h: &Heimdall, args: &[&str]) -> serde_json::Value {
    let args = [args, &["--output", "json"][..]].concat();
    let run = h.run(&args).await;
    assert_eq!(run.code, 0, "{args:?}: {run:?}");
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", run.stdout))
}

async fn id_of(h: &Heimdall, args: &[&str]) -> String {
    let value = json_of(h, args).await;
    let id = value.get("resource").unwrap_or(&value)["id"].as_str().expect("an id");
    id.to_owned()
}

/// Waits until a job is queued, then claims it as `agent-1`, like an Agent.
async fn claim(api: &TestApi) -> (Job, LeaseId) {
    let org = api.bootstrapped.organization.id;
    for _ in 0..200 {
        let lease = LeaseId::from_uuid(Uuid::new_v4());
        if let Some(job) =
            api.store.claim(org, "agent-1", lease, OffsetDateTime::now_utc()).await.expect("claim")
        {
            return (job, lease);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no job was queued within 10s");
}

async fn finish(api: &TestApi, job: JobId, lease: LeaseId, outcome: JobOutcome) {
    api.store.finish(job, lease, outcome, OffsetDateTime::now_utc()).await.expect("finish");
}

/// domain payments → system checkout → component api; environments dev,
/// prod and staging; cloud account aws-dev linked for dev only.
async fn infra_world(t: &mut Transcript, h: &Heimdall, tmp: &Path) {
    t.run(h, &["domain", "create", "payments"]).await;
    t.run(h, &["system", "create", "checkout", "--domain", "payments"]).await;
    t.run(h, &["component", "create", "api", "--system", "checkout"]).await;
    for env in ["dev", "prod", "staging"] {
        t.run(h, &["environment", "create", env]).await;
    }
    let schema = write_file(tmp, "bucket.schema.json", BUCKET_SCHEMA);
    let defaults = write_file(tmp, "bucket.defaults.json", r#"{ "dev": { "tier": "standard" } }"#);
    let created = t
        .run(
            h,
            &[
                "schema",
                "create",
                "--type",
                "s3-bucket",
                "--input-schema",
                &schema,
                "--defaults",
                &defaults,
                "--module-source",
                "git::https://git.example.com/modules/s3-bucket",
                "--module-version",
                "v1.2.0",
            ],
        )
        .await;
    assert_eq!(created.code, 0, "{created:?}");
    let account = [
        "cloud-account",
        "create",
        "aws-dev",
        "--provider",
        "aws",
        "--region",
        "eu-west-1",
        "--state-bucket",
        "acme-tf-state",
        "--auth",
        "oidc",
        "--role-arn",
        "arn:aws:iam::123456789012:role/heimdall",
    ];
    assert_eq!(t.run(h, &account).await.code, 0);
    let link = ["cloud-account", "link", "aws-dev", "--scope", "organization", "--environment", "dev"];
    assert_eq!(t.run(h, &link).await.code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infra_tour_in_tables() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let mut t = Transcript::default();

    infra_world(&mut t, &h, tmp.path()).await;
    t.run(&h, &["schema", "list"]).await;
    t.run(&h, &["schema", "show", "s3-bucket"]).await;
    t.run(&h, &["cloud-account", "list"]).await;
    t.run(&h, &["cloud-account", "show", "aws-dev"]).await;

    // DESIGN §3, with ids as in the seed transcript.
    let component = id_of(&h, &["component", "show", "api"]).await;
    let schema = id_of(&h, &["schema", "show", "s3-bucket"]).await;
    let dev = id_of(&h, &["environment", "show", "dev"]).await;
    let create = [
        "resource",
        "create",
        "--component",
        &component,
        "--schema",
        &schema,
        "--environment",
        &dev,
        "--name",
        "recibos",
        "--input",
        r#"{"bucket":"checkout-recibos"}"#,
    ];
    let created = t.run(&h, &create).await;
    let line =
        created.stdout.strip_prefix("✓ Resource created: recibos (").and_then(|l| l.strip_suffix(")\n"));
    let resource: Uuid = line.and_then(|id| id.parse().ok()).unwrap_or_else(|| panic!("{created:?}"));
    let resource = resource.to_string();
    let jobs = t.run(&h, &["job", "list", "--component", &component, "--resource", &resource]).await;
    assert!(jobs.stdout.starts_with("JOB ID  "), "{}", jobs.stdout);
    let table = cells(&jobs.stdout);
    assert_eq!(table[0], ["JOB ID", "OPERATION", "STATUS", "ATTEMPTS", "REASON", "QUEUED AT"]);
    assert_eq!(table.len(), 2, "{}", jobs.stdout);
    assert_eq!(table[1][1..5], ["apply", "queued", "0/3", "-"], "{}", jobs.stdout);

    // Refusals: every field and rule, never a value; nothing stored.
    let marker = "LEAKCHECK";
    let bad_input = json!({
        "bucket": format!("Not_A_Bucket_{marker}"),
        "tier": format!("platinum-{marker}"),
        "versioning": format!("yes-{marker}"),
        "tags": { "team": 42 },
        "owner": format!("{marker}@example.com"),
    })
    .to_string();
    let refused = t
        .run(
            &h,
            &[
                "resource",
                "create",
                "--component",
                "api",
                "--schema",
                "s3-bucket",
                "--environment",
                "dev",
                "--name",
                "leaky",
                "--input",
                &bad_input,
            ],
        )
        .await;
    assert_eq!(refused.code, 7, "{refused:?}");
    assert!(refused.stderr.contains("SCHEMA_VIOLATION"), "{refused:?}");
    for (path, rule) in
        [("/bucket", "pattern"), ("/tier", "enum"), ("/versioning", "type"), ("/tags/team", "type")]
    {
        assert!(refused.stderr.contains(&format!("  {path}: {rule}")), "{path} {rule}: {}", refused.stderr);
    }
    assert!(!refused.stdout.contains(marker) && !refused.stderr.contains(marker), "{refused:?}");
    let missing = [
        "resource",
        "create",
        "--component",
        "api",
        "--schema",
        "s3-bucket",
        "--environment",
        "dev",
        "--name",
        "leaky",
        "--input",
        "{}",
    ];
    assert_eq!(t.run(&h, &missing).await.code, 7);
    let unlinked = [
        "resource",
        "create",
        "--component",
        "api",
        "--schema",
        "s3-bucket",
        "--environment",
        "staging",
        "--name",
        "nowhere",
        "--input",
        r#"{"bucket":"nowhere-1"}"#,
    ];
    let no_account = t.run(&h, &unlinked).await;
    assert_eq!(no_account.code, 7);
    assert!(no_account.stderr.contains("NO_CLOUD_ACCOUNT"), "{no_account:?}");

    // An Agent claims the job, writes its log, and finishes.
    let (job, lease) = claim(&api).await;
    assert_eq!(job.resource_id.to_string(), resource);
    api.store
        .append_log(
            job.id,
            lease,
            "Terraform will perform the following actions:\n  + terraform_data.bucket\n",
        )
        .await
        .expect("append log");
    let running = t.run(&h, &["job", "list", "--resource", "recibos"]).await;
    assert_eq!(&cells(&running.stdout)[1][1..4], ["apply", "running", "1/3"], "{}", running.stdout);
    t.run(&h, &["resource", "list"]).await;
    let outputs = json!({ "arn": "arn:aws:s3:::checkout-recibos", "password": "<sensitive>" });
    finish(&api, job.id, lease, JobOutcome::Completed { outputs }).await;
    let job_id = job.id.to_string();
    t.run(&h, &["job", "show", &job_id]).await;
    t.run(&h, &["job", "log", &job_id]).await;
    t.run(
        &h,
        &["resource", "update", "recibos", "--input", r#"{"bucket":"checkout-recibos","versioning":true}"#],
    )
    .await;
    t.run(&h, &["resource", "show", "recibos"]).await;
    t.run(&h, &["job", "list", "--resource", "recibos"]).await;

    // A failure: the reason is cut in the table, whole in `job show`; retry queues again.
    let (job, lease) = claim(&api).await;
    let reason = "Error: creating S3 Bucket (checkout-recibos): operation error S3: CreateBucket, \
                  https response error StatusCode: 409, BucketAlreadyExists";
    finish(&api, job.id, lease, JobOutcome::Failed { reason: reason.into(), retryable: false }).await;
    t.run(&h, &["job", "list", "--resource", "recibos"]).await;
    t.run(&h, &["resource", "retry", "recibos"]).await;
    t.run(&h, &["resource", "list", "--status", "queued"]).await;

    // A Resource that never ran: deleted at once, its queued apply cancelled.
    let tmp_bucket = [
        "resource",
        "create",
        "--component",
        "api",
        "--schema",
        "s3-bucket",
        "--environment",
        "dev",
        "--name",
        "scratch",
        "--input",
        r#"{"bucket":"scratch-1"}"#,
    ];
    t.run(&h, &tmp_bucket).await;
    let deleted = t.run(&h, &["resource", "delete", "scratch"]).await;
    assert!(deleted.stdout.starts_with("✓ Resource deleted: scratch ("), "{deleted:?}");
    let scratch = json_of(&h, &["resource", "list", "--status", "deleted"]).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let cancelled = t.run(&h, &["job", "list", "--resource", &scratch]).await;
    assert_eq!(cells(&cancelled.stdout)[1][1..4], ["apply", "cancelled", "0/3"], "{}", cancelled.stdout);
    t.run(&h, &["resource", "list", "--environment", "dev"]).await;

    // Approval: never the requester's own; another admin approves the revision they read.
    let db_schema = write_file(tmp.path(), "db.schema.json", DATABASE_SCHEMA);
    let approval_schema =
        ["schema", "create", "--type", "database", "--input-schema", "-", "--requires-approval"];
    let run =
        h.run_with_stdin(&approval_schema, Some(&std::fs::read_to_string(&db_schema).expect("read"))).await;
    t.record(&[&approval_schema[..], &["<", "db.schema.json"]].concat(), &run);
    assert_eq!(run.code, 0, "{run:?}");
    let added = json_of(&h, &["member", "add", "ana@example.com", "--role", "admin"]).await;
    let ana = Heimdall::with_env(&api, added["token"].as_str().expect("token"), tmp.path());
    let ledger = [
        "resource",
        "create",
        "--component",
        "api",
        "--schema",
        "database",
        "--environment",
        "dev",
        "--name",
        "ledger",
        "--input",
        r#"{"engine":"postgres"}"#,
    ];
    t.run(&h, &ledger).await;
    let own = t.run(&h, &["resource", "approve", "ledger", "--revision", "1"]).await;
    assert_eq!(own.code, 4, "{own:?}");
    assert!(own.stderr.contains("SELF_APPROVAL"), "{own:?}");
    let stale = t.run(&ana, &["resource", "approve", "ledger", "--revision", "2"]).await;
    assert_eq!(stale.code, 6, "{stale:?}");
    let approved =
        t.run(&ana, &["resource", "approve", "ledger", "--revision", "1", "--reason", "sized right"]).await;
    assert_eq!(approved.stdout, "✓ Resource approved: ledger, revision 1 (queued)\n", "{approved:?}");
    t.run(&h, &["resource", "update", "ledger", "--input", r#"{"engine":"postgres","size_gb":20}"#]).await;
    t.run(&ana, &["resource", "refuse", "ledger", "--revision", "2", "--reason", "too big for dev"]).await;
    t.run(&h, &["resource", "show", "ledger"]).await;

    // Usage errors, before any request.
    let missing_file = tmp.path().join("nope.json");
    let missing_file = missing_file.to_str().expect("utf-8");
    let broken = write_file(tmp.path(), "broken.json", "{\"type\": \"object\",,}");
    for args in [
        &["schema", "create", "--type", "x", "--input-schema", missing_file][..],
        &["schema", "create", "--type", "x", "--input-schema", &broken],
        &["schema", "create", "--type", "x", "--input-schema", &db_schema, "--defaults", &broken],
        &[
            "cloud-account",
            "create",
            "gcp-dev",
            "--provider",
            "gcp",
            "--region",
            "europe-west1",
            "--state-bucket",
            "acme-state",
            "--auth",
            "static",
            "--role-arn",
            "arn:x",
        ],
        &["resource", "update", "recibos", "--input", "{\"bucket\": "],
    ] {
        let run = t.run(&h, args).await;
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
    }
    // A member reads Resources and jobs, but not cloud accounts.
    let bob = json_of(&h, &["member", "add", "bob@example.com", "--role", "member"]).await;
    let bob_token = bob["token"].as_str().expect("token").to_owned();
    let bob_dir = tmp.path().join("bob");
    let bob = Heimdall::with_env(&api, &bob_token, &bob_dir);
    assert_eq!(t.run(&bob, &["cloud-account", "list"]).await.code, 4);
    assert_eq!(bob.run(&["job", "list"]).await.code, 0);

    let printed: Vec<&str> = t.0.lines().filter(|l| !l.starts_with("$ heimdall ")).collect();
    assert!(!printed.join("\n").contains(marker), "an input value leaked into the output");
    snapshot("infra_tour_table", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infra_tour_in_json() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let mut setup = Transcript::default();
    infra_world(&mut setup, &h, tmp.path()).await;
    let mut t = Transcript::default();
    fn json<'a>(args: &[&'a str]) -> Vec<&'a str> {
        [args, &["--output", "json"][..]].concat()
    }

    t.run(&h, &json(&["schema", "list"])).await;
    t.run(&h, &json(&["schema", "show", "s3-bucket"])).await;
    t.run(&h, &json(&["cloud-account", "list"])).await;
    t.run(&h, &json(&["cloud-account", "show", "aws-dev"])).await;
    let create = [
        "resource",
        "create",
        "--component",
        "api",
        "--schema",
        "s3-bucket",
        "--environment",
        "dev",
        "--name",
        "recibos",
        "--input",
        r#"{"bucket":"checkout-recibos"}"#,
    ];
    t.run(&h, &json(&create)).await;
    t.run(&h, &json(&["resource", "list"])).await;
    t.run(&h, &json(&["resource", "show", "recibos"])).await;
    let jobs = t.run(&h, &json(&["job", "list", "--resource", "recibos"])).await;
    let job_id = serde_json::from_str::<serde_json::Value>(&jobs.stdout).expect("json")[0]["id"]
        .as_str()
        .expect("job id")
        .to_owned();
    t.run(&h, &json(&["job", "show", &job_id])).await;
    t.run(&h, &json(&["job", "log", &job_id])).await;
    t.run(&h, &json(&["resource", "update", "recibos", "--input", r#"{"bucket":"checkout-recibos-2"}"#]))
        .await;
    let refused =
        t.run(&h, &json(&["resource", "update", "recibos", "--input", r#"{"bucket":"Nope!"}"#])).await;
    assert_eq!(refused.code, 7);
    let error: serde_json::Value = serde_json::from_str(&refused.stderr).expect("error as JSON");
    assert_eq!(error["error"]["code"], "SCHEMA_VIOLATION");
    assert_eq!(error["error"]["fields"], json!([{ "path": "/bucket", "rule": "pattern" }]));
    t.run(&h, &json(&["resource", "delete", "recibos"])).await;
    t.run(&h, &json(&["job", "list", "--component", "api"])).await;

    // Every successful stdout is one JSON document; lists are arrays.
    for chunk in t.0.split("\n\n").filter(|c| c.contains("[exit 0]")) {
        let body: Vec<&str> =
            chunk.lines().skip(1).filter(|l| !l.starts_with("[exit") && !l.starts_with("stderr|")).collect();
        let value: serde_json::Value =
            serde_json::from_str(&body.join("\n")).unwrap_or_else(|e| panic!("{e}: {chunk}"));
        if chunk.lines().next().is_some_and(|l| l.contains(" list")) {
            assert!(value.is_array(), "{chunk}");
        }
    }
    snapshot("infra_tour_json", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

/// `--wait` polls until the Agent (here: the test, through the store) ends the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_follows_the_job_to_its_end() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    infra_world(&mut Transcript::default(), &h, tmp.path()).await;
    let create = |name: &'static str, bucket: &'static str, extra: &[&'static str]| -> Vec<String> {
        let input = format!(r#"{{"bucket":"{bucket}"}}"#);
        [
            "resource",
            "create",
            "--component",
            "api",
            "--schema",
            "s3-bucket",
            "--environment",
            "dev",
            "--name",
            name,
            "--input",
            &input,
        ]
        .iter()
        .chain(extra)
        .map(|s| (*s).to_owned())
        .collect()
    };
    let spawn = |args: Vec<String>| h.command(&args.iter().map(String::as_str).collect::<Vec<_>>()).spawn();
    let done = |child: tokio::process::Child| async move {
        let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("finished within 60s")
            .expect("output");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8(output.stdout).expect("utf-8"),
            stderr: String::from_utf8(output.stderr).expect("utf-8"),
        }
    };

    // Provisioned: the created line, then the final status.
    let child = spawn(create("waited", "waited-1", &["--wait", "--timeout", "30s"])).expect("spawn");
    let (job, lease) = claim(&api).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    finish(&api, job.id, lease, JobOutcome::Completed { outputs: json!({ "arn": "arn:x" }) }).await;
    let run = done(child).await;
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("✓ Resource created: waited ("), "{run:?}");
    assert_eq!(lines[1..], ["✓ Resource waited is provisioned (revision 1)"], "{run:?}");
    assert_eq!(run.stderr, "", "no progress without a terminal");

    // Failed, in JSON mode: only the final Resource on stdout, FAILED on stderr, exit 1.
    let child = spawn(create("doomed", "doomed-1", &["--wait", "--output", "json"])).expect("spawn");
    let (job, lease) = claim(&api).await;
    let failure = JobOutcome::Failed { reason: "apply failed: AccessDenied".into(), retryable: false };
    finish(&api, job.id, lease, failure).await;
    let run = done(child).await;
    assert_eq!(run.code, 1, "{run:?}");
    let resource: serde_json::Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    assert_eq!((resource["name"].as_str(), resource["status"].as_str()), (Some("doomed"), Some("failed")));
    let error: serde_json::Value = serde_json::from_str(&run.stderr).expect("error as JSON");
    assert_eq!(error["error"]["message"], "FAILED: apply failed: AccessDenied");

    // Nobody claims: the wait gives up after --timeout, exit 1; the job stays queued.
    let started = std::time::Instant::now();
    let run = h.run(&["resource", "retry", "doomed", "--wait", "--timeout", "1s"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.starts_with("✓ Resource retried: doomed, revision 1 (queued)"), "{run:?}");
    assert!(
        run.stderr.contains("timed out after 1s waiting for Resource doomed: it is still queued"),
        "{run:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let (job, lease) = claim(&api).await;
    finish(&api, job.id, lease, JobOutcome::Completed { outputs: json!({}) }).await;

    // Delete of a Resource that ran: a destroy job, waited for.
    let child = h.command(&["resource", "delete", "waited", "--wait"]).spawn().expect("spawn");
    let (job, lease) = claim(&api).await;
    assert_eq!(job.operation.as_str(), "destroy");
    finish(&api, job.id, lease, JobOutcome::Completed { outputs: json!({}) }).await;
    let run = done(child).await;
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("✓ Resource deletion queued: waited ("), "{run:?}");
    assert_eq!(lines[1..], ["✓ Resource waited is deleted"], "{run:?}");

    // Pending approval ends a wait at once.
    let mut approval = Transcript::default();
    let schema = write_file(tmp.path(), "db.json", DATABASE_SCHEMA);
    let args = ["schema", "create", "--type", "database", "--input-schema", &schema, "--requires-approval"];
    assert_eq!(approval.run(&h, &args).await.code, 0);
    let run = h
        .run(&[
            "resource",
            "create",
            "--component",
            "api",
            "--schema",
            "database",
            "--environment",
            "dev",
            "--name",
            "ledger",
            "--input",
            r#"{"engine":"mysql"}"#,
            "--wait",
        ])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.ends_with(
            "✓ Resource ledger is pending_approval: revision 1 waits for another person's approval\n"
        ),
        "{run:?}"
    );
}

// ---- Agents --------------------------------------------------------------------

use heimdall_core::ids::{AgentId, EventId, OrgId};
use heimdall_core::infra::Agent;
use heimdall_core::ports::{AgentStore, NewEvent};
use heimdall_core::token::TokenHash;

/// What the API's enroll route does with a registration token, straight
/// through the store (the route itself wants a certificate request; the
/// Agent's own tests, and `heimdall dev` below, enroll for real).
async fn enroll(api: &TestApi, token: &str) -> Result<Agent, heimdall_core::ports::StoreError> {
    let now = OffsetDateTime::now_utc();
    let id = AgentId::from_uuid(Uuid::new_v4());
    let agent = Agent {
        id,
        org_id: OrgId::from_uuid(Uuid::nil()),
        name: String::new(),
        cert_sha256: "ab".repeat(32),
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
        action: "agent.enrolled".into(),
        target: String::new(),
        detail: serde_json::Value::Null,
    };
    api.store.enroll_agent(&TokenHash::of(token), &agent, now, event).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_enroll_with_a_one_time_token_and_are_revoked() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let mut t = Transcript::default();

    t.run(&h, &["agent", "list"]).await;
    // The token, once, and the command that uses it.
    let created = t.run(&h, &["agent", "token", "create", "--name", "edge-1"]).await;
    assert_eq!(created.code, 0, "{created:?}");
    let token =
        created.stdout.lines().find_map(|l| l.strip_prefix("Token: ")).expect("a Token: line").to_owned();
    let ca = heimdall_api::pki::Ca::load_or_create(&api.ca_dir).expect("the CA").fingerprint();
    assert!(created.stdout.contains(&format!("Installation CA SHA-256: {ca}\n")), "{}", created.stdout);
    let command = format!(
        "  heimdall-agent enroll --api {} --ca-sha256 {ca} --data <dir> --allow-module '<glob>'\n",
        api.url
    );
    assert!(created.stdout.contains(&command), "{}", created.stdout);
    assert!(created.stderr.contains("shown once") && created.stderr.contains("expires at"), "{created:?}");
    let edge_1 = enroll(&api, &token).await.expect("the printed token enrolls an Agent");
    assert_eq!(edge_1.name, "edge-1");
    assert!(enroll(&api, &token).await.is_err(), "a registration token enrolls one Agent only");

    let created = t.run(&h, &["agent", "token", "create", "--name", "edge-2", "--output", "json"]).await;
    let registration: serde_json::Value = serde_json::from_str(&created.stdout).expect("JSON");
    assert_eq!(registration["name"], "edge-2");
    assert!(registration["expires_at"].is_string(), "{registration}");
    assert_eq!(created.stderr, "", "JSON mode: no warning on stderr");
    let edge_2 = enroll(&api, registration["token"].as_str().expect("token")).await.expect("enroll");
    api.store.touch_agent(edge_1.id, OffsetDateTime::now_utc()).await.expect("touch");

    let listed = t.run(&h, &["agent", "list"]).await;
    assert_eq!(cells(&listed.stdout)[1][1..3], ["edge-1", "active"], "{}", listed.stdout);
    assert_eq!(cells(&listed.stdout)[2][1..4], ["edge-2", "active", "-"], "never seen: {}", listed.stdout);
    t.run(&h, &["agent", "revoke", "edge-2"]).await;
    let listed = t.run(&h, &["agent", "list"]).await;
    assert_eq!(cells(&listed.stdout)[2][1..3], ["edge-2", "revoked"], "{}", listed.stdout);
    // A revoked Agent's name no longer names it; its id does, and revoking again changes nothing.
    assert_eq!(t.run(&h, &["agent", "revoke", "edge-2"]).await.code, 5);
    let again = t.run(&h, &["agent", "revoke", &edge_2.id.to_string(), "--output", "json"]).await;
    assert_eq!(again.code, 0, "{again:?}");
    t.run(&h, &["agent", "list", "--output", "json"]).await;

    // An admin reads Agents; only the owner enrolls and revokes; a member sees none.
    let ana = json_of(&h, &["member", "add", "ana@example.com", "--role", "admin"]).await;
    let ana = Heimdall::with_env(&api, ana["token"].as_str().expect("token"), tmp.path());
    let bob = json_of(&h, &["member", "add", "bob@example.com", "--role", "member"]).await;
    let bob_token = bob["token"].as_str().expect("token").to_owned();
    let bob_dir = tmp.path().join("bob");
    let bob = Heimdall::with_env(&api, &bob_token, &bob_dir);
    assert_eq!(ana.run(&["agent", "list"]).await.code, 0);
    assert_eq!(t.run(&ana, &["agent", "token", "create", "--name", "edge-3"]).await.code, 4);
    assert_eq!(t.run(&ana, &["agent", "revoke", "edge-1"]).await.code, 4);
    assert_eq!(t.run(&bob, &["agent", "list"]).await.code, 4);
    // Names follow the catalog's rules.
    assert_eq!(t.run(&h, &["agent", "token", "create", "--name", "Edge 3"]).await.code, 7);

    snapshot("agents", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

// ---- Secrets (metadata) -----------------------------------------------------------

/// Enrolls an Agent called `name` as the owner would (a registration token
/// from the CLI, then the store, like the enroll route).
async fn enrolled_agent(api: &TestApi, h: &Heimdall, name: &str) -> Agent {
    let registration = json_of(h, &["agent", "token", "create", "--name", name]).await;
    enroll(api, registration["token"].as_str().expect("token")).await.expect("enroll")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_metadata_and_the_agents_that_hold_an_environment() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let mut t = Transcript::default();

    for args in [
        &["domain", "create", "payments"][..],
        &["system", "create", "checkout", "--domain", "payments"],
        &["component", "create", "api", "--system", "checkout"],
        &["component", "create", "worker", "--system", "checkout"],
        &["environment", "create", "prod"],
    ] {
        let run = h.run(args).await;
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
    }
    let edge_1 = enrolled_agent(&api, &h, "edge-1").await;

    let create = [
        "secret",
        "create",
        "db-password",
        "--type",
        "password",
        "--description",
        "The primary database",
        "--tag",
        "team=payments",
        "--tag",
        "tier=critical",
        "--component",
        "api",
    ];
    let created = t.run(&h, &create).await;
    assert_eq!(created.code, 0, "{created:?}");
    assert!(created.stdout.starts_with("✓ Secret created: db-password ("), "{}", created.stdout);
    let stripe = t.run(&h, &["secret", "create", "stripe-key", "--output", "json"]).await;
    let stripe: serde_json::Value = serde_json::from_str(&stripe.stdout).expect("JSON");
    assert_eq!(stripe["name"], "stripe-key");
    let listed = t.run(&h, &["secret", "list"]).await;
    assert_eq!(
        cells(&listed.stdout)[1][..4],
        ["db-password", "password", "team=payments,tier=critical", "api"],
        "{}",
        listed.stdout
    );
    let shown = t.run(&h, &["secret", "show", "db-password"]).await;
    assert!(shown.stdout.ends_with("\nno versions yet\n"), "{}", shown.stdout);
    let update = [
        "secret",
        "update",
        "db-password",
        "--description",
        "Moved to the new cluster",
        "--tag",
        "team=billing",
        "--component",
        "api",
        "--component",
        "worker",
    ];
    assert_eq!(t.run(&h, &update).await.code, 0);
    let update = ["secret", "update", "db-password", "--type", "database-password", "--clear-tags"];
    assert_eq!(t.run(&h, &update).await.code, 0);
    t.run(&h, &["secret", "show", "db-password"]).await;
    let detail = t.run(&h, &["secret", "show", "db-password", "--output", "json"]).await;
    let detail: serde_json::Value = serde_json::from_str(&detail.stdout).expect("JSON");
    assert_eq!(detail["secret"]["type"], "database-password");
    assert_eq!(detail["secret"]["tags"], json!({}));
    assert_eq!(detail["secret"]["components"].as_array().map(Vec::len), Some(2));
    assert_eq!(detail["versions"], json!([]));
    t.run(&h, &["secret", "list", "--output", "json"]).await;

    // The owner decides which Agents hold an environment's values.
    t.run(&h, &["environment", "agents", "prod"]).await;
    let assigned = t.run(&h, &["environment", "assign-agent", "prod", "edge-1"]).await;
    assert_eq!(assigned.code, 0, "{assigned:?}");
    assert!(assigned.stdout.contains(&edge_1.id.to_string()), "{}", assigned.stdout);
    let agents = t.run(&h, &["environment", "agents", "prod"]).await;
    assert_eq!(cells(&agents.stdout)[1][..2], [edge_1.id.to_string().as_str(), "owner@example.com"]);
    t.run(&h, &["environment", "agents", "prod", "--output", "json"]).await;
    assert_eq!(t.run(&h, &["environment", "assign-agent", "prod", "edge-1"]).await.code, 6);
    assert_eq!(t.run(&h, &["environment", "assign-agent", "prod", "edge-9"]).await.code, 5);

    // Who may: members read secrets but do not create or change them;
    // only the owner assigns Agents.
    let ana = json_of(&h, &["member", "add", "ana@example.com", "--role", "admin"]).await;
    let ana = Heimdall::with_env(&api, ana["token"].as_str().expect("token"), tmp.path());
    let bob = json_of(&h, &["member", "add", "bob@example.com", "--role", "member"]).await;
    let bob_token = bob["token"].as_str().expect("token").to_owned();
    let bob_dir = tmp.path().join("bob");
    let bob = Heimdall::with_env(&api, &bob_token, &bob_dir);
    assert_eq!(t.run(&bob, &["secret", "list"]).await.code, 0);
    assert_eq!(t.run(&bob, &["secret", "create", "mine"]).await.code, 4);
    assert_eq!(t.run(&bob, &["secret", "update", "db-password", "--type", "x"]).await.code, 4);
    assert_eq!(t.run(&ana, &["secret", "update", "stripe-key", "--tag", "team=billing"]).await.code, 0);
    assert_eq!(t.run(&ana, &["environment", "assign-agent", "prod", "edge-1"]).await.code, 4);
    assert_eq!(t.run(&bob, &["environment", "assign-agent", "prod", "edge-1"]).await.code, 4);

    // A personal secret: only its creator sees it, and it is bound to the
    // key of her client certificate, so it needs one (`heimdall login`).
    let no_cert = bob.run(&["secret", "create", "bob-notes", "--personal"]).await;
    assert_eq!(no_cert.code, 3, "{no_cert:?}");
    assert!(no_cert.stderr.contains("heimdall login"), "{}", no_cert.stderr);
    assert_eq!(bob.run_with_stdin(&["login"], Some(&bob_token)).await.code, 0);
    assert_eq!(t.run(&bob, &["secret", "create", "bob-notes", "--personal"]).await.code, 0);
    let personal = t.run(&bob, &["secret", "show", "bob-notes"]).await;
    assert!(personal.stdout.contains("yes, only bob@example.com"), "{}", personal.stdout);
    assert_eq!(t.run(&h, &["secret", "show", "bob-notes"]).await.code, 5);
    let listed = h.run(&["secret", "list"]).await;
    assert!(!listed.stdout.contains("bob-notes"), "{}", listed.stdout);

    // Refusals: a name taken, a tag that is not KEY=VALUE (not echoed), an
    // update with nothing to change, a value where the API takes none.
    assert_eq!(t.run(&h, &["secret", "create", "db-password"]).await.code, 6);
    let bad_tag = t.run(&h, &["secret", "create", "x", "--tag", "team=a", "--tag", "hunter2-s3cr3t"]).await;
    assert_eq!(bad_tag.code, 2, "{bad_tag:?}");
    assert_eq!(t.run(&h, &["secret", "update", "db-password"]).await.code, 2);
    let smuggled = t.run(&h, &["secret", "create", "leak", "--tag", "value=hunter2-s3cr3t"]).await;
    assert_eq!(smuggled.code, 7, "{smuggled:?}");
    assert!(smuggled.stderr.contains("VALUE_NOT_ACCEPTED"), "{smuggled:?}");
    assert_eq!(t.run(&h, &["secret", "show", "leak"]).await.code, 5, "nothing was stored");
    let printed: Vec<&str> = t.0.lines().filter(|l| !l.starts_with("$ heimdall")).collect();
    assert!(!printed.iter().any(|l| l.contains("hunter2")), "a refused value was echoed:\n{}", t.0);
    assert!(!t.0.contains(&api.owner_token), "a token leaked into output");

    snapshot("secrets", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

// ---- Secrets: the access log ---------------------------------------------------------

use heimdall_core::ports::AccessStore;
use heimdall_core::wire::AccessRecord;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_access_log_in_a_table_and_in_json() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let mut t = Transcript::default();
    for args in [&["environment", "create", "prod"][..], &["secret", "create", "db-password"]] {
        let run = h.run(args).await;
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
    }
    let edge_1 = enrolled_agent(&api, &h, "edge-1").await;
    let empty = t.run(&h, &["secret", "access-log", "db-password"]).await;
    assert_eq!(empty.code, 0, "{empty:?}");
    assert_eq!(empty.stdout, "ACCESSED_AT  ACCESSOR  ENVIRONMENT  VERSION  SERVED_BY  FROM  READS\n");

    // What an Agent's sync stores, straight through the store.
    let at =
        |s: &str| OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).expect("time");
    let record = |seq: i64, accessor: &str, when: &str, version: i64, from: &str| AccessRecord {
        seq,
        accessor: accessor.into(),
        at: at(when),
        secret: "db-password".into(),
        environment: "prod".into(),
        version,
        from: from.into(),
    };
    let records = [
        record(1, "ana@example.com", "2026-03-01T10:00:00.100Z", 2, "10.0.0.7"),
        record(2, "ana@example.com", "2026-03-01T10:00:00.900Z", 2, "10.0.0.7"),
        record(3, "bob@example.com", "2026-03-01T10:00:05Z", 1, "10.0.0.8"),
    ];
    let outcome = api
        .store
        .record_access(edge_1.org_id, &edge_1, "e1", &records, &[], OffsetDateTime::now_utc())
        .await
        .expect("record access");
    assert_eq!((outcome.stored, outcome.duplicates), (3, 0));

    let table = t.run(&h, &["secret", "access-log", "db-password"]).await;
    assert_eq!(table.code, 0, "{table:?}");
    let rows = cells(&table.stdout);
    assert_eq!(rows[0], ["ACCESSED_AT", "ACCESSOR", "ENVIRONMENT", "VERSION", "SERVED_BY", "FROM", "READS"]);
    assert_eq!(rows[1][1..], ["bob@example.com", "prod", "1", "edge-1", "10.0.0.8", "1"]);
    assert_eq!(rows[2][1..], ["ana@example.com", "prod", "2", "edge-1", "10.0.0.7", "2"]);
    let filtered = t.run(&h, &["secret", "access-log", "db-password", "--environment", "prod"]).await;
    assert_eq!(filtered.stdout, table.stdout);
    let json = t.run(&h, &["secret", "access-log", "db-password", "--output", "json"]).await;
    let json: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(json[1]["reads"], 2);
    assert_eq!(json[1]["accessed_at"], "2026-03-01T10:00:00Z");

    // A member may not read the trail.
    let bob = json_of(&h, &["member", "add", "bob@example.com", "--role", "member"]).await;
    let bob_token = bob["token"].as_str().expect("token").to_owned();
    let bob_dir = tmp.path().join("bob");
    let bob = Heimdall::with_env(&api, &bob_token, &bob_dir);
    assert_eq!(t.run(&bob, &["secret", "access-log", "db-password"]).await.code, 4);

    snapshot("secret_access_log", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

// ---- Secrets: values ------------------------------------------------------------------

/// Refusals that must happen before any version exists, and deactivation.
/// No Agent runs here (the end-to-end tour writes and reads through the dev
/// Agent): a value that cannot be stored is refused without a version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_set_refuses_bad_values_before_any_version_and_deactivates() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let config_dir = tmp.path().join("config");
    let h = Heimdall { url: None, token: None, config_dir: config_dir.clone() };
    let login = h.run_with_stdin(&["--api-url", api.url.as_str(), "login"], Some(&api.owner_token)).await;
    assert_eq!(login.code, 0, "{login:?}");
    for args in [&["environment", "create", "dev"][..], &["secret", "create", "db-password"]] {
        let run = h.run(args).await;
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
    }
    let versions = |h: &Heimdall| {
        let h = Heimdall { url: h.url.clone(), token: h.token.clone(), config_dir: h.config_dir.clone() };
        async move { json_of(&h, &["secret", "show", "db-password"]).await["versions"].clone() }
    };
    let mut t = Transcript::default();
    let set = ["secret", "set", "db-password", "--environment", "dev"];
    let set_with =
        |extra: &[&str]| -> Vec<String> { set.iter().chain(extra).map(|s| (*s).to_owned()).collect() };

    // Empty, not UTF-8, too big: refused here, no version asked for.
    let run = h.run_with_stdin(&set, Some("")).await;
    t.record(&["secret", "set", "db-password", "--environment", "dev", "<", "/dev/null"], &run);
    assert_eq!(run.code, 7, "{run:?}");
    let binary = tmp.path().join("binary.bin");
    std::fs::write(&binary, b"hunter2\xff\xfe").expect("write");
    let args = set_with(&["--from-file", binary.to_str().expect("utf-8")]);
    let run = t.run(&h, &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(run.code, 7, "{run:?}");
    let big = tmp.path().join("big.txt");
    std::fs::write(&big, vec![b'a'; 1024 * 1024 + 1]).expect("write");
    let args = set_with(&["--from-file", big.to_str().expect("utf-8")]);
    let run = t.run(&h, &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(run.code, 7, "{run:?}");
    let args = set_with(&["--from-file", tmp.path().join("missing.txt").to_str().expect("utf-8")]);
    let run = t.run(&h, &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(versions(&h).await, json!([]), "no version for a refused value");

    // No Agent holds dev: NO_AGENT from the API, and no version either.
    let run = h.run_with_stdin(&set, Some("s3cret-value")).await;
    t.record(&["secret", "set", "db-password", "--environment", "dev", "<", "value"], &run);
    assert_eq!(run.code, 6, "{run:?}");
    assert!(run.stderr.contains("NO_AGENT"), "{run:?}");
    assert_eq!(versions(&h).await, json!([]), "no version without an Agent");
    let run = t.run(&h, &["secret", "get", "db-password", "--environment", "dev"]).await;
    assert_eq!(run.code, 6, "{run:?}");

    // An Agent holds dev but has never synced: no URL to send to, so no version.
    enrolled_agent(&api, &h, "edge-1").await;
    assert_eq!(h.run(&["environment", "assign-agent", "dev", "edge-1"]).await.code, 0);
    let run = h.run_with_stdin(&set, Some("s3cret-value")).await;
    t.record(&["secret", "set", "db-password", "--environment", "dev", "<", "value"], &run);
    assert_eq!(run.code, 8, "{run:?}");
    assert!(run.stderr.contains("agent edge-1 has not reported its local API URL yet; has it synced?"));
    assert_eq!(versions(&h).await, json!([]));
    let run = t.run(&h, &["secret", "get", "db-password", "--environment", "dev"]).await;
    assert_eq!(run.code, 8, "{run:?}");

    // --agent-url, where nothing listens: the version exists, the value
    // went nowhere, and the command says so and fails.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("https://127.0.0.1:{}", closed.local_addr().expect("addr").port());
    drop(closed);
    let run = h
        .run_with_stdin(
            &set_with(&["--agent-url", &url]).iter().map(String::as_str).collect::<Vec<_>>(),
            Some("s3cret-value"),
        )
        .await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("db-password version 1 was stored on 0 of 1 Agents holding dev; not on edge-1:"),
        "{run:?}"
    );
    assert_eq!(run.stdout, "", "{run:?}");
    let json_run = h
        .run_with_stdin(
            &set_with(&["--agent-url", &url, "--output", "json"])
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            Some("s3cret-value"),
        )
        .await;
    assert_eq!(json_run.code, 1, "{json_run:?}");
    let stored: serde_json::Value = serde_json::from_str(&json_run.stdout).expect("JSON on stdout");
    assert_eq!(stored, json!({"secret": "db-password", "environment": "dev", "version": 2, "stored_on": []}));
    let get = h.run(&["secret", "get", "db-password", "--environment", "dev", "--agent-url", &url]).await;
    assert_eq!(get.code, 1, "a transport error: {get:?}");
    let get = t
        .run(
            &h,
            &["secret", "get", "db-password", "--environment", "dev", "--agent-url", "http://127.0.0.1:1"],
        )
        .await;
    assert_eq!(get.code, 2, "{get:?}");
    for run in [&run, &json_run] {
        assert!(!run.stdout.contains("s3cret") && !run.stderr.contains("s3cret"), "value echoed: {run:?}");
    }

    // Deactivation, by an admin or owner only.
    t.run(&h, &["secret", "deactivate", "db-password", "--environment", "dev", "--version", "1"]).await;
    t.run(
        &h,
        &[
            "secret",
            "deactivate",
            "db-password",
            "--environment",
            "dev",
            "--version",
            "2",
            "--output",
            "json",
        ],
    )
    .await;
    t.run(&h, &["secret", "deactivate", "db-password", "--environment", "dev", "--version", "9"]).await;
    let bob = json_of(&h, &["member", "add", "bob@example.com", "--role", "member"]).await;
    let bob_token = bob["token"].as_str().expect("token").to_owned();
    let bob_dir = tmp.path().join("bob");
    let bob = Heimdall::with_env(&api, &bob_token, &bob_dir);
    let run =
        t.run(&bob, &["secret", "deactivate", "db-password", "--environment", "dev", "--version", "1"]).await;
    assert_eq!(run.code, 4, "{run:?}");
    t.run(&h, &["secret", "show", "db-password"]).await;
    let versions = versions(&h).await;
    assert_eq!(versions.as_array().map(Vec::len), Some(2), "{versions}");
    assert!(versions.as_array().expect("list").iter().all(|v| v["deactivated_at"].is_string()), "{versions}");

    let printed: Vec<&str> = t.0.lines().filter(|l| !l.starts_with("$ heimdall")).collect();
    assert!(!printed.iter().any(|l| l.contains("hunter2") || l.contains("s3cret")), "echoed:\n{}", t.0);
    snapshot("secret_values", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

/// Against an API serving HTTPS with a certificate from its installation
/// CA: logging in trusts that CA only when told so (a file, or its
/// fingerprint), keeps it in the profile, and checks the server is the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_over_https_trusts_only_the_installation_ca_it_was_given() {
    let api = TestApi::https(heimdall_api::testing::TestDatabase::sqlite().await).await;
    assert!(api.url.starts_with("https://"));
    let fingerprint = heimdall_api::pki::Ca::load_or_create(&api.ca_dir).expect("the CA").fingerprint();
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall { url: None, token: None, config_dir: tmp.path().join("config") };
    fn with<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        [&["--api-url", url, "login"][..], extra].concat()
    }
    let login = |extra: &[&'static str]| with(api.url.as_str(), extra);
    // The system's roots do not know this CA.
    let run = h.run_with_stdin(&login(&[]), Some(&api.owner_token)).await;
    assert_ne!(run.code, 0, "{run:?}");
    // Another fingerprint: refused before the token is sent.
    let other = "ab".repeat(32);
    let run = h.run_with_stdin(&with(&api.url, &["--ca-sha256", &other]), Some(&api.owner_token)).await;
    assert_ne!(run.code, 0, "{run:?}");
    assert!(!tmp.path().join("config/config.toml").exists(), "nothing saved");
    // Its fingerprint: the CA is fetched, checked and kept with the profile.
    let run = h.run_with_stdin(&with(&api.url, &["--ca-sha256", &fingerprint]), Some(&api.owner_token)).await;
    assert_eq!(run.code, 0, "{run:?}");
    let text = std::fs::read_to_string(tmp.path().join("config/config.toml")).expect("config");
    assert!(text.contains("BEGIN CERTIFICATE"), "the CA is kept in the profile: {text}");
    let whoami = h.run(&["whoami"]).await;
    assert_eq!(whoami.code, 0, "{whoami:?}");
    // Or the CA file itself.
    let ca_file = api.ca_dir.join("ca.pem");
    let run = h
        .run_with_stdin(
            &with(&api.url, &["--profile", "file", "--ca-file", ca_file.to_str().expect("path")]),
            Some(&api.owner_token),
        )
        .await;
    assert_eq!(run.code, 0, "{run:?}");
}
