//! When someone leaves: every secret they read is marked at risk in each
//! environment where the version they read is still the current one,
//! decided with the removal; reads reported later mark too; a new version
//! clears its own environment only; an email added again is a new person.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;

use crate::support::{enroll_agent, Client};

crate::on_every_backend!(removing_a_reader_marks_what_they_read_until_a_new_value_is_written);

fn read(seq: i64, who: &str, secret: &str, environment: &str, version: i64) -> Value {
    let at = time::OffsetDateTime::now_utc().format(&Rfc3339).unwrap();
    json!({ "seq": seq, "accessor": who, "at": at, "secret": secret, "environment": environment,
            "version": version, "from": "10.0.0.7" })
}

/// Where a secret is at risk: environment → the emails that marked it.
async fn marks(c: &Client, owner: &str, secret: &str) -> Vec<(String, String, Value)> {
    let detail = c.get(&format!("/v1/secrets/{secret}"), owner).await.expect(200);
    let marks = detail["secret"]["at_risk"].as_array().cloned().unwrap_or_default();
    marks
        .iter()
        .map(|m| {
            assert!(m["marked_at"].is_string() && m["member_id"].is_string(), "{m}");
            (
                m["environment"].as_str().unwrap().to_owned(),
                m["email"].as_str().unwrap().to_owned(),
                m["versions"].clone(),
            )
        })
        .collect()
}

async fn removing_a_reader_marks_what_they_read_until_a_new_value_is_written(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    c.add_member(owner, "ana@example.com", "admin").await;
    c.add_member(owner, "bo@example.com", "admin").await;
    for env in ["dev", "prod"] {
        c.post("/v1/environments", owner, json!({ "name": env })).await.expect(201);
    }
    let (edge, _) = enroll_agent(&c, &api, owner, "edge-1").await;
    for env in ["dev", "prod"] {
        c.post(&format!("/v1/environments/{env}/agents"), owner, json!({ "agent": "edge-1" }))
            .await
            .expect(201);
    }
    for secret in ["db-password", "api-key"] {
        c.post("/v1/secrets", owner, json!({ "name": secret })).await.expect(201);
    }
    let version = |secret: &'static str, env: &'static str| {
        let c = &c;
        async move {
            let path = format!("/v1/secrets/{secret}/versions");
            c.post(&path, owner, json!({ "environment": env })).await.expect(201)["version"].as_i64().unwrap()
        }
    };
    version("db-password", "dev").await;
    version("db-password", "prod").await;
    version("api-key", "prod").await;
    let sync = |records: Value| {
        let (edge, api) = (&edge, &api);
        async move {
            let resp =
                edge.post(format!("{}/v1/agent/sync", api.agent_url)).json(&json!({ "records": records }));
            let resp = resp.send().await.unwrap();
            assert_eq!(resp.status().as_u16(), 200, "{}", resp.text().await.unwrap());
        }
    };
    // Ana reads db-password in both environments and api-key in prod; bo reads api-key.
    sync(json!([
        read(1, "ana@example.com", "db-password", "dev", 1),
        read(2, "ana@example.com", "db-password", "prod", 1),
        read(3, "ana@example.com", "api-key", "prod", 1),
        read(4, "bo@example.com", "db-password", "dev", 1),
    ]))
    .await;
    // api-key changes after her read: what she knows is no longer current.
    assert_eq!(version("api-key", "prod").await, 2);

    c.call(Method::DELETE, "/v1/members/ana@example.com", owner, None).await.expect(200);
    let ana = |env: &str, versions: Value| (env.to_owned(), "ana@example.com".to_owned(), versions);
    assert_eq!(marks(&c, owner, "db-password").await, [ana("dev", json!([1])), ana("prod", json!([1]))]);
    assert_eq!(marks(&c, owner, "api-key").await, [], "changed after the read: not at risk");
    let events = c.get("/v1/events?action=secret.at_risk", owner).await.expect(200);
    let events = events.as_array().unwrap();
    assert_eq!(events.len(), 2, "one per secret and environment: {events:?}");
    assert!(events.iter().all(|e| e["detail"]["email"] == "ana@example.com"), "{events:?}");
    assert!(events.iter().all(|e| e["actor"] == "owner@example.com"), "{events:?}");

    // A new value in prod clears prod only; deactivating dev's current version clears nothing.
    version("db-password", "prod").await;
    assert_eq!(marks(&c, owner, "db-password").await, [ana("dev", json!([1]))]);
    let body = json!({ "environment": "dev", "version": 1 });
    c.post("/v1/secrets/db-password/deactivate", owner, body).await.expect(200);
    assert_eq!(marks(&c, owner, "db-password").await, [ana("dev", json!([1]))]);

    // A read of api-key v2 that reaches the API only now, after the removal, still marks.
    sync(json!([read(5, "ana@example.com", "api-key", "prod", 2)])).await;
    assert_eq!(marks(&c, owner, "api-key").await, [ana("prod", json!([2]))]);
    let events = c.get("/v1/events?action=secret.at_risk", owner).await.expect(200);
    assert_eq!(events.as_array().map(Vec::len), Some(3));
    assert_eq!(events[0]["actor"], "agent:edge-1", "{events}");
    // Reported twice, it marks once.
    sync(json!([read(5, "ana@example.com", "api-key", "prod", 2)])).await;
    assert_eq!(
        c.get("/v1/events?action=secret.at_risk", owner).await.expect(200).as_array().map(Vec::len),
        Some(3)
    );

    // Ana comes back: a new member. Her reads now are hers, not the removed Ana's.
    c.add_member(owner, "ana@example.com", "admin").await;
    sync(json!([read(6, "ana@example.com", "db-password", "prod", 2)])).await;
    assert_eq!(marks(&c, owner, "db-password").await, [ana("dev", json!([1]))], "prod stays clear");
    // Shown in the list too.
    let list = c.get("/v1/secrets", owner).await.expect(200);
    let at_risk: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["at_risk"].as_array().is_some_and(|m| !m.is_empty()))
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(at_risk, ["api-key", "db-password"]);
    // The list (one query per table) says what each secret's own page says.
    for listed in list.as_array().unwrap() {
        let shown =
            c.get(&format!("/v1/secrets/{}", listed["id"].as_str().unwrap()), owner).await.expect(200);
        assert_eq!(listed, &shown["secret"], "list and show disagree");
    }
}
