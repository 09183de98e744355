//! Errors: the code, the message, the exit status.

use heimdall_api::testing::TestApi;
use std::time::Duration;

use crate::support::{cedar_file, Heimdall, Transcript};

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
    t.run(&owner, &["job", "show", "not-a-uuid"]).await;
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
    crate::snapshot("errors", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

/// Shell completion and the manual page come from the definition the CLI
/// parses with: every command and flag is in them, nothing needs an API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_and_the_manual_page_cover_every_command() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = crate::support::Heimdall { url: None, token: None, config_dir: tmp.path().to_owned() };
    let bash = h.run(&["completion", "bash"]).await;
    assert_eq!(bash.code, 0, "{bash:?}");
    assert!(
        bash.stdout.contains("_heimdall()") && bash.stdout.contains("complete -F _heimdall"),
        "{}",
        &bash.stdout[..200]
    );
    for word in ["secret", "notification", "unassign-agent", "--confirm-store-destroyed", "--at-risk"] {
        assert!(bash.stdout.contains(word), "{word} is not completed");
    }
    let zsh = h.run(&["completion", "zsh"]).await;
    assert!(zsh.stdout.starts_with("#compdef heimdall"), "{}", &zsh.stdout[..100]);
    for shell in ["fish", "powershell", "elvish"] {
        let out = h.run(&["completion", shell]).await;
        assert!(out.code == 0 && out.stdout.contains("heimdall"), "{shell}: {out:?}");
    }
    let unknown = h.run(&["completion", "tcsh"]).await;
    assert_eq!(unknown.code, 2, "{unknown:?}");
    let man = h.run(&["man"]).await;
    assert!(
        man.stdout.contains(".TH heimdall") && man.stdout.contains("Heimdall: infrastructure and secrets"),
        "{}",
        &man.stdout[..300]
    );
    // One page per command, each with its own flags; snapshots catch a
    // flag or help text that changed without anyone meaning it to.
    let pages = tempfile::tempdir().expect("temp dir");
    let dir = pages.path().to_str().expect("utf-8");
    let written = h.run(&["man", "--out-dir", dir]).await;
    assert_eq!(written.code, 0, "{written:?}");
    let names: Vec<String> = written
        .stdout
        .lines()
        .map(|l| l.trim_start_matches(dir).trim_start_matches('/').to_owned())
        .collect();
    assert!(names.len() > 100, "{names:?}");
    crate::snapshot("man_pages", &names.join("\n"), &[]);
    for page in ["heimdall-secret-access-log.1", "heimdall-database-user-create.1"] {
        let text = std::fs::read_to_string(pages.path().join(page)).expect("page");
        crate::snapshot(page.trim_end_matches(".1"), &text, &[]);
    }
}

/// `--version`: this client's, and the server's when its API answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_names_the_client_and_the_server_it_reaches() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let client = env!("CARGO_PKG_VERSION");
    let alone = crate::support::Heimdall { url: None, token: None, config_dir: tmp.path().to_owned() };
    let out = alone.run(&["--version"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    let mut lines = out.stdout.lines();
    assert_eq!(lines.next(), Some(format!("heimdall {client}").as_str()));
    assert!(lines.next().is_some_and(|l| l.starts_with("server: not reached (")), "{out:?}");

    let api = heimdall_api::testing::TestApi::sqlite().await;
    let h = crate::support::Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let out = h.run(&["--version", "--output", "json"]).await;
    let versions: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(
        versions,
        serde_json::json!({ "client": client, "server": { "version": client, "unreachable": null } })
    );
    // No command at all: the help, as a usage error.
    let bare = alone.run(&[]).await;
    assert!(bare.code == 2 && bare.stderr.contains("Usage: heimdall"), "{bare:?}");
}

/// An API that accepts connections and never answers (stopped with
/// SIGSTOP, overloaded, a black-holed port: the kernel still completes the
/// TCP handshake) counts as unreachable within the connect timeout: 5 s by
/// default, `--connect-timeout` or `HEIMDALL_CONNECT_TIMEOUT` to change it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_api_is_unreachable_within_the_connect_timeout() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // Listening, never accepting: connections wait in the backlog with no TLS answer.
    let hung = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("https://{}", hung.local_addr().expect("addr"));
    let h = Heimdall { url: Some(url.clone()), token: Some("hmd_x".into()), config_dir: tmp.path().into() };

    let timed = |args: &'static [&'static str], env: Option<&'static str>| {
        let mut command = h.command(args);
        if let Some(value) = env {
            command.env("HEIMDALL_CONNECT_TIMEOUT", value);
        }
        async move {
            let began = std::time::Instant::now();
            let output = tokio::time::timeout(Duration::from_secs(60), command.output()).await;
            let output = output.expect("heimdall gave up by itself").expect("ran");
            (began.elapsed(), output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
        }
    };
    let (took, code, stderr) = timed(&["whoami"], None).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("timed out") && stderr.contains(&url), "{stderr}");
    assert!((Duration::from_secs(4)..Duration::from_secs(9)).contains(&took), "default 5 s: {took:?}");

    let (took, code, stderr) = timed(&["--connect-timeout", "1s", "whoami"], Some("30s")).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(took < Duration::from_secs(4), "the flag wins over the variable: {took:?}");
    let (took, code, _) = timed(&["whoami"], Some("1s")).await;
    assert!(code == Some(1) && took < Duration::from_secs(4), "the variable: {took:?}");
    let (_, code, stderr) = timed(&["whoami"], Some("soon")).await;
    assert_eq!(code, Some(2), "a bad variable is a usage error: {stderr}");
    assert!(stderr.contains("HEIMDALL_CONNECT_TIMEOUT"), "{stderr}");
    drop(hung);
}
