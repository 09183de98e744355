//! Approval bound to the plan, with real Terraform and the S3 protocol
//! (moto): a plan job saves the plan file next to the state and reports
//! its SHA-256 and summary; an approval must name that plan; the apply
//! runs exactly that file; and a plan made stale by a change to the state
//! is refused by Terraform, fails `STALE_PLAN` and is planned again for
//! approval, never applied silently.

use reqwest::Method;
use serde_json::{json, Value};

use crate::support::World;

const RUN: std::time::Duration = std::time::Duration::from_secs(120);

/// Revision `number` once its plan is in.
async fn planned(w: &World, id: &str, number: i64, not: Option<&str>) -> Value {
    let deadline = std::time::Instant::now() + RUN;
    loop {
        let (_, detail) = w.call(Method::GET, &format!("/v1/resources/{id}"), None).await;
        let revision =
            detail["revisions"].as_array().unwrap().iter().find(|r| r["number"] == number).cloned();
        if let Some(revision) = revision {
            let sha = revision["plan"]["sha256"].as_str();
            if sha.is_some() && sha != not && revision["state"] == "pending_approval" {
                return revision;
            }
        }
        if std::time::Instant::now() > deadline {
            let jobs = w.jobs(id).await;
            let log = w.job_log(jobs.last().unwrap()["id"].as_str().unwrap()).await;
            let agent_log =
                std::fs::read_to_string(w.dir.path().join("agent-1/agent.log")).unwrap_or_default();
            panic!("no plan for revision {number}: {jobs:?}\n{log}\nagent log:\n{agent_log}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// A schema `kind` over `module` that requires approval, an admin who
/// requests (the owner approves: never one's own), and a running Agent.
async fn approving(w: &World, kind: &str, module: &std::path::Path) -> (String, tokio::process::Child) {
    let admin = approving_schema(w, kind, module).await;
    let config = w.enroll("agent-1").await;
    (admin, w.run_agent(&config))
}

/// [`approving`] without the Agent: the schema and the admin's token.
pub(crate) async fn approving_schema(w: &World, kind: &str, module: &std::path::Path) -> String {
    let owner = w.api.owner_token.clone();
    w.post(
        &owner,
        "/v1/schemas",
        json!({ "type": kind, "input_schema": { "type": "object" }, "requires_approval": true,
                "module": { "source": module.display().to_string(), "version": "1.0.0" } }),
    )
    .await;
    let admin = w.post(&owner, "/v1/members", json!({ "email": "ana@example.com", "role": "admin" })).await;
    admin["token"].as_str().unwrap().to_owned()
}

/// The whole approval cycle on whatever backend the Resource's account
/// keeps state in, with `regional` under a schema from
/// [`approving_schema`]: revision 1's plan is kept there and applied
/// exactly; revision 2's plan is made stale by `move_state` (which bumps
/// the state's serial, as any other writer would), so its approval fails
/// `STALE_PLAN` and applies nothing; the new plan, approved, lands.
pub(crate) async fn approval_cycle<F, Fut>(w: &World, admin: &str, kind: &str, move_state: F) -> String
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let body = json!({ "component": "receipts", "schema": kind, "environment": "dev", "name": "paris",
                       "input": { "name": "paris" } });
    let id = w.post(admin, "/v1/resources", body).await["id"].as_str().unwrap().to_owned();
    let first = planned(w, &id, 1, None).await;
    let sha = first["plan"]["sha256"].as_str().unwrap().to_owned();
    assert_eq!(first["plan"]["summary"]["add"], 1, "{first}");
    let path = format!("/v1/resources/{id}/approve");
    let approve = |plan: String, revision: i64| {
        w.call(Method::POST, &path, Some(json!({ "revision": revision, "plan": plan })))
    };
    let (status, _) = approve(sha[..12].to_owned(), 1).await;
    assert_eq!(status, 200);
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    if r["status"] != "provisioned" {
        let jobs = w.jobs(&id).await;
        let mut logs = String::new();
        for job in &jobs {
            logs.push_str(&w.job_log(job["id"].as_str().unwrap()).await);
        }
        panic!("revision 1 did not land: {jobs:?}\n{logs}");
    }
    let jobs = w.jobs(&id).await;
    let apply = jobs.iter().find(|j| j["operation"] == "apply").unwrap();
    let log = w.job_log(apply["id"].as_str().unwrap()).await;
    assert!(log.contains(&format!("Applying the approved plan {sha}")), "{log}");

    let changed = w
        .http
        .patch(format!("{}/v1/resources/{id}", w.api.url))
        .bearer_auth(admin)
        .json(&json!({ "input": { "name": "lyon" } }))
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 200);
    let second = planned(w, &id, 2, None).await;
    let stale_sha = second["plan"]["sha256"].as_str().unwrap().to_owned();
    move_state(id.clone()).await;
    let (status, _) = approve(stale_sha.clone(), 2).await;
    assert_eq!(status, 200);
    let again = planned(w, &id, 2, Some(&stale_sha)).await;
    let jobs = w.jobs(&id).await;
    let failed = jobs.iter().rev().find(|j| j["operation"] == "apply").unwrap();
    assert_eq!(failed["status"], "failed", "{jobs:?}");
    assert!(failed["reason"].as_str().unwrap().starts_with("STALE_PLAN"), "{failed}");
    let (status, _) = approve(again["plan"]["sha256"].as_str().unwrap().to_owned(), 2).await;
    assert_eq!(status, 200);
    let r = w.wait_for_revision(&id, 2, RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_applies_exactly_the_plan_it_names_and_a_stale_plan_is_planned_again() {
    let w = World::new().await;
    w.link_moto_account().await;
    let regional = crate::support::repo().join("tests/fixtures/modules/regional");
    let (admin, mut agent) = approving(&w, "guarded", &regional).await;
    let created = w
        .post(
            &admin,
            "/v1/resources",
            json!({ "component": "receipts", "schema": "guarded", "environment": "dev",
                                                 "name": "paris", "input": { "name": "paris" } }),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_owned();

    // The plan job: the plan file next to the state, its hash and summary at the API.
    let first = planned(&w, &id, 1, None).await;
    let sha = first["plan"]["sha256"].as_str().unwrap().to_owned();
    assert_eq!(first["plan"]["summary"]["add"], 1, "{first}");
    assert_eq!(first["plan"]["summary"]["changes"], json!(["module.resource.terraform_data.this create"]));
    assert!(crate::support::s3_keys(&w.bucket, "heimdall/").contains(&format!("heimdall/{id}.tfplan")));
    assert!(
        !crate::support::s3_keys(&w.bucket, "heimdall/").contains(&format!("heimdall/{id}.tfstate")),
        "nothing applied"
    );
    assert_eq!(w.resource(&id).await["status"], "pending_approval");

    // Only that plan is approved, and the apply runs exactly it.
    let path = format!("/v1/resources/{id}/approve");
    let approve = |plan: &str, revision: i64| {
        w.call(Method::POST, &path, Some(json!({ "revision": revision, "plan": plan })))
    };
    let (status, refused) = approve(&"0".repeat(64), 1).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (409, Some("STALE_PLAN")), "{refused}");
    let (status, _) = approve(&sha[..12], 1).await;
    assert_eq!(status, 200);
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    let jobs = w.jobs(&id).await;
    let apply = jobs.iter().find(|j| j["operation"] == "apply").unwrap();
    let log = w.job_log(apply["id"].as_str().unwrap()).await;
    assert!(log.contains(&format!("Applying the approved plan {sha}")), "{log}");

    // A change is planned; then the state moves (plain terraform, from the
    // exported package, with another input) before anyone approves.
    let dir = w.dir.path().join("by-hand");
    w.export_edited(&id, &dir, "paris", "nice").await;
    let changed = w
        .http
        .patch(format!("{}/v1/resources/{id}", w.api.url))
        .bearer_auth(&admin)
        .json(&json!({ "input": { "name": "lyon" } }))
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 200);
    let second = planned(&w, &id, 2, None).await;
    let stale_sha = second["plan"]["sha256"].as_str().unwrap().to_owned();
    assert_eq!(second["plan"]["summary"]["changes"], json!(["module.resource.terraform_data.this update"]));
    crate::support::plain_terraform_ok(&dir, &["init", "-input=false", "-no-color"]);
    crate::support::plain_terraform_ok(&dir, &["apply", "-input=false", "-auto-approve", "-no-color"]);

    // The approved plan is stale: Terraform refuses it, nothing is applied,
    // and revision 2 waits again, with a new plan.
    let (status, _) = approve(&stale_sha, 2).await;
    assert_eq!(status, 200);
    let again = planned(&w, &id, 2, Some(&stale_sha)).await;
    let jobs = w.jobs(&id).await;
    let failed = jobs.iter().rev().find(|j| j["operation"] == "apply").unwrap();
    assert_eq!(failed["status"], "failed", "{jobs:?}");
    assert!(failed["reason"].as_str().unwrap().starts_with("STALE_PLAN"), "{failed}");
    let (_, events) = w.call(Method::GET, "/v1/events?action=resource.plan_stale", None).await;
    assert_eq!(events.as_array().unwrap().len(), 1, "{events}");
    assert_eq!(w.resource(&id).await["status"], "pending_approval");
    let state = crate::support::s3_get(&w.bucket, &format!("heimdall/{id}.tfstate"));
    assert!(state.contains("nice") && !state.contains("lyon"), "the stale plan applied nothing");
    let (status, refused) = approve(&stale_sha, 2).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("STALE_PLAN")),
        "the old plan is gone"
    );

    // The new plan, approved, lands revision 2.
    let (status, _) = approve(again["plan"]["sha256"].as_str().unwrap(), 2).await;
    assert_eq!(status, 200);
    let r = w.wait_for_revision(&id, 2, RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    let state = crate::support::s3_get(&w.bucket, &format!("heimdall/{id}.tfstate"));
    assert!(state.contains("lyon"), "{state}");

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}

/// An import under a schema that requires approval: its plan imports (and
/// changes nothing), and the approved plan brings the object in as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_waiting_for_approval_plans_the_import_and_applies_exactly_it() {
    let w = World::new().await;
    let object = crate::support::made_outside(&w.dir.path().join("outside"), "legacy-logs");
    let (admin, mut agent) = approving(&w, "guarded-bucket", &crate::support::module_dir()).await;
    let body = json!({ "component": "receipts", "schema": "guarded-bucket", "environment": "dev", "name": "legacy",
        "input": { "bucket": "legacy-logs" }, "imports": [{ "address": "terraform_data.bucket", "id": object }] });
    let id = w.post(&admin, "/v1/resources", body).await["id"].as_str().unwrap().to_owned();
    let planned = planned(&w, &id, 1, None).await;
    let summary = &planned["plan"]["summary"];
    assert_eq!((summary["import"].as_u64(), summary["add"].as_u64()), (Some(1), Some(0)), "{planned}");
    let sha = planned["plan"]["sha256"].as_str().unwrap();
    let (status, _) = w
        .call(
            Method::POST,
            &format!("/v1/resources/{id}/approve"),
            Some(json!({ "revision": 1, "plan": sha })),
        )
        .await;
    assert_eq!(status, 200);
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    assert_eq!(r["outputs"]["id"], object.as_str(), "imported as it is, not recreated: {r}");
    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}
