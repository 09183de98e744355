//! A module upgrade under an existing Resource, with real Terraform, the S3
//! protocol (moto) and a real git repository tagged `v1.0.0` and `v1.1.0`
//! (1.1.0 adds an optional input and an output): the Resource is created
//! on schema version 1, moved to version 2 (which requires approval), and
//! its object is the same one afterwards: updated in place, not recreated.

use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{git, World};

const RUN: std::time::Duration = std::time::Duration::from_secs(120);

const V1: &str = r#"
terraform {
  required_version = ">= 1.6.0"
}

variable "name" {
  type = string
}

resource "terraform_data" "this" {
  input = var.name
}

output "id" {
  value = terraform_data.this.id
}
"#;

/// 1.1.0: an optional `tier` and an output that shows it.
const V1_1: &str = r#"
terraform {
  required_version = ">= 1.6.0"
}

variable "name" {
  type = string
}

variable "tier" {
  type    = string
  default = "standard"
}

resource "terraform_data" "this" {
  input = var.name
}

output "id" {
  value = terraform_data.this.id
}

output "tier" {
  value = var.tier
}
"#;

/// The module's repository with its two tagged versions; its source.
fn module_repository(dir: &std::path::Path) -> String {
    let repo = dir.join("store-module.git");
    std::fs::create_dir_all(&repo).unwrap();
    git(&["init", "-q"], &repo);
    for (text, tag) in [(V1, "v1.0.0"), (V1_1, "v1.1.0")] {
        std::fs::write(repo.join("main.tf"), text).unwrap();
        git(&["add", "main.tf"], &repo);
        git(&["commit", "-q", "-m", tag], &repo);
        git(&["tag", tag], &repo);
    }
    format!("git::file://{}", repo.display())
}

/// Schema version `version` of type `store` over the module at `tag`.
async fn schema(w: &World, source: &str, input_schema: Value, tag: &str, requires_approval: bool) -> Value {
    w.post(
        &w.api.owner_token,
        "/v1/schemas",
        json!({ "type": "store", "input_schema": input_schema, "requires_approval": requires_approval,
                "module": { "source": source, "version": tag } }),
    )
    .await
}

/// Revision `number` once its plan is in.
async fn planned(w: &World, id: &str, number: i64) -> Value {
    let deadline = std::time::Instant::now() + RUN;
    loop {
        let (_, detail) = w.call(Method::GET, &format!("/v1/resources/{id}"), None).await;
        let revision =
            detail["revisions"].as_array().unwrap().iter().find(|r| r["number"] == number).cloned();
        if let Some(revision) = revision.filter(|r| r["plan"]["sha256"].is_string()) {
            return revision;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no plan for revision {number}: {:?}",
            w.jobs(id).await
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_upgrade_under_approval_updates_the_same_object_in_place() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let source = module_repository(w.dir.path());
    let name = json!({ "type": "string", "pattern": "^[a-z]+$" });
    let v1 = schema(
        &w,
        &source,
        json!({ "type": "object", "properties": { "name": name }, "required": ["name"], "additionalProperties": false }),
        "v1.0.0",
        false,
    )
    .await;
    let v2 = schema(
        &w,
        &source,
        json!({ "type": "object", "properties": { "name": name, "tier": { "enum": ["standard", "premium"] } },
                "required": ["name"], "additionalProperties": false }),
        "v1.1.0",
        true,
    )
    .await;
    assert_eq!((v1["version"].as_i64(), v2["version"].as_i64()), (Some(1), Some(2)));
    let admin = w.post(&owner, "/v1/members", json!({ "email": "ana@example.com", "role": "admin" })).await;
    let admin = admin["token"].as_str().unwrap().to_owned();
    let config = w.enroll("agent-1").await;
    let mut table: toml::Table = toml::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let allowed = table["modules"]["allowed_sources"].as_array_mut().unwrap();
    allowed.push(toml::Value::String(format!("git::file://{}*", w.dir.path().display())));
    std::fs::write(&config, toml::to_string(&table).unwrap()).unwrap();
    let mut agent = w.run_agent(&config);

    // Version 1, by id: a type name would pick the newest version.
    let id = w.create("shop", v1["id"].as_str().unwrap(), json!({ "name": "shop" })).await;
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    let object = r["outputs"]["id"].as_str().unwrap().to_owned();
    assert!(r["outputs"].get("tier").is_none(), "{r}");

    // An input version 2 refuses is refused naming the field; nothing is stored.
    let path = format!("/v1/resources/{id}/upgrade");
    let upgrade = |body: Value| w.call(Method::POST, &path, Some(body));
    let (status, refused) =
        upgrade(json!({ "schema_version": 2, "input": { "name": "shop", "tier": "gold" } })).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (422, Some("SCHEMA_VIOLATION")), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("tier"), "{refused}");
    assert_eq!((w.resource(&id).await["revision"].as_i64(), w.jobs(&id).await.len()), (Some(1), 1));

    // Version 2 requires approval: its plan updates in place, destroys nothing.
    let (status, upgraded) =
        upgrade(json!({ "schema_version": 2, "input": { "name": "shop", "tier": "premium" } })).await;
    assert_eq!((status, upgraded["status"].as_str()), (200, Some("pending_approval")), "{upgraded}");
    let revision = planned(&w, &id, 2).await;
    assert_eq!(revision["schema_version"], 2);
    let summary = &revision["plan"]["summary"];
    assert_eq!(
        (summary["add"].as_u64(), summary["remove"].as_u64()),
        (Some(0), Some(0)),
        "no recreate: {summary}"
    );
    let sha = revision["plan"]["sha256"].as_str().unwrap();
    let approved = w
        .http
        .post(format!("{}/v1/resources/{id}/approve", w.api.url))
        .bearer_auth(&admin)
        .json(&json!({ "revision": 2, "plan": sha }))
        .send()
        .await
        .unwrap();
    assert_eq!(approved.status(), 200);
    let r = w.wait_for_revision(&id, 2, RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    assert_eq!(r["outputs"]["id"], object, "the same object, not a new one: {r}");
    assert_eq!(r["outputs"]["tier"], "premium", "version 1.1.0 ran: {r}");
    assert_eq!(r["schema_id"], v2["id"]);
    let jobs = w.jobs(&id).await;
    let apply = jobs.iter().rev().find(|j| j["operation"] == "apply").unwrap();
    let log = w.job_log(apply["id"].as_str().unwrap()).await;
    assert!(log.contains("ref=v1.1.0"), "Terraform fetched the new version: {log}");
    let state: Value =
        serde_json::from_str(&crate::support::s3_get(&w.bucket, &format!("heimdall/{id}.tfstate"))).unwrap();
    let ids: Vec<&Value> = state["resources"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["instances"].as_array().unwrap())
        .map(|i| &i["attributes"]["id"])
        .collect();
    assert_eq!(ids, [&json!(object)], "one object, the same, in the same state: {state}");

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}
