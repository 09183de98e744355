//! `POST /v1/resources/{key}/upgrade`: a Resource moves to another version
//! of its schema type with a new revision whose job runs that version's
//! module; each refusal (the input under the new rules, the same, an
//! older or a missing version, a caller without `resource.write`) stores
//! nothing; `?outdated=true` lists the Resources on an older version; a schema version stays in use while a Resource's newest or
//! applied revision is on it; revisions an older Heimdall stored name
//! their Resource's schema after `migrate`.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{bucket_schema, request_recibos, world, Client};

crate::on_every_backend!(
    a_resource_moves_between_schema_versions_and_every_refusal_stores_nothing,
    revisions_an_older_heimdall_stored_name_their_schema_after_migrate
);

/// Version 2 of `s3-bucket`: module 2.0.0, and `encryption` is required.
async fn version_2(c: &Client, owner: &str) -> String {
    let mut input_schema = bucket_schema();
    input_schema["properties"]["encryption"] = json!({ "enum": ["sse", "kms"] });
    input_schema["required"] = json!(["bucket", "encryption"]);
    let v2 = c
        .post(
            "/v1/schemas",
            owner,
            json!({ "type": "s3-bucket", "input_schema": input_schema,
                    "module": { "source": "./modules/bucket", "version": "2.0.0" } }),
        )
        .await
        .expect(201);
    assert_eq!(v2["version"], 2, "{v2}");
    v2["id"].as_str().unwrap().to_owned()
}

/// What a refusal must leave as it was: the revisions, the jobs, the events.
async fn footprint(c: &Client, owner: &str, id: &str) -> (Value, usize, usize) {
    let shown = c.get(&format!("/v1/resources/{id}"), owner).await.expect(200);
    let jobs = c.get(&format!("/v1/jobs?resource={id}"), owner).await.expect(200);
    let events = c.get("/v1/events?action=resource.upgraded", owner).await.expect(200);
    (shown, jobs.as_array().unwrap().len(), events.as_array().unwrap().len())
}

/// The names `GET /v1/resources?{query}` lists.
async fn names(c: &Client, token: &str, query: &str) -> Vec<String> {
    let listed = c.get(&format!("/v1/resources?{query}"), token).await.expect(200);
    listed.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap().to_owned()).collect()
}

async fn upgrade(c: &Client, token: &str, id: &str, body: Value) -> crate::support::Reply {
    c.post(&format!("/v1/resources/{id}/upgrade"), token, body).await
}

async fn a_resource_moves_between_schema_versions_and_every_refusal_stores_nothing(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    let w = world(&c, owner).await;
    let created = request_recibos(&c, owner, &w, "dev").await;
    let id = created["id"].as_str().unwrap().to_owned();
    let v2 = version_2(&c, owner).await;
    let member = c.add_member(owner, "bo@example.com", "member").await;

    // On version 1 of 2, it is listed as outdated; of its type, either way.
    assert_eq!(names(&c, owner, "outdated=true").await, ["recibos"]);
    assert_eq!(names(&c, owner, "type=s3-bucket&outdated=true").await, ["recibos"]);
    assert_eq!(names(&c, owner, "type=other").await, Vec::<String>::new());
    c.get("/v1/resources?outdated=maybe", owner).await.expect_error(400, "BAD_REQUEST");

    let before = footprint(&c, owner, &id).await;
    upgrade(&c, &member, &id, json!({ "schema_version": 2 })).await.expect_error(403, "FORBIDDEN");
    let violation =
        upgrade(&c, owner, &id, json!({ "schema_version": 2 })).await.expect_error(422, "SCHEMA_VIOLATION");
    assert!(violation.to_string().contains("encryption"), "names the field: {violation}");
    upgrade(&c, owner, &id, json!({ "schema_version": 7 })).await.expect_error(404, "NOT_FOUND");
    upgrade(&c, owner, &id, json!({ "schema_version": 1 })).await.expect_error(409, "CONFLICT");
    upgrade(&c, owner, &id, json!({ "schema_version": 2, "downgrade": true }))
        .await
        .expect_error(400, "BAD_REQUEST");
    assert_eq!(footprint(&c, owner, &id).await, before, "no refusal stored anything");

    let input = json!({ "bucket": "checkout-recibos", "encryption": "kms" });
    let upgraded = upgrade(&c, owner, &id, json!({ "schema_version": 2, "input": input })).await.expect(200);
    assert_eq!((upgraded["revision"].as_i64(), upgraded["schema_id"].as_str()), (Some(2), Some(v2.as_str())));
    let shown = c.get(&format!("/v1/resources/{id}"), owner).await.expect(200);
    let versions: Vec<i64> = shown["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["schema_version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, [1, 2], "{shown}");
    assert_eq!(names(&c, owner, "outdated=true").await, Vec::<String>::new(), "on the newest version");
    assert_eq!(names(&c, owner, "type=s3-bucket").await, ["recibos"]);
    assert_eq!(shown["revisions"][1]["effective_input"]["encryption"], "kms");
    let jobs = c.get(&format!("/v1/jobs?resource={id}&order=newest"), owner).await.expect(200);
    assert_eq!(jobs[0]["request"]["module"]["version"], "2.0.0", "the new version's module runs: {jobs}");
    assert_eq!(jobs[0]["request"]["state_key"], jobs[1]["request"]["state_key"], "under the same state");
    let events = c.get("/v1/events?action=resource.upgraded", owner).await.expect(200);
    assert_eq!(
        (events[0]["detail"]["from_version"].as_i64(), events[0]["detail"]["to_version"].as_i64()),
        (Some(1), Some(2)),
        "{events}"
    );

    // On version 2 now: the same version again is refused; an older one
    // only with consent, and the kept input must suit it.
    upgrade(&c, owner, &id, json!({ "schema_version": 2 })).await.expect_error(409, "CONFLICT");
    let down = upgrade(&c, owner, &id, json!({ "schema_version": 1 })).await.expect_error(409, "CONFLICT");
    assert!(down.to_string().contains("--allow-downgrade"), "{down}");
    upgrade(&c, owner, &id, json!({ "schema_version": 1, "allow_downgrade": true }))
        .await
        .expect_error(422, "SCHEMA_VIOLATION");
    let back =
        json!({ "schema_version": 1, "allow_downgrade": true, "input": { "bucket": "checkout-recibos" } });
    let downgraded = upgrade(&c, owner, &id, back).await.expect(200);
    assert_eq!(downgraded["revision"], 3);

    // A version is in use while a Resource's newest or applied revision is
    // on it; older revisions on it are history.
    let v1 = w.schema.as_str();
    c.call(Method::DELETE, &format!("/v1/schemas/{v1}"), owner, None).await.expect_error(409, "NOT_EMPTY");
    upgrade(&c, owner, &id, json!({ "schema_version": 2, "input": input })).await.expect(200);
    c.call(Method::DELETE, &format!("/v1/schemas/{v2}"), owner, None).await.expect_error(409, "NOT_EMPTY");
    c.call(Method::DELETE, &format!("/v1/schemas/{v1}"), owner, None).await.expect(204);
    // A change stays on version 2; a retry or a destroy still finds its module.
    let change = json!({ "input": { "bucket": "checkout-recibos", "encryption": "sse" } });
    let changed =
        c.call(Method::PATCH, &format!("/v1/resources/{id}"), owner, Some(change)).await.expect(200);
    assert_eq!(changed["schema_id"], v2);
}

/// Revisions stored before migration 42 carry no schema: `migrate` gives
/// each its Resource's, so the Resource still changes and upgrades.
async fn revisions_an_older_heimdall_stored_name_their_schema_after_migrate(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    let w = world(&c, owner).await;
    let id = request_recibos(&c, owner, &w, "dev").await["id"].as_str().unwrap().to_owned();

    sqlx::any::install_default_drivers();
    let pool = sqlx::any::AnyPoolOptions::new().max_connections(1).connect(api.database.url()).await.unwrap();
    for sql in [
        "ALTER TABLE resource_revisions DROP COLUMN schema_id",
        "ALTER TABLE resource_revisions DROP COLUMN schema_version",
        "DELETE FROM _sqlx_migrations WHERE version = 42",
    ] {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    pool.close().await;
    crate::support::migrate(api.database.url()).await;

    let shown = c.get(&format!("/v1/resources/{id}"), owner).await.expect(200);
    assert_eq!(
        (shown["revisions"][0]["schema_id"].as_str(), shown["revisions"][0]["schema_version"].as_i64()),
        (Some(w.schema.as_str()), Some(1)),
        "{shown}"
    );
    version_2(&c, owner).await;
    let input = json!({ "bucket": "checkout-recibos", "encryption": "sse" });
    upgrade(&c, owner, &id, json!({ "schema_version": 2, "input": input })).await.expect(200);
}
