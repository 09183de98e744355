//! The catalog, members, policies, events and tokens: the tour, in tables
//! and in JSON.

use heimdall_api::testing::TestApi;

use crate::support::{cedar_file, Heimdall, Transcript};

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
    // Changed in place, by name: a new version; the same file again is none.
    let owners_may = NO_PROD_DELETES.replace(";", " unless { principal.role == \"owner\" };");
    let owners_may = crate::support::write_file(tmp.path(), "owners-may.cedar", &owners_may);
    t.run(&h, &["policy", "update", "no-prod-deletes", "--file", &owners_may, "--expected-version", "1"])
        .await;
    t.run(&h, &["policy", "update", "no-prod-deletes", "--file", &owners_may]).await;
    t.run(&h, &["policy", "update", "no-prod-deletes", "--file", &policy, "--expected-version", "1"]).await;
    t.run(&h, &["policy", "update", "no-prod-deletes", "--description", "Only owners delete in prod"]).await;
    t.run(&h, &["policy", "versions", "no-prod-deletes"]).await;
    t.run(&h, &["policy", "show", "no-prod-deletes"]).await;
    t.run(&h, &["environment", "delete", "dev"]).await;
    t.run(&h, &["event", "list"]).await;
    t.run(&h, &["event", "list", "--action", "member.", "--limit", "1"]).await;
    t.run(&h, &["token", "list"]).await;

    crate::snapshot("tour_table", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
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
    crate::snapshot("tour_json", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}
