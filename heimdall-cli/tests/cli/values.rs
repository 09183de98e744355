//! Secrets: values (`secret set`, `get`, `deactivate`).

use heimdall_api::testing::TestApi;
use serde_json::json;

use crate::support::{enrolled_agent, json_of, Heimdall, Transcript};

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
    // An overlap that is not a period, or longer than 30 days.
    for keep in ["1y", "31d"] {
        let run = h
            .run_with_stdin(
                &set_with(&["--keep-previous", keep]).iter().map(String::as_str).collect::<Vec<_>>(),
                Some("s3cret-value"),
            )
            .await;
        t.record(
            &["secret", "set", "db-password", "--environment", "dev", "--keep-previous", keep, "<", "value"],
            &run,
        );
        assert_eq!(run.code, 7, "{run:?}");
    }
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
    assert_eq!(run.code, 8, "UNAVAILABLE: {run:?}");
    assert!(
        run.stderr.contains(
            "error: UNAVAILABLE: db-password version 1 was stored on 0 of 1 Agents holding dev; not on edge-1:"
        ),
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
    assert_eq!(json_run.code, 8, "{json_run:?}");
    let refused: serde_json::Value = serde_json::from_str(&json_run.stderr).expect("JSON on stderr");
    assert_eq!(refused["error"]["code"], "UNAVAILABLE", "the partial write names its code: {refused}");
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
    crate::snapshot("secret_values", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}
