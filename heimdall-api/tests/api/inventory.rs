//! What each Agent holds, as it reports it, and deleting a secret without
//! leaving a copy behind: refused `VALUE_MAY_PERSIST` while an Agent that
//! will not sync again holds it, `deleting` until every holder reported it
//! gone, then `deleted`; `agent forget` unblocks a destroyed store.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{enroll_agent, Client};

/// An Agent as the API sees it on its channel: each sync reports its
/// inventory and the `at` of the last answer it applied before taking it.
struct Simulated {
    http: reqwest::Client,
    url: String,
    applied_through: std::sync::Mutex<Option<Value>>,
}

impl Simulated {
    fn new(http: &reqwest::Client, api: &TestApi) -> Self {
        Self {
            http: http.clone(),
            url: format!("{}/v1/agent/sync", api.agent_url),
            applied_through: Default::default(),
        }
    }

    async fn sync(&self, inventory: Value) -> Value {
        let applied = self.applied_through.lock().unwrap().clone();
        let mut body = json!({ "inventory": inventory });
        if let Some(at) = applied {
            body["applied_through"] = at;
        }
        let resp = self.http.post(&self.url).json(&body).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let answer = resp.json::<Value>().await.unwrap();
        *self.applied_through.lock().unwrap() = Some(answer["at"].clone());
        answer
    }
}

crate::on_every_backend!(
    a_delete_completes_when_every_holder_reported_and_waits_for_none_that_will_not_sync,
    an_agent_is_unassigned_unless_it_holds_the_last_copy_and_is_told_to_drop_the_rest,
    a_secret_deleted_in_one_environment_stays_in_the_others
);

async fn a_delete_completes_when_every_holder_reported_and_waits_for_none_that_will_not_sync(
    db: TestDatabase,
) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let admin = c.add_member(owner, "admin@example.com", "admin").await;
    let prod = c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201)["id"].clone();
    let (edge1, _) = enroll_agent(&c, &api, owner, "edge-1").await;
    let (edge2, _) = enroll_agent(&c, &api, owner, "edge-2").await;
    for agent in ["edge-1", "edge-2"] {
        c.post("/v1/environments/prod/agents", owner, json!({ "agent": agent })).await.expect(201);
    }
    let domain = c.post("/v1/domains", owner, json!({ "name": "payments" })).await.expect(201)["id"].clone();
    let system = json!({ "name": "ledger", "parent_id": domain });
    let system = c.post("/v1/systems", owner, system).await.expect(201)["id"].clone();
    let component = json!({ "name": "ledger-api", "parent_id": system });
    c.post("/v1/components", owner, component).await.expect(201);
    for secret in ["db-password", "api-key"] {
        let components = if secret == "db-password" { json!(["ledger-api"]) } else { json!([]) };
        c.post("/v1/secrets", owner, json!({ "name": secret, "components": components })).await.expect(201);
        c.post(&format!("/v1/secrets/{secret}/versions"), owner, json!({ "environment": "prod" }))
            .await
            .expect(201);
    }
    let item =
        |secret: &str| json!({ "secret": secret, "environment": prod, "version": 1, "deactivated": false });
    let (sim1, sim2) = (Simulated::new(&edge1, &api), Simulated::new(&edge2, &api));
    sim1.sync(json!([item("db-password")])).await;
    sim2.sync(json!([item("db-password"), item("api-key")])).await;

    // What each Agent holds, and who holds a secret: never a value.
    let edge1_detail = c.get("/v1/agents/edge-1", &admin).await.expect(200);
    let held = &edge1_detail["holdings"];
    assert_eq!(held.as_array().map(Vec::len), Some(1), "{edge1_detail}");
    assert_eq!(
        (held[0]["secret"].as_str(), held[0]["environment"].as_str()),
        (Some("db-password"), Some("prod"))
    );
    let detail = c.get("/v1/secrets/db-password", owner).await.expect(200);
    let agents: Vec<&str> =
        detail["holdings"].as_array().unwrap().iter().map(|h| h["agent"].as_str().unwrap()).collect();
    assert_eq!(agents, ["edge-1", "edge-2"]);
    assert_eq!(detail["secret"]["status"], "active");

    // Delete: both will sync again, so it starts; Agents are told; no new version.
    let started = c.call(Method::DELETE, "/v1/secrets/db-password", owner, None).await.expect(200);
    assert_eq!(started["secret"]["status"], "deleting", "{started}");
    let body = json!({ "environment": "prod" });
    c.post("/v1/secrets/db-password/versions", owner, body).await.expect_error(409, "CONFLICT");
    let told = sim1.sync(json!([])).await;
    assert_eq!(told["deleted_secrets"], json!(["db-password"]), "{told}");
    assert!(
        told["secrets"].as_array().unwrap().iter().any(|s| s["name"] == "db-password"),
        "still known while deleting"
    );
    let c = &c;
    let status = || async move {
        c.get("/v1/secrets/db-password", owner).await.expect(200)["secret"]["status"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(status().await, "deleting", "edge-1's inventory was taken before it heard of it");
    let component = "/v1/components/ledger-api";
    c.call(Method::DELETE, component, owner, None).await.expect_error(409, "NOT_EMPTY");
    sim2.sync(json!([item("api-key")])).await;
    assert_eq!(status().await, "deleting", "edge-2 has not heard of it yet");
    sim1.sync(json!([])).await;
    assert_eq!(status().await, "deleting", "edge-2's inventory was taken before it heard of it");
    sim2.sync(json!([item("api-key")])).await;
    assert_eq!(status().await, "deleted");
    // No copy is left: the Component it named can go.
    c.call(Method::DELETE, component, owner, None).await.expect(204);
    let events = c.get("/v1/events?action=secret.deleted", owner).await.expect(200);
    assert_eq!(events[0]["actor"], "agent:edge-2", "{events}");
    let listed = c.get("/v1/secrets", owner).await.expect(200);
    assert!(
        listed.as_array().unwrap().iter().any(|s| s["name"] == "db-password" && s["status"] == "deleted"),
        "kept as history"
    );

    // The name can be taken again: a new secret, numbered on past the deleted one.
    let old_id = started["secret"]["id"].as_str().unwrap().to_owned();
    let again = c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);
    assert_ne!(again["id"].as_str(), Some(old_id.as_str()));
    let body = json!({ "environment": "prod" });
    let v = c.post("/v1/secrets/db-password/versions", owner, body).await.expect(201);
    assert_eq!(v["version"], 2, "no Agent ever holds two values as db-password v1");
    let old = c.get(&format!("/v1/secrets/{old_id}"), owner).await.expect(200);
    assert_eq!(
        (old["secret"]["name"].as_str(), old["secret"]["status"].as_str()),
        (Some("db-password"), Some("deleted"))
    );
    assert!(old["secret"]["deleted_at"].is_string(), "{old}");
    // Each one's trail: a read of v1 is the deleted secret's, of v2 the new one's.
    let at = time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap();
    let read = |seq: i64, version: i64| json!({ "seq": seq, "accessor": "owner@example.com", "at": at, "secret": "db-password", "environment": "prod", "version": version, "from": "10.0.0.9" });
    let records = json!({ "records": [read(1, 1), read(2, 2)], "inventory": [{ "secret": "db-password", "environment": prod, "version": 2, "deactivated": false }] });
    let resp = edge1.post(format!("{}/v1/agent/sync", api.agent_url)).json(&records).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let versions = |log: Value| {
        log.as_array().unwrap().iter().map(|e| e["version"].as_i64().unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(versions(c.get("/v1/secrets/db-password/access-log", owner).await.expect(200)), [2]);
    assert_eq!(versions(c.get(&format!("/v1/secrets/{old_id}/access-log"), owner).await.expect(200)), [1]);

    // edge-2 is revoked while it holds api-key: the delete would leave a copy.
    c.call(Method::DELETE, "/v1/agents/edge-2", owner, None).await.expect(200);
    let refused = c
        .call(Method::DELETE, "/v1/secrets/api-key", owner, None)
        .await
        .expect_error(409, "VALUE_MAY_PERSIST");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("edge-2") && message.contains("agent forget"), "{message}");
    assert_eq!(
        c.get("/v1/secrets/api-key", owner).await.expect(200)["secret"]["status"],
        "active",
        "nothing changed"
    );

    // Forgetting takes an owner and a confirmation, and is recorded.
    let confirm = json!({ "confirm_store_destroyed": true });
    c.post("/v1/agents/edge-2/forget", &admin, confirm.clone()).await.expect_error(403, "FORBIDDEN");
    let unconfirmed = json!({ "confirm_store_destroyed": false });
    c.post("/v1/agents/edge-2/forget", owner, unconfirmed).await.expect_error(422, "INVALID_INPUT");
    c.post("/v1/agents/edge-2/forget", owner, confirm).await.expect(200);
    let forgotten = c.get("/v1/events?action=agent.forgotten", owner).await.expect(200);
    assert_eq!(
        forgotten[0]["detail"],
        json!({ "name": "edge-2", "secrets_it_held": ["api-key"], "personal_secrets_it_held": 0 })
    );
    let deleted = c.call(Method::DELETE, "/v1/secrets/api-key", owner, None).await.expect(200);
    assert_eq!(deleted["secret"]["status"], "deleting", "edge-1 holds prod: it may have a copy");
    sim1.sync(json!([])).await;
    sim1.sync(json!([])).await;
    assert_eq!(c.get("/v1/secrets/api-key", owner).await.expect(200)["secret"]["status"], "deleted");

    // A secret no Agent can hold (its environment held by none) is deleted at once.
    c.post("/v1/environments", owner, json!({ "name": "staging" })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "nowhere" })).await.expect(201);
    c.post("/v1/secrets/nowhere/versions", owner, json!({ "environment": "staging" }))
        .await
        .expect_error(409, "NO_AGENT");
    c.call(Method::DELETE, "/v1/environments/prod/agents/edge-1", owner, None).await.expect(200);
    let at_once = c.call(Method::DELETE, "/v1/secrets/nowhere", owner, None).await.expect(200);
    assert_eq!(at_once["secret"]["status"], "deleted", "{at_once}");
}

async fn an_agent_is_unassigned_unless_it_holds_the_last_copy_and_is_told_to_drop_the_rest(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let admin = c.add_member(owner, "admin@example.com", "admin").await;
    let prod = c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201)["id"].clone();
    let (edge1, _) = enroll_agent(&c, &api, owner, "edge-1").await;
    let (edge2, _) = enroll_agent(&c, &api, owner, "edge-2").await;
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-1" })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);
    c.post("/v1/secrets/db-password/versions", owner, json!({ "environment": "prod" })).await.expect(201);
    let v1 = json!([{ "secret": "db-password", "environment": prod, "version": 1, "deactivated": false }]);
    let sync = |agent: &reqwest::Client, inventory: Value| {
        let (agent, api) = (agent.clone(), &api);
        async move {
            let resp = agent
                .post(format!("{}/v1/agent/sync", api.agent_url))
                .json(&json!({ "inventory": inventory }));
            resp.send().await.unwrap().json::<Value>().await.unwrap()
        }
    };
    sync(&edge1, v1.clone()).await;

    // edge-1 holds the only copy of prod's current version: it stays.
    let path = "/v1/environments/prod/agents/edge-1";
    c.call(Method::DELETE, path, admin.as_str(), None).await.expect_error(403, "FORBIDDEN");
    let refused = c.call(Method::DELETE, path, owner, None).await.expect_error(409, "CONFLICT");
    assert!(refused["error"]["message"].as_str().unwrap().contains("db-password v1"), "{refused}");

    // edge-2 holds prod too, and got v2 as edge-1 did: now edge-1 may go, and is told to drop prod.
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-2" })).await.expect(201);
    c.post("/v1/secrets/db-password/versions", owner, json!({ "environment": "prod" })).await.expect(201);
    let both = json!([
        { "secret": "db-password", "environment": prod, "version": 1, "deactivated": false },
        { "secret": "db-password", "environment": prod, "version": 2, "deactivated": false },
    ]);
    sync(&edge1, both.clone()).await;
    sync(
        &edge2,
        json!([{ "secret": "db-password", "environment": prod, "version": 2, "deactivated": false }]),
    )
    .await;
    c.call(Method::DELETE, path, owner, None).await.expect(200);
    c.call(Method::DELETE, path, owner, None).await.expect_error(404, "NOT_FOUND");
    let told = sync(&edge1, both).await;
    assert_eq!(told["released_environments"], json!([prod]), "{told}");
    assert_eq!(told["assignments"].as_array().map(Vec::len), Some(1), "only edge-2 holds prod: {told}");
    // Once its inventory lists nothing in prod, it is no longer told.
    sync(&edge1, json!([])).await;
    let after = sync(&edge1, json!([])).await;
    assert!(after.get("released_environments").is_none(), "{after}");
    let events = c.get("/v1/events?action=environment.agent_unassigned", owner).await.expect(200);
    assert_eq!(events[0]["detail"], json!({ "environment": "prod", "agent": "edge-1" }));
    let holders = c.get("/v1/environments/prod/agents", owner).await.expect(200);
    assert_eq!(holders.as_array().map(Vec::len), Some(1), "{holders}");
}

async fn a_secret_deleted_in_one_environment_stays_in_the_others(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let mut ids = Vec::new();
    for env in ["dev", "prod"] {
        ids.push(c.post("/v1/environments", owner, json!({ "name": env })).await.expect(201)["id"].clone());
    }
    let (dev, prod) = (ids[0].clone(), ids[1].clone());
    let (edge, _) = enroll_agent(&c, &api, owner, "edge-1").await;
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);
    for env in ["dev", "prod"] {
        c.post(&format!("/v1/environments/{env}/agents"), owner, json!({ "agent": "edge-1" }))
            .await
            .expect(201);
        c.post("/v1/secrets/db-password/versions", owner, json!({ "environment": env })).await.expect(201);
    }
    let item = |env: &Value| json!({ "secret": "db-password", "environment": env, "version": 1, "deactivated": false });
    let sim = Simulated::new(&edge, &api);
    let sync = |inventory: Value| sim.sync(inventory);
    sync(json!([item(&dev), item(&prod)])).await;

    let started =
        c.call(Method::DELETE, "/v1/secrets/db-password?environment=prod", owner, None).await.expect(200);
    assert_eq!(started["secret"]["status"], "active", "it stays elsewhere: {started}");
    assert_eq!(started["environment_deletions"][0]["environment"], "prod");
    assert_eq!(started["environment_deletions"][0]["status"], "deleting");
    let told = sync(json!([item(&dev), item(&prod)])).await;
    assert_eq!(
        told["deleted_in_environments"],
        json!([{ "secret": "db-password", "environment": prod, "through_version": 1 }]),
        "{told}"
    );
    assert!(told.get("deleted_secrets").is_none(), "not the whole secret: {told}");
    let body = |env: &str| json!({ "environment": env });
    c.post("/v1/secrets/db-password/versions", owner, body("prod")).await.expect_error(409, "CONFLICT");
    assert_eq!(
        c.post("/v1/secrets/db-password/versions", owner, body("dev")).await.expect(201)["version"],
        2
    );
    c.call(Method::DELETE, "/v1/secrets/db-password?environment=prod", owner, None)
        .await
        .expect_error(409, "CONFLICT");
    c.call(Method::DELETE, "/v1/secrets/db-password?environment=nope", owner, None)
        .await
        .expect_error(404, "NOT_FOUND");

    // The Agent, having heard of it, reports prod gone: deleted there; it
    // is still sent a while (a late write with an older grant is refused);
    // prod takes versions again, numbered on.
    let after = sync(json!([item(&dev)])).await;
    assert_eq!(after["deleted_in_environments"][0]["through_version"], 1, "{after}");
    let detail = c.get("/v1/secrets/db-password", owner).await.expect(200);
    assert_eq!(detail["environment_deletions"][0]["status"], "deleted", "{detail}");
    let events = c.get("/v1/events?action=secret.deleted", owner).await.expect(200);
    assert_eq!(events[0]["detail"], json!({ "name": "db-password", "environment": "prod" }));
    assert_eq!(
        c.post("/v1/secrets/db-password/versions", owner, body("prod")).await.expect(201)["version"],
        2
    );
    let detail = c.get("/v1/secrets/db-password", owner).await.expect(200);
    assert!(detail.get("environment_deletions").is_none(), "live in prod again: {detail}");
}
