//! End to end: the README's two commands are trusted to set up; here the
//! built binaries are driven exactly as the README's tour says.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

use heimdall_e2e::{free_port, free_port_and, readme_tour, Dev};

#[test]
fn readme_tour_runs_against_heimdall_dev_and_survives_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let config = tmp.path().join("config");
    let port = free_port();

    let dev = Dev::start(&data, &config, port);
    assert!(dev.banner.contains(&format!("API running at https://127.0.0.1:{port}")), "{}", dev.banner);
    let console = format!(
        "✓ Console at https://127.0.0.1:{port}/console/ (`heimdall console` opens it signed in; or the token in {}",
        data.display()
    );
    assert!(dev.banner.contains(&console), "{}", dev.banner);
    assert!(
        dev.banner.contains(&format!("✓ Agent local API at https://127.0.0.1:{}", port + 2)),
        "{}",
        dev.banner
    );

    let tour = readme_tour();
    assert!(tour.len() >= 10, "the README tour is too short to mean anything: {tour:?}");
    for line in &tour {
        // What the banner tells a newcomer to try is this tour, line by line.
        assert!(dev.banner.contains(&format!("  {line}\n")), "the banner lacks {line:?}:\n{}", dev.banner);
        // No waiting: an Agent that meets a secret it has not heard of
        // syncs on the spot.
        let out = dev.sh(line);
        assert!(
            out.status.success(),
            "README tour line failed: {line}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // The tour's Resource really was applied by the dev Agent.
    let out = dev.sh("heimdall resource show recibos --output json");
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["resource"]["status"], "provisioned", "{shown}");
    assert_eq!(shown["resource"]["outputs"]["secret"], "<sensitive>");
    // ... and moved to version 2 of its schema by the tour's upgrade.
    let versions: Vec<&serde_json::Value> =
        shown["revisions"].as_array().unwrap().iter().map(|r| &r["schema_version"]).collect();
    assert_eq!(versions, [1, 2], "{shown}");
    assert!(data.join("state").read_dir().unwrap().next().is_some(), "dev state lives under the data dir");

    // The tour's secret: stored by the dev Agent, read back exactly (no
    // newline: stdout is not a terminal), the read recorded and reported.
    assert!(tour.iter().any(|l| l.starts_with("printf ") && l.contains("heimdall secret set")), "{tour:?}");
    let got = dev.sh("heimdall secret get db-password --environment dev");
    assert!(got.status.success(), "{}", String::from_utf8_lossy(&got.stderr));
    assert_eq!(got.stdout, b"s3cret-value");
    let values = std::fs::read(data.join("agent-values.db")).expect("the dev Agent's value store");
    assert!(!values.windows(12).any(|w| w == b"s3cret-value"), "the store holds ciphertext only");
    let mode = |path: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).expect("exists").permissions().mode() & 0o777
    };
    assert_eq!(mode(&data.join("master.key")), 0o600);
    assert_eq!(mode(&config.join("profiles/dev/client.key")), 0o600);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let out = dev.sh("heimdall secret access-log db-password --output json");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let log: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let reads = log.as_array().unwrap().iter().filter(|e| e["accessor"] == "dev@localhost");
        if reads.map(|e| e["reads"].as_i64().unwrap_or(0)).sum::<i64>() >= 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the reads never reached the access log: {log}");
        std::thread::sleep(std::time::Duration::from_millis(250));
    }

    // The account's credential was read by the dev Agent for the job, and recorded.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let out = dev.sh("heimdall secret access-log aws-dev --output json");
        let log: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if log.as_array().is_some_and(|l| l.iter().any(|e| e["accessor"] == "agent dev for dev@localhost")) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the Agent's read of aws-dev never showed: {log}");
        std::thread::sleep(std::time::Duration::from_millis(250));
    }

    // The README's schema refusal, verbatim.
    let bad = dev.sh(r#"heimdall resource create --component receipts --schema bucket --environment dev --name bad --input '{"bucket":"NO","colour":"x"}'"#);
    assert_eq!(bad.status.code(), Some(7));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("SCHEMA_VIOLATION")
            && stderr.contains("/bucket (pattern)")
            && stderr.contains("/colour (additionalProperties)"),
        "{stderr}"
    );

    // The README's error example, verbatim: code on stderr, exit 5.
    let missing = dev.sh("heimdall domain show billing");
    assert_eq!(missing.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("error: NOT_FOUND:"));

    let status = dev.stop();
    assert!(status.success(), "heimdall dev exited with {status}");

    // Restarted on the same data: nothing bootstrapped twice, data kept,
    // and the banner says where to carry on (the tour's `create` lines
    // would now be refused), every line of which works.
    let dev = Dev::start(&data, &config, port);
    assert!(!dev.banner.contains("heimdall domain create"), "{}", dev.banner);
    let (_, hints) = dev.banner.split_once("Carry on where you left off").expect("carry-on hints");
    let hints: Vec<&str> = hints.lines().filter_map(|l| l.strip_prefix("  ")).collect();
    assert!(hints.len() >= 3, "{hints:?}");
    for line in hints {
        let out = dev.sh(line);
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = dev.sh("heimdall domain list --output json");
    assert!(out.status.success());
    let domains: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(domains.as_array().unwrap().len(), 1);
    assert_eq!(domains[0]["name"], "payments");
    let out = dev.sh("heimdall event list --action organization. --output json");
    let events: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(events.as_array().unwrap().len(), 1, "bootstrapped exactly once");
    assert!(dev.stop().success());
}

/// Approval bound to the plan, from the CLI, with the dev Agent's real
/// Terraform and local state: the plan job keeps the plan file next to the
/// state, `resource plan` shows it, an approval naming another plan is
/// refused, and approving the plan read applies exactly it.
#[test]
fn an_approver_reads_the_plan_and_approves_exactly_it_with_the_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = (tmp.path().join("data"), tmp.path().join("config"));
    let dev = Dev::start(&data, &config, free_port());
    for line in readme_tour().iter().take_while(|l| !l.starts_with("heimdall resource create")) {
        let out = dev.sh(line);
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let ok = |line: &str| {
        let out = dev.sh(line);
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    ok(
        r#"heimdall schema create --type guarded --input-schema examples/schemas/bucket.json --module-source "$PWD/tests/fixtures/modules/bucket" --module-version 1.0.0 --requires-approval"#,
    );
    let bo: serde_json::Value =
        serde_json::from_slice(&ok("heimdall member add bo@example.com --role admin --output json")).unwrap();
    let as_bo = format!("HEIMDALL_TOKEN={} ", bo["token"].as_str().unwrap());
    ok(&format!(
        r#"{as_bo}heimdall resource create --component receipts --schema guarded --environment dev --name vault --input '{{"bucket":"checkout-vault"}}'"#
    ));

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    let plan = loop {
        let shown: serde_json::Value =
            serde_json::from_slice(&ok("heimdall resource plan vault --output json")).unwrap();
        if let Some(sha) = shown["plan"]["sha256"].as_str() {
            assert_eq!(shown["plan"]["summary"]["add"], 1, "{shown}");
            break sha.to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "no plan: {shown}");
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    let text = String::from_utf8(ok("heimdall resource plan vault")).unwrap();
    let approve_line = format!("heimdall resource approve vault --revision 1 --plan {}", &plan[..12]);
    assert!(text.contains(&approve_line), "{text}");
    let resource_id = {
        let shown: serde_json::Value =
            serde_json::from_slice(&ok("heimdall resource show vault --output json")).unwrap();
        assert_eq!(shown["resource"]["status"], "pending_approval", "{shown}");
        shown["resource"]["id"].as_str().unwrap().to_owned()
    };
    let kept = data.join("state").join(format!("{resource_id}.tfplan"));
    assert!(kept.is_file(), "the plan file is kept next to the state");
    assert!(!data.join("state").join(format!("{resource_id}.tfstate")).exists(), "nothing applied yet");

    let wrong = dev.sh(&format!("heimdall resource approve vault --revision 1 --plan {}", "0".repeat(12)));
    assert_eq!(wrong.status.code(), Some(6), "{}", String::from_utf8_lossy(&wrong.stderr));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("STALE_PLAN"));
    ok(&format!("{approve_line} --wait"));
    let shown: serde_json::Value =
        serde_json::from_slice(&ok("heimdall resource show vault --output json")).unwrap();
    assert_eq!(shown["resource"]["status"], "provisioned", "{shown}");
    assert!(data.join("state").join(format!("{resource_id}.tfstate")).is_file());
    assert!(dev.stop().success());
}

/// Letting go: a provisioned Resource is abandoned with no destroy (its
/// state and the object in it stay, the Agent runs nothing), and a new
/// Resource of the same name imports the same object from that state.
#[test]
fn an_abandoned_resource_keeps_its_state_and_is_imported_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = (tmp.path().join("data"), tmp.path().join("config"));
    let dev = Dev::start(&data, &config, free_port());
    for line in readme_tour().iter().take_while(|l| !l.starts_with("heimdall job list")) {
        let out = dev.sh(line);
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let json = |line: &str| -> serde_json::Value {
        let out = dev.sh(line);
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let before = json("heimdall resource show recibos --output json");
    assert_eq!(before["resource"]["status"], "provisioned", "{before}");
    let old_id = before["resource"]["id"].as_str().unwrap().to_owned();
    let state_file = data.join("state").join(format!("{old_id}.tfstate"));
    let object_id = |state: &std::path::Path| -> String {
        let state: serde_json::Value = serde_json::from_slice(&std::fs::read(state).unwrap()).unwrap();
        state["resources"][0]["instances"][0]["attributes"]["id"].as_str().unwrap().to_owned()
    };
    let object = object_id(&state_file);

    let abandoned = json("heimdall resource abandon recibos --output json");
    assert_eq!(abandoned["status"], "abandoned", "{abandoned}");
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(object_id(&state_file), object, "the state and the object in it stay");
    let jobs = json(&format!("heimdall job list --resource {old_id} --output json"));
    let operations: Vec<&str> =
        jobs.as_array().unwrap().iter().map(|j| j["operation"].as_str().unwrap()).collect();
    assert_eq!(operations, ["apply"], "nothing was destroyed: {jobs}");

    let imported = json(&format!(
        r#"heimdall resource import --component receipts --schema bucket --environment dev --name recibos --input '{{"bucket":"checkout-recibos"}}' --import terraform_data.bucket={object} --wait --output json"#
    ));
    assert_eq!(imported["status"], "provisioned", "{imported}");
    let new_id = imported["id"].as_str().unwrap();
    assert_ne!(new_id, old_id);
    assert_eq!(object_id(&data.join("state").join(format!("{new_id}.tfstate"))), object, "the same object");
    assert_eq!(json("heimdall resource show recibos --output json")["resource"]["id"], new_id);
    assert!(dev.stop().success());
}

/// An embedding program writes and reads a value with the SDK alone: the
/// `value_roundtrip` example, built as the README's test command builds
/// every example, run against `heimdall dev` with a token of its own. The
/// CLI then reads what the program wrote, and the access log names the
/// program's person.
#[test]
fn an_sdk_program_writes_and_reads_a_value_with_no_cli_code() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = (tmp.path().join("data"), tmp.path().join("config"));
    let port = free_port();
    let dev = Dev::start(&data, &config, port);
    let ok = |line: &str| {
        let out = dev.sh(line);
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    ok("heimdall environment create dev");
    ok("heimdall environment assign-agent dev dev");
    let token: serde_json::Value =
        serde_json::from_slice(&ok("heimdall token create --name embedded --output json")).unwrap();
    let example = dev.bin_dir.join("examples").join("value_roundtrip");
    assert!(example.exists(), "{} is missing: build the examples (scripts/test.sh does)", example.display());

    let run = |secret: &str, environment: &str, value: &[u8]| {
        use std::io::Write;
        let mut child = std::process::Command::new(&example)
            .args([secret, environment])
            .env("HEIMDALL_API_URL", format!("https://127.0.0.1:{port}"))
            .env("HEIMDALL_TOKEN", token["token"].as_str().unwrap())
            .env("HEIMDALL_CA_FILE", config.join("profiles/dev/ca.pem"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(value).unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run("embedded-key", "dev", b"from-the-sdk");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("created secret embedded-key"), "{stdout}");
    assert!(stdout.contains("stored version 1 on dev"), "{stdout}");
    assert!(stdout.contains("read back version 1 from dev: the same value"), "{stdout}");
    assert!(!stdout.contains("from-the-sdk"), "the value is never printed: {stdout}");

    // A second run: a new version, the secret already there.
    let out = run("embedded-key", "dev", b"second");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("secret embedded-key exists") && stdout.contains("stored version 2 on dev"),
        "{stdout}"
    );

    // What the program wrote is what a person reads.
    assert_eq!(ok("heimdall secret get embedded-key --environment dev"), b"second");
    assert_eq!(ok("heimdall secret get embedded-key --environment dev --version 1"), b"from-the-sdk");
    // An environment no Agent holds: the SDK's error carries the API's code,
    // and no version was numbered for it.
    ok("heimdall environment create prod");
    let out = run("embedded-key", "prod", b"x");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error: NO_AGENT:"), "{stderr}");
    assert!(dev.stop().success());
}

/// Plain HTTP sent to any of `heimdall dev`'s HTTPS ports (the API, the
/// Agent channel, the Agent's local API) is answered with a readable 400
/// naming the `https://` address, and the CLI pointed at `http://` says
/// what to change. `/` leads to the Console.
#[test]
fn plain_http_to_an_https_port_is_told_the_https_address() {
    use std::io::{Read, Write};
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = (tmp.path().join("data"), tmp.path().join("config"));
    let port = free_port();
    let dev = Dev::start(&data, &config, port);
    for p in [port, port + 1, port + 2] {
        let mut tcp = std::net::TcpStream::connect(("127.0.0.1", p)).unwrap();
        tcp.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        tcp.write_all(b"GET /v1/health HTTP/1.1\r\nHost: evil.example\r\nUser-Agent: curl/8\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 400 Bad Request\r\n"), "port {p}: {answer}");
        let body: serde_json::Value =
            serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).expect("the one error body");
        assert_eq!(body["error"]["code"], "BAD_REQUEST", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("use https://127.0.0.1:{p}/")), "port {p}: {message}");
        assert!(!answer.contains("evil.example"), "nothing the client sent is echoed: {answer}");
    }
    // The same ports still speak TLS to those who do.
    let ok = dev.sh("heimdall whoami");
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));

    let wrong = dev.sh(&format!("heimdall --api-url http://127.0.0.1:{port} whoami"));
    assert!(!wrong.status.success());
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(stderr.contains(&format!("use https://127.0.0.1:{port}/")), "{stderr}");
    assert!(!stderr.contains("invalid HTTP version"), "{stderr}");

    // The curl line of docs/api-and-sdk.md, as written (it runs from the repository
    // root with the default data directory; here the test's own).
    let curl = dev.sh(&format!(
        "curl -s --cacert {} https://127.0.0.1:{port}/v1/openapi.json",
        data.join("ca/ca.pem").display()
    ));
    assert!(curl.status.success(), "{}", String::from_utf8_lossy(&curl.stderr));
    let document: serde_json::Value = serde_json::from_slice(&curl.stdout).unwrap();
    assert!(document["paths"]["/v1/resources/{key}"].is_object());
    let root = dev.sh(&format!(
        "curl -s -o /dev/null -w '%{{http_code}} %{{redirect_url}}' --cacert {} https://127.0.0.1:{port}/",
        data.join("ca/ca.pem").display()
    ));
    assert_eq!(String::from_utf8_lossy(&root.stdout), format!("308 https://127.0.0.1:{port}/console/"));
    assert!(dev.stop().success());
}

/// `heimdall dev --metrics`: the API's and the Agent's Prometheus
/// endpoints, on loopback, named in the banner, without editing a file.
#[test]
fn dev_metrics_serves_the_api_and_the_agent_scrapes() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = (tmp.path().join("data"), tmp.path().join("config"));
    let port = free_port_and(4);
    let dev = Dev::start_with(&data, &config, port, &["--metrics"]);
    let (api, agent) =
        (format!("http://127.0.0.1:{}/metrics", port + 3), format!("http://127.0.0.1:{}/metrics", port + 4));
    let line = format!("✓ Metrics (Prometheus): the API's at {api}, the Agent's at {agent}");
    assert!(dev.banner.contains(&line), "{}", dev.banner);
    let scrape = |url: &str| {
        let out = dev.sh(&format!("curl -sf {url}"));
        assert!(out.status.success(), "{url}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let api_text = scrape(&api);
    assert!(api_text.contains("heimdall_jobs{operation=\"apply\",status=\"queued\"} 0"), "{api_text}");
    let agent_text = scrape(&agent);
    assert!(agent_text.contains("# TYPE heimdall_agent_"), "the Agent's scrape: {agent_text}");
    assert!(dev.stop().success());

    // Without --metrics next time, the Agent's setting goes too.
    let dev = Dev::start(&data, &config, port);
    assert!(!dev.banner.contains("Metrics"), "{}", dev.banner);
    let gone = dev.sh(&format!("curl -sf {agent}"));
    assert!(!gone.status.success(), "the Agent's metrics are off again");
    assert!(dev.stop().success());
}
