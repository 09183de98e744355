//! End to end: the README's two commands are trusted to set up; here the
//! built binaries are driven exactly as the README's tour says.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

use heimdall_e2e::{free_port, readme_tour, Dev};

#[test]
fn readme_tour_runs_against_heimdall_dev_and_survives_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let config = tmp.path().join("config");
    let port = free_port();

    let dev = Dev::start(&data, &config, port);
    assert!(dev.banner.contains(&format!("API running at https://127.0.0.1:{port}")), "{}", dev.banner);
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
        if log.as_array().is_some_and(|l| l.iter().any(|e| e["accessor"] == "agent dev")) {
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

    // Restarted on the same data: nothing bootstrapped twice, data kept.
    let dev = Dev::start(&data, &config, port);
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
