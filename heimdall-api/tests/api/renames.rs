//! Renaming an environment changes its name only: what was registered
//! for it (a schema's defaults, an account's link) is kept by its id, so
//! the next request in the renamed environment gets them as before.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::json;

use crate::support::{world, Client, World};

crate::on_every_backend!(
    a_renamed_environment_keeps_its_schema_defaults_and_links,
    defaults_an_older_heimdall_kept_by_name_are_moved_to_ids_by_migrate
);

/// `dev` becomes `development`; the schema's defaults (its `dev` ones) are
/// read under the new name.
async fn rename_dev(c: &Client, owner: &str, w: &World) {
    let path = format!("/v1/environments/{}", w.dev);
    c.call(Method::PATCH, &path, owner, Some(json!({ "name": "development" }))).await.expect(200);
    let schema = c.get(&format!("/v1/schemas/{}", w.schema), owner).await.expect(200);
    let dev_defaults = json!({ "versioning": false, "tags": { "env": "dev" } });
    assert_eq!(schema["defaults"], json!({ "development": dev_defaults }), "{schema}");
}

async fn a_renamed_environment_keeps_its_schema_defaults_and_links(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    let w = world(&c, owner).await;
    // The schema shows its defaults under the environment's name as it is now.
    rename_dev(&c, owner, &w).await;

    // A Resource requested there gets them laid under its input.
    let created = crate::support::request_recibos(&c, owner, &w, "development").await;
    let rid = created["id"].as_str().unwrap();
    let jobs = c.get(&format!("/v1/jobs?resource={rid}"), owner).await.expect(200);
    assert_eq!(
        jobs[0]["request"]["effective_input"],
        json!({ "bucket": "checkout-recibos", "versioning": false, "tags": { "env": "dev" } }),
        "{jobs}"
    );

    // A new version's defaults may name the environment by name or by id,
    // not both.
    let both = json!({ "type": "s3-bucket", "input_schema": {}, "defaults": { "development": {}, w.dev.clone(): {} } });
    c.post("/v1/schemas", owner, both).await.expect_error(422, "INVALID_INPUT");
    let by_id = json!({ "type": "s3-bucket", "input_schema": {}, "defaults": { w.dev.clone(): { "versioning": true } } });
    let v2 = c.post("/v1/schemas", owner, by_id).await.expect(201);
    assert_eq!(v2["defaults"], json!({ "development": { "versioning": true } }), "{v2}");
    let versions = c.get("/v1/schemas?type=s3-bucket", owner).await.expect(200);
    assert_eq!(versions.as_array().unwrap().len(), 2, "the refused one stored nothing: {versions}");
}

/// Before migration 37 a schema's defaults were kept under the
/// environment's name: `heimdall-api migrate` moves them under its id, and
/// they are read as before, and after a rename.
async fn defaults_an_older_heimdall_kept_by_name_are_moved_to_ids_by_migrate(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    let w = world(&c, owner).await;

    // The row as an older Heimdall wrote it, and its migration not yet run.
    sqlx::any::install_default_drivers();
    let pool = sqlx::any::AnyPoolOptions::new().max_connections(1).connect(api.database.url()).await.unwrap();
    let by_name = r#"{"dev":{"versioning":false,"tags":{"env":"dev"}},"gone":{"x":1}}"#;
    sqlx::query("UPDATE resource_schemas SET defaults = $1 WHERE id = $2")
        .bind(by_name)
        .bind(&w.schema)
        .execute(&pool)
        .await
        .unwrap();
    let before = c.get(&format!("/v1/schemas/{}", w.schema), owner).await.expect(200);
    assert_eq!(before["defaults"], json!({}), "names are not ids: unread until migrated");
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = 37").execute(&pool).await.unwrap();

    crate::support::migrate(api.database.url()).await;
    let stored: String = sqlx::query_scalar("SELECT defaults FROM resource_schemas WHERE id = $1")
        .bind(&w.schema)
        .fetch_one(&pool)
        .await
        .unwrap();
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(
        stored,
        json!({ w.dev.clone(): { "versioning": false, "tags": { "env": "dev" } }, "gone": { "x": 1 } }),
        "by id; a name no environment has is left as it was"
    );
    pool.close().await;

    rename_dev(&c, owner, &w).await;
}
