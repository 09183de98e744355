//! Replicas on one PostgreSQL (the API is stateless over it): a
//! claim waiting on one replica is woken by a job queued through another,
//! not only by its own re-check, also after PostgreSQL cut every
//! connection.

use std::time::Duration;

use heimdall_api::testing::{Options, Replica, TestApi, TestDatabase};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use crate::support::{enroll_agent, world, Client, World};

/// Two replicas whose waiting claims re-check too rarely to matter (only
/// a wake-up answers in time), the test world with a static account for
/// `prod` (its jobs are handed over without federating), and an Agent.
struct Replicas {
    a: TestApi,
    b: Replica,
    owner: String,
    world: World,
    agent: reqwest::Client,
}

async fn replicas() -> Replicas {
    let rare = || Options { claim_recheck: Some(Duration::from_secs(600)), ..Options::default() };
    let a = TestApi::with_options(TestDatabase::postgres().await, rare()).await;
    let b = a.replica(rare()).await;
    let on_a = Client::new(&a);
    let owner = a.owner_token.clone();
    let world = world(&on_a, &owner).await;
    let (agent, _) = enroll_agent(&on_a, &a, &owner, "a1").await;
    on_a.post("/v1/secrets", &owner, json!({ "name": "aws-static" })).await.expect(201);
    let account = json!({ "name": "static", "provider": "aws", "region": "eu-west-1", "state_bucket": "acme-tfstate",
                          "auth": { "kind": "static", "secret": "aws-static" } });
    on_a.post("/v1/cloud-accounts", &owner, account).await.expect(201);
    let link = json!({ "scope": "organization", "environment": "prod" });
    on_a.post("/v1/cloud-accounts/static/links", &owner, link).await.expect(201);
    Replicas { a, b, owner, world, agent }
}

impl Replicas {
    /// A claim waiting (up to 25 s) on replica A: its status and body.
    fn claim_on_a(&self) -> JoinHandle<(u16, Value)> {
        let (agent, url) = (self.agent.clone(), format!("{}/v1/agent/claim", self.a.agent_url));
        tokio::spawn(async move {
            let resp = agent.post(url).json(&json!({ "wait_seconds": 25 })).send().await.unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.unwrap_or(Value::Null))
        })
    }

    /// A Resource created through replica B: its id.
    async fn create_on_b(&self, name: &str) -> Value {
        let w = &self.world;
        let body = json!({ "component": w.component, "schema": w.schema, "environment": "prod", "name": name,
                           "input": { "bucket": format!("{name}-bucket") } });
        Client::for_url(&self.b.url).post("/v1/resources", &self.owner, body).await.expect(201)["id"].clone()
    }
}

/// The waiting claim was answered, well before its 25 s ran out, with the job of `resource`.
async fn answered_with(waiting: JoinHandle<(u16, Value)>, resource: &Value) {
    let (status, claimed) = tokio::time::timeout(Duration::from_secs(15), waiting)
        .await
        .expect("the claim on replica A was not woken by the job queued through replica B")
        .unwrap();
    assert_eq!((status, &claimed["job"]["resource_id"]), (200, resource), "{claimed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_waiting_on_one_replica_wakes_for_a_job_queued_through_another() {
    let r = replicas().await;
    let waiting = r.claim_on_a();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "the claim waits: nothing is queued yet");
    let created = r.create_on_b("woken").await;
    answered_with(waiting, &created).await;
}

/// Every connection of every replica cut at once (as a PostgreSQL restart
/// does): the next requests are served again without anyone acting, and
/// the replicas' wake-ups come back with their listening connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_recover_when_postgres_cuts_every_connection() {
    let r = replicas().await;
    let admin = sqlx::PgPool::connect(&heimdall_api::testing::postgres_admin_url()).await.unwrap();
    let database: (String,) =
        sqlx::query_as("SELECT current_database()::text").fetch_one(r.a.store.pool()).await.unwrap();
    let cut: Vec<(bool,)> = sqlx::query_as(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
    )
    .bind(&database.0)
    .fetch_all(&admin)
    .await
    .unwrap();
    assert!(cut.len() >= 2, "each replica had connections, its listener's among them: {cut:?}");

    // Served again by both, without a restart (a request may meet a cut connection once).
    for c in [Client::new(&r.a), Client::for_url(&r.b.url)] {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while c.get("/v1/domains", &r.owner).await.status != 200 {
            assert!(tokio::time::Instant::now() < deadline, "a replica did not recover");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // The wake-ups are back: a job queued through B answers a claim waiting on A.
    let waiting = r.claim_on_a();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let created = r.create_on_b("after-cut").await;
    answered_with(waiting, &created).await;
}

/// Each replica keeps its own compiled policies, keyed by the
/// organization's policy version: a policy made or deleted through one
/// replica applies on the other from its next request.
#[tokio::test]
async fn a_policy_changed_through_one_replica_applies_on_the_other_at_once() {
    let a = TestApi::start(TestDatabase::postgres().await).await;
    let b = a.replica(Options::default()).await;
    let (on_a, on_b) = (Client::new(&a), Client::for_url(&b.url));
    let owner = a.owner_token.clone();
    let admin = on_a.add_member(&owner, "admin@example.com", "admin").await;
    on_a.post("/v1/domains", &owner, json!({ "name": "payments" })).await.expect(201);
    // Both replicas compile (and keep) the organization's policies: none.
    on_a.get("/v1/domains/payments", &admin).await.expect(200);
    on_b.get("/v1/domains/payments", &admin).await.expect(200);

    let text = r#"forbid (principal, action == Heimdall::Action::"catalog.read", resource) unless { principal.role == "owner" };"#;
    let made =
        on_b.post("/v1/policies", &owner, json!({ "name": "owners-only", "text": text })).await.expect(201);
    on_a.get("/v1/domains/payments", &admin).await.expect_error(403, "FORBIDDEN");
    on_b.get("/v1/domains/payments", &admin).await.expect_error(403, "FORBIDDEN");

    let id = made["id"].as_str().unwrap();
    let gone = on_a.call(reqwest::Method::DELETE, &format!("/v1/policies/{id}"), &owner, None).await;
    assert_eq!(gone.status.as_u16(), 204, "{}", gone.text);
    on_b.get("/v1/domains/payments", &admin).await.expect(200);
    on_a.get("/v1/domains/payments", &admin).await.expect(200);
}
