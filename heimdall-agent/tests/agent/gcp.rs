//! GCP end to end, both credential kinds. A static account's secret is a
//! service-account key the Agent reads for the job; Terraform's Google
//! client signs a grant with it at the key's `token_uri`. An `oidc`
//! account federates through workload identity.
//! The API hands the job's identity token to the Agent; the Agent writes
//! an `external_account` credentials file reading it from a file; real
//! Terraform's Google client trades it at Google's STS (here a recording
//! stand-in: Google's STS does not run here) for an access token, and
//! keeps the state in a GCS bucket (the real fake-gcs-server, its JSON
//! API) with the backend's native lock, authenticated with that token.

use std::sync::{Arc, Mutex};

use reqwest::Method;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::World;

const RUN: std::time::Duration = std::time::Duration::from_secs(120);
const POOL: &str = "projects/123456/locations/global/workloadIdentityPools/heimdall/providers/api";

/// fake-gcs-server on a free port, in memory; killed with the test.
struct FakeGcs {
    url: String,
    _process: tokio::process::Child,
}

impl FakeGcs {
    /// fake-gcs-server behind [`tee_proxy`]: the proxy's URL, and what
    /// clients sent through it. fake-gcs-server serves path-style reads
    /// (`GET /bucket/object`) only to requests for its public host, so that
    /// host is the proxy's.
    async fn start_behind_proxy() -> (Self, String, Seen) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let public = listener.local_addr().unwrap().to_string();
        let gcs = Self::start_as(&public).await;
        let (url, seen) = tee_proxy(listener, &gcs.url);
        (gcs, url, seen)
    }

    async fn start_as(public_host: &str) -> Self {
        let binary = crate::support::repo().join(".venv/bin/fake-gcs-server");
        assert!(binary.exists(), "{} is missing: run scripts/install-test-tools.sh", binary.display());
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let process = tokio::process::Command::new(binary)
            .args(["-scheme", "http", "-host", "127.0.0.1", "-backend", "memory", "-log-level", "warn"])
            .args(["-port", &port.to_string(), "-public-host", public_host])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        for _ in 0..100 {
            if reqwest::get(format!("{url}/storage/v1/b")).await.is_ok_and(|r| r.status().is_success()) {
                return Self { url, _process: process };
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("fake-gcs-server did not start");
    }

    async fn bucket(&self, name: &str) {
        let r = reqwest::Client::new()
            .post(format!("{}/storage/v1/b", self.url))
            .json(&json!({ "name": name }))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{:?}", r.text().await);
    }

    async fn objects(&self, bucket: &str) -> Vec<String> {
        let listed: serde_json::Value = reqwest::get(format!("{}/storage/v1/b/{bucket}/o", self.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        listed["items"]
            .as_array()
            .map(|items| items.iter().map(|o| o["name"].as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    }

    async fn object(&self, bucket: &str, name: &str) -> String {
        let name = name.replace('/', "%2F");
        let url = format!("{}/storage/v1/b/{bucket}/o/{name}?alt=media", self.url);
        let r = reqwest::get(url).await.unwrap();
        assert!(r.status().is_success(), "{name}: {}", r.status());
        r.text().await.unwrap()
    }
}

/// Bytes clients sent through [`tee_proxy`].
type Seen = Arc<Mutex<Vec<u8>>>;

/// A TCP proxy to `upstream` that keeps what clients send (request heads
/// and bodies): what Terraform's GCS client presented.
fn tee_proxy(listener: tokio::net::TcpListener, upstream: &str) -> (String, Seen) {
    let upstream = upstream.trim_start_matches("http://").to_owned();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Seen::default();
    let kept = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let (upstream, kept) = (upstream.clone(), kept.clone());
            tokio::spawn(async move {
                let mut server = tokio::net::TcpStream::connect(&upstream).await.unwrap();
                let (mut client_rd, mut client_wr) = client.split();
                let (mut server_rd, mut server_wr) = server.split();
                let up = async {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        let n = client_rd.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            let _ = server_wr.shutdown().await;
                            break;
                        }
                        kept.lock().unwrap().extend_from_slice(&buf[..n]);
                        if server_wr.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                };
                let down = tokio::io::copy(&mut server_rd, &mut client_wr);
                let _ = tokio::join!(up, down);
            });
        }
    });
    (url, seen)
}

/// Each token exchange's form, and the access token it was answered with.
type Exchanges = Arc<Mutex<Vec<(Vec<(String, String)>, String)>>>;

/// Google's STS token exchange, as `external_account` clients call it.
async fn google_sts() -> (String, Exchanges) {
    token_endpoint("/v1/token").await
}

/// Google's OAuth token endpoint, as a service-account key's `token_uri`
/// names it (a JWT-bearer grant signed with the key).
async fn google_oauth() -> (String, Exchanges) {
    token_endpoint("/token").await
}

/// A token endpoint at `path` that writes down each form and answers with
/// a fresh access token.
async fn token_endpoint(path: &str) -> (String, Exchanges) {
    let exchanges = Exchanges::default();
    let kept = exchanges.clone();
    let app = axum::Router::new().route(
        path,
        axum::routing::post(move |body: String| {
            let kept = kept.clone();
            async move {
                let form: Vec<(String, String)> = serde_urlencoded::from_str(&body).unwrap();
                let access = format!("ya29.heimdall-test-{}", uuid::Uuid::new_v4().simple());
                kept.lock().unwrap().push((form, access.clone()));
                axum::Json(json!({ "access_token": access, "expires_in": 3600, "token_type": "Bearer",
                    "issued_token_type": "urn:ietf:params:oauth:token-type:access_token" }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, exchanges)
}

fn field<'a>(form: &'a [(String, String)], name: &str) -> &'a str {
    form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gcp_job_federates_through_workload_identity_and_keeps_state_in_gcs() {
    let (gcs, gcs_proxy, presented) = FakeGcs::start_behind_proxy().await;
    let bucket = format!("gcs-state-{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    gcs.bucket(&bucket).await;
    let (sts, exchanges) = google_sts().await;
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    // A GCP account whose state backend defaults to GCS; linked in place of the world's.
    let account = w
        .post(
            &owner,
            "/v1/cloud-accounts",
            json!({ "name": "gcp", "provider": "gcp", "region": "europe-west1", "state_bucket": bucket,
                "state_endpoint": format!("{gcs_proxy}/storage/v1/"),
                "auth": { "kind": "oidc", "workload_identity_provider": POOL } }),
        )
        .await;
    assert_eq!(account["state_backend"], "gcs", "{account}");
    w.post(&owner, "/v1/cloud-accounts/gcp/links", json!({ "scope": "organization", "environment": "dev" }))
        .await;
    let config = w.enroll("agent-1").await;
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n[federation]\ngcp_token_url = \"{sts}/v1/token\"\n")).unwrap();
    let mut agent = w.run_agent(&config);

    let id = w.create("in-gcp", "bucket", json!({ "bucket": "in-gcp" })).await;
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);

    // Terraform traded the API's token, for this job, at the pool's audience.
    let (form, access) = exchanges.lock().unwrap().first().cloned().expect("a token exchange");
    assert_eq!(field(&form, "grant_type"), "urn:ietf:params:oauth:grant-type:token-exchange");
    assert_eq!(field(&form, "audience"), format!("//iam.googleapis.com/{POOL}"));
    assert_eq!(field(&form, "subject_token_type"), "urn:ietf:params:oauth:token-type:jwt");
    let token = field(&form, "subject_token").to_owned();
    let (_, discovery) = w.call(Method::GET, "/.well-known/openid-configuration", None).await;
    let jwks = reqwest::get(discovery["jwks_uri"].as_str().unwrap()).await.unwrap().json().await.unwrap();
    let claims = crate::credentials::verified_claims(&token, &jwks);
    assert_eq!(claims["aud"], format!("https://iam.googleapis.com/{POOL}"));
    assert_eq!(claims["iss"], discovery["issuer"]);
    assert!(claims["sub"].as_str().unwrap().ends_with(&format!(":resource:{id}")), "{claims}");
    let job = w.jobs(&id).await[0].clone();
    assert_eq!(claims["job_id"], job["id"]);

    // The state is in the bucket, under the Resource's prefix, written with
    // the access token STS gave, behind the backend's lock object.
    let objects = gcs.objects(&bucket).await;
    assert_eq!(objects, [format!("heimdall/{id}/default.tfstate")], "the lock is released too: {objects:?}");
    let state: serde_json::Value =
        serde_json::from_str(&gcs.object(&bucket, &format!("heimdall/{id}/default.tfstate")).await).unwrap();
    assert!(!state["resources"].as_array().unwrap().is_empty(), "{state}");
    let sent = String::from_utf8_lossy(&presented.lock().unwrap()).to_string();
    assert!(sent
        .to_ascii_lowercase()
        .contains(&format!("authorization: bearer {}", access.to_ascii_lowercase())));
    assert!(sent.contains("default.tflock") && sent.contains("ifGenerationMatch=0"), "no native lock taken");

    // The token is in no row, job log or Agent log.
    w.assert_kept_out(&config, job["id"].as_str().unwrap(), &[&token, &access]).await;

    // Destroy through the same backend and identity.
    let (status, _) = w.call(Method::DELETE, &format!("/v1/resources/{id}"), None).await;
    assert_eq!(status, 202);
    let r = w.wait_for(&id, &["deleted", "failed"], RUN).await;
    assert_eq!(r["status"], "deleted", "{:?}", w.jobs(&id).await);
    let state: serde_json::Value =
        serde_json::from_str(&gcs.object(&bucket, &format!("heimdall/{id}/default.tfstate")).await).unwrap();
    assert!(state["resources"].as_array().unwrap().is_empty(), "{state}");
    // Each Terraform process trades the token itself; each job has its own.
    let tokens: std::collections::BTreeSet<String> =
        exchanges.lock().unwrap().iter().map(|(form, _)| field(form, "subject_token").to_owned()).collect();
    assert_eq!(tokens.len(), 2, "one token per job");

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}

/// A service-account key as Google issues it, with a fresh RSA key and
/// its `token_uri` at `oauth`.
fn service_account_key(dir: &std::path::Path, oauth: &str) -> serde_json::Value {
    let pem = dir.join("sa.pem");
    let made = std::process::Command::new("openssl")
        .args(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out"])
        .arg(&pem)
        .output()
        .expect("openssl");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    json!({ "type": "service_account", "project_id": "acme", "private_key_id": "k1",
        "private_key": std::fs::read_to_string(&pem).unwrap(),
        "client_email": "terraform@acme.iam.gserviceaccount.com", "client_id": "1",
        "token_uri": format!("{oauth}/token") })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gcp_service_account_key_from_the_agent_keeps_state_in_gcs() {
    use crate::values::{eventually, holding_secret};
    let (gcs, gcs_proxy, presented) = FakeGcs::start_behind_proxy().await;
    let bucket = format!("gcs-static-{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    gcs.bucket(&bucket).await;
    let (oauth, grants) = google_oauth().await;
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let config = w.enroll("agent-1").await;
    let key = service_account_key(w.dir.path(), &oauth);
    let mut agent = holding_secret(&w, &config, "gcp-key", &key.to_string(), &[]).await.process;
    w.post(
        &owner,
        "/v1/cloud-accounts",
        json!({ "name": "gcp", "provider": "gcp", "region": "europe-west1", "state_bucket": bucket,
            "state_endpoint": format!("{gcs_proxy}/storage/v1/"), "auth": { "kind": "static", "secret": "gcp-key" } }),
    )
    .await;
    w.post(&owner, "/v1/cloud-accounts/gcp/links", json!({ "scope": "organization", "environment": "dev" }))
        .await;

    let id = w.create("keyed", "bucket", json!({ "bucket": "keyed" })).await;
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    // Terraform signed a grant with the key and used what it got for the state.
    let (form, access) = grants.lock().unwrap().first().cloned().expect("a token grant");
    assert_eq!(field(&form, "grant_type"), "urn:ietf:params:oauth:grant-type:jwt-bearer");
    let sent = String::from_utf8_lossy(&presented.lock().unwrap()).to_string();
    assert!(sent
        .to_ascii_lowercase()
        .contains(&format!("authorization: bearer {}", access.to_ascii_lowercase())));
    assert_eq!(gcs.objects(&bucket).await, [format!("heimdall/{id}/default.tfstate")]);
    eventually(&config, "the Agent's read in the access log", || async {
        let (_, log) = w.call(Method::GET, "/v1/secrets/gcp-key/access-log", None).await;
        log.as_array()
            .is_some_and(|l| l.iter().any(|e| e["accessor"] == "agent agent-1 for owner@example.com"))
    })
    .await;
    let private = key["private_key"].as_str().unwrap().lines().nth(1).unwrap().to_owned();
    let job = w.jobs(&id).await[0]["id"].as_str().unwrap().to_owned();
    w.assert_kept_out(&config, &job, &[&private, &access]).await;

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}

impl FakeGcs {
    /// Writes `name` as any other writer of the bucket would.
    async fn put(&self, bucket: &str, name: &str, body: String) {
        let r = reqwest::Client::new()
            .post(format!("{}/upload/storage/v1/b/{bucket}/o", self.url))
            .query(&[("uploadType", "media"), ("name", name)])
            .body(body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{:?}", r.text().await);
    }
}

/// Approval bound to the plan with GCS state: the plan file is kept in
/// the bucket next to the state, written by the job's federated identity
/// behind the backend's conditional-write lock; the apply runs exactly
/// it; a plan made stale by a write to the state fails `STALE_PLAN`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_plan_is_kept_in_gcs_next_to_the_state() {
    let (gcs, gcs_proxy, presented) = FakeGcs::start_behind_proxy().await;
    let bucket = format!("gcs-plans-{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    gcs.bucket(&bucket).await;
    let (sts, exchanges) = google_sts().await;
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    w.post(
        &owner,
        "/v1/cloud-accounts",
        json!({ "name": "gcp", "provider": "gcp", "region": "europe-west1", "state_bucket": bucket,
            "state_endpoint": format!("{gcs_proxy}/storage/v1/"),
            "auth": { "kind": "oidc", "workload_identity_provider": POOL } }),
    )
    .await;
    w.post(&owner, "/v1/cloud-accounts/gcp/links", json!({ "scope": "organization", "environment": "dev" }))
        .await;
    let regional = crate::support::repo().join("tests/fixtures/modules/regional");
    let admin = crate::plans::approving_schema(&w, "guarded", &regional).await;
    let config = w.enroll("agent-1").await;
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n[federation]\ngcp_token_url = \"{sts}/v1/token\"\n")).unwrap();
    let mut agent = w.run_agent(&config);

    let moved = |id: String| {
        let (gcs, bucket) = (&gcs, &bucket);
        async move {
            // The plan is in the bucket, beside the state, and nothing of
            // revision 2 is applied.
            let objects = gcs.objects(bucket).await;
            let plan = format!("heimdall/{id}.tfplan/default.tfstate");
            let state = format!("heimdall/{id}/default.tfstate");
            assert_eq!(objects, [plan.clone(), state.clone()], "the locks are released too");
            let kept: serde_json::Value = serde_json::from_str(&gcs.object(bucket, &plan).await).unwrap();
            assert!(kept["outputs"]["heimdall_plan"]["value"].is_string(), "{kept}");
            let mut current: serde_json::Value =
                serde_json::from_str(&gcs.object(bucket, &state).await).unwrap();
            current["serial"] = json!(current["serial"].as_i64().unwrap() + 1);
            gcs.put(bucket, &state, current.to_string()).await;
        }
    };
    let id = crate::plans::approval_cycle(&w, &admin, "guarded", moved).await;

    let state: serde_json::Value =
        serde_json::from_str(&gcs.object(&bucket, &format!("heimdall/{id}/default.tfstate")).await).unwrap();
    assert!(state.to_string().contains("lyon"), "{state}");
    // The plan was written under the backend's lock, with the token STS gave.
    let sent = String::from_utf8_lossy(&presented.lock().unwrap()).to_string();
    let lock = format!("heimdall%2F{id}.tfplan%2Fdefault.tflock");
    let lock_plain = format!("heimdall/{id}.tfplan/default.tflock");
    assert!(sent.contains(&lock) || sent.contains(&lock_plain), "the plan's write took no lock");
    assert!(sent.contains("ifGenerationMatch=0"));
    let tokens: Vec<String> = exchanges.lock().unwrap().iter().map(|(_, access)| access.clone()).collect();
    assert!(!tokens.is_empty());
    let jobs = w.jobs(&id).await;
    for job in &jobs {
        w.assert_kept_out(&config, job["id"].as_str().unwrap(), &[&tokens[0]]).await;
    }

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}
