//! `heimdall notification`: a webhook channel, its secret shown once, the
//! list, the delivery log and removal.

use heimdall_api::testing::TestApi;

use crate::support::{cells, json_of, Heimdall};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_is_made_listed_and_removed_and_its_secret_shown_once() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());

    let created =
        h.run(&["notification", "create", "--name", "ops", "--webhook", "http://127.0.0.1:9/hook"]).await;
    assert_eq!(created.code, 0, "{created:?}");
    assert!(
        created.stdout.starts_with("✓ Notification channel created: ops → http://127.0.0.1:9/…\n"),
        "{created:?}"
    );
    let secret = created
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("Signing secret (shown once): "))
        .expect("the secret line")
        .to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");

    let listed = h.run(&["notification", "list"]).await;
    assert_eq!(cells(&listed.stdout)[0], ["ID", "NAME", "WEBHOOK", "CREATED BY", "CREATED AT"]);
    assert_eq!(cells(&listed.stdout)[1][1..3], ["ops", "http://127.0.0.1:9/…"], "{}", listed.stdout);
    assert!(!listed.stdout.contains(&secret));
    assert_eq!(json_of(&h, &["notification", "deliveries"]).await, serde_json::json!([]));

    // Plain http elsewhere is refused with the API's code and exit status.
    let refused =
        h.run(&["notification", "create", "--name", "x", "--webhook", "http://hooks.example.com/"]).await;
    assert!(
        refused.code != 0 && refused.stderr.contains("INVALID_INPUT") && refused.stderr.contains("https"),
        "{refused:?}"
    );

    let deleted = h.run(&["notification", "delete", "ops"]).await;
    assert_eq!((deleted.code, deleted.stdout.as_str()), (0, "✓ Notification channel deleted: ops\n"));
    assert_eq!(json_of(&h, &["notification", "list"]).await, serde_json::json!([]));
}

/// `secret delete` of a secret no Agent holds: deleted at once, kept as
/// history; `agent show` and `agent forget` (which needs its confirmation).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_no_agent_holds_is_deleted_at_once_and_forgetting_needs_a_confirmation() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    assert_eq!(h.run(&["secret", "create", "old-key"]).await.code, 0);
    let deleted = h.run(&["secret", "delete", "old-key", "--wait"]).await;
    assert_eq!(
        (deleted.code, deleted.stdout.as_str()),
        (0, "✓ Secret deleted: old-key (no Agent holds a copy)\n"),
        "{deleted:?}"
    );
    let listed = h.run(&["secret", "list"]).await;
    assert_eq!(cells(&listed.stdout)[1][..3], ["old-key", "generic", "deleted"], "{}", listed.stdout);
    let again = h.run(&["secret", "delete", "old-key"]).await;
    assert!(again.code != 0 && again.stderr.contains("CONFLICT"), "{again:?}");

    let token = h.run(&["agent", "token", "create", "--name", "edge-1", "--output", "json"]).await;
    let token: serde_json::Value = serde_json::from_str(&token.stdout).expect("JSON");
    crate::support::enroll(&api, token["token"].as_str().expect("token")).await.expect("enrolled");
    let shown = h.run(&["agent", "show", "edge-1"]).await;
    assert!(shown.stdout.lines().any(|l| l.starts_with("NAME") && l.ends_with(" edge-1")), "{shown:?}");
    assert!(shown.stdout.ends_with("holds no secret values (as of its last sync)\n"), "{shown:?}");
    let unconfirmed = h.run(&["agent", "forget", "edge-1"]).await;
    assert_eq!(unconfirmed.code, 2, "{unconfirmed:?}");
    assert!(unconfirmed.stderr.contains("--confirm-store-destroyed"), "{unconfirmed:?}");
    let forgotten = h.run(&["agent", "forget", "edge-1", "--confirm-store-destroyed"]).await;
    assert!(
        forgotten.code == 0 && forgotten.stdout.starts_with("✓ Agent forgotten: edge-1 ("),
        "{forgotten:?}"
    );
    let events = json_of(&h, &["event", "list", "--action", "agent.forgotten"]).await;
    assert_eq!(events.as_array().map(Vec::len), Some(1), "recorded: {events}");
}
