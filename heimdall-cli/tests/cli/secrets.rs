//! Secrets: their metadata, the Agents that hold an environment, and the
//! access log.

use heimdall_api::testing::TestApi;
use heimdall_core::ports::AccessStore;
use heimdall_wire::AccessRecord;
use serde_json::json;
use time::OffsetDateTime;

use crate::support::{cells, enrolled_agent, json_of, Heimdall, Transcript};

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
        cells(&listed.stdout)[1][..6],
        ["db-password", "password", "active", "-", "team=payments,tier=critical", "api"],
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

    crate::snapshot("secrets", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

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
        .record_access(
            edge_1.org_id,
            &edge_1,
            heimdall_core::access::Report { epoch: "e1", after: None, records: &records },
            &[],
            OffsetDateTime::now_utc(),
        )
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

    crate::snapshot("secret_access_log", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

/// `secret list` (like `resource list` and `job list`) shows every page;
/// `--limit` and `--after` ask for one, and say where the next starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_lists_come_whole_or_one_page_at_a_time() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    for name in ["c-key", "a-key", "b-key"] {
        let made = h.run(&["secret", "create", name]).await;
        assert_eq!(made.code, 0, "{made:?}");
    }
    let names = |json: &str| -> Vec<String> {
        let list: serde_json::Value = serde_json::from_str(json).expect("JSON");
        list.as_array()
            .expect("a list")
            .iter()
            .map(|s| s["name"].as_str().expect("name").to_owned())
            .collect()
    };
    let whole = h.run(&["secret", "list", "--output", "json"]).await;
    assert_eq!(
        (names(&whole.stdout), whole.stderr.as_str()),
        (vec!["a-key".into(), "b-key".into(), "c-key".into()], "")
    );

    let first = h.run(&["secret", "list", "--limit", "2", "--output", "json"]).await;
    assert_eq!(names(&first.stdout), ["a-key", "b-key"], "{first:?}");
    let cursor = first
        .stderr
        .strip_prefix("More: add --after ")
        .and_then(|rest| rest.strip_suffix(" for the next page\n"))
        .unwrap_or_else(|| panic!("no cursor: {first:?}"));
    let next = h.run(&["secret", "list", "--limit", "2", "--after", cursor, "--output", "json"]).await;
    assert_eq!((names(&next.stdout), next.stderr.as_str()), (vec!["c-key".into()], ""), "the last page");

    let resources = h.run(&["resource", "list", "--limit", "1", "--output", "json"]).await;
    assert_eq!((resources.code, resources.stdout.trim()), (0, "[]"), "{resources:?}");
    let bogus = h.run(&["job", "list", "--after", "bogus"]).await;
    assert!(bogus.code != 0 && bogus.stderr.contains("INVALID_INPUT"), "{bogus:?}");
    let zero = h.run(&["secret", "list", "--limit", "0"]).await;
    assert!(zero.code != 0 && zero.stderr.contains("--limit"), "{zero:?}");
}
