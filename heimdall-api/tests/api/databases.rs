//! Databases and service users through the real routes, the schedule
//! driven by a `ManualClock`: the API offers each task when it is due and
//! to one Agent at a time, keeps the version of a rotation in flight
//! across a failure, waits out the grace before retiring the old login,
//! and notifies the organization of a failed rotation.

use std::sync::Arc;

use heimdall_api::testing::{TestApi, TestDatabase};
use heimdall_core::clock::{Clock, ManualClock};
use heimdall_core::dbusers::TaskKind;
use heimdall_core::ids::{AgentId, LeaseId, ServiceUserId};
use heimdall_core::ports::{DatabaseRecordStore, DatabaseStore};
use serde_json::{json, Value};
use time::Duration;

use crate::support::{enroll_agent, world, Client};

/// `POST` on the Agent channel as `agent`: (status, body).
pub(crate) async fn channel(agent: &reqwest::Client, api: &TestApi, path: &str, body: Value) -> (u16, Value) {
    let resp = agent.post(format!("{}{path}", api.agent_url)).json(&body).send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap() })
}

pub(crate) async fn claim(agent: &reqwest::Client, api: &TestApi) -> (u16, Value) {
    channel(agent, api, "/v1/agent/database-tasks/claim", json!({})).await
}

pub(crate) async fn report(
    agent: &reqwest::Client,
    api: &TestApi,
    task: &Value,
    outcome: Value,
) -> (u16, Value) {
    let path = format!("/v1/agent/database-tasks/{}/report", task["user_id"].as_str().unwrap());
    channel(agent, api, &path, json!({ "lease_id": task["lease_id"], "outcome": outcome })).await
}

/// `agent` syncs, reporting that it holds `version` of the user's secret
/// in dev (a rotation goes only to a holder of the current version).
pub(crate) async fn holds(agent: &reqwest::Client, api: &TestApi, version: i64) {
    let inventory = json!([{ "secret": "db-orders-app", "environment": "dev", "version": version, "deactivated": false }]);
    let (status, answer) = channel(agent, api, "/v1/agent/sync", json!({ "inventory": inventory })).await;
    assert_eq!(status, 200, "{answer}");
}

async fn done(agent: &reqwest::Client, api: &TestApi, task: &Value, login: &str) -> Value {
    let (status, user) = report(agent, api, task, json!({ "outcome": "done", "login": login })).await;
    assert_eq!(status, 200, "{user}");
    user
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedule_offers_each_task_when_due_to_one_agent_and_waits_out_the_grace_on_postgres() {
    schedule(TestDatabase::postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedule_offers_each_task_when_due_to_one_agent_and_waits_out_the_grace_on_sqlite() {
    schedule(TestDatabase::sqlite().await).await;
}

async fn schedule(database: TestDatabase) {
    let start = time::OffsetDateTime::now_utc();
    let clock = Arc::new(ManualClock::new(start));
    let api = TestApi::with_clock(database, clock.clone()).await;
    let c = Client::new(&api);
    let owner = api.owner_token.clone();
    world(&c, &owner).await;
    let (a1, _) = enroll_agent(&c, &api, &owner, "a1").await;
    let (a2, enrolled) = enroll_agent(&c, &api, &owner, "a2").await;
    let a2_id: AgentId = enrolled["agent"]["id"].as_str().unwrap().parse().unwrap();
    let (outsider, _) = enroll_agent(&c, &api, &owner, "a3").await;
    for agent in ["a1", "a2"] {
        c.post("/v1/environments/dev/agents", &owner, json!({ "agent": agent })).await.expect(201);
    }
    c.post("/v1/notifications", &owner, json!({ "name": "ops", "webhook": "http://127.0.0.1:9/hook" }))
        .await
        .expect(201);
    c.post("/v1/secrets", &owner, json!({ "name": "orders-admin" })).await.expect(201);
    let database = json!({
        "name": "orders", "engine": "postgres", "host": "db.internal", "port": 5432, "database": "orders",
        "environment": "dev", "admin_secret": "orders-admin",
    });
    // Bad input is refused with nothing kept.
    for (field, bad, code) in [
        ("host", json!("db internal"), "INVALID_INPUT"),
        ("database", json!("o; DROP"), "INVALID_INPUT"),
        ("admin_secret", json!("nope"), "NOT_FOUND"),
    ] {
        let mut body = database.clone();
        body[field] = bad;
        let reply = c.post("/v1/databases", &owner, body).await;
        assert_eq!(reply.code(), code, "{field}: {}", reply.body);
    }
    assert_eq!(c.get("/v1/databases", &owner).await.expect(200), json!([]));
    c.post("/v1/databases", &owner, database).await.expect(201);
    let user = json!({ "name": "app", "rotate_every": "1d", "grace": "1h" });
    for (field, bad) in [("rotate_every", "1y"), ("grace", "2d"), ("name", "App-1")] {
        let mut body = user.clone();
        body[field] = json!(bad);
        c.post("/v1/databases/orders/users", &owner, body).await.expect_error(422, "INVALID_INPUT");
    }
    let made = c.post("/v1/databases/orders/users", &owner, user.clone()).await.expect(201);
    let user_id: ServiceUserId = made["id"].as_str().unwrap().parse().unwrap();
    let org = api.bootstrapped.organization.id;
    assert_eq!(made["secret"], "db-orders-app");
    c.post("/v1/databases/orders/users", &owner, user).await.expect_error(409, "ALREADY_EXISTS");

    // Created by one Agent at a time; an Agent off the environment gets nothing.
    assert_eq!(claim(&outsider, &api).await.0, 204);
    let (status, task) = claim(&a1, &api).await;
    assert_eq!(status, 200, "{task}");
    assert_eq!((task["kind"].as_str(), task["version"].as_i64()), (Some("create"), Some(1)));
    assert!(!task.to_string().contains("password"), "no credential in a task: {task}");
    assert_eq!(claim(&a2, &api).await.0, 204, "leased to a1");

    // A failure notifies, waits, and keeps the version numbered for it.
    let (status, _) =
        report(&a1, &api, &task, json!({ "outcome": "failed", "reason": "cannot connect to orders" })).await;
    assert_eq!(status, 200);
    assert_eq!(claim(&a1, &api).await.0, 204, "a failure waits before it is offered again");
    let deliveries = c.get("/v1/notifications/deliveries", &owner).await.expect(200);
    assert!(deliveries.to_string().contains("database.rotation_failed"), "{deliveries}");
    let shown = c.get("/v1/databases/orders/users/app", &owner).await.expect(200);
    assert_eq!(shown["last_error"], "cannot connect to orders");
    clock.advance(Duration::seconds(61));
    let (_, task) = claim(&a2, &api).await;
    assert_eq!(
        (task["kind"].as_str(), task["version"].as_i64()),
        (Some("create"), Some(1)),
        "the same version"
    );
    // Only the current claim reports.
    let (status, _) = report(
        &a1,
        &api,
        &json!({ "user_id": task["user_id"], "lease_id": uuid::Uuid::new_v4() }),
        json!({ "outcome": "done", "login": "app_a" }),
    )
    .await;
    assert_eq!(status, 409);
    let ready = done(&a2, &api, &task, "app_a").await;
    assert_eq!(ready["current_version"], 1);
    assert!(ready.get("grace_until").is_none() && ready.get("last_error").is_none(), "{ready}");
    assert_eq!(claim(&a1, &api).await.0, 204, "nothing due until the rotation");
    holds(&a2, &api, 1).await;

    // Two rotations in a row, each on schedule, each with its grace.
    let mut version = 1;
    for _ in 0..2 {
        clock.advance(Duration::days(1));
        // What a2 reads now (a rotation is due) is stale once a1 rotated.
        let stale = api.store.get_service_user(org, user_id).await.unwrap();
        assert_eq!(heimdall_core::dbusers::due(&stale, clock.now()), Some(TaskKind::Rotate));
        // a1 has not reported the current credential: it would rotate onto
        // the login in use. Once it holds it, the rotation is its.
        assert_eq!(claim(&a1, &api).await.0, 204, "not to an Agent behind version {version}");
        holds(&a1, &api, version).await;
        let (_, task) = claim(&a1, &api).await;
        assert_eq!((task["kind"].as_str(), task["version"].as_i64()), (Some("rotate"), Some(version + 1)));
        let rotated = done(&a1, &api, &task, "app_b").await;
        let lease = LeaseId::from_uuid(uuid::Uuid::new_v4());
        let (now, until) = (clock.now(), clock.now() + Duration::minutes(1));
        let took =
            api.store.lease_service_user(&stale, a2_id, lease, TaskKind::Rotate, now, until).await.unwrap();
        assert!(!took, "a rotation decided on a stale read would rotate onto the login in its grace");
        version += 1;
        assert_eq!(
            (rotated["current_version"].as_i64(), rotated["retiring_version"].as_i64()),
            (Some(version), Some(version - 1))
        );
        let rotate_now = c.post("/v1/databases/orders/users/app/rotate", &owner, json!({})).await;
        assert_eq!(rotate_now.code(), "CONFLICT", "not while the old login is in its grace");
        clock.advance(Duration::minutes(59));
        assert_eq!(claim(&a1, &api).await.0, 204, "the grace is not over");
        clock.advance(Duration::minutes(1));
        assert_eq!(claim(&a2, &api).await.0, 204, "a2 has not fetched version {version}");
        holds(&a2, &api, version).await;
        let (_, retire) = claim(&a2, &api).await;
        assert_eq!(
            (retire["kind"].as_str(), retire["retiring_version"].as_i64()),
            (Some("retire"), Some(version - 1))
        );
        let retired = done(&a2, &api, &retire, "app_a").await;
        assert!(retired.get("grace_until").is_none(), "{retired}");
        let detail = c.get("/v1/secrets/db-orders-app", &owner).await.expect(200);
        let old =
            detail["versions"].as_array().unwrap().iter().find(|v| v["version"] == version - 1).unwrap();
        assert!(old["deactivated_at"].is_string(), "the retired login's version is deactivated: {old}");
    }
    // Asked for: rotated at the next claim, not on schedule.
    c.post("/v1/databases/orders/users/app/rotate", &owner, json!({})).await.expect(202);
    holds(&a1, &api, version).await;
    let (_, task) = claim(&a1, &api).await;
    assert_eq!(task["kind"], "rotate");
    let listed = c.get("/v1/databases/orders/users", &owner).await.expect(200);
    assert_eq!(listed[0]["pending_version"], version + 1, "{listed}");
    let events = c.get("/v1/events?limit=100", &owner).await.expect(200);
    let actions: Vec<&str> = events.as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    for action in [
        "database.user_ready",
        "database.user_rotated",
        "database.login_retired",
        "database.rotation_failed",
        "database.rotation_requested",
    ] {
        assert!(actions.contains(&action), "{action}: {actions:?}");
    }
}
