//! Drift checks: a plan of the applied revision against what exists, never
//! applied. A change made outside Heimdall (with plain `terraform`, from
//! the exported package) marks the Resource drifted; applying the revision
//! again clears the mark.

use reqwest::Method;
use serde_json::json;

use crate::support::World;

const RUN: std::time::Duration = std::time::Duration::from_secs(120);

/// Queues a check and waits for its job; the Resource after it.
async fn checked(w: &World, id: &str) -> serde_json::Value {
    let (status, job) = w.call(Method::POST, &format!("/v1/resources/{id}/drift-check"), None).await;
    assert_eq!(status, 202, "{job}");
    assert_eq!(job["operation"], "drift_check");
    let deadline = std::time::Instant::now() + RUN;
    loop {
        let (_, now) = w.call(Method::GET, &format!("/v1/jobs/{}", job["id"].as_str().unwrap()), None).await;
        if now["status"] == "completed" {
            return w.resource(id).await;
        }
        assert!(now["status"] != "failed" && std::time::Instant::now() < deadline, "{now}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_made_outside_marks_the_resource_drifted_until_it_is_applied_again() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    w.link_moto_account().await;
    let module = crate::support::repo().join("tests/fixtures/modules/regional").display().to_string();
    w.post(
        &owner,
        "/v1/schemas",
        json!({ "type": "regional", "input_schema": { "type": "object" }, "module": { "source": module, "version": "1.0.0" } }),
    )
    .await;
    let config = w.enroll("agent-1").await;
    let mut agent = w.run_agent(&config);
    let id = w.create("paris", "regional", json!({ "name": "paris" })).await;
    assert_eq!(w.wait_for(&id, &["provisioned", "failed"], RUN).await["status"], "provisioned");

    // Nothing changed yet: a clean check.
    let r = checked(&w, &id).await;
    assert!(r.get("drifted_at").is_none(), "{r}");
    assert_eq!(r["status"], "provisioned");

    // Someone applies another input with plain terraform, from the export.
    let dir = w.dir.path().join("by-hand");
    w.export_edited(&id, &dir, "paris", "lyon").await;
    crate::support::plain_terraform_ok(&dir, &["init", "-input=false", "-no-color"]);
    crate::support::plain_terraform_ok(&dir, &["apply", "-input=false", "-auto-approve", "-no-color"]);

    let r = checked(&w, &id).await;
    assert!(r["drifted_at"].is_string(), "not marked: {r}");
    assert_eq!(r["status"], "provisioned", "a check moves no status");
    let jobs = w.jobs(&id).await;
    let log = w.job_log(jobs.last().unwrap()["id"].as_str().unwrap()).await;
    assert!(log.contains("Drift: module.resource.terraform_data.this update"), "{log}");
    let (_, events) = w.call(Method::GET, "/v1/events?action=resource.drifted", None).await;
    assert_eq!(events.as_array().unwrap().len(), 1, "{events}");

    // Applying the revision again clears the mark.
    let (status, _) = w
        .call(Method::PATCH, &format!("/v1/resources/{id}"), Some(json!({ "input": { "name": "paris" } })))
        .await;
    assert_eq!(status, 200);
    let r = w.wait_for_revision(&id, 2, RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    assert!(r.get("drifted_at").is_none(), "still marked: {r}");
    let (_, events) = w.call(Method::GET, "/v1/events?action=resource.drift_cleared", None).await;
    assert_eq!(events.as_array().unwrap().len(), 1, "{events}");
    assert!(checked(&w, &id).await.get("drifted_at").is_none());

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}

/// A schema's `drift_check_every` has the API queue checks by itself, as
/// the drift schedule, every so often after the last check or apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_schedule_checks_its_resources_by_itself() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let module = crate::support::repo().join("tests/fixtures/modules/regional").display().to_string();
    let (status, refused) = w
        .call(
            Method::POST,
            "/v1/schemas",
            Some(json!({ "type": "watched", "input_schema": { "type": "object" }, "drift_check_every": "1s",
                "module": { "source": module, "version": "1.0.0" } })),
        )
        .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (422, Some("INVALID_INPUT")),
        "too often: {refused}"
    );
    let schema = w
        .post(
            &owner,
            "/v1/schemas",
            json!({ "type": "watched", "input_schema": { "type": "object" }, "drift_check_every": "10s",
                "module": { "source": module, "version": "1.0.0" } }),
        )
        .await;
    assert_eq!(schema["drift_check_every_seconds"], 10, "{schema}");
    let config = w.enroll("agent-1").await;
    let mut agent = w.run_agent(&config);
    let id = w.create("watched", "watched", json!({ "name": "watched" })).await;
    assert_eq!(w.wait_for(&id, &["provisioned", "failed"], RUN).await["status"], "provisioned");

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let check = loop {
        let jobs = w.jobs(&id).await;
        if let Some(done) =
            jobs.iter().find(|j| j["operation"] == "drift_check" && j["status"] == "completed")
        {
            break done.clone();
        }
        assert!(std::time::Instant::now() < deadline, "no scheduled check ran: {jobs:?}");
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    let log = w.job_log(check["id"].as_str().unwrap()).await;
    assert!(log.contains("No drift"), "{log}");
    let (_, events) = w.call(Method::GET, "/v1/events?action=resource.drift_check_requested", None).await;
    assert_eq!(events[0]["actor"], "heimdall (drift schedule)", "{events}");
    assert!(w.resource(&id).await.get("drifted_at").is_none());

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}

/// An account's `drift_check_every` checks the Resources placed on it,
/// whatever their schema says; a schema with no schedule is no exception.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_schedule_checks_the_resources_placed_on_it() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let account = |every: &str| {
        json!({ "name": "watched", "provider": "aws", "region": "us-east-1", "state_bucket": w.bucket,
            "auth": { "kind": "oidc", "role_arn": "arn:aws:iam::123456789012:role/heimdall" },
            "drift_check_every": every })
    };
    let (status, refused) = w.call(Method::POST, "/v1/cloud-accounts", Some(account("1s"))).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (422, Some("INVALID_INPUT")), "{refused}");
    let created = w.post(&owner, "/v1/cloud-accounts", account("10s")).await;
    assert_eq!(created["drift_check_every_seconds"], 10, "{created}");
    // For the Resource's domain, in place of the world's organization-wide account.
    let link = json!({ "scope": "domain", "scope_id": "payments", "environment": "dev" });
    w.post(&owner, "/v1/cloud-accounts/watched/links", link).await;
    let config = w.enroll("agent-1").await;
    let mut agent = w.run_agent(&config);
    let module = crate::support::repo().join("tests/fixtures/modules/regional").display().to_string();
    let schema = json!({ "type": "unscheduled", "input_schema": { "type": "object" },
        "module": { "source": module, "version": "1.0.0" } });
    assert!(w.post(&owner, "/v1/schemas", schema).await.get("drift_check_every_seconds").is_none());
    let id = w.create("watched", "unscheduled", json!({ "name": "watched" })).await;
    assert_eq!(w.wait_for(&id, &["provisioned", "failed"], RUN).await["status"], "provisioned");

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let jobs = w.jobs(&id).await;
        if jobs.iter().any(|j| j["operation"] == "drift_check" && j["status"] == "completed") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no scheduled check ran: {jobs:?}");
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let (_, events) = w.call(Method::GET, "/v1/events?action=resource.drift_check_requested", None).await;
    assert_eq!(events[0]["actor"], "heimdall (drift schedule)", "{events}");

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}
