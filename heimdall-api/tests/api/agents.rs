//! Enrollment and the mTLS Agent channel: only a certificate issued to an
//! enrolled, unrevoked Agent gets in; a registration token works once.

use heimdall_api::testing::{TestApi, TestDatabase};
use rcgen::{CertificateParams, KeyPair};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::Client;

crate::on_every_backend!(enrollment_and_the_mtls_channel);

pub(crate) fn csr() -> (KeyPair, String) {
    let key = KeyPair::generate().unwrap();
    let csr = CertificateParams::default().serialize_request(&key).unwrap().pem().unwrap();
    (key, csr)
}

pub(crate) fn agent_client(ca_pem: &str, identity: Option<(&str, &KeyPair)>) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem.as_bytes()).unwrap());
    if let Some((cert, key)) = identity {
        let pem = format!("{cert}\n{}", key.serialize_pem());
        builder = builder.identity(reqwest::Identity::from_pem(pem.as_bytes()).unwrap());
    }
    builder.build().unwrap()
}

async fn claim(client: &reqwest::Client, api: &TestApi) -> Result<u16, reqwest::Error> {
    let resp = client
        .post(format!("{}/v1/agent/claim", api.agent_url))
        .json(&json!({ "wait_seconds": 0 }))
        .send()
        .await?;
    Ok(resp.status().as_u16())
}

async fn enrollment_and_the_mtls_channel(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let admin = c.add_member(owner, "admin@example.com", "admin").await;

    // Only owners make registration tokens.
    c.post("/v1/agents/registrations", &admin, json!({ "name": "edge-1" }))
        .await
        .expect_error(403, "FORBIDDEN");
    let reg = c.post("/v1/agents/registrations", owner, json!({ "name": "edge-1" })).await.expect(201);
    let token = reg["token"].as_str().unwrap().to_owned();

    // A bad CSR is refused without burning the token.
    let enroll = |token: &str, csr: &str| json!({ "token": token, "csr_pem": csr });
    let http = reqwest::Client::new();
    let post = |body: Value| {
        let http = http.clone();
        let url = format!("{}/v1/agents/enroll", api.url);
        async move {
            let r = http.post(url).json(&body).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    assert_eq!(post(enroll(&token, "not a csr")).await.0, 422);
    let (key, request) = csr();
    let (status, enrolled) = post(enroll(&token, &request)).await;
    assert_eq!(status, 201, "{enrolled}");
    assert_eq!(enrolled["agent"]["name"], "edge-1");
    assert_eq!(enrolled["agent"]["created_by"], "owner@example.com");
    assert_eq!(enrolled["agent_api_url"], api.agent_url);
    // The token works once.
    let (status, again) = post(enroll(&token, &csr().1)).await;
    assert_eq!((status, again["error"]["code"].as_str()), (401, Some("UNAUTHENTICATED")));

    let ca = enrolled["ca_pem"].as_str().unwrap();
    let cert = enrolled["certificate_pem"].as_str().unwrap();
    let good = agent_client(ca, Some((cert, &key)));
    assert_eq!(claim(&good, &api).await.unwrap(), 204, "an enrolled Agent may claim (nothing queued)");

    // No client certificate: the TLS handshake itself is refused.
    assert!(claim(&agent_client(ca, None), &api).await.is_err());
    // A certificate from another CA: refused at the handshake too.
    let stranger_key = KeyPair::generate().unwrap();
    let stranger =
        CertificateParams::new(vec!["agent".into()]).unwrap().self_signed(&stranger_key).unwrap().pem();
    assert!(claim(&agent_client(ca, Some((&stranger, &stranger_key))), &api).await.is_err());
    // The Agent channel is not on the people's listener, and vice versa.
    let people = c.call(Method::POST, "/v1/agent/claim", owner, Some(json!({ "wait_seconds": 0 }))).await;
    assert_eq!(people.status.as_u16(), 404);

    // Listed, then revoked: refused at once, even with a valid certificate.
    let agents = c.get("/v1/agents", owner).await.expect(200);
    assert_eq!(agents.as_array().unwrap().len(), 1);
    c.get("/v1/agents", &admin).await.expect(200);
    c.call(Method::DELETE, "/v1/agents/edge-1", &admin, None).await.expect_error(403, "FORBIDDEN");
    c.call(Method::DELETE, "/v1/agents/edge-1", owner, None).await.expect(200);
    assert_eq!(claim(&good, &api).await.unwrap(), 403);
    let feed = c.get("/v1/events?action=agent.", owner).await.expect(200);
    let actions: Vec<&str> = feed.as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["agent.revoked", "agent.enrolled", "agent.registration_created"]);
}
