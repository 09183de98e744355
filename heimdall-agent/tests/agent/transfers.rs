//! Agents of one environment converge: a holder that was down during a
//! write, and a holder assigned later, fetch the current versions they
//! lack from another holder's local API with a grant the API signed for
//! them (never through the API), on SQLite, PostgreSQL and DynamoDB stores.
//! A source hands a value only to the Agent its grant names, records the
//! hand-over as that Agent's read, and refuses everything else.

use heimdall_core::ids::{AgentId, CatalogId};
use heimdall_core::transfer::{encode, PlannedTransfer, TransferClaims};
use heimdall_core::Redacted;
use heimdall_sdk::{AgentClient, ErrorCode, Identity};
use reqwest::Method;
use serde_json::json;
use time::{Duration, OffsetDateTime};

use crate::support::{agent_client, agent_id, World};
use crate::values::{
    agent_database, configure, configure_syncing_every, eventually, holders_reachable, identity, set,
    set_only_on, Store,
};

/// An enrolled Agent's own certificate and key, as another Agent sees them.
fn agent_identity(config: &std::path::Path) -> Identity {
    let config = heimdall_agent::config::AgentConfig::load(config).unwrap();
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap();
    Identity {
        certificate_pem: read(&config.cert),
        key_pem: Redacted::new(read(&config.key)),
        ca_pem: read(&config.ca),
    }
}

/// Reads of `secret` in dev whose reader is an Agent fetching it.
async fn replication_reads(w: &World, secret: &str) -> Vec<serde_json::Value> {
    let (_, log) =
        w.call(Method::GET, &format!("/v1/secrets/{secret}/access-log?environment=dev"), None).await;
    log.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["accessor"].as_str().is_some_and(|a| a.ends_with("(replication)")))
        .cloned()
        .collect()
}

async fn latest(client: &AgentClient, secret: &str) -> Option<(i64, String)> {
    let answer = client.get_value(secret, "dev", None).await.ok()?;
    Some((answer.version, answer.value.expose().clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_missed_a_write_and_a_new_holder_fetch_the_current_versions_from_another() {
    let w = World::new().await;
    let (lagging, current, newcomer) =
        (w.enroll("edge-1").await, w.enroll("edge-2").await, w.enroll("edge-3").await);
    let (local_lagging, _) = configure(&lagging, Store::Sqlite, None);
    let (_, _, pg_url) = agent_database().await;
    configure(&current, Store::Postgres, Some(&pg_url));
    let (local_new, _) = configure(&newcomer, Store::Dynamo, None);
    let owner = w.api.owner_token.clone();
    for agent in ["edge-1", "edge-2"] {
        w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": agent })).await;
    }
    for name in ["db-password", "api-key"] {
        w.post(&owner, "/v1/secrets", json!({ "name": name })).await;
    }
    let ana = identity(&w, &owner).await;
    let (mut edge_1, mut edge_2) = (w.run_agent(&lagging), w.run_agent(&current));
    holders_reachable(&w, &lagging, "db-password", 2).await;
    assert_eq!(set(&w, &owner, &ana, "db-password", "dev", "one").await, 1);
    assert_eq!(set(&w, &owner, &ana, "api-key", "dev", "key-one").await, 1);

    // edge-1 is down while version 2 is written: only edge-2 stores it.
    edge_1.start_kill().unwrap();
    let _ = edge_1.wait().await;
    assert_eq!(set_only_on(&w, &owner, &ana, ("db-password", "dev", "two"), "edge-2").await, 2);
    // `secret show` says edge-1 lacks it once edge-2 reported it.
    let behind = || async {
        let (_, shown) = w.call(Method::GET, "/v1/secrets/db-password", None).await;
        shown.get("behind").cloned()
    };
    eventually(&current, "edge-1 shown behind", || async {
        // (What it holds, as of its last report: it may have stopped before reporting version 1.)
        behind().await.is_some_and(|b| b[0]["agent"] == "edge-1" && b[0]["current"] == 2)
    })
    .await;

    // Back up, edge-1 fetches version 2 from edge-2 and serves it as the latest.
    edge_1 = w.run_agent(&lagging);
    let via_lagging = agent_client(&lagging, &local_lagging, &ana);
    eventually(&lagging, "edge-1 serving version 2", || async {
        latest(&via_lagging, "db-password").await == Some((2, "two".to_owned()))
    })
    .await;
    assert_eq!(latest(&via_lagging, "api-key").await, Some((1, "key-one".to_owned())));
    eventually(&lagging, "no holder shown behind", || async { behind().await.is_none() }).await;
    // The hand-over is in the trail, at its source, as edge-1's read.
    let edge_1_id = agent_id(&lagging);
    eventually(&current, "the transfer in the access log", || async {
        replication_reads(&w, "db-password").await.iter().any(|e| {
            e["served_by"] == "edge-2"
                && e["version"] == 2
                && e["accessor"] == format!("agent {edge_1_id} (replication)")
        })
    })
    .await;

    // A holder assigned later, on DynamoDB, backfills every current version.
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "edge-3" })).await;
    let mut edge_3 = w.run_agent(&newcomer);
    let via_new = agent_client(&newcomer, &local_new, &ana);
    eventually(&newcomer, "edge-3 holding both secrets", || async {
        latest(&via_new, "db-password").await == Some((2, "two".to_owned()))
            && latest(&via_new, "api-key").await == Some((1, "key-one".to_owned()))
    })
    .await;
    // Only the current version is handed over: version 1 is not there.
    let old = via_new.get_value("db-password", "dev", Some(1)).await.unwrap_err();
    assert_eq!(old.code(), Some(ErrorCode::VersionNotHeld), "{old}");

    for child in [&mut edge_1, &mut edge_2, &mut edge_3] {
        child.start_kill().unwrap();
        let _ = child.wait().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_of_a_current_version_the_agent_lacks_fetches_it_before_answering() {
    let w = World::new().await;
    let (reader, source) = (w.enroll("edge-1").await, w.enroll("edge-2").await);
    // edge-1 syncs once an hour: between its syncs, only a read makes it fetch.
    let (local_reader, _) = configure_syncing_every(&reader, Store::Sqlite, None, 3600);
    let (local_source, _) = configure(&source, Store::Sqlite, None);
    let owner = w.api.owner_token.clone();
    for agent in ["edge-1", "edge-2"] {
        w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": agent })).await;
    }
    w.post(&owner, "/v1/secrets", json!({ "name": "db-password" })).await;
    let ana = identity(&w, &owner).await;
    let mut edge_2 = w.run_agent(&source);
    holders_reachable(&w, &source, "db-password", 1).await;
    assert_eq!(set_only_on(&w, &owner, &ana, ("db-password", "dev", "one"), "edge-2").await, 1);
    let via_source = agent_client(&source, &local_source, &ana);
    eventually(&source, "edge-2 reporting version 1", || async {
        let (_, shown) = w.call(Method::GET, "/v1/secrets/db-password", None).await;
        shown["holdings"]
            .as_array()
            .is_some_and(|h| h.iter().any(|h| h["agent"] == "edge-2" && h["version"] == 1))
    })
    .await;

    // edge-2 is down when edge-1 first syncs: edge-1 learns that version 1
    // is current and where it is, and cannot fetch it yet.
    edge_2.start_kill().unwrap();
    let _ = edge_2.wait().await;
    let mut edge_1 = w.run_agent(&reader);
    let via_reader = agent_client(&reader, &local_reader, &ana);
    eventually(&reader, "edge-1 refusing the latest it lacks", || async {
        let answer = via_reader.get_value("db-password", "dev", None).await;
        matches!(answer, Err(e) if e.code() == Some(ErrorCode::VersionNotHeld))
    })
    .await;

    // edge-2 is back; edge-1 has not synced since. A read fetches version 1 first and serves it.
    edge_2 = w.run_agent(&source);
    eventually(&source, "edge-2 serving again", || async {
        latest(&via_source, "db-password").await.is_some()
    })
    .await;
    assert_eq!(latest(&via_reader, "db-password").await, Some((1, "one".to_owned())));
    assert_eq!(
        via_reader.get_value("db-password", "dev", Some(1)).await.map(|a| a.version).ok(),
        Some(1),
        "held now"
    );
    let edge_1_id = agent_id(&reader);
    eventually(&source, "the hand-over in the access log", || async {
        replication_reads(&w, "db-password").await.iter().any(|e| {
            e["served_by"] == "edge-2" && e["accessor"] == format!("agent {edge_1_id} (replication)")
        })
    })
    .await;
    for child in [&mut edge_1, &mut edge_2] {
        child.start_kill().unwrap();
        let _ = child.wait().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_longer_than_one_sync_answer_goes_on_without_waiting_a_sync_period() {
    let w = World::new().await;
    let (source, newcomer) = (w.enroll("edge-1").await, w.enroll("edge-2").await);
    configure(&source, Store::Sqlite, None);
    // edge-2 syncs once an hour: only a full answer makes it sync again soon.
    let (local_new, _) = configure_syncing_every(&newcomer, Store::Sqlite, None, 3600);
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "edge-1" })).await;
    let ana = identity(&w, &owner).await;
    let count = heimdall_core::transfer::MAX_TRANSFERS_PER_SYNC + 20;
    let names: Vec<String> = (0..count).map(|n| format!("s-{n:03}")).collect();
    // Every secret first: an Agent told of a new one at a write waits for a sync.
    for name in &names {
        w.post(&owner, "/v1/secrets", json!({ "name": name })).await;
    }
    let mut edge_1 = w.run_agent(&source);
    holders_reachable(&w, &source, "s-000", 1).await;
    for (n, name) in names.iter().enumerate() {
        set(&w, &owner, &ana, name, "dev", &format!("value-{n}")).await;
    }
    eventually(&source, "edge-1 reporting every value", || async {
        let (_, shown) = w.call(Method::GET, "/v1/agents/edge-1", None).await;
        shown["holdings"].as_array().is_some_and(|h| h.len() == count)
    })
    .await;

    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "edge-2" })).await;
    let mut edge_2 = w.run_agent(&newcomer);
    let via_new = agent_client(&newcomer, &local_new, &ana);
    eventually(&newcomer, "edge-2 holding the values past its first answer", || async {
        latest(&via_new, &names[count - 1]).await == Some((1, format!("value-{}", count - 1)))
    })
    .await;
    assert_eq!(latest(&via_new, "s-000").await, Some((1, "value-0".to_owned())), "the first answer's too");
    for child in [&mut edge_1, &mut edge_2] {
        child.start_kill().unwrap();
        let _ = child.wait().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_killed_half_way_on_either_side_leaves_no_partial_value() {
    let w = World::new().await;
    let (source, newcomer) = (w.enroll("edge-1").await, w.enroll("edge-2").await);
    let (local_source, _) = configure(&source, Store::Sqlite, None);
    let (_, _, pg_url) = agent_database().await;
    let (local_new, _) = configure(&newcomer, Store::Postgres, Some(&pg_url));
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "edge-1" })).await;
    let ana = identity(&w, &owner).await;
    let count = 2 * heimdall_core::transfer::MAX_TRANSFERS_PER_SYNC + 50;
    let names: Vec<String> = (0..count).map(|n| format!("k-{n:03}")).collect();
    for name in &names {
        w.post(&owner, "/v1/secrets", json!({ "name": name })).await;
    }
    let mut edge_1 = w.run_agent(&source);
    holders_reachable(&w, &source, "k-000", 1).await;
    // Values of different lengths: a cut one would not pass for whole.
    let value = |n: usize| format!("value-{n}-{}", "x".repeat(n % 97));
    for (n, name) in names.iter().enumerate() {
        set(&w, &owner, &ana, name, "dev", &value(n)).await;
    }
    eventually(&source, "edge-1 reporting every value", || async {
        let (_, shown) = w.call(Method::GET, "/v1/agents/edge-1", None).await;
        shown["holdings"].as_array().is_some_and(|h| h.len() == count)
    })
    .await;

    // edge-2 backfills; it is killed (SIGKILL) at several points of it, and
    // edge-1, its source, once.
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "edge-2" })).await;
    let mut edge_2 = w.run_agent(&newcomer);
    for pause_ms in [700u64, 1500, 2500] {
        tokio::time::sleep(std::time::Duration::from_millis(pause_ms)).await;
        edge_2.start_kill().unwrap();
        let _ = edge_2.wait().await;
        edge_2 = w.run_agent(&newcomer);
    }
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    edge_1.start_kill().unwrap();
    let _ = edge_1.wait().await;
    edge_1 = w.run_agent(&source);

    // In the end edge-2 holds every value whole; no read ever found a cut
    // or unreadable one on the way.
    let via_new = agent_client(&newcomer, &local_new, &ana);
    eventually(&newcomer, "edge-2 holding every value", || async {
        for (n, name) in names.iter().enumerate() {
            match via_new.get_value(name, "dev", None).await {
                Ok(answer) => assert_eq!(
                    (answer.version, answer.value.expose().as_str()),
                    (1, value(n).as_str()),
                    "{name} is whole or absent"
                ),
                Err(e) => {
                    let code = e.code();
                    assert!(
                        // Not there yet, or the Agent just restarted; never INTERNAL (a cut value).
                        matches!(
                            code,
                            Some(
                                ErrorCode::VersionNotHeld
                                    | ErrorCode::NotFound
                                    | ErrorCode::PolicyStale
                                    | ErrorCode::Unavailable
                            ) | None
                        ),
                        "{name}: {e}"
                    );
                    return false;
                }
            }
        }
        true
    })
    .await;
    let via_source = agent_client(&source, &local_source, &ana);
    assert_eq!(latest(&via_source, "k-000").await, Some((1, value(0))), "the source is unharmed");
    for child in [&mut edge_1, &mut edge_2] {
        child.start_kill().unwrap();
        let _ = child.wait().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_hands_a_value_only_to_the_agent_a_fresh_grant_names() {
    let w = World::new().await;
    let (asking, source) = (w.enroll("edge-1").await, w.enroll("edge-2").await);
    configure(&asking, Store::Sqlite, None);
    let (local_source, _) = configure(&source, Store::Sqlite, None);
    let owner = w.api.owner_token.clone();
    for agent in ["edge-1", "edge-2"] {
        w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": agent })).await;
    }
    w.post(&owner, "/v1/secrets", json!({ "name": "db-password" })).await;
    let ana = identity(&w, &owner).await;
    let (mut edge_1, mut edge_2) = (w.run_agent(&asking), w.run_agent(&source));
    holders_reachable(&w, &asking, "db-password", 2).await;
    set(&w, &owner, &ana, "db-password", "dev", "one").await;
    set(&w, &owner, &ana, "db-password", "dev", "two").await;
    let via_source = agent_client(&source, &local_source, &ana);
    eventually(&source, "version 2 current at edge-2", || async {
        latest(&via_source, "db-password").await == Some((2, "two".to_owned()))
    })
    .await;

    let ca = heimdall_api::pki::Ca::load_or_create(&w.api.ca_dir).unwrap();
    let (_, dev) = w.call(Method::GET, "/v1/environments/dev", None).await;
    let dev: CatalogId = dev["id"].as_str().unwrap().parse().unwrap();
    let org = w.api.bootstrapped.organization.id;
    let (edge_1_id, edge_2_id) = (agent_id(&asking), agent_id(&source));
    let grant = |destination: AgentId, version: i64, issued: OffsetDateTime| {
        let planned = PlannedTransfer {
            secret: "db-password".into(),
            environment: dev,
            version,
            sources: vec![edge_2_id],
        };
        let claims = TransferClaims::new(uuid::Uuid::new_v4(), org, &planned, destination, issued);
        encode(&claims, |m| ca.sign_statement(m)).unwrap()
    };
    let now = OffsetDateTime::now_utc();
    let as_edge_1 = AgentClient::new(&local_source, &agent_identity(&asking), edge_2_id, None).unwrap();
    let code = |r: Result<heimdall_sdk::wire::ValueAnswer, heimdall_sdk::Error>| r.unwrap_err().code();

    // Another Agent's grant, an expired one, one of a superseded version,
    // a token the CA did not sign, none at all, and a person's certificate.
    assert_eq!(
        code(as_edge_1.fetch_transfer(&grant(edge_2_id, 2, now)).await),
        Some(ErrorCode::GrantInvalid)
    );
    let expired = grant(edge_1_id, 2, now - Duration::minutes(10));
    assert_eq!(code(as_edge_1.fetch_transfer(&expired).await), Some(ErrorCode::GrantInvalid));
    assert_eq!(
        code(as_edge_1.fetch_transfer(&grant(edge_1_id, 1, now)).await),
        Some(ErrorCode::VersionNotHeld)
    );
    let good = grant(edge_1_id, 2, now);
    let (signed, _) = good.rsplit_once('.').unwrap();
    let forged = format!("{signed}.AAAA");
    assert_eq!(code(as_edge_1.fetch_transfer(&forged).await), Some(ErrorCode::GrantInvalid));
    assert_eq!(code(as_edge_1.fetch_transfer("").await), Some(ErrorCode::GrantInvalid));
    let as_ana = agent_client(&source, &local_source, &ana);
    assert_eq!(code(as_ana.fetch_transfer(&good).await), Some(ErrorCode::Unauthenticated));

    // The grant the API would give: the value, recorded as edge-1's read.
    let answer = as_edge_1.fetch_transfer(&good).await.unwrap();
    assert_eq!((answer.version, answer.value.expose().as_str()), (2, "two"));
    eventually(&source, "the one hand-over in the access log", || async {
        let reads = replication_reads(&w, "db-password").await;
        reads.len() == 1 && reads[0]["accessor"] == format!("agent {edge_1_id} (replication)")
    })
    .await;

    for child in [&mut edge_1, &mut edge_2] {
        child.start_kill().unwrap();
        let _ = child.wait().await;
    }
}
