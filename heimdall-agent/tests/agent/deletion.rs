//! Deleting a secret without leaving a copy behind, with real Agents: one
//! keeps values in SQLite, one in PostgreSQL. The delete completes through
//! both Agents' syncs and the rows are gone from both stores; a revoked
//! Agent that held a secret makes its delete `VALUE_MAY_PERSIST`, until an
//! owner forgets it. An Agent unassigned from an environment deletes what
//! it holds there, unless it holds the only copy of a current version; a
//! secret deleted in one environment goes from there only.

use reqwest::Method;
use serde_json::json;

use crate::support::World;
use crate::values::{agent_database, configure, eventually, identity, set, Store};

/// How many values (not tombstones: an Agent writes those for every
/// deactivated version, held or not) the store at `url` keeps of `secret`.
async fn rows(url: &str, secret: &str) -> i64 {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    let (n,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM secret_values WHERE secret = $1 AND deactivated = 0")
            .bind(secret.to_owned())
            .fetch_one(&pool)
            .await
            .unwrap();
    pool.close().await;
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_leaves_no_copy_in_either_agents_store() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let (on_sqlite, on_postgres) = (w.enroll("edge-sqlite").await, w.enroll("edge-postgres").await);
    let (_, _, pg_url) = agent_database().await;
    let (_, sqlite_file) = configure(&on_sqlite, Store::Sqlite, None);
    configure(&on_postgres, Store::Postgres, Some(&pg_url));
    let sqlite_url = format!("sqlite://{}", sqlite_file.unwrap().display());
    for agent in ["edge-sqlite", "edge-postgres"] {
        w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": agent })).await;
    }
    for secret in ["db-password", "api-key"] {
        w.post(&owner, "/v1/secrets", json!({ "name": secret })).await;
    }
    let (mut sqlite_agent, mut postgres_agent) = (w.run_agent(&on_sqlite), w.run_agent(&on_postgres));
    eventually(&on_sqlite, "both Agents' local URLs", || async {
        let (_, holders) = w.call(Method::GET, "/v1/secrets/db-password/holders?environment=dev", None).await;
        holders.as_array().is_some_and(|h| h.len() == 2 && h.iter().all(|h| h["url"].is_string()))
    })
    .await;
    let who = identity(&w, &owner).await;
    for secret in ["db-password", "api-key"] {
        assert_eq!(set(&w, &owner, &who, secret, "dev", "s3cret").await, 1);
    }
    assert_eq!((rows(&sqlite_url, "db-password").await, rows(&pg_url, "db-password").await), (1, 1));
    let holders = |secret: &'static str| {
        let w = &w;
        async move {
            let (_, detail) = w.call(Method::GET, &format!("/v1/secrets/{secret}"), None).await;
            let mut agents: Vec<String> = detail["holdings"]
                .as_array()
                .map(|h| h.iter().map(|h| h["agent"].as_str().unwrap().to_owned()).collect())
                .unwrap_or_default();
            agents.sort();
            (agents, detail["secret"]["status"].as_str().unwrap_or_default().to_owned())
        }
    };
    eventually(&on_sqlite, "both inventories list db-password", || async {
        holders("db-password").await.0 == ["edge-postgres", "edge-sqlite"]
    })
    .await;

    // Both will sync again: the delete starts, and each Agent deletes on its next sync.
    let (status, started) = w.call(Method::DELETE, "/v1/secrets/db-password", None).await;
    assert_eq!((status, started["secret"]["status"].as_str()), (200, Some("deleting")), "{started}");
    eventually(&on_sqlite, "the delete to complete", || async {
        holders("db-password").await.1 == "deleted"
    })
    .await;
    assert_eq!(rows(&sqlite_url, "db-password").await, 0, "gone from the SQLite store on disk");
    assert_eq!(rows(&pg_url, "db-password").await, 0, "gone from the PostgreSQL store");
    assert_eq!(rows(&sqlite_url, "api-key").await, 1, "nothing else went");
    let (_, events) = w.call(Method::GET, "/v1/events?action=secret.deleted", None).await;
    assert_eq!(events.as_array().map(Vec::len), Some(1), "{events}");

    // The PostgreSQL Agent is revoked (and stops) while it holds api-key.
    let _ = postgres_agent.kill().await;
    let (status, _) = w.call(Method::DELETE, "/v1/agents/edge-postgres", None).await;
    assert_eq!(status, 200);
    let (status, refused) = w.call(Method::DELETE, "/v1/secrets/api-key", None).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (409, Some("VALUE_MAY_PERSIST")), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("edge-postgres"), "{refused}");
    assert_eq!(rows(&sqlite_url, "api-key").await, 1, "refused: nothing deleted anywhere");

    // Its store is destroyed: an owner forgets it, and the delete goes through the other Agent.
    let forget = json!({ "confirm_store_destroyed": true });
    let forgotten = w.post(&owner, "/v1/agents/edge-postgres/forget", forget).await;
    assert_eq!(forgotten["agent"]["name"], "edge-postgres");
    let (status, _) = w.call(Method::DELETE, "/v1/secrets/api-key", None).await;
    assert_eq!(status, 200);
    eventually(&on_sqlite, "api-key deleted", || async { holders("api-key").await.1 == "deleted" }).await;
    assert_eq!(rows(&sqlite_url, "api-key").await, 0);
    let (_, events) = w.call(Method::GET, "/v1/events?action=agent.forgotten", None).await;
    assert_eq!(events[0]["detail"]["secrets_it_held"], json!(["api-key"]), "{events}");

    // Unassigned from an environment, an Agent deletes what it holds there, and only that.
    w.post(&owner, "/v1/environments", json!({ "name": "staging" })).await;
    w.post(&owner, "/v1/environments/staging/agents", json!({ "agent": "edge-sqlite" })).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "cache-key" })).await;
    assert_eq!(set(&w, &owner, &who, "cache-key", "staging", "c4che").await, 1);
    assert_eq!(set(&w, &owner, &who, "cache-key", "dev", "c4che-dev").await, 1);
    let unassign = "/v1/environments/staging/agents/edge-sqlite";
    eventually(&on_sqlite, "the inventory to list cache-key in staging", || async {
        let (status, detail) = w.call(Method::GET, "/v1/agents/edge-sqlite", None).await;
        status == 200 && detail["holdings"].as_array().unwrap().iter().any(|h| h["environment"] == "staging")
    })
    .await;
    let (status, refused) = w.call(Method::DELETE, unassign, None).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("CONFLICT")),
        "the only copy: {refused}"
    );
    // Its only copy deactivated (a tombstone, once synced), it may go.
    w.post(&owner, "/v1/secrets/cache-key/deactivate", json!({ "environment": "staging", "version": 1 }))
        .await;
    eventually(&on_sqlite, "the tombstone in the inventory", || async {
        let (_, detail) = w.call(Method::GET, "/v1/agents/edge-sqlite", None).await;
        detail["holdings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["environment"] == "staging" && h["deactivated"] == true)
    })
    .await;
    let (status, _) = w.call(Method::DELETE, unassign, None).await;
    assert_eq!(status, 200);
    eventually(&on_sqlite, "its next inventory to list only dev's copy", || async {
        let (_, detail) = w.call(Method::GET, "/v1/agents/edge-sqlite", None).await;
        let held = detail["holdings"].as_array().unwrap().iter().filter(|h| h["secret"] == "cache-key");
        held.map(|h| h["environment"].as_str().unwrap().to_owned()).collect::<Vec<_>>() == ["dev"]
    })
    .await;

    // Deleted in dev only: the Agent deletes its dev copy; the secret stays.
    let (status, started) = w.call(Method::DELETE, "/v1/secrets/cache-key?environment=dev", None).await;
    assert_eq!((status, started["secret"]["status"].as_str()), (200, Some("active")), "{started}");
    eventually(&on_sqlite, "cache-key deleted in dev", || async {
        let (_, detail) = w.call(Method::GET, "/v1/secrets/cache-key", None).await;
        detail["environment_deletions"][0]["status"] == "deleted"
    })
    .await;
    assert_eq!(rows(&sqlite_url, "cache-key").await, 0);
    let _ = sqlite_agent.kill().await;
}

/// A delete right after a write, before the Agent's next sync reported the
/// value: it is sent to every Agent holding the environment and is done
/// only once each has heard of it and holds none of it; the value is not
/// served after. A grant issued before the delete stores nothing after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_right_after_a_write_leaves_no_value_served() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let config = w.enroll("edge-1").await;
    // A sync a minute apart, as by default: the write lands between two.
    let (local_url, _) = crate::values::configure_syncing_every(&config, Store::Sqlite, None, 60);
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "edge-1" })).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "victim" })).await;
    let mut agent = w.run_agent(&config);
    eventually(&config, "the Agent's local URL", || async {
        let (_, holders) = w.call(Method::GET, "/v1/secrets/victim/holders?environment=dev", None).await;
        holders[0]["url"].as_str() == Some(local_url.as_str())
    })
    .await;
    let who = identity(&w, &owner).await;
    let reader = crate::support::agent_client(&config, &local_url, &who);
    assert_eq!(set(&w, &owner, &who, "victim", "dev", "x-value").await, 1);
    // A second grant, taken before the delete and used after it.
    let late = w.post(&owner, "/v1/secrets/victim/versions", json!({ "environment": "dev" })).await;
    assert_eq!(reader.get_value("victim", "dev", None).await.unwrap().value.expose(), "x-value");

    let (status, started) = w.call(Method::DELETE, "/v1/secrets/victim?environment=dev", None).await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(
        started["environment_deletions"][0]["status"], "deleting",
        "edge-1 has not heard of it: {started}"
    );

    // The Agent hears of it at its next sync (asked for now, as SIGHUP does).
    let pid = agent.id().unwrap().to_string();
    let hangup =
        || assert!(std::process::Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
    hangup();
    eventually(&config, "the value gone from edge-1", || async {
        reader
            .get_value("victim", "dev", None)
            .await
            .is_err_and(|e| e.code() == Some(heimdall_sdk::ErrorCode::NotFound))
    })
    .await;
    eventually(&config, "the deletion done", || async {
        hangup();
        let (_, detail) = w.call(Method::GET, "/v1/secrets/victim", None).await;
        detail["environment_deletions"][0]["status"] == "deleted"
    })
    .await;
    let (_, detail) = w.call(Method::GET, "/v1/secrets/victim", None).await;
    assert!(detail["holdings"].as_array().is_none_or(|h| h.is_empty()), "deleted, and held: {detail}");

    // The grant from before: refused, nothing stored.
    let holder = &late["holders"][0];
    let id: heimdall_core::ids::AgentId = holder["agent_id"].as_str().unwrap().parse().unwrap();
    let writer = heimdall_sdk::AgentClient::new(&local_url, &who, id, None).unwrap();
    let refused = writer
        .put_value("victim", "dev", 2, holder["grant"].as_str().unwrap(), "late-value")
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(heimdall_sdk::ErrorCode::Conflict), "{refused}");
    assert!(reader.get_value("victim", "dev", Some(2)).await.is_err());
    agent.kill().await.unwrap();
}
