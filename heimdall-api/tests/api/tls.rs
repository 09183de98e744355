//! The TLS edge, against the real `heimdall-api` binary: people get HTTPS
//! (and no listener at all without a TLS choice), both listeners close
//! connections that say nothing, cap how many they serve, and the API's
//! identity is one no Agent can get.

use std::sync::Arc;
use std::time::Duration;

use heimdall_api::testing::{TestApi, TestDatabase, API_TEST_NAME};
use heimdall_tls::identity::{uri_sans, API_URI};
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use crate::agents::{agent_client, csr};
use crate::on_every_backend;
use crate::support::{free_port, serve_binary, Client};

on_every_backend!(agents_cannot_get_the_apis_names_or_identity);

/// `heimdall-api serve` on SQLite with a CA and both listeners, and `limits`
/// (TOML lines) in its config file; its people's port, its Agent port and
/// the CA (PEM).
struct Server {
    /// Killed when the test ends (`kill_on_drop`).
    _child: tokio::process::Child,
    people: u16,
    agents: u16,
    ca_pem: String,
    _dir: tempfile::TempDir,
}

async fn serve(limits: &str) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("heimdall.db").display());
    let bin = env!("CARGO_BIN_EXE_heimdall-api");
    let boot = tokio::process::Command::new(bin)
        .args(["bootstrap", "--database-url", &url, "--org", "acme", "--owner", "owner@example.com"])
        .output()
        .await
        .unwrap();
    assert!(boot.status.success(), "{}", String::from_utf8_lossy(&boot.stderr));
    let config = dir.path().join("heimdall.toml");
    std::fs::write(&config, limits).unwrap();
    let ca_file = dir.path().join("ca/ca.pem");
    let args = |ports: &[u16], api: &mut tokio::process::Command| {
        let (people, agents) = (format!("127.0.0.1:{}", ports[0]), format!("127.0.0.1:{}", ports[1]));
        api.args([
            "serve",
            "--database-url",
            &url,
            "--listen",
            &people,
            "--agent-listen",
            &agents,
            "--config",
        ]);
        api.arg(&config).arg("--ca-dir").arg(dir.path().join("ca"));
    };
    let (child, ports) = serve_binary(dir.path(), 2, args, |ports| {
        let ca_file = ca_file.clone();
        async move {
            let Ok(ca_pem) = std::fs::read_to_string(&ca_file) else { return false };
            let http = agent_client(&ca_pem, None);
            http.get(format!("https://127.0.0.1:{}/v1/health", ports[0])).send().await.is_ok()
        }
    })
    .await;
    let ca_pem = std::fs::read_to_string(&ca_file).unwrap();
    Server { _child: child, people: ports[0], agents: ports[1], ca_pem, _dir: dir }
}

/// Whether the server closes `stream` within `within` while it sends nothing.
async fn closed_within<S: tokio::io::AsyncRead + Unpin>(stream: &mut S, within: Duration) -> bool {
    let mut buf = [0u8; 64];
    matches!(tokio::time::timeout(within, stream.read(&mut buf)).await, Ok(Ok(0) | Err(_)))
}

fn tls_client(ca_pem: &str) -> tokio_rustls::TlsConnector {
    let verifier = heimdall_tls::verify::ExpectIdentity::new(
        heimdall_tls::verify::roots(ca_pem).unwrap(),
        API_URI,
        None,
    )
    .unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(
        heimdall_tls::verify::client_config(Arc::new(verifier), None).unwrap(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_get_https_and_silent_connections_are_closed_on_both_listeners() {
    let server = serve("handshake_timeout_seconds = 1\nheader_read_timeout_seconds = 1\n").await;
    // People's HTTPS names the API (a CA-issued URI SAN no Agent can get).
    let server_name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tcp = TcpStream::connect(("127.0.0.1", server.people)).await.unwrap();
    let mut tls =
        tls_client(&server.ca_pem).connect(server_name.clone(), tcp).await.expect("HTTPS naming the API");
    let presented = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
    assert!(uri_sans(presented.as_ref()).contains(&API_URI.to_owned()));
    // A handshake done, then silence: closed after the header timeout.
    assert!(closed_within(&mut tls, Duration::from_secs(5)).await, "an idle TLS connection stayed open");
    // No handshake at all: closed after the handshake timeout, on both listeners.
    for port in [server.people, server.agents] {
        let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        assert!(
            closed_within(&mut tcp, Duration::from_secs(5)).await,
            "port {port}: a silent connection stayed open"
        );
    }
    // Plain HTTP to the people's port is not served.
    let plain =
        reqwest::Client::new().get(format!("http://127.0.0.1:{}/v1/health", server.people)).send().await;
    assert!(plain.map(|r| r.status().as_u16() != 200).unwrap_or(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_cap_new_connections_wait() {
    let server = serve("handshake_timeout_seconds = 30\nmax_connections = 2\n").await;
    let health = || async {
        let http = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(server.ca_pem.as_bytes()).unwrap())
            .timeout(Duration::from_secs(2))
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        http.get(format!("https://127.0.0.1:{}/v1/health", server.people)).send().await.is_ok()
    };
    assert!(health().await);
    // Two connections that never finish a handshake hold both slots.
    let held = [
        TcpStream::connect(("127.0.0.1", server.people)).await.unwrap(),
        TcpStream::connect(("127.0.0.1", server.people)).await.unwrap(),
    ];
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!health().await, "a third connection was served past the cap");
    drop(held);
    let mut served = false;
    for _ in 0..20 {
        if health().await {
            served = true;
            break;
        }
    }
    assert!(served, "a slot freed but the connection was not served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_tls_choice_the_api_does_not_serve_people() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("heimdall.db").display());
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_heimdall-api"))
        .args(["serve", "--database-url", &url, "--listen", &format!("127.0.0.1:{}", free_port())])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--tls-cert") && stderr.contains("--insecure-http"), "{stderr}");
}

/// What an enrolled Agent asks the CA for, and what it gets: never a name
/// of the API's own (the attempt is on the audit feed), and always its own
/// URI SAN, never the API's.
async fn agents_cannot_get_the_apis_names_or_identity(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let (edge, enrolled) = crate::support::enroll_agent(&c, &api, owner, "edge-1").await;
    let ask = |names: Vec<&'static str>| {
        let edge = edge.clone();
        let url = format!("{}/v1/agent/server-certificate", api.agent_url);
        let (_, request) = csr();
        async move {
            let resp = edge.post(url).json(&json!({ "csr": request, "names": names })).send().await.unwrap();
            (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
        }
    };
    let (status, body) = ask(vec!["edge-1.internal", API_TEST_NAME]).await;
    assert_eq!((status, body["error"]["code"].as_str()), (403, Some("FORBIDDEN")), "{body}");
    let refused = c.get("/v1/events?action=agent.certificate_refused", owner).await.expect(200);
    assert_eq!(refused.as_array().unwrap().len(), 1, "{refused}");
    assert_eq!(refused[0]["detail"]["names"], json!([API_TEST_NAME]));
    // Any other name only once an owner approved it for this Agent (a
    // browser or ESO trusts the CA by host name): not www.example.com.
    let (status, body) = ask(vec!["www.example.com", "127.0.0.1"]).await;
    assert_eq!((status, body["error"]["code"].as_str()), (403, Some("FORBIDDEN")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("allow-name edge-1"), "{body}");
    let (status, body) = ask(vec!["edge-1.internal"]).await;
    assert_eq!(status, 403, "not approved yet: {body}");
    let refused = c.get("/v1/events?action=agent.certificate_refused", owner).await.expect(200);
    assert_eq!(refused.as_array().unwrap().len(), 3, "{refused}");
    let admin = c.add_member(owner, "ada@example.com", "admin").await;
    let approve = json!({ "name": "edge-1.internal" });
    c.post("/v1/agents/edge-1/names", &admin, approve.clone()).await.expect_error(403, "FORBIDDEN");
    c.post("/v1/agents/edge-1/names", owner, json!({ "name": API_TEST_NAME }))
        .await
        .expect_error(403, "FORBIDDEN");
    c.post("/v1/agents/edge-1/names", owner, approve).await.expect(201);
    assert_eq!(c.get("/v1/agents/edge-1", owner).await.expect(200)["names"][0]["name"], "edge-1.internal");
    // Its approved names, loopback too: issued, with its URI SAN only.
    let (status, issued) = ask(vec!["edge-1.internal", "127.0.0.1"]).await;
    assert_eq!(status, 200, "{issued}");
    let der = heimdall_tls::identity::first_der(issued["certificate"].as_str().unwrap()).unwrap();
    let agent = enrolled["agent"]["id"].as_str().unwrap();
    assert_eq!(uri_sans(&der), [format!("urn:heimdall:agent:{agent}")]);
    // Listed, revocable one by one.
    let listed = c.get("/v1/certificates", owner).await.expect(200);
    let mine = listed.as_array().unwrap().iter().find(|x| x["sha256"] == issued["sha256"]).unwrap().clone();
    assert_eq!((mine["kind"].as_str(), mine["subject"].as_str()), (Some("agent_server"), Some("edge-1")));
    let member = c.add_member(owner, "bo@example.com", "member").await;
    c.call(
        reqwest::Method::DELETE,
        &format!("/v1/certificates/{}", issued["sha256"].as_str().unwrap()),
        &member,
        None,
    )
    .await
    .expect_error(403, "FORBIDDEN");
    let revoked = c
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/certificates/{}", issued["sha256"].as_str().unwrap()),
            owner,
            None,
        )
        .await
        .expect(200);
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    // A member lists and revokes her own.
    let bo_cert = c.certificate(&member).await;
    let hers = c.get("/v1/certificates", &member).await.expect(200);
    assert_eq!(
        hers.as_array().unwrap().iter().map(|x| x["sha256"].as_str().unwrap()).collect::<Vec<_>>(),
        [bo_cert.as_str()]
    );
    c.call(reqwest::Method::DELETE, &format!("/v1/certificates/{bo_cert}"), &member, None).await.expect(200);
}
