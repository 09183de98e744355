//! Replicas on one PostgreSQL (DESIGN: the API is stateless over it): a
//! claim waiting on one replica is woken by a job queued through another,
//! not only by its own re-check.

use std::time::Duration;

use heimdall_api::testing::{Options, TestApi, TestDatabase};
use serde_json::{json, Value};

use crate::support::{enroll_agent, world, Client};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_waiting_on_one_replica_wakes_for_a_job_queued_through_another() {
    // Re-checks too rare to matter: only a wake-up can answer the claim in time.
    let rare = || Options { claim_recheck: Some(Duration::from_secs(600)), ..Options::default() };
    let a = TestApi::with_options(TestDatabase::postgres().await, rare()).await;
    let b = a.replica(rare()).await;
    let (on_a, on_b) = (Client::new(&a), Client::for_url(&b.url));
    let owner = a.owner_token.clone();
    let w = world(&on_a, &owner).await;
    let (agent, _) = enroll_agent(&on_a, &a, &owner, "a1").await;
    // A static account: the claim hands the job over without federating.
    on_a.post("/v1/secrets", &owner, json!({ "name": "aws-static" })).await.expect(201);
    let account = json!({ "name": "static", "provider": "aws", "region": "eu-west-1", "state_bucket": "acme-tfstate",
                          "auth": { "kind": "static", "secret": "aws-static" } });
    on_a.post("/v1/cloud-accounts", &owner, account).await.expect(201);
    let link = json!({ "scope": "organization", "environment": "prod" });
    on_a.post("/v1/cloud-accounts/static/links", &owner, link).await.expect(201);

    let claim_url = format!("{}/v1/agent/claim", a.agent_url);
    let waiting = tokio::spawn(async move {
        let resp = agent.post(claim_url).json(&json!({ "wait_seconds": 25 })).send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json::<Value>().await.unwrap_or(Value::Null))
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "the claim waits: nothing is queued yet");
    let body = json!({ "component": w.component, "schema": w.schema, "environment": "prod", "name": "woken",
                       "input": { "bucket": "woken-bucket" } });
    let created = on_b.post("/v1/resources", &owner, body).await.expect(201);

    // Answered well before its 25 s wait ran out (and its re-check never came).
    let (status, claimed) = tokio::time::timeout(Duration::from_secs(15), waiting)
        .await
        .expect("the claim on replica A was not woken by the job queued through replica B")
        .unwrap();
    assert_eq!(status, 200, "{claimed}");
    assert_eq!(claimed["job"]["resource_id"], created["id"], "{claimed}");
}

/// Every connection of every replica cut at once (as a PostgreSQL restart
/// does): the next requests are served again without anyone acting, and
/// the replicas' wake-ups come back with their listening connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_recover_when_postgres_cuts_every_connection() {
    let rare = || Options { claim_recheck: Some(Duration::from_secs(600)), ..Options::default() };
    let a = TestApi::with_options(TestDatabase::postgres().await, rare()).await;
    let b = a.replica(rare()).await;
    let (on_a, on_b) = (Client::new(&a), Client::for_url(&b.url));
    let owner = a.owner_token.clone();
    let w = world(&on_a, &owner).await;
    let (agent, _) = enroll_agent(&on_a, &a, &owner, "a1").await;
    on_a.post("/v1/secrets", &owner, json!({ "name": "aws-static" })).await.expect(201);
    let account = json!({ "name": "static", "provider": "aws", "region": "eu-west-1", "state_bucket": "acme-tfstate",
                          "auth": { "kind": "static", "secret": "aws-static" } });
    on_a.post("/v1/cloud-accounts", &owner, account).await.expect(201);
    on_a.post(
        "/v1/cloud-accounts/static/links",
        &owner,
        json!({ "scope": "organization", "environment": "prod" }),
    )
    .await
    .expect(201);

    let admin = sqlx::PgPool::connect(&heimdall_api::testing::postgres_admin_url()).await.unwrap();
    let database: (String,) =
        sqlx::query_as("SELECT current_database()::text").fetch_one(a.store.pool()).await.unwrap();
    let cut: Vec<(bool,)> = sqlx::query_as(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
    )
    .bind(&database.0)
    .fetch_all(&admin)
    .await
    .unwrap();
    assert!(cut.len() >= 2, "each replica had connections, its listener's among them: {cut:?}");

    // Served again by both, without a restart (a request may meet a cut connection once).
    for c in [&on_a, &on_b] {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while c.get("/v1/domains", &owner).await.status != 200 {
            assert!(tokio::time::Instant::now() < deadline, "a replica did not recover");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // The wake-ups are back: a job queued through B answers a claim waiting on A.
    let claim_url = format!("{}/v1/agent/claim", a.agent_url);
    let waiting = tokio::spawn(async move {
        let resp = agent.post(claim_url).json(&json!({ "wait_seconds": 25 })).send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json::<Value>().await.unwrap_or(Value::Null))
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let body = json!({ "component": w.component, "schema": w.schema, "environment": "prod", "name": "after-cut",
                       "input": { "bucket": "after-cut" } });
    let created = on_b.post("/v1/resources", &owner, body).await.expect(201);
    let (status, claimed) = tokio::time::timeout(Duration::from_secs(15), waiting)
        .await
        .expect("no wake-up after the connections were cut")
        .unwrap();
    assert_eq!((status, &claimed["job"]["resource_id"]), (200, &created["id"]), "{claimed}");
}
