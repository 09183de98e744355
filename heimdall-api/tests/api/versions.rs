//! Versions, write grants, deactivation and people's certificates: numbered
//! per environment, refused before anything is stored when the caller may
//! not write or no Agent holds the environment, grants that name exactly
//! one version on one Agent, and certificates that Agents learn of by sync
//! and forget when their member is removed.

use heimdall_api::testing::{TestApi, TestDatabase};
use heimdall_core::grant;
use serde_json::{json, Value};

use crate::agents::{agent_client, csr};
use crate::support::Client;

crate::on_every_backend!(versions_grants_deactivation_and_certificates);

async fn sync(agent: &reqwest::Client, api: &TestApi, body: Value) -> (u16, Value) {
    let resp = agent.post(format!("{}/v1/agent/sync", api.agent_url)).json(&body).send().await.expect("sync");
    (resp.status().as_u16(), resp.json().await.expect("JSON"))
}

async fn versions_grants_deactivation_and_certificates(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let member = c.add_member(owner, "bo@example.com", "member").await;
    c.post("/v1/environments", owner, json!({ "name": "dev" })).await.expect(201);
    c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);

    // No Agent holds dev yet: refused, and no version exists.
    c.post("/v1/secrets/db-password/versions", owner, json!({ "environment": "dev" }))
        .await
        .expect_error(409, "NO_AGENT");

    let reg = c.post("/v1/agents/registrations", owner, json!({ "name": "edge-1" })).await.expect(201);
    let (key, request) = csr();
    let enrolled: Value = reqwest::Client::new()
        .post(format!("{}/v1/agents/enroll", api.url))
        .json(&json!({ "token": reg["token"], "csr_pem": request }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let agent_id = enrolled["agent"]["id"].as_str().unwrap().to_owned();
    let edge = agent_client(
        enrolled["ca_pem"].as_str().unwrap(),
        Some((enrolled["certificate_pem"].as_str().unwrap(), &key)),
    );
    c.post("/v1/environments/dev/agents", owner, json!({ "agent": "edge-1" })).await.expect(201);
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-1" })).await.expect(201);

    // Until the Agent syncs, nobody knows where to reach it.
    let holders = c.get("/v1/secrets/db-password/holders?environment=dev", &member).await.expect(200);
    assert_eq!(holders[0]["agent"], "edge-1");
    assert_eq!(holders[0]["url"], Value::Null);
    let (status, _) = sync(&edge, &api, json!({ "local_url": "http://edge-1:7482" })).await;
    assert_eq!(status, 422, "a local API is HTTPS only");
    let (status, _) = sync(&edge, &api, json!({ "local_url": "https://edge-1.internal:7482" })).await;
    assert_eq!(status, 200);
    let holders = c.get("/v1/secrets/db-password/holders?environment=dev", &member).await.expect(200);
    assert_eq!(holders[0]["url"], "https://edge-1.internal:7482");

    // Numbered per environment; a grant names exactly the version and Agent.
    let v1 =
        c.post("/v1/secrets/db-password/versions", owner, json!({ "environment": "dev" })).await.expect(201);
    let v2 =
        c.post("/v1/secrets/db-password/versions", owner, json!({ "environment": "dev" })).await.expect(201);
    let p1 =
        c.post("/v1/secrets/db-password/versions", owner, json!({ "environment": "prod" })).await.expect(201);
    assert_eq!(
        (v1["version"].as_i64(), v2["version"].as_i64(), p1["version"].as_i64()),
        (Some(1), Some(2), Some(1))
    );
    let claims = grant::parse(v2["holders"][0]["grant"].as_str().unwrap()).unwrap().claims;
    assert_eq!(
        (claims.secret.as_str(), claims.environment.as_str(), claims.version, claims.agent.to_string()),
        ("db-password", "dev", 2, agent_id.clone())
    );
    assert_eq!(claims.issued_by, "owner@example.com");
    assert_eq!(claims.expires_at - claims.issued_at, grant::GRANT_TTL.whole_seconds());
    let detail = c.get("/v1/secrets/db-password", owner).await.expect(200);
    assert_eq!(detail["versions"].as_array().unwrap().len(), 3);
    assert!(detail["versions"].as_array().unwrap().iter().all(|v| v["created_by"] == "owner@example.com"));

    // A member may not write an org secret; nothing is numbered for them.
    c.post("/v1/secrets/db-password/versions", &member, json!({ "environment": "dev" }))
        .await
        .expect_error(403, "FORBIDDEN");
    // A personal secret: its owner writes it whatever their role; others do not see it.
    let personal = c.personal_secret(&member, "bo-notes").await;
    let bo_id = personal["owner_id"].as_str().unwrap().to_owned();
    assert_eq!(personal["owner_keys"].as_array().unwrap().len(), 1, "{personal}");
    let mine =
        c.post("/v1/secrets/bo-notes/versions", &member, json!({ "environment": "dev" })).await.expect(201);
    assert_eq!(mine["version"], 1);
    // The grant binds the writer by member id and, for a personal secret, to its keys.
    let claims = grant::parse(mine["holders"][0]["grant"].as_str().unwrap()).unwrap().claims;
    assert_eq!(claims.issued_to, grant::GrantWriter::Member(bo_id.parse().unwrap()));
    assert_eq!(json!(claims.owner_keys), personal["owner_keys"]);
    // A writer naming a certificate whose key is not bound gets no version.
    let other_cert = c.certificate(&member).await;
    c.post(
        "/v1/secrets/bo-notes/versions",
        &member,
        json!({ "environment": "dev", "certificate_sha256": other_cert }),
    )
    .await
    .expect_error(403, "FORBIDDEN");
    c.post("/v1/secrets/bo-notes/versions", owner, json!({ "environment": "dev" }))
        .await
        .expect_error(404, "NOT_FOUND");
    let detail = c.get("/v1/secrets/db-password", owner).await.expect(200);
    assert_eq!(detail["versions"].as_array().unwrap().len(), 3);

    // Deactivation: owner/admin only, unknown versions are 404, and every
    // Agent's sync answer lists it from then on.
    c.post("/v1/secrets/db-password/deactivate", &member, json!({ "environment": "dev", "version": 2 }))
        .await
        .expect_error(403, "FORBIDDEN");
    c.post("/v1/secrets/db-password/deactivate", owner, json!({ "environment": "dev", "version": 9 }))
        .await
        .expect_error(404, "NOT_FOUND");
    let done = c
        .post("/v1/secrets/db-password/deactivate", owner, json!({ "environment": "dev", "version": 2 }))
        .await
        .expect(200);
    assert!(done["deactivated_at"].is_string(), "{done}");
    let (_, answer) = sync(&edge, &api, json!({})).await;
    assert_eq!(
        answer["deactivated"],
        json!([{ "secret": "db-password", "environment": "dev", "version": 2 }])
    );
    let bo_member: heimdall_core::ids::MemberId = bo_id.parse().unwrap();
    let bo_kept = heimdall_core::secrets::personal_key(bo_member, "bo-notes");
    assert!(answer["secrets"].as_array().unwrap().iter().any(|s| s["name"] == bo_kept.as_str()
            && s["owner_id"] == bo_id.as_str()
            && s["owner_keys"] == personal["owner_keys"]
            // Never the email: an older Agent matching it would serve whoever holds it.
            && s["personal_owner"] == format!("member:{bo_id}").as_str()));

    // People's certificates: issued from a CSR, listed to Agents under
    // their member, gone from the list once the member is removed.
    c.post("/v1/me/certificate", &member, json!({ "csr": "not a CSR" }))
        .await
        .expect_error(422, "INVALID_INPUT");
    let (_, request) = csr();
    let cert = c.post("/v1/me/certificate", &member, json!({ "csr": request })).await.expect(201);
    let sha = cert["sha256"].as_str().unwrap();
    assert!(cert["certificate"].as_str().unwrap().starts_with("-----BEGIN CERTIFICATE-----"));
    let (_, answer) = sync(&edge, &api, json!({})).await;
    let bo = answer["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == "bo@example.com")
        .unwrap()
        .clone();
    assert!(bo["certificates"].as_array().unwrap().iter().any(|s| s == sha), "{bo}");
    c.call(reqwest::Method::DELETE, "/v1/members/bo@example.com", owner, None).await.expect(200);
    let (_, answer) = sync(&edge, &api, json!({})).await;
    let listed: Vec<&Value> = answer["members"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["certificates"].as_array().unwrap())
        .collect();
    assert!(!listed.iter().any(|s| *s == sha), "a removed member's certificate is still listed: {answer}");

    // The same email added again is a new member: bo's personal secret is
    // not hers, whatever token or certificate she gets.
    let again = c.add_member(owner, "bo@example.com", "owner").await;
    c.get("/v1/secrets/bo-notes", &again).await.expect_error(404, "NOT_FOUND");
    c.post("/v1/secrets/bo-notes/versions", &again, json!({ "environment": "dev" }))
        .await
        .expect_error(404, "NOT_FOUND");
    c.get("/v1/secrets/bo-notes/access-log", &again).await.expect_error(404, "NOT_FOUND");
    assert!(c
        .get("/v1/secrets", &again)
        .await
        .expect(200)
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["name"] != "bo-notes"));
}

crate::on_every_backend!(personal_names_are_invisible_and_cannot_be_probed);

/// A personal secret's name is its owner's alone: another member creating
/// a secret of that name learns nothing (it is created), the audit feed and
/// an Agent's inventory shown to admins do not name it, and its owner
/// reaches hers by the name she gave it.
async fn personal_names_are_invisible_and_cannot_be_probed(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let ana = c.add_member(owner, "ana@example.com", "member").await;
    let bo = c.add_member(owner, "bo@example.com", "admin").await;
    let mine = c.personal_secret(&ana, "diary-ana").await;
    let mine_id = mine["id"].as_str().unwrap().to_owned();

    // No probe: an organization secret and bo's own personal one by that
    // name are both created, and each caller finds their own.
    let org = c.post("/v1/secrets", &bo, json!({ "name": "diary-ana" })).await.expect(201);
    c.personal_secret(&bo, "diary-ana").await;
    assert_eq!(c.get("/v1/secrets/diary-ana", &ana).await.expect(200)["secret"]["id"], mine_id.as_str());
    let bos = c.get("/v1/secrets/diary-ana", &bo).await.expect(200);
    assert_ne!(bos["secret"]["id"], mine_id.as_str());
    assert_eq!(c.get("/v1/secrets/diary-ana", owner).await.expect(200)["secret"]["id"], org["id"]);

    // The feed: the events about ana's secret do not name it.
    let events = c.get("/v1/events?limit=200", owner).await.expect(200);
    let hers: Vec<&Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["target"] == format!("secret:{mine_id}").as_str())
        .collect();
    assert!(!hers.is_empty(), "{events}");
    for event in hers {
        assert!(!event.to_string().contains("diary-ana"), "{event}");
    }

    // An Agent's inventory, shown to an admin: not hers.
    let prod = c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201)["id"].clone();
    let (edge, _) = crate::support::enroll_agent(&c, &api, owner, "edge-1").await;
    assert_eq!(mine["name"], "diary-ana", "shown as she named it");
    let ana_id: heimdall_core::ids::MemberId = mine["owner_id"].as_str().unwrap().parse().unwrap();
    let kept = heimdall_core::secrets::personal_key(ana_id, "diary-ana");
    let kept = kept.as_str();
    let inventory = json!({ "inventory": [
        { "secret": kept, "environment": prod, "version": 1, "deactivated": false },
        { "secret": "diary-ana", "environment": prod, "version": 1, "deactivated": false },
    ] });
    let resp = edge.post(format!("{}/v1/agent/sync", api.agent_url)).json(&inventory).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let shown = c.get("/v1/agents/edge-1", owner).await.expect(200);
    let held: Vec<&str> =
        shown["holdings"].as_array().unwrap().iter().map(|h| h["secret"].as_str().unwrap()).collect();
    assert_eq!(held, ["diary-ana"], "only the organization's: {shown}");
}
