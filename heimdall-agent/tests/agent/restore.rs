//! The API's database restored from a backup taken mid-run, as
//! `docs/operations.md` ("Restoring") tells an operator to do it: the
//! backup taken while the API serves (`pg_dump --format=custom`, SQLite's
//! `.backup`), the API stopped, the backup put back (`pg_restore --clean`,
//! the file copied back), the API started again. A real Agent and real
//! Terraform run throughout; the Agent is never restarted for the restore.

use std::time::Duration;

use heimdall_api::testing::TestDatabase;
use reqwest::Method;
use serde_json::json;

use crate::records::{events, kill, reads_by, reported};
use crate::support::{agent_client, World};
use crate::values::{configure, eventually, identity, set, Store};

const RUN: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_database_restored_from_a_backup_on_sqlite() {
    restored_from_a_backup_taken_mid_run(TestDatabase::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_database_restored_from_a_backup_on_postgres() {
    restored_from_a_backup_taken_mid_run(TestDatabase::postgres().await).await;
}

/// Before the backup: three reads, a Resource applied, and a change to it
/// queued while the Agent is down. After it: the change applied, two more
/// reads. Restored: the Agent reconnects by itself, the two reads come back
/// (none reported as missing), and the change the backup shows queued is
/// handed out again: the Agent that completed it reports its result again
/// without running Terraform, and the Resource ends provisioned with it.
async fn restored_from_a_backup_taken_mid_run(database: TestDatabase) {
    let mut w = World::on(database).await;
    let config = w.enroll("agent-1").await;
    let (local, _) = configure(&config, Store::Sqlite, None);
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "agent-1" })).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "db-password" })).await;
    let ana = identity(&w, &owner).await;
    let mut agent = w.run_agent(&config);
    reported(&w, &config, "agent-1", &local).await;
    set(&w, &owner, &ana, "db-password", "dev", "one").await;
    let reader = agent_client(&config, &local, &ana);
    for _ in 0..3 {
        reader.get_value("db-password", "dev", None).await.unwrap();
    }
    eventually(&config, "three reads in the log", || async { reads_by(&w, "agent-1").await == 3 }).await;
    let id = w.create("recibos", "bucket", json!({ "bucket": "recibos" })).await;
    let made = w.wait_for_revision(&id, 1, RUN).await;
    assert_eq!(made["status"], "provisioned", "{made}");
    let object = made["outputs"]["id"].clone();

    // A change queued while the Agent is away: the backup shows its job queued.
    kill(&mut agent).await;
    let change = json!({ "input": { "bucket": "recibos", "tags": { "team": "payments" } } });
    let (status, _) = w.call(Method::PATCH, &format!("/v1/resources/{id}"), Some(change)).await;
    assert_eq!(status, 200);
    let backup = w.api.backup().await;

    let mut agent = w.run_agent(&config);
    let changed = w.wait_for_revision(&id, 2, RUN).await;
    assert_eq!(changed["status"], "provisioned", "{changed}");
    for _ in 0..2 {
        reader.get_value("db-password", "dev", None).await.unwrap();
    }
    eventually(&config, "five reads in the log", || async { reads_by(&w, "agent-1").await == 5 }).await;
    let finished =
        |jobs: Vec<serde_json::Value>| jobs.iter().map(|j| j["finished_at"].clone()).collect::<Vec<_>>();
    let before = finished(w.jobs(&id).await);
    let change_job = w.jobs(&id).await[1]["id"].as_str().unwrap().to_owned();
    let ran = w.job_log(&change_job).await;
    assert!(ran.contains("Apply complete"), "the first run's log: {ran}");

    w.api.restore(&backup).await;

    // The reads the backup lacks come back from the Agent's store.
    eventually(&config, "the reads after the backup again", || async { reads_by(&w, "agent-1").await == 5 })
        .await;
    reader.get_value("db-password", "dev", None).await.unwrap();
    eventually(&config, "a read after the restore", || async { reads_by(&w, "agent-1").await == 6 }).await;
    assert!(events(&w, "secret.read_not_reported").await.is_empty());

    // The change the backup shows queued runs again: the same object,
    // provisioned, with the change.
    let again = w.wait_for_revision(&id, 2, RUN).await;
    assert_eq!(again["status"], "provisioned", "{again}");
    assert_eq!(again["outputs"]["id"], object, "the same object, not a second one: {again}");
    assert_eq!(again["outputs"]["tags"], json!({ "team": "payments" }), "{again}");
    let jobs = w.jobs(&id).await;
    let after = finished(jobs.clone());
    assert_eq!((after.len(), after.first()), (2, before.first()), "the first job is as it was");
    assert_ne!(after[1], before[1], "the change's job was handed out again from the restored queue");
    // ... and the Agent that completed it answered with its result, running
    // nothing a second time.
    assert_eq!(jobs[1]["id"], change_job.as_str());
    let log = w.job_log(&change_job).await;
    assert!(log.contains("nothing ran a second time"), "{log}");
    assert!(!log.contains("Apply complete"), "Terraform ran again: {log}");
    kill(&mut agent).await;
}
