//! No access record is lost, with real `heimdall-agent` processes: Agents
//! sharing one store each report only the reads they served, and a store
//! restored from a backup or recreated is told apart from a repeat (its
//! reads are kept, each case raises its audit event).

use std::path::Path;

use heimdall_api::testing::TestDatabase;
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{agent_client, World};
use crate::values::{agent_database, configure, eventually, identity, set, Store};

/// Reads in the secret's access log, per Agent.
pub(crate) async fn reads_by(w: &World, agent: &str) -> u64 {
    let (_, log) = w.call(Method::GET, "/v1/secrets/db-password/access-log", None).await;
    log.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["served_by"] == agent)
        .map(|r| r["reads"].as_u64().unwrap())
        .sum()
}

pub(crate) async fn events(w: &World, action: &str) -> Vec<Value> {
    let (_, events) = w.call(Method::GET, &format!("/v1/events?action={action}"), None).await;
    events.as_array().unwrap().clone()
}

/// Waits until the Agent at `config` reported its local API URL.
pub(crate) async fn reported(w: &World, config: &Path, agent: &str, url: &str) {
    eventually(config, "the Agent's local URL", || async {
        let (_, holders) = w.call(Method::GET, "/v1/secrets/db-password/holders?environment=dev", None).await;
        holders.as_array().unwrap().iter().any(|h| h["agent"] == agent && h["url"] == url)
    })
    .await;
}

/// Kills the Agent (SIGKILL: an idle Agent takes up to its claim's wait to
/// stop on SIGTERM, and nothing here needs its goodbye).
pub(crate) async fn kill(agent: &mut tokio::process::Child) {
    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}

/// Waits until the Agent's local API answers.
async fn serving(config: &Path, local: &str, who: &heimdall_sdk::Identity) {
    let agent = agent_client(config, local, who);
    eventually(config, "the local API", || async { agent.health().await.is_ok() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_sharing_one_store_each_report_the_reads_they_served() {
    let w = World::new().await;
    let (one, two) = (w.enroll("agent-1").await, w.enroll("agent-2").await);
    let (_, _, url) = agent_database().await;
    let (local_one, _) = configure(&one, Store::Postgres, Some(&url));
    let (local_two, _) = configure(&two, Store::Postgres, Some(&url));
    let owner = w.api.owner_token.clone();
    for agent in ["agent-1", "agent-2"] {
        w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": agent })).await;
    }
    w.post(&owner, "/v1/secrets", json!({ "name": "db-password" })).await;
    let ana = identity(&w, &owner).await;
    let (mut a1, mut a2) = (w.run_agent(&one), w.run_agent(&two));
    reported(&w, &one, "agent-1", &local_one).await;
    reported(&w, &two, "agent-2", &local_two).await;
    // The store is shared: `secret set` sends the value to both; the first
    // stores it, the second finds the same bytes there and is done.
    assert_eq!(set(&w, &owner, &ana, "db-password", "dev", "shared").await, 1);
    let (via_one, via_two) = (agent_client(&one, &local_one, &ana), agent_client(&two, &local_two, &ana));
    // Other bytes at that address are still refused.
    let created = w.post(&owner, "/v1/secrets/db-password/versions", json!({ "environment": "dev" })).await;
    let grant = |agent: &str| {
        let holders = created["holders"].as_array().unwrap();
        holders.iter().find(|h| h["agent"] == agent).unwrap()["grant"].as_str().unwrap().to_owned()
    };
    via_one.put_value("db-password", "dev", 2, &grant("agent-1"), "v2").await.unwrap();
    let refused = via_two.put_value("db-password", "dev", 2, &grant("agent-2"), "other").await.unwrap_err();
    assert_eq!(refused.code(), Some(heimdall_sdk::ErrorCode::AlreadyExists), "{refused}");
    for _ in 0..3 {
        assert_eq!(via_one.get_value("db-password", "dev", Some(1)).await.unwrap().value.expose(), "shared");
    }
    for _ in 0..2 {
        assert_eq!(via_two.get_value("db-password", "dev", Some(1)).await.unwrap().value.expose(), "shared");
    }
    // Each Agent reports its own reads, under its own name, once.
    eventually(&one, "both Agents' reads in the log", || async {
        reads_by(&w, "agent-1").await == 3 && reads_by(&w, "agent-2").await == 2
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await; // a few more syncs
    assert_eq!((reads_by(&w, "agent-1").await, reads_by(&w, "agent-2").await), (3, 2));
    assert!(events(&w, "secret.read_not_reported").await.is_empty());
    kill(&mut a1).await;
    kill(&mut a2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_restored_from_a_backup_or_recreated_loses_no_record() {
    // The API on SQLite this time; the Agent's store on SQLite.
    let w = World::on(TestDatabase::sqlite().await).await;
    let config = w.enroll("agent-1").await;
    let (local, store) = configure(&config, Store::Sqlite, None);
    let store = store.unwrap();
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "agent-1" })).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "db-password" })).await;
    let ana = identity(&w, &owner).await;
    let files =
        |db: &Path| ["", "-wal", "-shm"].map(|suffix| db.with_file_name(format!("values.db{suffix}")));
    let read = |n: usize| {
        let (local, ana, config) = (local.clone(), ana.clone(), config.clone());
        async move {
            let agent = agent_client(&config, &local, &ana);
            for _ in 0..n {
                agent.get_value("db-password", "dev", None).await.unwrap();
            }
        }
    };

    let mut agent = w.run_agent(&config);
    reported(&w, &config, "agent-1", &local).await;
    set(&w, &owner, &ana, "db-password", "dev", "one").await;
    kill(&mut agent).await;
    // A backup of the store, before any read.
    let backup = tempfile::tempdir().unwrap();
    for (i, f) in files(&store).iter().enumerate() {
        if f.exists() {
            std::fs::copy(f, backup.path().join(i.to_string())).unwrap();
        }
    }

    let mut agent = w.run_agent(&config);
    serving(&config, &local, &ana).await;
    read(2).await;
    eventually(&config, "two reads in the log", || async { reads_by(&w, "agent-1").await == 2 }).await;
    kill(&mut agent).await;

    // Restored: the store's numbering is back at 0 while the API holds 1
    // and 2. The Agent sees it on its first sync and starts a new epoch
    // before it serves a read, so no number is used twice.
    for (i, f) in files(&store).iter().enumerate() {
        let _ = std::fs::remove_file(f);
        let saved = backup.path().join(i.to_string());
        if saved.exists() {
            std::fs::copy(saved, f).unwrap();
        }
    }
    let mut agent = w.run_agent(&config);
    serving(&config, &local, &ana).await;
    read(1).await;
    eventually(&config, "the new epoch's read", || async {
        reads_by(&w, "agent-1").await == 3 && events(&w, "secret.sequence_restarted").await.len() == 1
    })
    .await;
    kill(&mut agent).await;

    // Recreated: a new, empty store (its value written again), a new epoch.
    for f in files(&store) {
        let _ = std::fs::remove_file(f);
    }
    let mut agent = w.run_agent(&config);
    serving(&config, &local, &ana).await;
    set(&w, &owner, &ana, "db-password", "dev", "two").await;
    read(2).await;
    eventually(&config, "the recreated store's reads", || async {
        reads_by(&w, "agent-1").await == 5 && events(&w, "secret.sequence_restarted").await.len() == 2
    })
    .await;
    assert!(events(&w, "secret.read_not_reported").await.is_empty());
    kill(&mut agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_restored_under_a_running_agent_keeps_the_reads_that_reuse_numbers() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let (role, db, url) = agent_database().await;
    // Syncs only when told (SIGHUP): a periodic one between the restore
    // and the next read would start the new epoch before the conflict.
    let (local, _) = crate::values::configure_syncing_every(&config, Store::Postgres, Some(&url), 3600);
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "agent-1" })).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "db-password" })).await;
    let ana = identity(&w, &owner).await;
    let mut agent = w.run_agent(&config);
    let pid = agent.id().unwrap().to_string();
    let sync_now =
        || assert!(std::process::Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
    reported(&w, &config, "agent-1", &local).await;
    set(&w, &owner, &ana, "db-password", "dev", "one").await;
    let reader = agent_client(&config, &local, &ana);
    for _ in 0..2 {
        reader.get_value("db-password", "dev", None).await.unwrap();
    }
    sync_now();
    eventually(&config, "two reads in the log", || async { reads_by(&w, "agent-1").await == 2 }).await;
    // The store's database goes back to before those reads (a
    // point-in-time restore) while the Agent runs.
    let (base, _) = heimdall_api::testing::postgres_admin_url()
        .rsplit_once('/')
        .map(|(b, d)| (b.to_owned(), d.to_owned()))
        .unwrap();
    let pool = sqlx::AnyPool::connect(&format!("{base}/{db}")).await.unwrap();
    sqlx::query("DELETE FROM access_records").execute(&pool).await.unwrap();
    sqlx::query("UPDATE access_counters SET last_seq = 0").execute(&pool).await.unwrap();
    pool.close().await;
    let _ = role;
    // The next read takes number 1 again, with other content: the API
    // keeps it and flags it; the Agent then moves to a new epoch.
    reader.get_value("db-password", "dev", None).await.unwrap();
    sync_now();
    eventually(&config, "the reused number kept", || async {
        reads_by(&w, "agent-1").await == 3 && events(&w, "secret.record_conflict").await.len() == 1
    })
    .await;
    reader.get_value("db-password", "dev", None).await.unwrap();
    sync_now();
    eventually(&config, "the new epoch", || async {
        reads_by(&w, "agent-1").await == 4 && events(&w, "secret.sequence_restarted").await.len() == 1
    })
    .await;
    kill(&mut agent).await;
}

/// A revoked Agent stops serving as soon as a sync tells it (here: a
/// SIGHUP, with the periodic sync an hour away), and the reads it served
/// before are reported with that sync, not lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_agent_reports_its_reads_and_stops_serving_at_once() {
    let w = World::on(TestDatabase::sqlite().await).await;
    let config = w.enroll("agent-1").await;
    let (local, _) = crate::values::configure_syncing_every(&config, Store::Sqlite, None, 3600);
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
    assert_eq!(reads_by(&w, "agent-1").await, 0, "no sync yet");
    let (status, _) = w.call(Method::DELETE, "/v1/agents/agent-1", None).await;
    assert_eq!(status, 200);
    let pid = agent.id().unwrap().to_string();
    assert!(std::process::Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
    // Reads served until the sync arrives are served and recorded like any.
    let served = std::sync::atomic::AtomicU64::new(3);
    eventually(&config, "the revocation to stop the Agent's reads", || async {
        match reader.get_value("db-password", "dev", None).await {
            Ok(_) => {
                served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                false
            }
            Err(e) => e.code() == Some(heimdall_sdk::ErrorCode::AgentRevoked),
        }
    })
    .await;
    assert_eq!(reads_by(&w, "agent-1").await, served.into_inner(), "every read it served is reported");
    // Writes too: nothing is stored on a revoked Agent.
    let refused = reader.put_value("db-password", "dev", 2, "hg1.x.y", "two").await.unwrap_err();
    assert_eq!(refused.code(), Some(heimdall_sdk::ErrorCode::AgentRevoked), "{refused}");
    kill(&mut agent).await;
}
