//! The organization's notification channel: an owner points it at a
//! webhook and is shown its secret once; a notified event (here
//! `secret.at_risk`) is POSTed signed with HMAC-SHA256 over
//! `<timestamp>.<body>`, tried again after a failure, and logged.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use heimdall_api::testing::{TestApi, TestDatabase};
use hmac::{Hmac, Mac};
use reqwest::Method;
use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;

use crate::support::{enroll_agent, Client};

crate::on_every_backend!(
    a_notified_event_reaches_the_webhook_signed_and_is_retried,
    a_channel_is_pointed_elsewhere_and_renamed_in_place
);

type Received = Arc<Mutex<Vec<(HeaderMap, Vec<u8>)>>>;

/// A webhook receiver on 127.0.0.1 that answers 500 the first time, then 204.
async fn receiver() -> (String, Received) {
    let received: Received = Arc::default();
    let kept = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                let mut all = kept.lock().unwrap();
                all.push((headers, body.to_vec()));
                if all.len() == 1 {
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::NO_CONTENT
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, received)
}

async fn a_notified_event_reaches_the_webhook_signed_and_is_retried(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let admin = c.add_member(owner, "admin@example.com", "admin").await;
    c.add_member(owner, "ana@example.com", "member").await;
    let (url, received) = receiver().await;

    // Only an owner makes one; only https, or http to this machine.
    let body = json!({ "name": "ops", "webhook": url });
    c.post("/v1/notifications", &admin, body.clone()).await.expect_error(403, "FORBIDDEN");
    let plain = json!({ "name": "ops", "webhook": "http://hooks.example.com/x" });
    c.post("/v1/notifications", owner, plain).await.expect_error(422, "INVALID_INPUT");
    let created = c.post("/v1/notifications", owner, body).await.expect(201);
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{created}");
    let listed = c.get("/v1/notifications", &admin).await.expect(200);
    assert_eq!(listed[0]["name"], "ops");
    assert!(!listed.to_string().contains(&secret), "the secret is shown once: {listed}");
    // The URL's path (a receiver's credential, for some) is shown nowhere and stored only sealed.
    let host = url.trim_end_matches("/hook").to_owned();
    assert_eq!(listed[0]["url"], format!("{host}/…"), "{listed}");
    assert!(!listed.to_string().contains("/hook"), "{listed}");
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(api.database.url()).await.unwrap();
    let (shown, sealed): (String, String) =
        sqlx::query_as("SELECT url, sealed_url FROM notification_channels").fetch_one(&pool).await.unwrap();
    pool.close().await;
    assert!(
        !shown.contains("/hook") && !sealed.contains("hook") && sealed.starts_with("v1:"),
        "{shown} {sealed}"
    );

    // A secret at risk: ana read it, then leaves.
    c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201);
    let (edge, _) = enroll_agent(&c, &api, owner, "edge-1").await;
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-1" })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);
    c.post("/v1/secrets/db-password/versions", owner, json!({ "environment": "prod" })).await.expect(201);
    let at = time::OffsetDateTime::now_utc().format(&Rfc3339).unwrap();
    let read = json!({ "records": [{ "seq": 1, "accessor": "ana@example.com", "at": at, "secret": "db-password",
                                     "environment": "prod", "version": 1, "from": "10.0.0.7" }] });
    let synced = edge.post(format!("{}/v1/agent/sync", api.agent_url)).json(&read).send().await.unwrap();
    assert_eq!(synced.status().as_u16(), 200);
    c.call(Method::DELETE, "/v1/members/ana@example.com", owner, None).await.expect(200);

    // Refused once (500), delivered on the next try.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while received.lock().unwrap().len() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not delivered twice: {:?}",
            received.lock().unwrap().len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let got = received.lock().unwrap().clone();
    for (headers, body) in &got {
        let header =
            |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{}.", header("x-heimdall-timestamp")).as_bytes());
        mac.update(body);
        let expected = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
        assert_eq!(header("x-heimdall-signature"), expected, "signed with the secret shown");
        assert_eq!(header("x-heimdall-event"), "secret.at_risk");
        let event: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(
            (event["action"].as_str(), event["detail"]["email"].as_str()),
            (Some("secret.at_risk"), Some("ana@example.com"))
        );
        assert_eq!(event["detail"]["secret"], "db-password");
    }
    assert_eq!(got[0].1, got[1].1, "the same event both times");
    assert_eq!(got[0].0.get("x-heimdall-delivery"), got[1].0.get("x-heimdall-delivery"));

    let log = c.get("/v1/notifications/deliveries", &admin).await.expect(200);
    let log = log.as_array().unwrap();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(
        (log[0]["status"].as_str(), log[0]["attempts"].as_u64()),
        (Some("delivered"), Some(2)),
        "{log:?}"
    );
    assert_eq!(log[0]["last_result"], "HTTP 2xx", "the status class only");
    assert_eq!(log[0]["channel"], "ops");

    // Removed: nothing more goes there.
    c.call(Method::DELETE, "/v1/notifications/ops", owner, None).await.expect(200);
    assert_eq!(c.get("/v1/notifications", owner).await.expect(200), json!([]));
    c.call(Method::DELETE, "/v1/notifications/ops", owner, None).await.expect_error(404, "NOT_FOUND");
}

/// A receiver that holds each request `hold` before it answers 204; what it got.
async fn slow_receiver(hold: Duration) -> (u16, Received) {
    let received: Received = Arc::default();
    let kept = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().push((headers, body.to_vec()));
                tokio::time::sleep(hold).await;
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (port, received)
}

/// Makes `secret.at_risk` happen: a member who read a secret leaves.
async fn an_event_at_risk(c: &Client, api: &TestApi, owner: &str) {
    c.add_member(owner, "ana@example.com", "member").await;
    c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201);
    let (edge, _) = enroll_agent(c, api, owner, "edge-1").await;
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-1" })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);
    c.post("/v1/secrets/db-password/versions", owner, json!({ "environment": "prod" })).await.expect(201);
    let at = time::OffsetDateTime::now_utc().format(&Rfc3339).unwrap();
    let read = json!({ "records": [{ "seq": 1, "accessor": "ana@example.com", "at": at, "secret": "db-password",
                                     "environment": "prod", "version": 1, "from": "10.0.0.7" }] });
    let synced = edge.post(format!("{}/v1/agent/sync", api.agent_url)).json(&read).send().await.unwrap();
    assert_eq!(synced.status().as_u16(), 200);
    c.call(Method::DELETE, "/v1/members/ana@example.com", owner, None).await.expect(200);
}

/// With the API's default configuration, a webhook reaches no address on
/// its own machine or network, by address or by a name that resolves to
/// one, and the delivery log says only that there was no answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_reaches_no_internal_address_by_address_or_by_name() {
    let options = heimdall_api::testing::Options { webhooks_off_loopback: true, ..Default::default() };
    let api = TestApi::with_options(TestDatabase::sqlite().await, options).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let (port, received) = slow_receiver(Duration::ZERO).await;
    for (name, host) in [("by-address", "127.0.0.1"), ("by-name", "localhost")] {
        let body = json!({ "name": name, "webhook": format!("http://{host}:{port}/hook") });
        c.post("/v1/notifications", owner, body).await.expect(201);
    }
    an_event_at_risk(&c, &api, owner).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let log = c.get("/v1/notifications/deliveries", owner).await.expect(200);
        let tried = log.as_array().unwrap().iter().filter(|d| d["attempts"].as_u64() >= Some(2)).count();
        if tried == 2 {
            for delivery in log.as_array().unwrap() {
                assert_eq!(delivery["last_result"], "no answer", "{log}");
            }
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "not tried twice each: {log}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(received.lock().unwrap().is_empty(), "a webhook reached this machine");
}

/// One endpoint that holds every request does not hold up another's
/// deliveries: each channel is sent to on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_webhook_does_not_hold_up_another() {
    let api = TestApi::start(TestDatabase::sqlite().await).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let (slow, held) = slow_receiver(Duration::from_secs(8)).await;
    let (fast, got) = slow_receiver(Duration::ZERO).await;
    for (name, port) in [("a-slow", slow), ("b-fast", fast)] {
        let body = json!({ "name": name, "webhook": format!("http://127.0.0.1:{port}/hook") });
        c.post("/v1/notifications", owner, body).await.expect(201);
    }
    an_event_at_risk(&c, &api, owner).await;
    let started = tokio::time::Instant::now();
    while got.lock().unwrap().is_empty() || held.lock().unwrap().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(15), "not both sent");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = c.get("/v1/notifications/deliveries", owner).await.expect(200);
    let fast_done =
        log.as_array().unwrap().iter().any(|d| d["channel"] == "b-fast" && d["status"] == "delivered");
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(5), "the fast one waited {waited:?} behind the slow one");
    // Its delivery is recorded while the slow one still holds its request.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut fast_done = fast_done;
    while !fast_done {
        assert!(tokio::time::Instant::now() < deadline, "the fast delivery was not recorded");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let log = c.get("/v1/notifications/deliveries", owner).await.expect(200);
        fast_done =
            log.as_array().unwrap().iter().any(|d| d["channel"] == "b-fast" && d["status"] == "delivered");
    }
    assert!(started.elapsed() < Duration::from_secs(8), "recorded only after the slow one answered");
}

/// A channel is pointed at another webhook and renamed in place: its next
/// delivery goes to the new address (signed with the same secret), the
/// old one hears nothing more, and the feed records the new host only.
async fn a_channel_is_pointed_elsewhere_and_renamed_in_place(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let admin = c.add_member(owner, "admin@example.com", "admin").await;
    let (old_url, old_hears) = receiver().await;
    let (new_url, new_hears) = receiver().await;
    c.post("/v1/notifications", owner, json!({ "name": "ops", "webhook": old_url })).await.expect(201);
    c.post("/v1/notifications", owner, json!({ "name": "pager", "webhook": old_url })).await.expect(201);
    let patch = |key: &str, body: Value, token: &str| {
        let (path, token, c) = (format!("/v1/notifications/{key}"), token.to_owned(), &c);
        async move { c.call(Method::PATCH, &path, &token, Some(body)).await }
    };

    patch("ops", json!({ "webhook": "http://hooks.example.com/x" }), owner)
        .await
        .expect_error(422, "INVALID_INPUT");
    patch("ops", json!({ "name": "pager" }), owner).await.expect_error(409, "ALREADY_EXISTS");
    patch("ops", json!({ "webhook": new_url }), &admin).await.expect_error(403, "FORBIDDEN");
    patch("nope", json!({ "name": "x" }), owner).await.expect_error(404, "NOT_FOUND");
    c.call(Method::DELETE, "/v1/notifications/pager", owner, None).await.expect(200);
    let changed = patch("ops", json!({ "webhook": new_url, "name": "ops-2" }), owner).await.expect(200);
    let host = format!("{}/…", new_url.trim_end_matches("/hook"));
    assert_eq!(
        (changed["name"].as_str(), changed["url"].as_str()),
        (Some("ops-2"), Some(host.as_str())),
        "{changed}"
    );
    let events = c.get("/v1/events?action=notification.updated", owner).await.expect(200);
    assert_eq!(
        events[0]["detail"],
        json!({ "name": "ops-2", "webhook": host, "changed": ["name", "webhook"] })
    );
    assert!(!events.to_string().contains("/hook"), "the webhook's path is never recorded: {events}");

    an_event_at_risk(&c, &api, owner).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while new_hears.lock().unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the new webhook heard nothing");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(old_hears.lock().unwrap().is_empty(), "the old webhook hears nothing more");
}
