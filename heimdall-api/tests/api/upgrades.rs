//! A database that a newer Heimdall migrated: this binary refuses to serve
//! it, naming both versions, and changes nothing in it. Versions written
//! before replaced versions were erased keep the ones before them after an
//! upgrade (migration 0046; `tests/upgrade.rs` runs a whole release's data).

use heimdall_api::testing::{TestApi, TestDatabase};
use serde_json::{json, Value};
use sqlx::any::AnyPoolOptions;

use crate::on_every_backend;
use crate::support::{enroll_agent, Client};

on_every_backend!(a_database_migrated_by_a_newer_heimdall_is_refused_naming_both_versions);
on_every_backend!(versions_written_before_retention_keep_the_ones_before_them_after_the_upgrade);

/// The newest migration this build carries, from its migrations folder.
fn newest_migration(backend: &str) -> i64 {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(backend);
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|f| f.unwrap().file_name().to_str()?.split('_').next()?.parse().ok())
        .max()
        .unwrap()
}

async fn a_database_migrated_by_a_newer_heimdall_is_refused_naming_both_versions(db: TestDatabase) {
    let migrate = || async {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_heimdall-api"))
            .args(["migrate", "--database-url", db.url()])
            .output()
            .await
            .unwrap()
    };
    let first = migrate().await;
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));

    // What a newer release's migration leaves behind.
    sqlx::any::install_default_drivers();
    let pool = AnyPoolOptions::new().max_connections(1).connect(db.url()).await.unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES ($1, 'from a newer release', TRUE, $2, 0)",
    )
    .bind(20_991_231_000_000_i64)
    .bind(vec![0_u8; 48])
    .execute(&pool)
    .await
    .unwrap();
    let count = "SELECT count(*) FROM _sqlx_migrations";
    let before: i64 = sqlx::query_scalar(count).fetch_one(&pool).await.unwrap();

    let refused = migrate().await;
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    let backend = if db.url().starts_with("sqlite") { "sqlite" } else { "postgres" };
    let expected = format!(
        "error: UNAVAILABLE: this database was migrated by a newer Heimdall: it has migration 20991231000000, \
         this binary knows migrations up to {}; run the newer version",
        newest_migration(backend)
    );
    assert!(stderr.contains(&expected), "{stderr}");
    let after: i64 = sqlx::query_scalar(count).fetch_one(&pool).await.unwrap();
    assert_eq!(before, after, "nothing was migrated");
    pool.close().await;
}

/// v1..v3 written, then made to look as a release before retention wrote
/// them (its migration 0044 recorded after them, 0046 not yet run), and
/// `heimdall-api migrate` run as an upgrade runs it: nothing is erased for
/// them; a version written after the upgrade replaces v3 as any write does.
async fn versions_written_before_retention_keep_the_ones_before_them_after_the_upgrade(db: TestDatabase) {
    let url = db.url().to_owned();
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let prod = c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201)["id"].clone();
    let (edge1, _) = enroll_agent(&c, &api, owner, "edge-1").await;
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-1" })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);
    let write = || c.post("/v1/secrets/db-password/versions", owner, json!({ "environment": "prod" }));
    for _ in 1..=3 {
        write().await.expect(201);
    }
    let held = |upto: i64| -> Value {
        (1..=upto)
            .map(|v| json!({ "secret": "db-password", "environment": prod, "version": v, "deactivated": false }))
            .collect()
    };
    let erased = |answer: Value| -> Vec<i64> {
        let listed = answer["superseded"].as_array().cloned().unwrap_or_default();
        let mut versions: Vec<i64> = listed.iter().filter_map(|e| e["version"].as_i64()).collect();
        versions.sort_unstable();
        versions
    };
    let sync = |inventory: Value| {
        let resp =
            edge1.post(format!("{}/v1/agent/sync", api.agent_url)).json(&json!({ "inventory": inventory }));
        async move { resp.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    assert_eq!(erased(sync(held(3)).await), [1, 2], "written today, they ask for no overlap");

    sqlx::any::install_default_drivers();
    let pool = AnyPoolOptions::new().max_connections(1).connect(&url).await.unwrap();
    let later =
        if url.starts_with("sqlite") { "datetime('now', '+1 hour')" } else { "now() + interval '1 hour'" };
    for sql in [
        format!("UPDATE _sqlx_migrations SET installed_on = {later} WHERE version = 44"),
        "DELETE FROM _sqlx_migrations WHERE version = 46".to_owned(),
    ] {
        sqlx::query(&sql).execute(&pool).await.unwrap();
    }
    pool.close().await;
    let migrated = tokio::process::Command::new(env!("CARGO_BIN_EXE_heimdall-api"))
        .args(["migrate", "--database-url", &url])
        .output()
        .await
        .unwrap();
    assert!(migrated.status.success(), "{}", String::from_utf8_lossy(&migrated.stderr));

    assert_eq!(erased(sync(held(3)).await), Vec::<i64>::new(), "an upgrade erases nothing by itself");
    let shown = c.get("/v1/secrets/db-password", owner).await.expect(200);
    let versions = shown["versions"].as_array().unwrap();
    assert!(
        versions.iter().all(|v| v["keep_previous_seconds"] == -1 && v["superseded_at"].is_null()),
        "{shown}"
    );
    // Written after the upgrade, v4 asks for nothing: v3 goes, v1 and v2
    // stay on the promise v2 and v3 were written under.
    write().await.expect(201);
    assert_eq!(erased(sync(held(4)).await), [3]);
}
