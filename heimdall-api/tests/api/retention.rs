//! Retention at the API: the sync tells an Agent which of its values a
//! newer current version replaced once the writer's overlap is over, and
//! `secret show` says until when each replaced version is kept. An overlap
//! asked for earlier is not cut short by a later write; a bad period
//! numbers nothing.

use std::sync::Arc;

use heimdall_api::testing::{TestApi, TestDatabase};
use heimdall_core::clock::{Clock, ManualClock};
use serde_json::{json, Value};
use time::Duration;

use crate::support::{enroll_agent, Client};

crate::on_every_backend!(a_replaced_version_is_erased_only_after_the_overlap_its_writer_asked_for);

/// An Agent holding more than ten thousand versions still syncs (it was
/// refused, `INVALID_INPUT` then `PAYLOAD_TOO_LARGE`, and never synced
/// again: found by `benches/converge.sh --backfill 10000`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_holding_tens_of_thousands_of_versions_still_syncs() {
    let api = TestApi::sqlite().await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let prod = c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201)["id"].clone();
    let (edge1, _) = enroll_agent(&c, &api, owner, "edge-1").await;
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-1" })).await.expect(201);
    let inventory: Vec<Value> = (0..25_000)
        .map(|n| json!({ "secret": format!("bulk-{n:05}"), "environment": prod, "version": 1, "deactivated": false }))
        .collect();
    sync(&edge1, &api, json!(inventory)).await;
    let shown = c.get("/v1/agents/edge-1", owner).await.expect(200);
    assert_eq!(shown["holdings"].as_array().map(Vec::len), Some(25_000));
}

async fn sync(agent: &reqwest::Client, api: &TestApi, inventory: Value) -> Value {
    let url = format!("{}/v1/agent/sync", api.agent_url);
    let resp = agent.post(url).json(&json!({ "inventory": inventory })).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    resp.json().await.unwrap()
}

/// The versions of db-password a sync answer tells the Agent to erase.
fn erased(answer: &Value) -> Vec<i64> {
    let mut versions: Vec<i64> = answer["superseded"]
        .as_array()
        .map(|s| {
            s.iter().filter(|e| e["secret"] == "db-password").filter_map(|e| e["version"].as_i64()).collect()
        })
        .unwrap_or_default();
    versions.sort_unstable();
    versions
}

async fn a_replaced_version_is_erased_only_after_the_overlap_its_writer_asked_for(db: TestDatabase) {
    let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
    let api = TestApi::with_clock(db, clock.clone()).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let prod = c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201)["id"].clone();
    let (edge1, _) = enroll_agent(&c, &api, owner, "edge-1").await;
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-1" })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);
    let item = |version: i64| json!({ "secret": "db-password", "environment": prod, "version": version, "deactivated": false });
    let write = |keep: Option<&str>| {
        let mut body = json!({ "environment": "prod" });
        if let Some(keep) = keep {
            body["keep_previous"] = json!(keep);
        }
        body
    };

    // A bad period is refused before a number is taken.
    for bad in ["31d", "soon", "0h"] {
        let refused = c.post("/v1/secrets/db-password/versions", owner, write(Some(bad))).await.expect(422);
        assert_eq!(refused["error"]["code"], "INVALID_INPUT", "{refused}");
        assert!(!refused.to_string().contains(bad), "the error echoes no input: {refused}");
    }
    let v1 = c.post("/v1/secrets/db-password/versions", owner, write(None)).await.expect(201);
    assert_eq!(v1["version"], 1, "no number was taken by a refused write");

    // v2 keeps v1 for an hour; v3, ten minutes later, asks for nothing.
    c.post("/v1/secrets/db-password/versions", owner, write(Some("1h"))).await.expect(201);
    let wrote_v2 = clock.now();
    assert!(erased(&sync(&edge1, &api, json!([item(1), item(2)])).await).is_empty(), "in v2's hour");
    clock.advance(Duration::minutes(10));
    c.post("/v1/secrets/db-password/versions", owner, write(None)).await.expect(201);
    // Not current until an Agent holds it: nothing is erased for v3 yet.
    assert!(erased(&sync(&edge1, &api, json!([item(1), item(2)])).await).is_empty());
    // Held: v2 goes at once, v1 stays for the rest of v2's hour.
    let answer = sync(&edge1, &api, json!([item(1), item(2), item(3)])).await;
    assert_eq!(erased(&answer), vec![2], "{answer}");
    let shown = c.get("/v1/secrets/db-password", owner).await.expect(200);
    let kept_until = |version: i64| {
        shown["versions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["version"] == version)
            .and_then(|v| v["superseded_at"].as_str())
            .map(|at| {
                time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).unwrap()
            })
    };
    let close = |a: time::OffsetDateTime, b: time::OffsetDateTime| (a - b).abs() < Duration::seconds(1);
    assert!(kept_until(1).is_some_and(|at| close(at, wrote_v2 + Duration::hours(1))), "{shown}");
    assert!(kept_until(2).is_some_and(|at| close(at, wrote_v2 + Duration::minutes(10))), "{shown}");
    assert_eq!(kept_until(3), None, "the current version is kept: {shown}");
    let v2 = shown["versions"].as_array().unwrap().iter().find(|v| v["version"] == 2).cloned().unwrap();
    assert_eq!(v2["keep_previous_seconds"], 3600, "{v2}");

    // Once v1's hour is over it goes too; what was erased is not asked again.
    clock.advance(Duration::minutes(51));
    let answer = sync(&edge1, &api, json!([item(1), item(3)])).await;
    assert_eq!(erased(&answer), vec![1], "{answer}");
    assert!(erased(&sync(&edge1, &api, json!([item(3)])).await).is_empty());

    // A deactivated current version makes the one before current again:
    // nothing below it is erased for the deactivated one's sake.
    c.post("/v1/secrets/db-password/versions", owner, write(None)).await.expect(201);
    let answer = sync(&edge1, &api, json!([item(3), item(4)])).await;
    assert_eq!(erased(&answer), vec![3], "{answer}");
    c.post("/v1/secrets/db-password/deactivate", owner, json!({ "environment": "prod", "version": 4 }))
        .await
        .expect(200);
    assert!(erased(&sync(&edge1, &api, json!([item(3), item(4)])).await).is_empty(), "v3 is current again");
}
