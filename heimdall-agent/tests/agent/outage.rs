//! Reads with the API down: an Agent restarted while it cannot reach the
//! API keeps deciding with the policy snapshot it kept on disk (sealed
//! under its data key), and every read it served then reaches the access
//! log once the API answers again.

use reqwest::Method;

use crate::support::{agent_client, World};
use crate::values::{eventually, holding_secret};

/// Reads of `db-password` in the access log, whoever served them.
async fn reads(w: &World) -> u64 {
    let (_, log) = w.call(Method::GET, "/v1/secrets/db-password/access-log", None).await;
    log.as_array().unwrap().iter().map(|r| r["reads"].as_u64().unwrap()).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_restarted_while_the_api_is_unreachable_serves_and_reports_every_read() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let mut held = holding_secret(&w, &config, "db-password", "s3cret", &[]).await;
    let reader = agent_client(&config, &held.local_url, &held.owner);
    let read =
        || async { reader.get_value("db-password", "dev", None).await.map(|r| r.value.expose().clone()) };
    assert_eq!(read().await.map_err(|e| e.to_string()), Ok("s3cret".to_owned()));
    let kept = config.with_file_name(heimdall_agent::policy_file::FILE_NAME);
    eventually(&config, "the snapshot kept on disk", || async { kept.exists() }).await;
    eventually(&config, "the first read in the access log", || async { reads(&w).await == 1 }).await;
    held.process.kill().await.unwrap();

    // From the Agent's side the API is gone: its channel URL is a closed port.
    let text = std::fs::read_to_string(&config).unwrap();
    let real = format!("api_url = \"{}\"", w.api.agent_url);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    assert!(text.contains(&real), "{text}");
    std::fs::write(&config, text.replace(&real, &format!("api_url = \"https://127.0.0.1:{closed}\"")))
        .unwrap();
    let mut cut_off = w.run_agent(&config);
    eventually(&config, "a read served with the API unreachable", || async {
        // Refused with POLICY_STALE ("has not synced yet") without the kept snapshot.
        read().await.is_ok_and(|v| v == "s3cret")
    })
    .await;
    let log = std::fs::read_to_string(config.with_extension("log")).unwrap_or_default();
    assert!(log.contains("policy snapshot kept on disk"), "{log}");
    cut_off.kill().await.unwrap();

    // The API again: the read served during the outage reaches the access log.
    std::fs::write(&config, text).unwrap();
    let mut agent = w.run_agent(&config);
    eventually(&config, "the outage's read in the access log", || async { reads(&w).await == 2 }).await;
    agent.kill().await.unwrap();
}

/// Someone who can write the Agent's disk (no master key) keeps a copy of
/// its policy snapshot from before a `forbid`, then puts it back and
/// cuts the Agent off from the API: the copy does not open (its
/// generation is below what the value store recorded), the Agent decides
/// nothing until it syncs, and the API hears of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_snapshot_copied_back_from_before_a_forbid_is_refused() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let mut held = holding_secret(&w, &config, "db-password", "s3cret", &[]).await;
    let reader = agent_client(&config, &held.local_url, &held.owner);
    let read = || async { reader.get_value("db-password", "dev", None).await };
    assert!(read().await.is_ok());
    let kept = config.with_file_name(heimdall_agent::policy_file::FILE_NAME);
    eventually(&config, "the snapshot kept on disk", || async { kept.exists() }).await;
    let before = std::fs::read(&kept).unwrap();

    // A forbid: the owner may not read it any more, and the Agent knows.
    let forbid = "forbid (principal, action == Heimdall::Action::\"secret.read\", resource) when { context.environment == \"dev\" };";
    w.post(&w.api.owner_token, "/v1/policies", serde_json::json!({ "name": "no-dev", "text": forbid })).await;
    eventually(&config, "the forbid at the Agent", || async {
        read().await.is_err_and(|e| e.code() == Some(heimdall_sdk::ErrorCode::Forbidden))
    })
    .await;
    eventually(&config, "the snapshot with the forbid on disk", || async {
        std::fs::read(&kept).unwrap() != before
    })
    .await;
    held.process.kill().await.unwrap();

    // The old copy put back, the API out of reach.
    std::fs::write(&kept, &before).unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    let real = format!("api_url = \"{}\"", w.api.agent_url);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    std::fs::write(&config, text.replace(&real, &format!("api_url = \"https://127.0.0.1:{closed}\"")))
        .unwrap();
    let mut cut_off = w.run_agent(&config);
    eventually(&config, "the local API up", || async {
        read().await.is_err_and(|e| e.code() == Some(heimdall_sdk::ErrorCode::PolicyStale))
    })
    .await;
    for _ in 0..3 {
        let refused = read().await.unwrap_err();
        assert_eq!(refused.code(), Some(heimdall_sdk::ErrorCode::PolicyStale), "{refused}");
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let log = std::fs::read_to_string(config.with_extension("log")).unwrap_or_default();
    assert!(log.contains("copied back"), "{log}");
    cut_off.kill().await.unwrap();

    // With the API again: the forbid holds, and the audit feed says what was found.
    std::fs::write(&config, text).unwrap();
    let mut agent = w.run_agent(&config);
    eventually(&config, "the alert in the audit feed", || async {
        let (_, events) = w.call(Method::GET, "/v1/events?action=agent.sealed_file_rolled_back", None).await;
        events.as_array().is_some_and(|e| e.iter().any(|e| e["detail"]["file"] == "policy-snapshot"))
    })
    .await;
    assert_eq!(read().await.unwrap_err().code(), Some(heimdall_sdk::ErrorCode::Forbidden));
    agent.kill().await.unwrap();
}
