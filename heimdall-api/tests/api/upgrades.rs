//! A database that a newer Heimdall migrated: this binary refuses to serve
//! it, naming both versions, and changes nothing in it.

use heimdall_api::testing::TestDatabase;
use sqlx::any::AnyPoolOptions;

use crate::on_every_backend;

on_every_backend!(a_database_migrated_by_a_newer_heimdall_is_refused_naming_both_versions);

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
