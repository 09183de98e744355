//! Two Agents holding one environment, one of which missed a write (a
//! holder down during `secret set` is the same): the API tells each which
//! version is current, the one that lacks it never serves the older value
//! as the latest (`VERSION_NOT_HELD`), and a program reading through the
//! SDK gets the current value from the other holder, or an error when it
//! is down, never the old value.

use heimdall_sdk::flows::{read_values, AgentOptions, Ask};
use heimdall_sdk::ErrorCode;
use reqwest::Method;
use serde_json::json;

use crate::support::{agent_client, World};
use crate::values::{configure, eventually, identity, set, Store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_missed_a_write_never_serves_the_older_value_as_the_latest() {
    let w = World::new().await;
    let (lagging, current) = (w.enroll("edge-1").await, w.enroll("edge-2").await);
    let (local_lagging, _) = configure(&lagging, Store::Sqlite, None);
    let (local_current, _) = configure(&current, Store::Sqlite, None);
    let owner = w.api.owner_token.clone();
    // edge-1 first: holders are asked in the order they were assigned.
    for agent in ["edge-1", "edge-2"] {
        w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": agent })).await;
    }
    w.post(&owner, "/v1/secrets", json!({ "name": "db-password" })).await;
    let ana = identity(&w, &owner).await;
    let (mut edge_1, mut edge_2) = (w.run_agent(&lagging), w.run_agent(&current));
    eventually(&lagging, "both local URLs", || async {
        let (_, holders) = w.call(Method::GET, "/v1/secrets/db-password/holders?environment=dev", None).await;
        holders.as_array().unwrap().iter().filter(|h| h["url"].is_string()).count() == 2
    })
    .await;
    assert_eq!(set(&w, &owner, &ana, "db-password", "dev", "one").await, 1);

    // Version 2 reaches edge-2 only.
    let created = w.post(&owner, "/v1/secrets/db-password/versions", json!({ "environment": "dev" })).await;
    let holders = created["holders"].as_array().unwrap();
    let grant = holders.iter().find(|h| h["agent"] == "edge-2").unwrap()["grant"].as_str().unwrap();
    let via_current = agent_client(&current, &local_current, &ana);
    via_current.put_value("db-password", "dev", 2, grant, "two").await.unwrap();

    // Once edge-2 reported it, edge-1 knows 2 is current and serves 1 only when asked for 1.
    let via_lagging = agent_client(&lagging, &local_lagging, &ana);
    eventually(&lagging, "edge-1 refusing the latest", || async {
        let answer = via_lagging.get_value("db-password", "dev", None).await;
        matches!(answer, Err(e) if e.code() == Some(ErrorCode::VersionNotHeld))
    })
    .await;
    let old = via_lagging.get_value("db-password", "dev", Some(1)).await.unwrap();
    assert_eq!((old.version, old.value.expose().as_str()), (1, "one"));
    let asked = via_lagging.get_value("db-password", "dev", Some(2)).await.unwrap_err();
    assert_eq!(asked.code(), Some(ErrorCode::VersionNotHeld), "{asked}");

    // The SDK asks edge-1, then edge-2: the current value.
    let api = heimdall_sdk::Client::new(&w.api.url, owner.clone()).unwrap();
    let latest = Ask::One { secret: "db-password", version: None };
    let read = read_values(&api, &ana, "dev", latest, AgentOptions::default()).await.unwrap();
    assert_eq!(read.agent, "edge-2");
    assert_eq!((read.answers[0].version, read.answers[0].value.expose().as_str()), (2, "two"));

    // edge-2 down: an error that says what is missing, never "one".
    edge_2.start_kill().unwrap();
    let _ = edge_2.wait().await;
    let err = read_values(&api, &ana, "dev", latest, AgentOptions::default()).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::VersionNotHeld), "{err}");
    assert!(err.to_string().contains("current version (2)") && err.to_string().contains("edge-1"), "{err}");
    edge_1.start_kill().unwrap();
    let _ = edge_1.wait().await;
}
