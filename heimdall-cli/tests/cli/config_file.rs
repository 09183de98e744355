//! Configuration as code, as a platform team lives it: a file applied
//! twice changes nothing the second time (no write sent), a change to the
//! file plans exactly what changed, `--prune` deletes exactly what the
//! file no longer names, `export-config | apply -f -` is a no-op, and a
//! file that cannot be applied changes nothing.

use heimdall_api::testing::TestApi;

use crate::support::{enrolled_agent, json_of, write_file, Heimdall};

const READERS: &str = r#"permit(principal, action == Heimdall::Action::"secret.read", resource);"#;

/// The file: bo's role, whether it still names old-token, and the
/// database schema's drift schedule (a new version when it changes).
fn file(role: &str, with_old_secret: bool, drift: &str) -> String {
    let old = if with_old_secret { "  - name: old-token\n" } else { "" };
    format!(
        r#"domains:
  - name: payments
    description: Money in, money out
systems:
  - name: ledger
    domain: payments
components:
  - name: ledger-api
    system: ledger
environments:
  - name: prod
    agents: [edge-1]
schemas:
  - type: database
    requires_approval: true
    drift_check_every: {drift}
    input_schema:
      type: object
      properties:
        size: {{ type: string }}
policies:
  - name: readers
    text: '{READERS}'
members:
  - email: owner@example.com
    role: owner
  - email: bo@example.com
    role: {role}
secrets:
  - name: db-password
    type: password
    tags: {{ team: payments }}
    components: [ledger-api]
{old}"#
    )
}

async fn events(h: &Heimdall) -> usize {
    json_of(h, &["event", "list", "--limit", "1000"]).await.as_array().map_or(0, Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_applied_twice_changes_nothing_the_second_time_and_prune_deletes_only_what_it_drops() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    enrolled_agent(&api, &h, "edge-1").await;
    let config = write_file(tmp.path(), "heimdall.config.yaml", &file("member", true, "24h"));

    let plan = h.run(&["plan", "-f", &config, "--detailed-exitcode"]).await;
    assert_eq!(plan.code, 2, "a plan with changes exits 2: {plan:?}");
    for line in [
        "+ domain payments",
        "+ system ledger",
        "+ environment prod",
        "+ schema database",
        "+ member bo@example.com",
        "+ secret old-token",
    ] {
        assert!(plan.stdout.contains(line), "{line}:\n{}", plan.stdout);
    }
    assert!(plan.stdout.contains("Plan: 9 to create, 0 to update, 0 to delete."), "{}", plan.stdout);
    assert!(!plan.stdout.contains("owner@example.com"), "the owner is already there: {}", plan.stdout);

    // Off a terminal apply asks for --auto-approve, and changes nothing.
    let refused = h.run(&["apply", "-f", &config]).await;
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(refused.stderr.contains("--auto-approve"), "{refused:?}");
    assert_eq!(json_of(&h, &["domain", "list"]).await, serde_json::json!([]));

    let applied = h.run(&["apply", "-f", &config, "--auto-approve"]).await;
    assert_eq!(applied.code, 0, "{applied:?}");
    assert!(applied.stdout.contains("✓ Applied 9 changes."), "{applied:?}");
    assert!(
        applied.stdout.contains("member bo@example.com's token: hmd_"),
        "the new member's token, once: {applied:?}"
    );
    assert!(applied.stderr.contains("[9/9] + secret old-token"), "progress: {applied:?}");
    let prod = json_of(&h, &["environment", "agents", "prod"]).await;
    assert_eq!(prod.as_array().map(Vec::len), Some(1), "edge-1 holds prod: {prod}");
    let secret = json_of(&h, &["secret", "show", "db-password"]).await;
    assert_eq!(secret["secret"]["tags"]["team"], "payments", "{secret}");

    // The same file again: nothing to do, and nothing is written.
    let before = events(&h).await;
    let again = h.run(&["plan", "-f", &config, "--detailed-exitcode"]).await;
    assert_eq!(
        (again.code, again.stdout.trim()),
        (0, "No changes: the organization is as the file says (10 objects).")
    );
    let again = h.run(&["apply", "-f", &config, "--auto-approve"]).await;
    assert_eq!(again.code, 0, "{again:?}");
    assert!(again.stdout.starts_with("No changes"), "{again:?}");
    assert_eq!(events(&h).await, before, "a second apply sends no write");

    // The schema's schedule changes, bo becomes an admin and old-token leaves the file.
    let changed = write_file(tmp.path(), "changed.yaml", &file("admin", false, "12h"));
    let plan = json_of(&h, &["plan", "-f", &changed]).await;
    let summary: Vec<String> = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {} {}",
                c["op"].as_str().unwrap(),
                c["kind"].as_str().unwrap(),
                c["key"].as_str().unwrap()
            )
        })
        .collect();
    let expected = ["update schema database", "update member bo@example.com"];
    assert_eq!(summary, expected, "without --prune nothing is deleted");
    assert_eq!(
        plan["changes"][1]["fields"],
        serde_json::json!([{ "field": "role", "from": "member", "to": "admin" }])
    );
    let pruned = h.run(&["apply", "-f", &changed, "--prune", "--auto-approve"]).await;
    assert_eq!(pruned.code, 0, "{pruned:?}");
    for step in ["[1/3] ~ schema database", "[2/3] ~ member bo@example.com", "[3/3] - secret old-token"] {
        assert!(pruned.stderr.contains(step), "{step}: {pruned:?}");
    }
    let versions = json_of(&h, &["schema", "list", "--type", "database"]).await;
    let versions: Vec<(i64, i64)> = versions
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["version"].as_i64().unwrap(), v["drift_check_every_seconds"].as_i64().unwrap()))
        .collect();
    assert!(
        versions.contains(&(1, 86_400)) && versions.contains(&(2, 43_200)),
        "a new version: {versions:?}"
    );
    let secrets = json_of(&h, &["secret", "list"]).await;
    let live: Vec<&str> = secrets
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["status"] == "active")
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(live, ["db-password"], "{secrets}");

    // What the organization has, written out and applied back: nothing to do.
    let exported = h.run(&["export-config"]).await;
    assert_eq!(exported.code, 0, "{exported:?}");
    assert!(exported.stdout.contains("email: bo@example.com"), "{}", exported.stdout);
    let back =
        h.run_with_stdin(&["apply", "-f", "-", "--auto-approve", "--prune"], Some(&exported.stdout)).await;
    assert_eq!(back.code, 0, "{back:?}");
    assert!(back.stdout.starts_with("No changes"), "{back:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_cannot_be_applied_is_refused_before_anything_changes() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let before = events(&h).await;

    // A value has no field to go in: refused, and never echoed.
    let valued =
        write_file(tmp.path(), "valued.yaml", "secrets:\n  - name: db\n    value: hunter2-in-a-file\n");
    let refused = h.run(&["apply", "-f", &valued, "--auto-approve"]).await;
    assert_eq!(refused.code, 7, "INVALID_INPUT: {refused:?}");
    assert!(refused.stderr.contains("value"), "{refused:?}");
    assert!(!refused.stderr.contains("hunter2-in-a-file"), "{refused:?}");

    // A system in a domain nobody makes.
    let orphan = write_file(
        tmp.path(),
        "orphan.yaml",
        "domains:\n  - name: payments\nsystems:\n  - name: ledger\n    domain: billing\n",
    );
    let refused = h.run(&["plan", "-f", &orphan, "--output", "json"]).await;
    assert_eq!(refused.code, 7, "{refused:?}");
    let error: serde_json::Value = serde_json::from_str(&refused.stderr).unwrap();
    assert_eq!(error["error"]["code"], "INVALID_INPUT");
    assert!(
        error["error"]["message"].as_str().unwrap().contains("system ledger: its domain billing"),
        "{error}"
    );
    let refused = h.run(&["apply", "-f", &orphan, "--auto-approve"]).await;
    assert_eq!(refused.code, 7, "{refused:?}");

    // The API refuses midway: what ran before stays, and is said.
    let midway = write_file(
        tmp.path(),
        "midway.yaml",
        "domains:\n  - name: payments\npolicies:\n  - name: broken\n    text: 'permit(principal'\n",
    );
    let stopped = h.run(&["apply", "-f", &midway, "--auto-approve"]).await;
    assert_ne!(stopped.code, 0, "{stopped:?}");
    assert!(
        stopped.stderr.contains("stopped at + policy broken: 1 of 2 changes were applied before it"),
        "{stopped:?}"
    );
    let plan = h.run(&["plan", "-f", &midway]).await;
    assert!(
        plan.stdout.contains("+ policy broken") && !plan.stdout.contains("domain"),
        "what is left: {plan:?}"
    );

    assert_eq!(events(&h).await, before + 1, "only the domain was made");

    // A member added before the refusal: their token is printed with what
    // ran, in JSON too, since it is shown this once.
    let then = write_file(
        tmp.path(),
        "then.yaml",
        "members:\n  - email: cy@example.com\n    role: member\nsecrets:\n  - name: Not-Valid\n",
    );
    let stopped = h.run(&["apply", "-f", &then, "--auto-approve", "--output", "json"]).await;
    assert_eq!(stopped.code, 7, "INVALID_INPUT: {stopped:?}");
    let report: serde_json::Value = serde_json::from_str(&stopped.stdout).unwrap();
    assert_eq!(report["applied"][0]["key"], "cy@example.com", "{report}");
    assert_eq!(report["shown_once"][0]["what"], "member cy@example.com's token", "{report}");
    assert!(report["shown_once"][0]["value"].as_str().unwrap().starts_with("hmd_"), "{report}");
}

/// Runs `heimdall` with one more variable in its environment.
async fn with_env(h: &Heimdall, args: &[&str], (name, value): (&str, &str)) -> crate::support::Run {
    let output = h.command(args).env(name, value).output().await.expect("run heimdall");
    crate::support::Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).expect("utf-8"),
        stderr: String::from_utf8(output.stderr).expect("utf-8"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_s_webhook_comes_from_the_environment_and_is_never_written_down() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let config = write_file(
        tmp.path(),
        "channels.yaml",
        "domains:\n  - name: payments\nnotification_channels:\n  - name: ops\n    webhook_env: OPS_WEBHOOK\n",
    );
    const URL: &str = "http://127.0.0.1:9/hook/path-token-7f3a9c";

    // Not set: refused before the first change, the domain included.
    let refused = h.run(&["apply", "-f", &config, "--auto-approve"]).await;
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("OPS_WEBHOOK is not set"), "{refused:?}");
    assert_eq!(json_of(&h, &["domain", "list"]).await, serde_json::json!([]), "nothing was made");

    let plan = with_env(&h, &["plan", "-f", &config], ("OPS_WEBHOOK", URL)).await;
    assert!(plan.stdout.contains("+ notification channel ops\n    webhook_env: \"OPS_WEBHOOK\""), "{plan:?}");
    let applied = with_env(&h, &["apply", "-f", &config, "--auto-approve"], ("OPS_WEBHOOK", URL)).await;
    assert_eq!(applied.code, 0, "{applied:?}");
    assert!(
        applied.stdout.contains("notification channel ops's signing secret: "),
        "shown once: {applied:?}"
    );
    let listed = json_of(&h, &["notification", "list"]).await;
    assert_eq!(listed[0]["name"], "ops", "{listed}");

    let again = h.run(&["plan", "-f", &config, "--detailed-exitcode", "--output", "json"]).await;
    assert_eq!(again.code, 0, "only the name is compared: {again:?}");
    let exported = h.run(&["export-config"]).await;
    assert!(exported.stdout.contains("notification_channels:\n- name: ops\n"), "{}", exported.stdout);
    for run in [&plan, &applied, &again, &exported] {
        let printed = format!("{}{}", run.stdout, run.stderr);
        assert!(!printed.contains("path-token-7f3a9c"), "the webhook URL is never printed: {printed}");
    }
}
