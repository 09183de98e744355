//! Two Agents holding one environment, one of which missed a write (a
//! holder down during `secret set` is the same): the API tells each which
//! version is current, the one that lacks it never serves the older value
//! as the latest (`VERSION_NOT_HELD`), and a program reading through the
//! SDK gets an error while no holder of the current version answers,
//! never the old value (`transfers.rs`: the other holder hands it over).

use heimdall_sdk::flows::{read_values, AgentOptions, Ask};
use heimdall_sdk::ErrorCode;
use reqwest::Method;
use serde_json::json;

use crate::support::{agent_client, World};
use crate::values::{configure, eventually, holders_reachable, identity, set, set_only_on_keeping, Store};

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
    holders_reachable(&w, &lagging, "db-password", 2).await;
    assert_eq!(set(&w, &owner, &ana, "db-password", "dev", "one").await, 1);

    // edge-1 is down while version 2 is written: edge-2 stores it, serves it
    // (that read's record and its inventory reach the API in one sync),
    // then goes down too.
    edge_1.start_kill().unwrap();
    let _ = edge_1.wait().await;
    // Version 1 stays readable for an hour: read below by number.
    let two = ("db-password", "dev", "two");
    assert_eq!(set_only_on_keeping(&w, &owner, &ana, two, ("edge-2", "1h")).await, 2);
    let via_current = agent_client(&current, &local_current, &ana);
    assert_eq!(via_current.get_value("db-password", "dev", None).await.unwrap().version, 2);
    eventually(&current, "edge-2 reporting version 2", || async {
        let (_, log) = w.call(Method::GET, "/v1/secrets/db-password/access-log?environment=dev", None).await;
        log.as_array().unwrap().iter().any(|e| e["version"] == 2)
    })
    .await;
    edge_2.start_kill().unwrap();
    let _ = edge_2.wait().await;

    // Back up with nowhere to fetch version 2 from, edge-1 knows 2 is
    // current and serves 1 only when asked for 1.
    edge_1 = w.run_agent(&lagging);
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

    // Through the SDK: an error that says what is missing, never "one".
    let api = heimdall_sdk::Client::new(&w.api.url, owner.clone()).unwrap();
    let latest = Ask::One { secret: "db-password", version: None };
    let err = read_values(&api, &ana, "dev", latest, AgentOptions::default()).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::VersionNotHeld), "{err}");
    assert!(err.to_string().contains("current version (2)") && err.to_string().contains("edge-1"), "{err}");

    // edge-2 back: the current value, whichever holder answers.
    let mut edge_2 = w.run_agent(&current);
    eventually(&lagging, "version 2 read through the SDK", || async {
        let read = read_values(&api, &ana, "dev", latest, AgentOptions::default()).await;
        read.is_ok_and(|r| r.answers[0].version == 2 && r.answers[0].value.expose() == "two")
    })
    .await;
    for child in [&mut edge_1, &mut edge_2] {
        child.start_kill().unwrap();
        let _ = child.wait().await;
    }
}
