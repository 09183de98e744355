//! `heimdall resource import`: an object made with plain `terraform`
//! outside Heimdall comes under management without being recreated; an
//! import whose input disagrees with what exists applies nothing.

use reqwest::Method;
use serde_json::json;

use crate::support::World;

const RUN: std::time::Duration = std::time::Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_made_outside_comes_under_management_without_being_recreated() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    // Made outside Heimdall, with plain terraform and its own local state.
    let object = crate::support::made_outside(&w.dir.path().join("outside"), "legacy-logs");

    let config = w.enroll("agent-1").await;
    let mut agent = w.run_agent(&config);
    let body = json!({ "component": "receipts", "schema": "bucket", "environment": "dev", "name": "legacy",
        "input": { "bucket": "legacy-logs" }, "imports": [{ "address": "terraform_data.bucket", "id": object }] });
    let id = w.post(&owner, "/v1/resources", body).await["id"].as_str().unwrap().to_owned();
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    assert_eq!(
        (r["revision"].as_i64(), r["outputs"]["id"].as_str()),
        (Some(1), Some(object.as_str())),
        "{r}"
    );
    let jobs = w.jobs(&id).await;
    assert_eq!(jobs[0]["operation"], "import");
    let log = w.job_log(jobs[0]["id"].as_str().unwrap()).await;
    assert!(log.contains("1 to import, 0 to add, 0 to change, 0 to destroy"), "{log}");

    // The next apply through Heimdall changes nothing that exists.
    let patch = json!({ "input": { "bucket": "legacy-logs", "tags": { "team": "payments" } } });
    let (status, changed) = w.call(Method::PATCH, &format!("/v1/resources/{id}"), Some(patch)).await;
    assert_eq!(status, 200, "{changed}");
    let r = w.wait_for_revision(&id, 2, RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    assert_eq!(r["outputs"]["id"], object.as_str(), "the object was recreated: {r}");
    assert_eq!(w.jobs(&id).await[1]["operation"], "apply");

    // An import whose input disagrees with the object: the plan would
    // update it, so nothing is applied; the state keeps the object as it is.
    let regional = crate::support::repo().join("tests/fixtures/modules/regional").display().to_string();
    w.post(
        &owner,
        "/v1/schemas",
        json!({ "type": "regional", "input_schema": { "type": "object" }, "module": { "source": regional, "version": "1.0.0" } }),
    )
    .await;
    let body = json!({ "component": "receipts", "schema": "regional", "environment": "dev", "name": "drifted",
        "input": { "name": "drifted" }, "imports": [{ "address": "terraform_data.this", "id": "made-by-hand" }] });
    let bad = w.post(&owner, "/v1/resources", body).await["id"].as_str().unwrap().to_owned();
    let r = w.wait_for(&bad, &["provisioned", "failed"], RUN).await;
    let reason = r["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("IMPORT_WOULD_CHANGE")
            && reason.contains("module.resource.terraform_data.this update"),
        "{r}"
    );
    let jobs = w.jobs(&bad).await;
    assert_eq!(jobs[0]["attempts"], 1, "not retried");
    let log = w.job_log(jobs[0]["id"].as_str().unwrap()).await;
    assert!(
        log.contains("module.resource.terraform_data.this: Plan to update"),
        "the plan is in the log: {log}"
    );
    let state: serde_json::Value =
        serde_json::from_str(&crate::support::s3_get(&w.bucket, &format!("heimdall/{bad}.tfstate"))).unwrap();
    let kept = &state["resources"][0];
    assert_eq!(
        kept["instances"][0]["attributes"]["id"], "made-by-hand",
        "the object is in the state: {state}"
    );
    assert!(kept["instances"][0]["attributes"]["input"].is_null(), "something was applied: {state}");

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}
