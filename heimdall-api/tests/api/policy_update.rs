//! A policy is changed in place: `PATCH /v1/policies/{id or name}`
//! validates the new text, replaces it in one transaction (no moment with
//! no policy, as a delete and a create would leave), keeps every version
//! in its history, and applies from the next request.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::json;

use crate::support::{world, Client};

crate::on_every_backend!(a_policy_is_updated_in_place_validated_and_kept_in_history);

const FORBID_DEV: &str = r#"forbid (principal, action == Heimdall::Action::"catalog.read", resource) when { context.environment == "dev" } unless { principal.role == "owner" };"#;
const FORBID_DOMAINS: &str = r#"forbid (principal, action == Heimdall::Action::"catalog.read", resource) unless { principal.role == "owner" };"#;

async fn a_policy_is_updated_in_place_validated_and_kept_in_history(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    world(&c, owner).await;
    let admin = c.add_member(owner, "ana@example.com", "admin").await;
    let created = c
        .post("/v1/policies", owner, json!({ "name": "guard", "text": FORBID_DEV, "description": "first" }))
        .await
        .expect(201);
    assert_eq!(created["version"], 1, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    c.get("/v1/domains", &admin).await.expect(200);

    // The change applies from the next request.
    let patch = |key: &str, body: serde_json::Value, token: &str| {
        let path = format!("/v1/policies/{key}");
        let token = token.to_owned();
        let c = &c;
        async move { c.call(Method::PATCH, &path, &token, Some(body)).await }
    };
    let updated =
        patch("guard", json!({ "text": FORBID_DOMAINS, "expected_version": 1 }), owner).await.expect(200);
    assert_eq!(
        (updated["version"].as_i64(), updated["id"].as_str()),
        (Some(2), Some(id.as_str())),
        "{updated}"
    );
    assert_eq!(updated["description"], "first", "what is not given stays");
    assert_eq!(updated["updated_by"], "owner@example.com");
    c.get("/v1/domains", &admin).await.expect_error(403, "FORBIDDEN");

    // Refusals store nothing: text that does not compile, a stale version,
    // an unknown field, a caller who may not write policies.
    let broken = patch(&id, json!({ "text": "forbid (principal, action, resource" }), owner).await;
    assert_eq!(broken.expect_error(422, "INVALID_POLICY")["error"]["fields"][0]["path"], "/text");
    patch(&id, json!({ "text": FORBID_DEV, "expected_version": 1 }), owner)
        .await
        .expect_error(409, "STALE_REVISION");
    patch(&id, json!({ "txt": FORBID_DEV }), owner).await.expect_error(400, "BAD_REQUEST");
    patch(&id, json!({ "text": FORBID_DEV }), &admin).await.expect_error(403, "FORBIDDEN");
    patch("nope", json!({ "text": FORBID_DEV }), owner).await.expect_error(404, "NOT_FOUND");
    let shown = c.get("/v1/policies/guard", owner).await.expect(200);
    assert_eq!(
        (shown["version"].as_i64(), shown["text"].as_str()),
        (Some(2), Some(FORBID_DOMAINS)),
        "{shown}"
    );
    c.get("/v1/domains", &admin).await.expect_error(403, "FORBIDDEN");

    // The same text again is no new version; a description alone is one.
    let same = patch("guard", json!({ "text": FORBID_DOMAINS }), owner).await.expect(200);
    assert_eq!(same["version"], 2, "{same}");
    let described = patch("guard", json!({ "description": "second" }), owner).await.expect(200);
    assert_eq!((described["version"].as_i64(), described["description"].as_str()), (Some(3), Some("second")));

    // Every version, newest first, with who wrote it.
    let versions = c.get(&format!("/v1/policies/{id}/versions"), owner).await.expect(200);
    let versions = versions.as_array().unwrap();
    let summary: Vec<(i64, &str, &str)> = versions
        .iter()
        .map(|v| {
            (v["version"].as_i64().unwrap(), v["text"].as_str().unwrap(), v["description"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        summary,
        [(3, FORBID_DOMAINS, "second"), (2, FORBID_DOMAINS, "first"), (1, FORBID_DEV, "first")],
        "{versions:?}"
    );
    assert!(versions.iter().all(|v| v["written_by"] == "owner@example.com"));
    c.get(&format!("/v1/policies/{id}/versions"), &admin).await.expect(200);

    // Audited, and the feed names the policy.
    let events = c.get("/v1/events?action=policy.updated", owner).await.expect(200);
    let events = events.as_array().unwrap();
    assert_eq!(events.len(), 2, "two versions written by update: {events:?}");
    assert_eq!(events[0]["detail"]["version"], 3);
    assert_eq!(events[0]["target_name"], "guard");

    // Deleting it lifts it; its history stays readable to no one by its
    // id (the policy is gone).
    c.call(Method::DELETE, "/v1/policies/guard", owner, None).await.expect(204);
    c.get("/v1/domains", &admin).await.expect(200);
    c.get(&format!("/v1/policies/{id}/versions"), owner).await.expect_error(404, "NOT_FOUND");
}
