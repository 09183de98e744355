//! The sync answer as a delta, end to end: once a running Agent holds the
//! list of secrets, each change reaches it as a delta (`secrets_since`),
//! and it decides reads with the merged list as it would with a whole
//! one: a secret linked under a forbidden domain is refused, unlinked it
//! is served again, and a secret created since is written and read.

use heimdall_sdk::ErrorCode;
use reqwest::Method;
use serde_json::json;

use crate::support::{agent_client, World};
use crate::values::{configure, eventually, holders_reachable, identity, set, Store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_reach_a_running_agent_as_deltas_and_decide_its_reads() {
    let w = World::new().await;
    let config = w.enroll("edge-1").await;
    let (url, _) = configure(&config, Store::Sqlite, None);
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "edge-1" })).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "db-password" })).await;
    let ana = identity(&w, &owner).await;
    let _agent = w.run_agent(&config);
    holders_reachable(&w, &config, "db-password", 1).await;
    let client = agent_client(&config, &url, &ana);
    assert_eq!(set(&w, &owner, &ana, "db-password", "dev", "one").await, 1);
    let read = |name: &'static str| {
        let client = client.clone();
        async move {
            client.get_value(name, "dev", None).await.map(|a| a.value.expose().clone()).map_err(|e| e.code())
        }
    };
    assert_eq!(read("db-password").await, Ok("one".to_owned()));

    // No read of anything under the payments domain, whoever asks.
    let (_, domain) = w.call(Method::GET, "/v1/domains/payments", None).await;
    let (_, component) = w.call(Method::GET, "/v1/components/receipts", None).await;
    let text = format!(
        r#"forbid (principal, action == Heimdall::Action::"secret.read", resource in Heimdall::Domain::"{}");"#,
        domain["id"].as_str().unwrap()
    );
    w.post(&owner, "/v1/policies", json!({ "name": "payments-sealed", "text": text })).await;

    // Linked there: only the secret's change travels, and it is refused.
    let (status, _) = w
        .call(Method::PATCH, "/v1/secrets/db-password", Some(json!({ "components": [component["id"]] })))
        .await;
    assert_eq!(status, 200);
    eventually(&config, "the link to refuse the read", || async {
        read("db-password").await == Err(Some(ErrorCode::Forbidden))
    })
    .await;

    // Unlinked: served again.
    let (status, _) =
        w.call(Method::PATCH, "/v1/secrets/db-password", Some(json!({ "components": [] }))).await;
    assert_eq!(status, 200);
    eventually(&config, "the unlink to allow the read", || async { read("db-password").await.is_ok() }).await;

    // A secret created after the Agent holds the list: written and read.
    w.post(&owner, "/v1/secrets", json!({ "name": "api-key" })).await;
    holders_reachable(&w, &config, "api-key", 1).await;
    assert_eq!(set(&w, &owner, &ana, "api-key", "dev", "k1").await, 1);
    assert_eq!(read("api-key").await, Ok("k1".to_owned()));

    // No delta was refused as following a generation it did not hold.
    let log = std::fs::read_to_string(config.with_extension("log")).unwrap_or_default();
    assert!(!log.contains("does not hold"), "{log}");
}
