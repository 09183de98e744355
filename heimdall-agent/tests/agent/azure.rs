//! Azure Blob state end to end: an Azure account with a static credential
//! that carries the state storage account's key. The Agent reads it for
//! the job and gives it to the azurerm backend through `init
//! -backend-config` (a 0600 file, never the environment); real Terraform
//! keeps the state in Azurite (the Azure Storage emulator, from npm) and
//! locks it with a blob lease.
//!
//! The backend only speaks HTTPS to `<account>.blob.core.windows.net`: the
//! test serves Azurite over TLS under a test CA and sends Terraform there
//! through an HTTPS proxy (`HTTPS_PROXY`, which the Agent passes on).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use reqwest::Method;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::World;
use crate::values::holding_secret;

const RUN: std::time::Duration = std::time::Duration::from_secs(120);
const ACCOUNT: &str = "heimdallstate";
const CONTAINER: &str = "tfstate";

/// Azurite's blob service over HTTPS on a free port, with one storage
/// account (`ACCOUNT`, a fresh key); killed with the test.
struct Azurite {
    port: u16,
    key: String,
    http: reqwest::Client,
    _process: tokio::process::Child,
}

impl Azurite {
    async fn start(dir: &std::path::Path) -> (Self, std::path::PathBuf) {
        let binary = crate::support::repo().join(".venv/bin/azurite-blob");
        assert!(binary.exists(), "{} is missing: run scripts/install-test-tools.sh", binary.display());
        // A test CA and a certificate for the names the backend uses.
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let server_key = rcgen::KeyPair::generate().unwrap();
        let names = vec![format!("{ACCOUNT}.blob.core.windows.net"), "localhost".into(), "127.0.0.1".into()];
        let server = rcgen::CertificateParams::new(names).unwrap().signed_by(&server_key, &issuer).unwrap();
        let (cert, key) = (dir.join("azurite.pem"), dir.join("azurite.key"));
        std::fs::write(&cert, server.pem()).unwrap();
        std::fs::write(&key, server_key.serialize_pem()).unwrap();
        let system = std::fs::read_to_string("/etc/ssl/certs/ca-certificates.crt").unwrap_or_default();
        let bundle = dir.join("ca-bundle.pem");
        std::fs::write(&bundle, format!("{system}\n{}", ca.pem())).unwrap();

        let account_key = STANDARD.encode(rand_bytes());
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let data = dir.join("azurite-data");
        let process = tokio::process::Command::new(binary)
            .args([
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                &port.to_string(),
                "--loose",
                "--skipApiVersionCheck",
            ])
            .arg("--location")
            .arg(&data)
            .arg("--cert")
            .arg(&cert)
            .arg("--key")
            .arg(&key)
            .env("AZURITE_ACCOUNTS", format!("{ACCOUNT}:{account_key}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let http = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(ca.pem().as_bytes()).unwrap())
            .no_proxy()
            .build()
            .unwrap();
        let azurite = Self { port, key: account_key, http, _process: process };
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return (azurite, bundle);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("Azurite did not start");
    }

    /// A request signed with the account's key (SharedKey), path-style.
    async fn call(&self, method: Method, path: &str, query: &[(&str, &str)]) -> reqwest::Response {
        self.send(method, path, query, None).await
    }

    /// Writes the block blob `name` as any other writer of the container would.
    async fn put_blob(&self, name: &str, body: String) {
        let r = self.send(Method::PUT, &format!("/{CONTAINER}/{name}"), &[], Some(body)).await;
        assert_eq!(r.status(), 201, "{:?}", r.text().await);
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<String>,
    ) -> reqwest::Response {
        let date = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc2822)
            .unwrap()
            .replace("+0000", "GMT");
        let version = "2021-12-02";
        let mut sorted: Vec<&(&str, &str)> = query.iter().collect();
        sorted.sort();
        // The canonical resource is the account, then the URL's path, which
        // path-style names the account again.
        let mut resource = format!("/{ACCOUNT}/{ACCOUNT}{path}");
        for (k, v) in sorted {
            resource.push_str(&format!("\n{k}:{v}"));
        }
        // The verb, then Content-Encoding, -Language, -Length, -MD5, -Type,
        // Date, If-Modified-Since, If-Match, If-None-Match,
        // If-Unmodified-Since and Range, then the x-ms- headers.
        let length = body.as_ref().map(|b| b.len().to_string()).unwrap_or_default();
        let blob_type = if body.is_some() { "x-ms-blob-type:BlockBlob\n" } else { "" };
        let to_sign = format!(
            "{}\n\n\n{length}\n\n\n\n\n\n\n\n\n{blob_type}x-ms-date:{date}\nx-ms-version:{version}\n{resource}",
            method.as_str()
        );
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &STANDARD.decode(&self.key).unwrap());
        let signature = STANDARD.encode(ring::hmac::sign(&key, to_sign.as_bytes()));
        let mut request = self
            .http
            .request(method, format!("https://127.0.0.1:{}/{ACCOUNT}{path}", self.port))
            .query(query)
            .header("x-ms-date", date)
            .header("x-ms-version", version)
            .header("authorization", format!("SharedKey {ACCOUNT}:{signature}"));
        if let Some(body) = body {
            request = request.header("x-ms-blob-type", "BlockBlob").body(body);
        }
        request.send().await.unwrap()
    }

    async fn blob(&self, name: &str) -> (String, Option<String>) {
        let r = self.call(Method::GET, &format!("/{CONTAINER}/{name}"), &[]).await;
        assert!(r.status().is_success(), "{name}: {}", r.status());
        let lease = r.headers().get("x-ms-lease-state").map(|v| v.to_str().unwrap().to_owned());
        (r.text().await.unwrap(), lease)
    }
}

fn rand_bytes() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).unwrap();
    bytes
}

/// An HTTPS proxy that tunnels every `CONNECT`, whatever host it names, to
/// 127.0.0.1:`port`, and writes down the hosts asked for.
async fn connect_proxy(port: u16) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = asked.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let line = String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_owned();
                kept.lock().unwrap().push(line);
                let mut server = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            });
        }
    });
    (url, asked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_azure_job_keeps_its_state_in_blob_storage_under_a_lease() {
    let w = World::new().await;
    let (azurite, bundle) = Azurite::start(w.dir.path()).await;
    let created = azurite.call(Method::PUT, &format!("/{CONTAINER}"), &[("restype", "container")]).await;
    assert_eq!(created.status(), 201, "{:?}", created.text().await);
    let (proxy, asked) = connect_proxy(azurite.port).await;
    let owner = w.api.owner_token.clone();
    let config = w.enroll("agent-1").await;
    let bundle = bundle.display().to_string();
    let env =
        [("HTTPS_PROXY", proxy.as_str()), ("NO_PROXY", "127.0.0.1,localhost"), ("SSL_CERT_FILE", &bundle)];
    let client_secret = format!("sp-secret-{}", uuid::Uuid::new_v4().simple());
    let value = json!({ "client_id": "00000000-0000-0000-0000-0000000000c1", "client_secret": client_secret,
        "tenant_id": "00000000-0000-0000-0000-0000000000d1", "subscription_id": "00000000-0000-0000-0000-0000000000e1",
        "storage_access_key": azurite.key });
    let mut agent = holding_secret(&w, &config, "azure-sp", &value.to_string(), &env).await.process;
    let account = w
        .post(
            &owner,
            "/v1/cloud-accounts",
            json!({ "name": "azure", "provider": "azure", "region": "westeurope", "state_bucket": CONTAINER,
                "state_storage_account": ACCOUNT, "auth": { "kind": "static", "secret": "azure-sp" } }),
        )
        .await;
    assert_eq!(account["state_backend"], "azurerm", "{account}");
    w.post(
        &owner,
        "/v1/cloud-accounts/azure/links",
        json!({ "scope": "organization", "environment": "dev" }),
    )
    .await;

    // A slow apply: the state blob is leased while it runs.
    let id = w.create("in-azure", "bucket", json!({ "bucket": "in-azure", "sleep_seconds": 6 })).await;
    let state_blob = format!("heimdall/{id}.tfstate");
    let mut leased = false;
    let deadline = std::time::Instant::now() + RUN;
    while std::time::Instant::now() < deadline {
        let r = w.resource(&id).await;
        if r["status"] == "provisioned" || r["status"] == "failed" {
            break;
        }
        let head = azurite.call(Method::HEAD, &format!("/{CONTAINER}/{state_blob}"), &[]).await;
        leased |= head.headers().get("x-ms-lease-state").is_some_and(|v| v == "leased");
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    assert!(leased, "the state blob was never leased during the apply");
    let (state, lease) = azurite.blob(&state_blob).await;
    assert_eq!(lease.as_deref(), Some("available"), "the lease is released");
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert!(!state["resources"].as_array().unwrap().is_empty(), "{state}");
    assert!(
        asked
            .lock()
            .unwrap()
            .iter()
            .all(|l| l.starts_with(&format!("CONNECT {ACCOUNT}.blob.core.windows.net:443"))),
        "{:?}",
        asked.lock().unwrap()
    );

    // The key and the client secret are in no row, job log or Agent log.
    let job = w.jobs(&id).await[0]["id"].as_str().unwrap().to_owned();
    w.assert_kept_out(&config, &job, &[&azurite.key, &client_secret]).await;

    let (status, _) = w.call(Method::DELETE, &format!("/v1/resources/{id}"), None).await;
    assert_eq!(status, 202);
    let r = w.wait_for(&id, &["deleted", "failed"], RUN).await;
    assert_eq!(r["status"], "deleted", "{:?}", w.jobs(&id).await);
    let (state, _) = azurite.blob(&state_blob).await;
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert!(state["resources"].as_array().unwrap().is_empty(), "{state}");

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}

/// Approval bound to the plan with Azure Blob state: the plan file is kept
/// in the container next to the state, written with the storage key under
/// the backend's blob lease (released after); the apply runs exactly it;
/// a plan made stale by a write to the state fails `STALE_PLAN`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_plan_is_kept_in_blob_storage_next_to_the_state() {
    let w = World::new().await;
    let (azurite, bundle) = Azurite::start(w.dir.path()).await;
    let created = azurite.call(Method::PUT, &format!("/{CONTAINER}"), &[("restype", "container")]).await;
    assert_eq!(created.status(), 201, "{:?}", created.text().await);
    let (proxy, _) = connect_proxy(azurite.port).await;
    let owner = w.api.owner_token.clone();
    let config = w.enroll("agent-1").await;
    let bundle = bundle.display().to_string();
    let env =
        [("HTTPS_PROXY", proxy.as_str()), ("NO_PROXY", "127.0.0.1,localhost"), ("SSL_CERT_FILE", &bundle)];
    let value = json!({ "client_id": "00000000-0000-0000-0000-0000000000c1", "client_secret": "unused",
        "tenant_id": "00000000-0000-0000-0000-0000000000d1", "subscription_id": "00000000-0000-0000-0000-0000000000e1",
        "storage_access_key": azurite.key });
    let mut agent = holding_secret(&w, &config, "azure-sp", &value.to_string(), &env).await.process;
    w.post(
        &owner,
        "/v1/cloud-accounts",
        json!({ "name": "azure", "provider": "azure", "region": "westeurope", "state_bucket": CONTAINER,
            "state_storage_account": ACCOUNT, "auth": { "kind": "static", "secret": "azure-sp" } }),
    )
    .await;
    w.post(
        &owner,
        "/v1/cloud-accounts/azure/links",
        json!({ "scope": "organization", "environment": "dev" }),
    )
    .await;
    let regional = crate::support::repo().join("tests/fixtures/modules/regional");
    let admin = crate::plans::approving_schema(&w, "guarded", &regional).await;

    let moved = |id: String| {
        let azurite = &azurite;
        async move {
            // The plan is in the container beside the state, its lease
            // released, and nothing of revision 2 is applied.
            let (kept, lease) = azurite.blob(&format!("heimdall/{id}.tfplan")).await;
            assert_eq!(lease.as_deref(), Some("available"));
            let kept: serde_json::Value = serde_json::from_str(&kept).unwrap();
            assert!(kept["outputs"]["heimdall_plan"]["value"].is_string(), "{kept}");
            let state_blob = format!("heimdall/{id}.tfstate");
            let (state, _) = azurite.blob(&state_blob).await;
            assert!(!state.contains("lyon"), "{state}");
            let mut state: serde_json::Value = serde_json::from_str(&state).unwrap();
            state["serial"] = json!(state["serial"].as_i64().unwrap() + 1);
            azurite.put_blob(&state_blob, state.to_string()).await;
        }
    };
    let id = crate::plans::approval_cycle(&w, &admin, "guarded", moved).await;
    let (state, lease) = azurite.blob(&format!("heimdall/{id}.tfstate")).await;
    assert!(state.contains("lyon"), "{state}");
    assert_eq!(lease.as_deref(), Some("available"));
    for job in w.jobs(&id).await {
        w.assert_kept_out(&config, job["id"].as_str().unwrap(), &[&azurite.key]).await;
    }

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}
