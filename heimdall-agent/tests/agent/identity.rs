//! Identity by URI SAN and certificate, never by host name, with real
//! `heimdall-agent` processes: an Agent does not talk to another Agent's
//! server posing as the API; a client expecting one Agent refuses another
//! (same CA, same host name); a revoked local API certificate is refused at
//! once and the Agent serves a new one after its next sync; silent
//! connections to the local API are closed.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use heimdall_sdk::{AgentClient, Identity};
use reqwest::Method;
use serde_json::json;
use tokio::io::AsyncReadExt;

use crate::support::{agent_client, agent_id, World};
use crate::values::{configure, eventually, identity, set, Store};

/// The Agent's local API certificate and key, as it cached them.
fn local_api_pair(config: &Path) -> (String, String) {
    let dir = config.parent().unwrap();
    (
        std::fs::read_to_string(dir.join("local-api.pem")).unwrap(),
        std::fs::read_to_string(dir.join("local-api.key")).unwrap(),
    )
}

/// A TLS server on loopback with `cert`/`key` that wants client
/// certificates from `ca_pem`, as the API's Agent channel does; counts the
/// handshakes that completed.
async fn impostor(cert: &str, key: &str, ca_pem: &str) -> (u16, Arc<AtomicUsize>) {
    let chain = rustls_pemfile::certs(&mut cert.as_bytes()).collect::<Result<Vec<_>, _>>().unwrap();
    let key = rustls_pemfile::private_key(&mut key.as_bytes()).unwrap().unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, count) = (acceptor.clone(), count.clone());
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(tcp).await {
                    let mut buf = [0u8; 1024];
                    // A request only follows if the client trusted us.
                    if tls.read(&mut buf).await.is_ok_and(|n| n > 0) {
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    (port, accepted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_agents_certificate_passes_neither_for_the_api_nor_for_another_agent() {
    let w = World::new().await;
    let (one, two) = (w.enroll("agent-1").await, w.enroll("agent-2").await);
    let (local_one, _) = configure(&one, Store::Sqlite, None);
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "agent-1" })).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "db-password" })).await;
    let ana = identity(&w, &owner).await;
    let mut a1 = w.run_agent(&one);
    eventually(&one, "agent-1's local API", || async {
        agent_client(&one, &local_one, &ana).health().await.is_ok()
    })
    .await;
    set(&w, &owner, &ana, "db-password", "dev", "v1").await;

    // agent-1's local API certificate is CA-signed and names 127.0.0.1,
    // the very host agent-2 dials for the API. Served from a server posing
    // as the API, it does not pass: agent-2 wants urn:heimdall:api.
    let (cert, key) = local_api_pair(&one);
    let (port, accepted) = impostor(&cert, &key, &ana.ca_pem).await;
    let text = std::fs::read_to_string(&two).unwrap();
    let real = w.api.agent_url.clone();
    std::fs::write(
        &two,
        text.replace(&format!("api_url = \"{real}\""), &format!("api_url = \"https://127.0.0.1:{port}\"")),
    )
    .unwrap();
    let mut a2 = w.run_agent(&two);
    eventually(&two, "agent-2 to refuse the impostor", || async {
        std::fs::read_to_string(two.with_extension("log"))
            .unwrap_or_default()
            .contains("does not name urn:heimdall:api")
    })
    .await;
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "agent-2 sent a request to the impostor");
    a2.start_kill().unwrap();

    // A client that expects agent-2 refuses agent-1 (same CA, same host).
    let expecting_two = AgentClient::new(&local_one, &ana, agent_id(&two), None).unwrap();
    let refused = expecting_two.get_value("db-password", "dev", None).await.unwrap_err();
    assert!(matches!(refused, heimdall_sdk::Error::Transport(_)), "{refused}");
    assert!(refused.to_string().contains("does not name"), "{refused}");

    // The holders list pins agent-1's current certificate; revoking it
    // makes clients refuse it at once, and the Agent serves a new one
    // after its next sync.
    let w = &w;
    let holder = || async move {
        let (_, holders) = w.call(Method::GET, "/v1/secrets/db-password/holders?environment=dev", None).await;
        serde_json::from_value::<heimdall_sdk::wire::AgentLocation>(holders[0].clone()).unwrap()
    };
    let served = heimdall_tls_sha(&cert);
    let before = holder().await;
    assert_eq!(before.certificates, Some(vec![served.clone()]));
    let read = |h: heimdall_sdk::wire::AgentLocation, who: Identity| {
        let url = local_one.clone();
        async move { AgentClient::for_holder(&h, &url, &who).unwrap().get_value("db-password", "dev", None).await }
    };
    assert_eq!(read(before.clone(), ana.clone()).await.unwrap().value.expose(), "v1");
    let (status, _) = w.call(Method::DELETE, &format!("/v1/certificates/{served}"), None).await;
    assert_eq!(status, 200);
    let after = holder().await;
    let refused = read(after.clone(), ana.clone()).await.unwrap_err();
    assert!(refused.to_string().contains("not one the API lists"), "{refused}");
    eventually(&one, "a new local API certificate", || async {
        let now = holder().await;
        now.certificates.as_ref().is_some_and(|c| !c.is_empty()) && read(now, ana.clone()).await.is_ok()
    })
    .await;
    assert_ne!(heimdall_tls_sha(&local_api_pair(&one).0), served);
    a1.start_kill().unwrap();
}

fn heimdall_tls_sha(pem: &str) -> heimdall_core::Sha256Hex {
    let der = rustls_pemfile::certs(&mut pem.as_bytes()).next().unwrap().unwrap();
    heimdall_core::Sha256Hex::of(der.as_ref())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_api_closes_silent_connections() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let (local, _) = configure(&config, Store::Sqlite, None);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}handshake_timeout_seconds = 1\nheader_read_timeout_seconds = 1\n"),
    )
    .unwrap();
    let owner = w.api.owner_token.clone();
    let ana = identity(&w, &owner).await;
    let mut agent = w.run_agent(&config);
    eventually(&config, "the local API", || async {
        agent_client(&config, &local, &ana).health().await.is_ok()
    })
    .await;
    let port: u16 = local.rsplit_once(':').unwrap().1.parse().unwrap();
    let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "a silent connection stayed open: {read:?}");
    agent.start_kill().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enrollment_pins_the_ca_and_never_takes_the_token_on_the_command_line() {
    // The people's API over HTTPS with a certificate from its CA.
    let api =
        heimdall_api::testing::TestApi::https(heimdall_api::testing::TestDatabase::sqlite().await).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_pem = std::fs::read_to_string(api.ca_dir.join("ca.pem")).unwrap();
    let http = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem.as_bytes()).unwrap())
        .build()
        .unwrap();
    let reg: serde_json::Value = http
        .post(format!("{}/v1/agents/registrations", api.url))
        .bearer_auth(&api.owner_token)
        .json(&json!({ "name": "edge-1" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = reg["token"].as_str().unwrap();
    let fingerprint = reg["ca_sha256"].as_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_heimdall-agent");
    let data = dir.path().join("edge-1");
    let enroll = |pin: &str, args: &[&str]| {
        let mut cmd = std::process::Command::new(bin);
        cmd.args(["enroll", "--api", &api.url, "--ca-sha256", pin, "--data"])
            .arg(&data)
            .arg("--terraform")
            .arg(crate::support::terraform())
            .args(args)
            .env("HEIMDALL_REGISTRATION_TOKEN", token);
        cmd.output().unwrap()
    };
    // No --token flag at all.
    let out = enroll(fingerprint, &["--token", token]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // Another CA's fingerprint: the TLS handshake fails before the token
    // is sent; nothing is written and the token stays good.
    let other = "ab".repeat(32);
    let out = enroll(&other, &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("fingerprint"), "{out:?}");
    assert!(!data.join("agent.key").exists());
    // Plain HTTP to another machine: refused (the token is a credential).
    let out = std::process::Command::new(bin)
        .args(["enroll", "--api", "http://heimdall.example.com", "--data"])
        .arg(dir.path().join("other"))
        .env("HEIMDALL_REGISTRATION_TOKEN", token)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("https://"), "{out:?}");
    // The right one: enrolled.
    let out = enroll(fingerprint, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ca = std::fs::read_to_string(data.join("ca.pem")).unwrap();
    assert_eq!(heimdall_tls_sha(&ca).as_str(), fingerprint);
}

/// A TLS server with `cert`/`key` (no client certificate asked, as the
/// local API for programs): it answers `GET /v1/certificate-status` with
/// `status`, anything else with a 404, and counts the requests that carried
/// an `Authorization` header (a program token handed over).
async fn program_impostor(cert: &str, key: &str, status: serde_json::Value) -> (u16, Arc<AtomicUsize>) {
    use tokio::io::AsyncWriteExt;
    let chain = rustls_pemfile::certs(&mut cert.as_bytes()).collect::<Result<Vec<_>, _>>().unwrap();
    let key = rustls_pemfile::private_key(&mut key.as_bytes()).unwrap().unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let tokens = Arc::new(AtomicUsize::new(0));
    let count = tokens.clone();
    let body = status.to_string();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, count, body) = (acceptor.clone(), count.clone(), body.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let mut buf = vec![0u8; 16 * 1024];
                while let Ok(n) = tls.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let request = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
                    if request.contains("authorization:") {
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                    let (code, text) = if request.starts_with("get /v1/certificate-status") {
                        ("200 OK", body.clone())
                    } else {
                        (
                            "404 Not Found",
                            "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no\"}}".to_owned(),
                        )
                    };
                    let answer = format!(
                        "HTTP/1.1 {code}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                        text.len()
                    );
                    if tls.write_all(answer.as_bytes()).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    (port, tokens)
}

/// A local-API key leaks and its certificate is revoked: a program (the
/// SDK's program client, which `heimdall run` uses) pins the certificates
/// the Agent's current statement from the CA lists, so an impostor with the
/// revoked certificate never receives its token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_sends_its_token_to_no_revoked_local_api_certificate() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let held = crate::values::holding_secret(&w, &config, "billing-db", "s3cret", &[]).await;
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_heimdall-agent"))
        .args([
            "token",
            "create",
            "--name",
            "billing-api",
            "--environment",
            "dev",
            "--secret",
            "billing-*",
            "--json",
        ])
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let token = serde_json::from_slice::<serde_json::Value>(&made.stdout).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let ca = std::fs::read_to_string(config.with_file_name("ca.pem")).unwrap();
    let program = |url: &str| AgentClient::with_program_token(url, &token, &ca).unwrap();
    assert_eq!(
        program(&held.local_url).get_value("billing-db", "dev", None).await.unwrap().value.expose(),
        "s3cret"
    );

    // The key leaks; an owner revokes the certificate; the Agent renews.
    let (leaked_cert, leaked_key) = local_api_pair(&config);
    let leaked = heimdall_tls_sha(&leaked_cert);
    let (status, _) = w.call(Method::DELETE, &format!("/v1/certificates/{leaked}"), None).await;
    assert_eq!(status, 200);
    let http = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).unwrap())
        .build()
        .unwrap();
    let current = || async {
        let shown: serde_json::Value = http
            .get(format!("{}/v1/certificate-status", held.local_url))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        let parsed = heimdall_core::local_api_status::parse(shown["status"].as_str()?).ok()?;
        Some((shown, parsed.claims.certificates))
    };
    eventually(&config, "a statement without the revoked certificate", || async {
        current().await.is_some_and(|(_, listed)| !listed.is_empty() && !listed.contains(&leaked))
    })
    .await;
    let (statement, _) = current().await.unwrap();

    // The impostor: the revoked certificate, the Agent's current statement.
    let (port, tokens) = program_impostor(&leaked_cert, &leaked_key, statement).await;
    let refused =
        program(&format!("https://localhost:{port}")).get_value("billing-db", "dev", None).await.unwrap_err();
    assert!(refused.to_string().contains("not one the API lists"), "{refused}");
    assert_eq!(tokens.load(Ordering::SeqCst), 0, "the program's token went to the impostor");
    // The real Agent, on its new certificate: the program reads on.
    assert_eq!(
        program(&held.local_url).get_value("billing-db", "dev", None).await.unwrap().value.expose(),
        "s3cret"
    );
    drop(held);
}
