//! `heimdall terraform export`: the package of a Resource's last apply
//! runs with plain `terraform` against the same state and plans no change.

use reqwest::Method;
use serde_json::json;

use crate::support::World;

const RUN: std::time::Duration = std::time::Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exported_package_plans_no_change_against_the_real_state() {
    let w = World::new().await;
    w.link_moto_account().await;
    let config = w.enroll("agent-1").await;
    let mut agent = w.run_agent(&config);

    let id =
        w.create("exported", "bucket", json!({ "bucket": "exported", "tags": { "team": "payments" } })).await;
    // Before anything is applied there is nothing to export.
    let (status, refused) = w.call(Method::GET, &format!("/v1/resources/{id}/export"), None).await;
    if w.resource(&id).await["status"] != "provisioned" {
        assert_eq!((status, refused["error"]["code"].as_str()), (409, Some("CONFLICT")), "{refused}");
    }
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);

    let (status, package) = w.call(Method::GET, &format!("/v1/resources/{id}/export"), None).await;
    assert_eq!(status, 200, "{package}");
    let dir = w.dir.path().join("exported");
    std::fs::create_dir_all(&dir).unwrap();
    let mut names = Vec::new();
    for file in package["files"].as_array().unwrap() {
        let name = file["path"].as_str().unwrap();
        names.push(name.to_owned());
        std::fs::write(dir.join(name), file["content"].as_str().unwrap()).unwrap();
    }
    names.sort();
    assert_eq!(names, ["README.md", "backend.tf", "main.tf", "outputs.tf", "terraform.tfvars.json"]);
    assert!(!package.to_string().contains("testing"), "a credential in the package");

    let (code, out) = crate::support::plain_terraform(&dir, &["init", "-input=false", "-no-color"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) =
        crate::support::plain_terraform(&dir, &["plan", "-input=false", "-no-color", "-detailed-exitcode"]);
    assert_eq!(code, 0, "plain terraform plans a change against Heimdall's state: {out}");
    assert!(out.contains("No changes"), "{out}");

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}
