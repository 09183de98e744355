//! Who is behind: `secret show` lists each holder of an environment that
//! lacks the current version (and since when), `agent show` what an Agent
//! lacks, and an Agent behind for longer than three sync periods raises
//! `secret.holder_lagging` once, to the feed and the webhooks. A revoked
//! Agent is behind on nothing.

use std::sync::Arc;

use heimdall_api::testing::{TestApi, TestDatabase};
use heimdall_core::clock::{Clock, ManualClock};
use serde_json::{json, Value};
use time::Duration;

use crate::support::{enroll_agent, Client};

crate::on_every_backend!(a_holder_behind_is_shown_until_it_catches_up_and_raises_one_event_when_it_lags);

async fn sync(agent: &reqwest::Client, api: &TestApi, inventory: Value) -> Value {
    let url = format!("{}/v1/agent/sync", api.agent_url);
    let resp = agent.post(url).json(&json!({ "inventory": inventory })).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    resp.json().await.unwrap()
}

async fn a_holder_behind_is_shown_until_it_catches_up_and_raises_one_event_when_it_lags(db: TestDatabase) {
    let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
    let api = TestApi::with_clock(db, clock.clone()).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let prod = c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201)["id"].clone();
    c.post("/v1/notifications", owner, json!({ "name": "ops", "webhook": "http://127.0.0.1:9/hook" }))
        .await
        .expect(201);
    let (edge1, _) = enroll_agent(&c, &api, owner, "edge-1").await;
    let (edge2, _) = enroll_agent(&c, &api, owner, "edge-2").await;
    for agent in ["edge-1", "edge-2"] {
        c.post("/v1/environments/prod/agents", owner, json!({ "agent": agent })).await.expect(201);
    }
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);
    for _ in 0..2 {
        c.post("/v1/secrets/db-password/versions", owner, json!({ "environment": "prod" })).await.expect(201);
    }
    let item = |version: i64| json!({ "secret": "db-password", "environment": prod, "version": version, "deactivated": false });
    // edge-1 took v2; edge-2 was down for that write and still has v1.
    sync(&edge2, &api, json!([item(1)])).await;
    clock.advance(Duration::seconds(5));
    sync(&edge1, &api, json!([item(1), item(2)])).await;
    let wrote_v2 = clock.now();

    let shown = c.get("/v1/secrets/db-password", owner).await.expect(200);
    let behind = shown["behind"].as_array().unwrap_or_else(|| panic!("no holder shown behind: {shown}"));
    assert_eq!(behind.len(), 1, "{shown}");
    let b = &behind[0];
    assert_eq!(
        (b["agent"].as_str(), b["environment"].as_str(), b["held"].as_i64(), b["current"].as_i64()),
        (Some("edge-2"), Some("prod"), Some(1), Some(2)),
        "{shown}"
    );
    assert_eq!(b["lagging"], false, "just written: catching up");
    let since = time::OffsetDateTime::parse(
        b["since"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert!((since - wrote_v2).abs() < Duration::seconds(1), "behind since edge-1 reported v2: {since}");
    // Each holder with the version it holds and since when.
    let holders = shown["holdings"].as_array().unwrap();
    assert!(holders.iter().all(|h| h["held_since"].is_string()), "{shown}");
    let edge2_detail = c.get("/v1/agents/edge-2", owner).await.expect(200);
    assert_eq!(edge2_detail["behind"][0]["secret"], "db-password", "{edge2_detail}");
    let edge1_detail = c.get("/v1/agents/edge-1", owner).await.expect(200);
    assert!(edge1_detail.get("behind").is_none(), "edge-1 lacks nothing: {edge1_detail}");

    // Still behind after three sync periods: one event, whoever syncs, however often.
    clock.advance(Duration::minutes(3) + Duration::seconds(1));
    let lagging = |events: &Value| -> Vec<Value> {
        events
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["action"] == "secret.holder_lagging")
            .cloned()
            .collect()
    };
    assert!(
        lagging(&c.get("/v1/events", owner).await.expect(200)).is_empty(),
        "nothing raised between syncs"
    );
    sync(&edge1, &api, json!([item(1), item(2)])).await;
    sync(&edge1, &api, json!([item(1), item(2)])).await;
    clock.advance(Duration::minutes(1));
    sync(&edge2, &api, json!([item(1)])).await;
    let events = lagging(&c.get("/v1/events", owner).await.expect(200));
    assert_eq!(events.len(), 1, "{events:?}");
    let detail = &events[0]["detail"];
    assert_eq!(
        (detail["agent"].as_str(), detail["environment"].as_str(), detail["secrets"].as_i64()),
        (Some("edge-2"), Some("prod"), Some(1)),
        "{events:?}"
    );
    assert!(!events[0].to_string().contains("db-password"), "the event counts secrets, never names them");
    let shown = c.get("/v1/secrets/db-password", owner).await.expect(200);
    assert_eq!(shown["behind"][0]["lagging"], true, "{shown}");
    let deliveries = c.get("/v1/notifications/deliveries", owner).await.expect(200);
    assert!(deliveries.to_string().contains("secret.holder_lagging"), "{deliveries}");

    // edge-2 fetched v2: nothing behind. A newly assigned Agent lacks it, since its assignment.
    sync(&edge2, &api, json!([item(1), item(2)])).await;
    let shown = c.get("/v1/secrets/db-password", owner).await.expect(200);
    assert!(shown.get("behind").is_none(), "caught up: {shown}");
    let (edge3, _) = enroll_agent(&c, &api, owner, "edge-3").await;
    clock.advance(Duration::minutes(1));
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-3" })).await.expect(201);
    let assigned_at = clock.now();
    let shown = c.get("/v1/secrets/db-password", owner).await.expect(200);
    let b = &shown["behind"][0];
    assert_eq!(
        (b["agent"].as_str(), b.get("held"), b["current"].as_i64()),
        (Some("edge-3"), None, Some(2)),
        "{shown}"
    );
    let since = time::OffsetDateTime::parse(
        b["since"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert!((since - assigned_at).abs() < Duration::seconds(1), "since its assignment: {since}");
    // Its first sync is offered the transfer from a holder that has it.
    let answer = sync(&edge3, &api, json!([])).await;
    let current = answer["current_versions"].as_array().unwrap();
    assert_eq!(current.len(), 1, "{answer}");
    assert_eq!(current[0]["version"], 2);
    // A revoked Agent is behind on nothing, even while still assigned.
    c.call(reqwest::Method::DELETE, "/v1/agents/edge-3", owner, None).await.expect(200);
    let shown = c.get("/v1/secrets/db-password", owner).await.expect(200);
    assert!(shown.get("behind").is_none(), "{shown}");
}
