//! `heimdall-agent rekey` on the real Agent, on SQLite, PostgreSQL and
//! DynamoDB (moto), from a key file to another, to a KMS key (moto) and back:
//! killed (SIGKILL) at varied points and run again, it finishes with
//! nothing lost; the running Agent serves throughout; afterwards the
//! config names the new key and the old one opens nothing.

use std::path::Path;
use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::support::{agent_client, World};
use crate::values::{agent_database, configure, eventually, identity, set, set_keeping, Store};

fn rekey(config: &Path, new_key: &Path) -> std::process::Command {
    let mut command = rekey_to(config, &[]);
    command.arg("--new-master-key-file").arg(new_key);
    command
}

/// `heimdall-agent rekey --config CONFIG ARGS`.
fn rekey_to(config: &Path, args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_heimdall-agent"));
    command.arg("rekey").arg("--config").arg(config).args(args);
    // moto's DynamoDB, as the Agent itself is run.
    command
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_EC2_METADATA_DISABLED", "true");
    command
}

async fn rekey_is_resumable_and_retires_the_old_key(store: Store) {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let pg = match store {
        Store::Postgres => Some(agent_database().await),
        Store::Sqlite | Store::Dynamo => None,
    };
    let (local_url, _) = configure(&config, store, pg.as_ref().map(|(_, _, url)| url.as_str()));
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "agent-1" })).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "db-password" })).await;
    let mut agent = w.run_agent(&config);
    eventually(&config, "the Agent's local URL", || async {
        let (_, holders) = w.call(Method::GET, "/v1/secrets/db-password/holders?environment=dev", None).await;
        holders[0]["url"].as_str() == Some(local_url.as_str())
    })
    .await;
    let ana = identity(&w, &owner).await;
    assert_eq!(set(&w, &owner, &ana, "db-password", "dev", "before-rekey").await, 1);
    let reader = agent_client(&config, &local_url, &ana);
    let old_key = config.with_file_name("master.key");
    let old_config = std::fs::read_to_string(&config).unwrap();
    let new_key = config.with_file_name("master-2.key");
    std::fs::write(&new_key, "a7".repeat(32)).unwrap();

    // Killed at varied points (from at once to well into its work), and
    // the running Agent reads on between the kills.
    for delay_ms in [0u64, 5, 20, 60, 150, 400] {
        let mut run = rekey(&config, &new_key)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = run.kill();
        let _ = run.wait();
        let read = reader.get_value("db-password", "dev", None).await.unwrap();
        assert_eq!(read.value.expose(), "before-rekey", "reads go on during the rekey");
    }
    let out = rekey(&config, &new_key).arg("--json").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let done: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["rekeyed"]["entries"], 1, "{done}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("master-2.key"), "agent.toml names the new key:\n{text}");
    // Again: nothing left to do, nothing broken.
    let again = rekey(&config, &new_key).arg("--json").output().unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        (again["rekeyed"]["resealed"].as_u64(), again["rekeyed"]["already"].as_u64()),
        (Some(0), Some(1))
    );

    // A write after the rekey, then a restart on the new key: every value reads.
    // Version 1 stays readable (an hour's overlap): both are read below.
    assert_eq!(set_keeping(&w, &owner, &ana, ("db-password", "dev", "after-rekey"), "1h").await, 2);
    agent.kill().await.unwrap();
    let mut agent = w.run_agent(&config);
    eventually(&config, "the restarted Agent", || async {
        reader
            .get_value("db-password", "dev", Some(1))
            .await
            .is_ok_and(|r| r.value.expose() == "before-rekey")
    })
    .await;
    assert_eq!(reader.get_value("db-password", "dev", None).await.unwrap().value.expose(), "after-rekey");
    agent.kill().await.unwrap();

    // The old key opens nothing any more: an Agent configured with it does not start.
    std::fs::write(&config, &old_config).unwrap();
    assert!(old_config.contains(&old_key.display().to_string()));
    let mut stale = w.run_agent(&config);
    let status =
        tokio::time::timeout(Duration::from_secs(30), stale.wait()).await.expect("it exits").unwrap();
    assert!(!status.success());
    let log = std::fs::read_to_string(config.with_extension("log")).unwrap();
    assert!(log.contains("master key"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rekey_on_sqlite_is_resumable_and_retires_the_old_key() {
    rekey_is_resumable_and_retires_the_old_key(Store::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rekey_on_postgres_is_resumable_and_retires_the_old_key() {
    rekey_is_resumable_and_retires_the_old_key(Store::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rekey_on_dynamodb_is_resumable_and_retires_the_old_key() {
    rekey_is_resumable_and_retires_the_old_key(Store::Dynamo).await;
}

/// `rekey ARGS --json` run to the end, its answer.
fn rekeyed(config: &Path, args: &[&str]) -> serde_json::Value {
    let out = rekey_to(config, args).arg("--json").output().unwrap();
    assert!(out.status.success(), "rekey {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rekey_moves_a_store_to_a_kms_key_and_back_to_a_file() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let owner = w.api.owner_token.clone();
    let held = crate::values::holding_secret(&w, &config, "db-password", "under-a-file", &[]).await;
    let (mut agent, ana) = (held.process, held.owner);
    let reader = agent_client(&config, &held.local_url, &ana);
    let kms = aws_sdk_kms::Client::new(&crate::store::aws_config(&w.moto_url).await);
    let meta = kms.create_key().description("heimdall rekey").send().await.unwrap().key_metadata.unwrap();
    let (key_id, arn) = (meta.key_id().to_owned(), meta.arn().unwrap().to_owned());
    let to_kms = [
        "--new-kms-key",
        key_id.as_str(),
        "--aws-region",
        "us-east-1",
        "--aws-endpoint-url",
        w.moto_url.as_str(),
    ];

    // To KMS, killed at varied points first; reads go on throughout.
    for delay_ms in [0u64, 20, 150] {
        let mut run = rekey_to(&config, &to_kms)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = run.kill();
        let _ = run.wait();
        assert_eq!(
            reader.get_value("db-password", "dev", None).await.unwrap().value.expose(),
            "under-a-file"
        );
    }
    let done = rekeyed(&config, &to_kms);
    assert_eq!(
        (done["rekeyed"]["entries"].as_u64(), done["master_key_kms"].as_str()),
        (Some(1), Some(arn.as_str())),
        "{done}"
    );
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.contains(&arn) && !text.contains("master_key_file"),
        "agent.toml names the KMS key by ARN only:\n{text}"
    );
    // The keyring entry is now a KMS ciphertext of that key (moto opens it).
    let db = config.with_file_name("values.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display())).await.unwrap();
    let (data_key_id, blob): (String, Vec<u8>) =
        sqlx::query_as("SELECT key_id, sealed_key FROM data_keys").fetch_one(&pool).await.unwrap();
    pool.close().await;
    let opened = kms
        .decrypt()
        .ciphertext_blob(aws_sdk_kms::primitives::Blob::new(blob))
        .set_encryption_context(Some(heimdall_agent::values::kms::KmsKey::encryption_context(&data_key_id)))
        .send()
        .await
        .expect("the keyring entry is sealed by the KMS key");
    assert_eq!(opened.key_id(), Some(arn.as_str()));

    // The Agent restarted on KMS reads the old version and takes a new one.
    agent.kill().await.unwrap();
    let mut agent = w.run_agent(&config);
    eventually(&config, "the Agent on KMS", || async {
        reader
            .get_value("db-password", "dev", Some(1))
            .await
            .is_ok_and(|r| r.value.expose() == "under-a-file")
    })
    .await;
    assert_eq!(set_keeping(&w, &owner, &ana, ("db-password", "dev", "under-kms"), "1h").await, 2);

    // And back from KMS to a key file.
    let back = config.with_file_name("master-3.key");
    std::fs::write(&back, "c3".repeat(32)).unwrap();
    let done = rekeyed(&config, &["--new-master-key-file", back.to_str().unwrap()]);
    assert_eq!(done["rekeyed"]["resealed"], 1, "{done}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("master-3.key") && !text.contains("master_key_kms"), "{text}");
    agent.kill().await.unwrap();
    let mut agent = w.run_agent(&config);
    eventually(&config, "the Agent on the key file", || async {
        reader
            .get_value("db-password", "dev", Some(1))
            .await
            .is_ok_and(|r| r.value.expose() == "under-a-file")
    })
    .await;
    assert_eq!(reader.get_value("db-password", "dev", None).await.unwrap().value.expose(), "under-kms");
    agent.kill().await.unwrap();
}
