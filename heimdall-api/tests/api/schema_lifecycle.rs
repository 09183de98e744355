//! A schema version is retired in two steps: deprecated, no new Resource
//! is requested on it (a type name then means its newest version that is
//! not deprecated) while the Resources already on it go on; deleted, once
//! no Resource uses it. Every refusal stores nothing.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{bucket_schema, world, Client};

crate::on_every_backend!(a_schema_version_is_deprecated_then_deleted_once_unused);

async fn a_schema_version_is_deprecated_then_deleted_once_unused(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    let w = world(&c, owner).await;
    let member = c.add_member(owner, "bo@example.com", "member").await;
    let v2 = c
        .post(
            "/v1/schemas",
            owner,
            json!({ "type": "s3-bucket", "input_schema": bucket_schema(),
                                            "module": { "source": "./modules/bucket", "version": "1.1.0" } }),
        )
        .await
        .expect(201);
    let (v1, v2) = (w.schema.clone(), v2["id"].as_str().unwrap().to_owned());
    let deprecate = |id: &str, deprecated: bool, token: &str| {
        let (path, token, c) = (format!("/v1/schemas/{id}"), token.to_owned(), &c);
        async move { c.call(Method::PATCH, &path, &token, Some(json!({ "deprecated": deprecated }))).await }
    };
    let request = |schema: &str, name: &str| {
        let body = json!({ "component": w.component, "schema": schema, "environment": "dev", "name": name,
                           "input": { "bucket": format!("bucket-{name}") } });
        let c = &c;
        async move { c.post("/v1/resources", owner, body).await }
    };

    let deprecated = deprecate(&v1, true, owner).await.expect(200);
    assert_eq!(deprecated["deprecated_by"], "owner@example.com", "{deprecated}");
    assert!(deprecated["deprecated_at"].is_string(), "{deprecated}");
    deprecate(&v1, false, &member).await.expect_error(403, "FORBIDDEN");
    // A version is named by id: a type name would pick one for the caller.
    deprecate("s3-bucket", true, owner).await.expect_error(404, "NOT_FOUND");

    // No new Resource on the deprecated version; by type, the newest usable.
    let refused = request(&v1, "old").await.expect_error(409, "CONFLICT");
    assert!(refused["error"]["message"].as_str().unwrap().contains("deprecated"), "{refused}");
    let on_v2 = request("s3-bucket", "first").await.expect(201);
    assert_eq!(on_v2["schema_id"], v2.as_str());
    deprecate(&v2, true, owner).await.expect(200);
    request("s3-bucket", "second").await.expect_error(409, "CONFLICT");
    let resources = c.get("/v1/resources", owner).await.expect(200);
    assert_eq!(resources.as_array().unwrap().len(), 1, "refusals stored nothing: {resources}");
    // A Resource already on a deprecated version still changes.
    let rid = on_v2["id"].as_str().unwrap();
    let change = json!({ "input": { "bucket": "bucket-first", "versioning": true } });
    c.call(Method::PATCH, &format!("/v1/resources/{rid}"), owner, Some(change)).await.expect(200);
    let undeprecated = deprecate(&v2, false, owner).await.expect(200);
    assert!(undeprecated.get("deprecated_at").is_none_or(Value::is_null), "{undeprecated}");
    request("s3-bucket", "second").await.expect(201);

    // Deleted only once no Resource uses it.
    let in_use = c
        .call(Method::DELETE, &format!("/v1/schemas/{v2}"), owner, None)
        .await
        .expect_error(409, "NOT_EMPTY");
    assert!(in_use["error"]["message"].as_str().unwrap().contains("2 Resources"), "{in_use}");
    c.call(Method::DELETE, &format!("/v1/schemas/{v1}"), &member, None).await.expect_error(403, "FORBIDDEN");
    c.call(Method::DELETE, &format!("/v1/schemas/{v1}"), owner, None).await.expect(204);
    c.get(&format!("/v1/schemas/{v1}"), owner).await.expect_error(404, "NOT_FOUND");
    request(&v1, "gone").await.expect_error(404, "NOT_FOUND");
    let versions = c.get("/v1/schemas?type=s3-bucket", owner).await.expect(200);
    let listed: Vec<&str> = versions.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(listed, [v2.as_str()], "{versions}");
    let events = c.get("/v1/events?action=schema.", owner).await.expect(200);
    let actions: Vec<&str> =
        events.as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(
        actions[..4],
        ["schema.deleted", "schema.undeprecated", "schema.deprecated", "schema.deprecated"]
    );
}
