//! Agents: one-time registration tokens, listing, revoking.

use heimdall_api::testing::TestApi;
use heimdall_core::ports::AgentStore;
use time::OffsetDateTime;

use crate::support::{cells, enroll, json_of, Heimdall, Transcript};

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

    crate::snapshot("agents", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}
