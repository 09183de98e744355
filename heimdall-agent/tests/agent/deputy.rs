//! No confused deputy: a value an Agent uses for someone (a database's
//! admin secret, a cloud account's static secret, a Resource's secret
//! input) is used only as a read that person may make, decided by the API
//! when it is asked for and by the Agent again when it is used. Each test
//! is an attack by an admin under a `forbid`, with the real binaries.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::World;
use crate::values::{configure, eventually, holding_secret, identity, set, Store};

const RUN: Duration = Duration::from_secs(120);

/// What a fake PostgreSQL server received: the bytes of each connection.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Vec<u8>>>>);

impl Received {
    fn connections(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    fn all(&self) -> Vec<u8> {
        self.0.lock().unwrap().concat()
    }
}

/// A server on loopback that speaks just enough PostgreSQL to be handed a
/// password: it declines TLS, asks for the password in cleartext, and
/// keeps every byte it is sent. Its port and what it received.
async fn fake_postgres() -> (u16, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let received = Received::default();
    let kept = received.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                let n = read_some(&mut socket, &mut buf).await;
                got.extend_from_slice(&buf[..n]);
                // An SSLRequest (length 8, code 80877103): no TLS here.
                if n == 8 && buf[4..8] == 80_877_103u32.to_be_bytes() {
                    let _ = socket.write_all(b"N").await;
                    let n = read_some(&mut socket, &mut buf).await;
                    got.extend_from_slice(&buf[..n]);
                }
                if got.len() > 8 {
                    // AuthenticationCleartextPassword, then whatever comes.
                    let _ = socket.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 3]).await;
                    let n = read_some(&mut socket, &mut buf).await;
                    got.extend_from_slice(&buf[..n]);
                }
                kept.0.lock().unwrap().push(got);
            });
        }
    });
    (port, received)
}

/// What arrives within 5 s (0 at the end or on a timeout).
async fn read_some(socket: &mut tokio::net::TcpStream, buf: &mut [u8]) -> usize {
    tokio::time::timeout(Duration::from_secs(5), socket.read(buf))
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or(0)
}

/// An Agent holding `dev` (SQLite store) that asks for database tasks
/// every second; its config and local API URL.
async fn rotating_agent(w: &World, name: &str) -> (std::path::PathBuf, String) {
    let config = w.enroll(name).await;
    let (local_url, _) = configure(&config, Store::Sqlite, None);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("sync_seconds = 1\n", "sync_seconds = 1\ndatabase_poll_seconds = 1\n"),
    )
    .unwrap();
    w.post(&w.api.owner_token, "/v1/environments/dev/agents", json!({ "agent": name })).await;
    (config, local_url)
}

async fn call_as(w: &World, token: &str, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = w.http.request(method, format!("{}{path}", w.api.url)).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap() })
}

/// A member with `role`; her API token.
async fn member(w: &World, email: &str, role: &str) -> String {
    let made = w.post(&w.api.owner_token, "/v1/members", json!({ "email": email, "role": role })).await;
    made["token"].as_str().unwrap().to_owned()
}

/// Forbids `email` to read `secret`, by the secret's id.
async fn forbid_reading(w: &World, email: &str, secret: &str) {
    let (_, found) = w.call(Method::GET, &format!("/v1/secrets/{secret}"), None).await;
    let id = found["secret"]["id"].as_str().or_else(|| found["id"].as_str()).unwrap().to_owned();
    let text = format!(
        "forbid (principal == Heimdall::Member::\"{email}\", action == Heimdall::Action::\"secret.read\", resource == Heimdall::Secret::\"{id}\");"
    );
    let name = format!("no-{secret}-for-{}", email.split('@').next().unwrap());
    w.post(&w.api.owner_token, "/v1/policies", json!({ "name": name, "text": text })).await;
}

fn refused(answer: &(u16, Value), status: u16, code: &str) {
    assert_eq!((answer.0, answer.1["error"]["code"].as_str()), (status, Some(code)), "{}", answer.1);
}

/// An admin under a `forbid` on the admin secret can neither register a
/// database with it nor give a service user grants with it, and a user
/// made by someone who lost the right since gets no task run for her: the
/// Agent decides the use again, with the latest policies, before it
/// connects. The fake server asking for a cleartext password receives no
/// connection at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_admin_secret_is_used_only_for_someone_who_may_read_it() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let (config, local_url) = rotating_agent(&w, "agent-1").await;
    let mut agent = w.run_agent(&config);
    let me = identity(&w, &owner).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "orders-admin" })).await;
    eventually(&config, "the Agent's local URL", || async {
        let (_, holders) =
            w.call(Method::GET, "/v1/secrets/orders-admin/holders?environment=dev", None).await;
        holders[0]["url"].as_str() == Some(local_url.as_str())
    })
    .await;
    let password = format!("admin-pw-{}", uuid::Uuid::new_v4().simple());
    let admin = json!({ "username": "heimdall_admin_login", "password": password });
    set(&w, &owner, &me, "orders-admin", "dev", &admin.to_string()).await;
    let (port, received) = fake_postgres().await;
    let ana = member(&w, "ana@example.com", "admin").await;
    let cy = member(&w, "cy@example.com", "admin").await;
    forbid_reading(&w, "ana@example.com", "orders-admin").await;

    // Ana may write secrets, but may not read this one: no database with it.
    let database = json!({ "name": "orders", "engine": "postgres", "host": "127.0.0.1", "port": port,
        "database": "orders", "environment": "dev", "admin_secret": "orders-admin" });
    let answer = call_as(&w, &ana, Method::POST, "/v1/databases", Some(database.clone())).await;
    refused(&answer, 403, "FORBIDDEN");
    let message = answer.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("ana@example.com") && message.contains("orders-admin"), "{message}");
    assert!(!message.contains(&password), "{message}");
    assert_eq!(w.call(Method::GET, "/v1/databases", None).await.1, json!([]), "nothing was stored");

    // Registered by the owner, who may read it; Ana still cannot make a
    // user with it (its grants are made with the admin secret, for her).
    w.post(&owner, "/v1/databases", database).await;
    let user = json!({ "name": "app", "rotate_every": "1d", "grace": "1m",
        "grants": "ALL ON ALL TABLES IN SCHEMA public" });
    let answer = call_as(&w, &ana, Method::POST, "/v1/databases/orders/users", Some(user.clone())).await;
    refused(&answer, 403, "FORBIDDEN");
    assert_eq!(w.call(Method::GET, "/v1/databases/orders/users", None).await.1, json!([]));
    let (status, _) = w.call(Method::GET, "/v1/secrets/db-orders-app", None).await;
    assert_eq!(status, 404, "no service user's secret either");

    // Cy makes one while she may; then she may not, before any Agent ran
    // its task: the Agent decides with the latest policies, and refuses.
    agent.kill().await.unwrap();
    let answer = call_as(&w, &cy, Method::POST, "/v1/databases/orders/users", Some(user)).await;
    assert_eq!(answer.0, 201, "{}", answer.1);
    forbid_reading(&w, "cy@example.com", "orders-admin").await;
    let mut agent = w.run_agent(&config);
    eventually(&config, "the task refused for cy", || async {
        let (_, u) = w.call(Method::GET, "/v1/databases/orders/users/app", None).await;
        u["last_error"].as_str().is_some_and(|e| e.contains("FORBIDDEN") && e.contains("cy@example.com"))
    })
    .await;
    let (_, u) = w.call(Method::GET, "/v1/databases/orders/users/app", None).await;
    let last_error = u["last_error"].as_str().unwrap();
    assert!(!last_error.contains("heimdall_admin_login") && !last_error.contains(&password), "{last_error}");
    assert_eq!(received.connections(), 0, "the fake server was dialled");
    let (_, log) = w.call(Method::GET, "/v1/secrets/orders-admin/access-log", None).await;
    assert!(
        !log.as_array()
            .unwrap()
            .iter()
            .any(|e| e["accessor"].as_str().unwrap_or("").contains("database-rotation")),
        "the admin secret was read for the task: {log}"
    );
    agent.kill().await.unwrap();
}

/// The admin connection carries the administrator's password: in
/// cleartext only to this machine (the API refuses anything else), and
/// with `verify-full` to a server that proves itself. A server that
/// cannot (this fake one declines TLS) receives the TLS request and
/// nothing more: no login name, no password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_password_goes_in_cleartext_to_no_other_machine() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let (config, local_url) = rotating_agent(&w, "agent-1").await;
    let mut agent = w.run_agent(&config);
    let me = identity(&w, &owner).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "orders-admin" })).await;
    eventually(&config, "the Agent's local URL", || async {
        let (_, holders) =
            w.call(Method::GET, "/v1/secrets/orders-admin/holders?environment=dev", None).await;
        holders[0]["url"].as_str() == Some(local_url.as_str())
    })
    .await;
    let password = format!("admin-pw-{}", uuid::Uuid::new_v4().simple());
    let admin = json!({ "username": "heimdall_admin_login", "password": password });
    set(&w, &owner, &me, "orders-admin", "dev", &admin.to_string()).await;

    let elsewhere = json!({ "name": "far", "engine": "postgres", "host": "db.internal", "port": 5432,
        "database": "orders", "environment": "dev", "admin_secret": "orders-admin", "tls": "disable" });
    let answer = w.call(Method::POST, "/v1/databases", Some(elsewhere)).await;
    refused(&answer, 422, "INVALID_INPUT");
    assert!(answer.1["error"]["message"].as_str().unwrap().contains("verify-full"), "{}", answer.1);

    let (port, received) = fake_postgres().await;
    let database = json!({ "name": "orders", "engine": "postgres", "host": "127.0.0.1", "port": port,
        "database": "orders", "environment": "dev", "admin_secret": "orders-admin", "tls": "verify-full" });
    let made = w.post(&owner, "/v1/databases", database).await;
    assert_eq!(made["tls"], "verify-full");
    w.post(
        &owner,
        "/v1/databases/orders/users",
        json!({ "name": "app", "rotate_every": "1d", "grace": "1m" }),
    )
    .await;
    eventually(&config, "the task to fail on TLS", || async {
        let (_, u) = w.call(Method::GET, "/v1/databases/orders/users/app", None).await;
        u["last_error"].as_str().is_some() && received.connections() > 0
    })
    .await;
    let got = received.all();
    assert_eq!(got, [0, 0, 0, 8, 4, 210, 22, 47], "only the TLS request was sent, nothing after it");
    // The admin secret was read for the owner (decided, recorded), and
    // nothing of it left the Agent.
    eventually(&config, "the read for the owner in the access log", || async {
        let (_, log) = w.call(Method::GET, "/v1/secrets/orders-admin/access-log", None).await;
        log.as_array()
            .unwrap()
            .iter()
            .any(|e| e["accessor"] == "database-rotation orders/app for owner@example.com")
    })
    .await;
    agent.kill().await.unwrap();
}

/// A Resource's secret input and a static account's secret are used for
/// the member whose request queued the job. An admin under a `forbid` on
/// the secret cannot change, retry or delete a Resource that uses it, nor
/// make or link an account that names it; a change asked by someone who
/// lost the right before the job ran fails at the Agent, unrun.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_uses_a_secret_only_for_someone_who_may_read_it() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let module = crate::support::repo().join("tests/fixtures/modules/with-password").display().to_string();
    w.post(
        &owner,
        "/v1/schemas",
        json!({ "type": "database", "module": { "source": module, "version": "1.0.0" },
            "input_schema": { "type": "object", "required": ["name", "admin_password"],
                "properties": { "name": { "type": "string" },
                    "admin_password": { "type": "string", "x-heimdall-secret": true } } } }),
    )
    .await;
    let config = w.enroll("agent-1").await;
    let marker = format!("pw-{}", uuid::Uuid::new_v4().simple());
    let mut agent = holding_secret(&w, &config, "orders-admin", &marker, &[]).await.process;
    let id =
        w.create("orders", "database", json!({ "name": "orders", "admin_password": "orders-admin" })).await;
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    eventually(&config, "the read for the owner in the access log", || async {
        let (_, log) = w.call(Method::GET, "/v1/secrets/orders-admin/access-log", None).await;
        log.as_array().unwrap().iter().any(|e| e["accessor"] == "agent agent-1 for owner@example.com")
    })
    .await;

    // Ana, an admin who may manage Resources but not read the secret.
    let ana = member(&w, "ana@example.com", "admin").await;
    forbid_reading(&w, "ana@example.com", "orders-admin").await;
    let change = json!({ "input": { "name": "orders-2", "admin_password": "orders-admin" } });
    refused(
        &call_as(&w, &ana, Method::PATCH, &format!("/v1/resources/{id}"), Some(change.clone())).await,
        403,
        "FORBIDDEN",
    );
    refused(&call_as(&w, &ana, Method::DELETE, &format!("/v1/resources/{id}"), None).await, 403, "FORBIDDEN");
    refused(
        &call_as(&w, &ana, Method::POST, &format!("/v1/resources/{id}/drift-check"), None).await,
        403,
        "FORBIDDEN",
    );
    assert_eq!(w.resource(&id).await["revision"], 1, "no revision was stored");
    assert_eq!(w.jobs(&id).await.len(), 1, "no job was queued");

    // Nor an account naming it, nor a link of one that does.
    let account = json!({ "name": "static", "provider": "aws", "region": "us-east-1",
        "state_bucket": w.bucket, "auth": { "kind": "static", "secret": "orders-admin" } });
    refused(
        &call_as(&w, &ana, Method::POST, "/v1/cloud-accounts", Some(account.clone())).await,
        403,
        "FORBIDDEN",
    );
    w.post(&owner, "/v1/cloud-accounts", account).await;
    let link = json!({ "scope": "organization", "environment": "dev" });
    refused(
        &call_as(&w, &ana, Method::POST, "/v1/cloud-accounts/static/links", Some(link)).await,
        403,
        "FORBIDDEN",
    );

    // The owner asks for a change; before an Agent runs it, she may no
    // longer read the secret: the Agent refuses it, Terraform unstarted.
    agent.kill().await.unwrap();
    w.call(Method::PATCH, &format!("/v1/resources/{id}"), Some(change)).await;
    forbid_reading(&w, "owner@example.com", "orders-admin").await;
    let mut agent = w.run_agent(&config);
    let r = w.wait_for_revision(&id, 2, RUN).await;
    assert_eq!(r["status"], "failed", "{r}");
    let reason = r["reason"].as_str().unwrap();
    assert!(reason.starts_with("FORBIDDEN") && reason.contains("owner@example.com"), "{reason}");
    let jobs = w.jobs(&id).await;
    assert_eq!(jobs.iter().filter(|j| j["status"] == "failed").count(), 1, "{jobs:?}");
    assert_eq!(jobs.iter().find(|j| j["status"] == "failed").unwrap()["attempts"], 1, "a refusal is final");
    let job = jobs.iter().find(|j| j["status"] == "failed").unwrap()["id"].as_str().unwrap().to_owned();
    assert!(!w.job_log(&job).await.contains("Terraform"), "Terraform ran");
    w.assert_kept_out(&config, &job, &[&marker]).await;
    agent.kill().await.unwrap();
}
