//! The sync answer's secrets as a delta: an Agent that says which
//! generation it holds gets only the secrets changed after it (created,
//! edited, linked to a Component, a key bound) and the ids of those
//! deleted; one that says nothing, or a generation the API has not
//! reached, gets the whole list.

use reqwest::Method;
use serde_json::{json, Value};

use heimdall_api::testing::{TestApi, TestDatabase};

use crate::support::{enroll_agent, world, Client};

crate::on_every_backend!(an_agent_gets_only_the_secrets_changed_since_the_generation_it_holds);

async fn sync(agent: &reqwest::Client, api: &TestApi, known: Option<i64>) -> Value {
    sync_after(agent, api, known, None).await
}

/// A sync that says it applied the answer given at `applied`.
async fn sync_after(
    agent: &reqwest::Client,
    api: &TestApi,
    known: Option<i64>,
    applied: Option<&Value>,
) -> Value {
    let mut body = json!({ "inventory": [] });
    if let Some(applied) = applied {
        body["applied_through"] = applied["at"].clone();
    }
    if let Some(known) = known {
        body["secrets_known"] = json!(known);
    }
    let url = format!("{}/v1/agent/sync", api.agent_url);
    let resp = agent.post(url).json(&body).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    resp.json().await.unwrap()
}

/// The names in an answer; a personal secret's without its owner's
/// prefix (`~<member>.`).
fn names(answer: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = answer["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .map(|n| if n.starts_with('~') { n.split_once('.').map_or(n, |(_, name)| name) } else { n })
        .collect();
    names.sort_unstable();
    names
}

fn generation(answer: &Value) -> i64 {
    answer["secrets_generation"].as_i64().expect("a generation")
}

async fn an_agent_gets_only_the_secrets_changed_since_the_generation_it_holds(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let (edge, _) = enroll_agent(&c, &api, owner, "edge-1").await;
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-1" })).await.expect(201);
    for name in ["alpha", "beta", "gamma"] {
        c.post("/v1/secrets", owner, json!({ "name": name })).await.expect(201);
    }

    // Knowing nothing: the whole list, and how far it goes.
    let whole = sync(&edge, &api, None).await;
    assert_eq!(names(&whole), ["alpha", "beta", "gamma"]);
    assert!(whole.get("secrets_since").is_none(), "{whole}");
    let g1 = generation(&whole);

    // Nothing changed: an empty delta after the same generation.
    let unchanged = sync(&edge, &api, Some(g1)).await;
    assert_eq!(names(&unchanged), Vec::<&str>::new());
    assert_eq!(unchanged["secrets_since"], g1);
    assert_eq!(generation(&unchanged), g1);
    assert!(unchanged.get("removed_secrets").is_none(), "{unchanged}");

    // A secret linked to a Component (which decides policies), one created,
    // a personal one created with its key bound: only those.
    c.call(Method::PATCH, "/v1/secrets/beta", owner, Some(json!({ "components": [w.component] })))
        .await
        .expect(200);
    c.post("/v1/secrets", owner, json!({ "name": "delta" })).await.expect(201);
    let member = c.add_member(owner, "bo@example.com", "member").await;
    c.personal_secret(&member, "bo-notes").await;
    let changed = sync(&edge, &api, Some(g1)).await;
    assert_eq!(names(&changed), ["beta", "bo-notes", "delta"]);
    assert_eq!(changed["secrets_since"], g1);
    let g2 = generation(&changed);
    assert!(g2 > g1);
    let secrets = changed["secrets"].as_array().unwrap();
    let beta = secrets.iter().find(|s| s["name"] == "beta").unwrap();
    assert_eq!(beta["components"], json!([w.component]));
    let notes = secrets.iter().find(|s| s["name"].as_str().unwrap().ends_with(".bo-notes")).unwrap();
    assert_eq!(notes["owner_keys"].as_array().map(Vec::len), Some(1), "{notes}");

    // Unlinked again: a delete of its Component row is a change too.
    c.call(Method::PATCH, "/v1/secrets/beta", owner, Some(json!({ "components": [] }))).await.expect(200);
    let unlinked = sync(&edge, &api, Some(g2)).await;
    assert_eq!(names(&unlinked), ["beta"]);
    assert!(unlinked["secrets"][0].get("components").is_none(), "{unlinked}");
    let g3 = generation(&unlinked);

    // Being deleted: still listed (the Agent deletes its copies); once
    // the Agent applied that answer and holds none, deleted, and the delta
    // names it as gone.
    c.call(Method::DELETE, "/v1/secrets/gamma", owner, None).await.expect(200);
    let gamma = c.get("/v1/secrets/gamma", owner).await.expect(200)["secret"]["id"].clone();
    let deleting = sync(&edge, &api, Some(g3)).await;
    assert_eq!(names(&deleting), ["gamma"]);
    assert_eq!(deleting["deleted_secrets"], json!(["gamma"]));
    let deleted = sync_after(&edge, &api, Some(generation(&deleting)), Some(&deleting)).await;
    assert_eq!(c.get("/v1/secrets/gamma", owner).await.expect(200)["secret"]["status"], "deleted");
    assert_eq!(deleted["removed_secrets"], json!([gamma]), "{deleted}");
    assert!(!names(&deleted).contains(&"gamma"));
    let g4 = generation(&deleted);
    let after = sync(&edge, &api, None).await;
    assert_eq!(names(&after), ["alpha", "beta", "bo-notes", "delta"], "a whole list leaves it out");
    assert!(after.get("removed_secrets").is_none());

    // A generation the API has not reached (its database was restored
    // from a backup): the whole list.
    let ahead = sync(&edge, &api, Some(g4 + 1000)).await;
    assert!(ahead.get("secrets_since").is_none(), "{ahead}");
    assert_eq!(names(&ahead), ["alpha", "beta", "bo-notes", "delta"]);
}

/// Each start of an API process moves the floor: a list an Agent took
/// before it is answered whole, through any replica. (A database restored
/// from a backup is followed by a start, so no Agent keeps a list of
/// secrets the database lost.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_from_before_an_api_start_is_answered_whole() {
    let api = TestApi::start(TestDatabase::postgres().await).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201);
    let (edge, _) = enroll_agent(&c, &api, owner, "edge-1").await;
    c.post("/v1/secrets", owner, json!({ "name": "alpha" })).await.expect(201);
    let before = generation(&sync(&edge, &api, None).await);
    assert_eq!(sync(&edge, &api, Some(before)).await["secrets_since"], before, "a delta before the start");

    let _started = api.replica(heimdall_api::testing::Options::default()).await;
    let after = sync(&edge, &api, Some(before)).await;
    assert!(after.get("secrets_since").is_none(), "{after}");
    assert_eq!(names(&after), ["alpha"]);
    let now = generation(&after);
    assert!(now > before);
    assert_eq!(sync(&edge, &api, Some(now)).await["secrets_since"], now, "deltas again from there");
}

crate::on_every_backend!(an_agent_that_asks_is_told_only_the_current_versions_its_report_does_not_say);

async fn sync_reporting(agent: &reqwest::Client, api: &TestApi, inventory: Value, omit: bool) -> Value {
    let url = format!("{}/v1/agent/sync", api.agent_url);
    let body = json!({ "inventory": inventory, "current_omits_held": omit });
    let resp = agent.post(url).json(&body).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    resp.json().await.unwrap()
}

async fn an_agent_that_asks_is_told_only_the_current_versions_its_report_does_not_say(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let prod = c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201)["id"].clone();
    let (edge1, _) = enroll_agent(&c, &api, owner, "edge-1").await;
    let (edge2, _) = enroll_agent(&c, &api, owner, "edge-2").await;
    for agent in ["edge-1", "edge-2"] {
        c.post("/v1/environments/prod/agents", owner, json!({ "agent": agent })).await.expect(201);
    }
    let item = |secret: &str, version: i64| json!({ "secret": secret, "environment": prod, "version": version, "deactivated": false });
    // edge-2 holds api-key 2; edge-1 is behind on it and holds db-password's current 1.
    sync_reporting(&edge2, &api, json!([item("api-key", 2)]), false).await;
    let mine = json!([item("api-key", 1), item("db-password", 1)]);
    let whole = sync_reporting(&edge1, &api, mine.clone(), false).await;
    let versions = |answer: &Value| answer["current_versions"].clone();
    assert_eq!(
        versions(&whole),
        json!([{ "secret": "api-key", "environment": prod, "version": 2 },
               { "secret": "db-password", "environment": prod, "version": 1 }])
    );
    assert!(whole.get("current_omits_held").is_none());
    // Asked for: only what differs from its own report.
    let short = sync_reporting(&edge1, &api, mine, true).await;
    assert_eq!(short["current_omits_held"], true);
    assert_eq!(versions(&short), json!([{ "secret": "api-key", "environment": prod, "version": 2 }]));
}
