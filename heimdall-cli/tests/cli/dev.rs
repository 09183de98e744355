//! `heimdall dev`: the quickstart, end to end.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{cells, json_of, Heimdall, BIN};

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
    assert!(
        repo.join(".venv/bin/terraform").exists(),
        "{} is missing: run `bash scripts/install-test-tools.sh` first (scripts/test.sh does)",
        repo.join(".venv/bin/terraform").display()
    );
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let h = Heimdall { url: None, token: None, config_dir: tmp.path().join("config") };
    let port = free_ports();
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
        // The first start shows the tour; a restart, where to carry on
        // (the tour's `create` lines would be refused by then).
        if round == 0 {
            assert!(banner.contains("heimdall domain create payments"), "{banner}");
        } else {
            assert!(!banner.contains("heimdall domain create"), "{banner}");
            assert!(banner.contains("Carry on where you left off"), "{banner}");
        }

        // The dev profile is current: plain commands work.
        let who = h.run(&["whoami", "--output", "json"]).await;
        assert_eq!(who.code, 0, "{who:?}");
        assert!(who.stdout.contains("\"email\": \"dev@localhost\""), "{}", who.stdout);
        let token_file = data.join("owner.token");
        assert_eq!(std::fs::metadata(&token_file).expect("token file").permissions().mode() & 0o777, 0o600);

        // Enrolled the first time only, and connected both times.
        let expected =
            if round == 0 { "✓ Agent \"dev\" enrolled and running" } else { "✓ Agent \"dev\" running" };
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
        if round == 0 {
            assert!(banner.contains("printf 's3cret-value' | heimdall secret set db-password"), "{banner}");
        }
        assert!(banner.contains("✓ Client certificate for \"dev\" valid until "), "{banner}");
        let key = h.config_dir.join("profiles/dev/client.key");
        assert_eq!(std::fs::metadata(&key).expect("client.key").permissions().mode() & 0o777, 0o600);
        assert_eq!(
            std::fs::metadata(data.join("master.key")).expect("master.key").permissions().mode() & 0o777,
            0o600
        );

        if round == 0 {
            let created = h.run(&["domain", "create", "payments"]).await;
            assert_eq!(created.code, 0, "{created:?}");
            // The port is taken now: a second `dev` says so.
            let busy = h.run(&dev_args).await;
            assert_eq!(busy.code, 1, "{busy:?}");
            assert!(busy.stderr.contains("already in use"), "{}", busy.stderr);
            // The banner's Resource example, with the repository's schema and offline module.
            assert!(banner.contains(r#"--module-source "$PWD/tests/fixtures/modules/bucket""#), "{banner}");
            let world: [&[&str]; 8] = [
                &["system", "create", "checkout", "--domain", "payments"],
                &["component", "create", "api", "--system", "checkout"],
                &["environment", "create", "dev"],
                &["environment", "assign-agent", "dev", "dev"],
                &["secret", "create", "aws-dev"],
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
                    "aws-dev",
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
                if args[..2] == ["secret", "create"] {
                    // The account's placeholder keys, held by the dev Agent.
                    let keys = r#"{"access_key_id":"dev","secret_access_key":"dev"}"#;
                    let set = ["secret", "set", "aws-dev", "--environment", "dev"];
                    let run = h.run_with_stdin(&set, Some(keys)).await;
                    assert_eq!(run.code, 0, "{run:?}");
                }
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
            let state: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&state).expect("state file under DATA/state"))
                    .expect("state is JSON");
            assert_eq!(state["outputs"]["bucket"]["value"], "acme-receipts", "{state}");

            // A value, written to the dev Agent and read back, byte for byte.
            let run = h.run(&["secret", "create", "db-password"]).await;
            assert_eq!(run.code, 0, "{run:?}");
            let set = h
                .run_with_stdin(&["secret", "set", "db-password", "--environment", "dev"], Some(DEV_VALUE))
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

            // `heimdall run`: heimdall.yaml names the secret, the program gets its
            // value as a variable and its exit status is the program's.
            let project = tmp.path().join("project");
            std::fs::create_dir_all(&project).expect("project dir");
            let yaml = "environment: dev\nsecrets:\n  DB_PASSWORD: db-password\n";
            std::fs::write(project.join("heimdall.yaml"), yaml).expect("heimdall.yaml");
            let script = r#"printf %s "$DB_PASSWORD"; exit 7"#;
            let mut run = h.command(&["run", "--", "sh", "-c", script]);
            let out = run.current_dir(&project).output().await.expect("heimdall run");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                (out.status.code(), out.stdout.as_slice()),
                (Some(7), DEV_VALUE.as_bytes()),
                "{stderr}"
            );
            // One secret the Agent cannot serve: nothing starts, and it says which.
            let yaml = "environment: dev\nsecrets:\n  - db-password\n  - never-created\n";
            std::fs::write(project.join("heimdall.yaml"), yaml).expect("heimdall.yaml");
            let mut run = h.command(&["run", "--", "touch", "started"]);
            let out = run.current_dir(&project).output().await.expect("heimdall run");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.code() != Some(0) && stderr.contains("never-created"), "{stderr}");
            assert!(!project.join("started").exists(), "the program was not started");

            // A program token instead of a person (servers, CI): no profile at
            // all, the token in the environment only, and not passed on.
            let made = std::process::Command::new(Path::new(BIN).with_file_name("heimdall-agent"))
                .args(["token", "create", "--config"])
                .arg(data.join("agent/agent.toml"))
                .args(["--name", "ci-job", "--environment", "dev", "--secret", "db-*", "--json"])
                .output()
                .expect("heimdall-agent token create");
            assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
            let made: serde_json::Value = serde_json::from_slice(&made.stdout).expect("token JSON");
            let nobody = Heimdall { url: None, token: None, config_dir: tmp.path().join("no-profile") };
            let yaml = format!(
                "environment: dev\nagent_url: https://127.0.0.1:{}\nsecrets:\n  DB_PASSWORD: db-password\n",
                port + 2
            );
            std::fs::write(project.join("heimdall.yaml"), yaml).expect("heimdall.yaml");
            let script = r#"printf %s "$DB_PASSWORD"; test -z "${HEIMDALL_AGENT_TOKEN+set}" && test -z "${HEIMDALL_TOKEN+set}""#;
            let mut run = nobody.command(&["run", "--", "sh", "-c", script]);
            run.current_dir(&project)
                .env("HEIMDALL_AGENT_TOKEN", made["token"].as_str().expect("token"))
                .env("HEIMDALL_TOKEN", "hd_an-api-token-the-program-must-not-get")
                .env("HEIMDALL_CA_FILE", data.join("agent/ca.pem"));
            let out = run.output().await.expect("heimdall run with a token");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                (out.status.code(), out.stdout.as_slice()),
                (Some(0), DEV_VALUE.as_bytes()),
                "{stderr}"
            );
            let mut run = nobody.command(&["run", "--", "true"]);
            run.current_dir(&project)
                .env("HEIMDALL_AGENT_TOKEN", "hdp_not-a-token")
                .env("HEIMDALL_CA_FILE", data.join("agent/ca.pem"));
            let out = run.output().await.expect("heimdall run with a bad token");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("not a program token") && !stderr.contains("hdp_not-a-token"),
                "{stderr}"
            );
            assert_ne!(out.status.code(), Some(0));

            // The API stopped (SIGSTOP: its port still accepts, nothing answers):
            // `secret get` gives up on it within the connect timeout and reads from
            // the Agent the API named last time, and says so.
            let api = api_pid(&data).to_string();
            let signal = |which: &str| std::process::Command::new("kill").args([which, &api]).status();
            assert!(signal("-STOP").expect("kill -STOP").success());
            let began = std::time::Instant::now();
            let get = ["--connect-timeout", "1s", "secret", "get", "db-password", "--environment", "dev"];
            let got = h.run(&get).await;
            let took = began.elapsed();
            assert!(signal("-CONT").expect("kill -CONT").success());
            assert_eq!((got.code, got.stdout.as_str()), (0, DEV_VALUE), "{got:?}");
            assert!(got.stderr.contains("warning: the API is unreachable"), "{}", got.stderr);
            assert!(took < Duration::from_secs(10), "{took:?}");
        } else {
            // Second round: no new bootstrap, same data.
            let listed = h.run(&["domain", "list", "--output", "json"]).await;
            assert!(listed.stdout.contains("\"payments\""), "{}", listed.stdout);
            // The restarted Agent runs the destroy: the state is left with no resources.
            let run = h.run(&["resource", "delete", "receipts", "--wait", "--timeout", "50s"]).await;
            assert_eq!(run.code, 0, "{run:?}");
            assert!(run.stdout.ends_with("✓ Resource receipts is deleted\n"), "{run:?}");
            let state = data.join("state").join(format!("{resource_id}.tfstate"));
            let state: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&state).expect("state file")).expect("JSON");
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
                let got =
                    h.run(&["secret", "get", "db-password", "--environment", "dev", "--version", "1"]).await;
                if got.code == 5 && got.stderr.contains("VERSION_DEACTIVATED") {
                    assert_eq!(got.stdout, "", "nothing served");
                    break;
                }
                assert!(tokio::time::Instant::now() < deadline, "still served after deactivation: {got:?}");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }

            // `run --watch`: a new version restarts the program with it, a
            // deactivated one stops it, and heimdall ends naming the secret.
            let set = ["secret", "set", "db-password", "--environment", "dev"];
            assert_eq!(h.run_with_stdin(&set, Some("second")).await.code, 0);
            let project = tmp.path().join("project");
            let yaml = "environment: dev\nsecrets:\n  DB_PASSWORD: db-password\n";
            std::fs::write(project.join("heimdall.yaml"), yaml).expect("heimdall.yaml");
            let seen = project.join("seen");
            let script = format!(r#"printf '%s|' "$DB_PASSWORD" >> '{}'; exec sleep 60"#, seen.display());
            let mut watcher = h.command(&["run", "--watch", "--", "sh", "-c", &script]);
            let watcher = watcher.current_dir(&project).spawn().expect("heimdall run --watch");
            let seen_now = || std::fs::read_to_string(&seen).unwrap_or_default();
            let until = |want: &'static str| {
                let seen_now = &seen_now;
                async move {
                    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
                    while seen_now() != want {
                        assert!(
                            tokio::time::Instant::now() < deadline,
                            "the program saw {:?}, not {want:?}",
                            seen_now()
                        );
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            };
            until("second|").await;
            let began = std::time::Instant::now();
            assert_eq!(h.run_with_stdin(&set, Some("third")).await.code, 0);
            until("second|third|").await;
            let restart = began.elapsed();
            assert!(restart < Duration::from_secs(5), "restarted {restart:?} after the new version");
            let deactivate =
                ["secret", "deactivate", "db-password", "--environment", "dev", "--version", "3"];
            assert_eq!(h.run(&deactivate).await.code, 0);
            let out = tokio::time::timeout(Duration::from_secs(40), watcher.wait_with_output())
                .await
                .expect("run --watch ends once the version is deactivated")
                .expect("output");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_ne!(out.status.code(), Some(0), "{stderr}");
            assert!(stderr.contains("db-password") && stderr.contains("stopping the program"), "{stderr}");
            assert_eq!(seen_now(), "second|third|", "not started again with a deactivated value");
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
        assert!(stderr.contains("Stopping the Agent"), "{stderr}");
        let log = std::fs::read_to_string(data.join("agent.log")).expect("agent.log");
        assert!(log.trim_end().ends_with("agent stopped"), "the Agent stopped on its own:\n{log}");
        let api_log = std::fs::read_to_string(data.join("api.log")).expect("api.log");
        assert!(!log.contains('\u{1b}') && !api_log.contains('\u{1b}'), "terminal colours in a log file");
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

/// The `heimdall-api serve` that `heimdall dev` runs on `data`.
fn api_pid(data: &Path) -> u32 {
    let database = data.join("heimdall.db").display().to_string();
    let procs = std::fs::read_dir("/proc").expect("/proc");
    procs
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let args: Vec<String> =
                cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            let is_api = args.first()?.ends_with("heimdall-api") && args.get(1).is_some_and(|a| a == "serve");
            (is_api && args.iter().any(|a| a.contains(&database))).then_some(pid)
        })
        .next()
        .expect("the dev API's process")
}

/// Three free ports in a row: the API's, the Agent channel's and the Agent's local API's.
/// A port with the next two free as well (API, Agent channel, local API).
pub(crate) fn free_ports() -> u16 {
    loop {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
        if port < u16::MAX - 1 && free(port + 1) && free(port + 2) {
            return port;
        }
    }
}

/// Without a Terraform the API runs alone, and the banner says why and
/// what to do; nothing of an Agent is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_without_terraform_runs_the_api_alone_and_says_how_to_get_one() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (data, h) =
        (tmp.path().join("data"), Heimdall { url: None, token: None, config_dir: tmp.path().join("config") });
    let (listen, missing) = (format!("127.0.0.1:{}", free_ports()), tmp.path().join("no/terraform"));
    let args = ["dev", "--data", data.to_str().expect("utf-8"), "--listen", &listen, "--output", "json"];
    let mut dev = h.command(&args);
    dev.arg("--terraform").arg(&missing).current_dir(tmp.path());
    let mut child = dev.spawn().expect("start heimdall dev");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut printed = String::new();
    let read = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("read") {
            printed.push_str(&line);
            if line == "}" {
                break;
            }
        }
    });
    read.await.expect("heimdall dev printed its JSON within 60 s");
    let started: serde_json::Value = serde_json::from_str(&printed).expect("one JSON object");
    let agent = &started["agent"];
    assert_eq!(agent["running"], false, "{started}");
    let reason = agent["reason"].as_str().expect("a reason");
    assert_eq!(reason, format!("--terraform {}: not an executable file", missing.display()));
    assert!(
        agent["fix"].as_str().is_some_and(|fix| fix.contains("bash scripts/install-test-tools.sh")),
        "{agent}"
    );
    assert!(!data.join("agent").exists(), "no half-made Agent is left");
    // The API alone still serves.
    let who = h.run(&["whoami", "--output", "json"]).await;
    assert_eq!(who.code, 0, "{who:?}");

    let pid = child.id().expect("pid").to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output()).await.expect("stops");
    let out = out.expect("output");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
