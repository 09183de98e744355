//! Static cloud credentials, end to end: a secret set through the Agent's
//! local API, named by a cloud account, read by the Agent for each job the
//! way every read is (recorded first, shown in the access log as the
//! Agent's), and given to Terraform as files, never in its environment.

use std::os::unix::fs::PermissionsExt;

use reqwest::Method;
use serde_json::json;

use crate::support::World;
use crate::values::{configure, eventually, identity, set, Store};

const RUN: std::time::Duration = std::time::Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_credential_reaches_terraform_as_a_file_and_its_read_is_recorded() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    // A terraform that writes down what it was given: the environment's
    // AWS variables and the credentials file they name.
    let dump = w.dir.path().join("terraform-saw");
    let wrapper = w.dir.path().join("terraform");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n{{ echo \"key-in-env=${{AWS_ACCESS_KEY_ID:-none}} profile=$AWS_PROFILE\"; \
             cat \"$AWS_SHARED_CREDENTIALS_FILE\" 2>/dev/null; \
             stat -c 'mode=%a' \"$AWS_SHARED_CREDENTIALS_FILE\" 2>/dev/null; echo \"file=$AWS_SHARED_CREDENTIALS_FILE\"; }} >> '{}'\n\
             exec '{}' \"$@\"\n",
            dump.display(),
            crate::support::terraform().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = w.enroll_with("agent-1", &wrapper).await;
    let _ = std::fs::remove_file(&dump);
    let (local_url, _) = configure(&config, Store::Sqlite, None);
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "agent-1" })).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "aws-keys" })).await;
    let mut agent = w.run_agent(&config);
    eventually(&config, "the Agent's local URL", || async {
        let (_, holders) = w.call(Method::GET, "/v1/secrets/aws-keys/holders?environment=dev", None).await;
        holders[0]["url"].as_str() == Some(local_url.as_str())
    })
    .await;
    let ana = identity(&w, &owner).await;
    let marker = format!("static-secret-{}", uuid::Uuid::new_v4().simple());
    let value =
        json!({ "access_key_id": "AKIASTATIC", "secret_access_key": marker, "session_token": "tok-marker" });
    assert_eq!(set(&w, &owner, &ana, "aws-keys", "dev", &value.to_string()).await, 1);
    // An account that uses it, linked in place of the world's.
    w.post(
        &owner,
        "/v1/cloud-accounts",
        json!({ "name": "static", "provider": "aws", "region": "us-east-1",
        "state_bucket": w.bucket, "auth": { "kind": "static", "secret": "aws-keys" } }),
    )
    .await;
    w.post(
        &owner,
        "/v1/cloud-accounts/static/links",
        json!({ "scope": "organization", "environment": "dev" }),
    )
    .await;

    let id = w.create("with-keys", "bucket", json!({ "bucket": "with-keys" })).await;
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    let saw = std::fs::read_to_string(&dump).unwrap();
    let runs: Vec<&str> = saw.lines().filter(|l| l.starts_with("key-in-env=")).collect();
    assert!(runs.len() >= 2, "init and apply at least: {saw}");
    let own_keys = runs.iter().any(|l| *l != "key-in-env=none profile=heimdall");
    assert!(!own_keys, "the Agent's own keys reached Terraform: {saw}");
    assert!(saw.contains("aws_access_key_id = AKIASTATIC") && saw.contains(&marker), "{saw}");
    assert!(saw.contains("mode=600"), "{saw}");
    let file = saw.lines().find_map(|l| l.strip_prefix("file=")).unwrap();
    assert!(!std::path::Path::new(file).exists(), "the credentials file outlived the job: {file}");
    // The state went to the bucket with the account's keys.
    assert!(crate::support::s3_keys(&w.bucket, "heimdall/").iter().any(|k| k.contains(&id)));

    // The read is the Agent's, in the access log once it syncs.
    eventually(&config, "the Agent's read in the access log", || async {
        let (_, log) = w.call(Method::GET, "/v1/secrets/aws-keys/access-log", None).await;
        log.as_array()
            .is_some_and(|l| l.iter().any(|e| e["accessor"] == "agent agent-1" && e["version"] == 1))
    })
    .await;

    // Nothing of the value in the API's database, the job log or the Agent's log.
    let job = &w.jobs(&id).await[0];
    let job_log = w.job_log(job["id"].as_str().unwrap()).await;
    let rows = heimdall_api::testing::dump_rows(w.api.store.pool()).await;
    let agent_log = std::fs::read_to_string(config.with_extension("log")).unwrap();
    for (place, text) in [("job log", &job_log), ("API database", &rows), ("Agent log", &agent_log)] {
        assert!(!text.contains(&marker) && !text.contains("tok-marker"), "the credential is in the {place}");
    }

    // A deactivated latest version: the job fails at once, nothing runs.
    w.post(&owner, "/v1/secrets/aws-keys/deactivate", json!({ "environment": "dev", "version": 1 })).await;
    eventually(&config, "the deactivation reaching the Agent", || async {
        let resp =
            crate::support::agent_client(&config, &local_url, &ana).get_value("aws-keys", "dev", None).await;
        resp.is_err_and(|e| e.code() == Some(heimdall_sdk::ErrorCode::VersionDeactivated))
    })
    .await;
    std::fs::remove_file(&dump).unwrap();
    let later = w.create("after-deactivation", "bucket", json!({ "bucket": "after-deactivation" })).await;
    let r = w.wait_for(&later, &["provisioned", "failed"], RUN).await;
    assert!(r["reason"].as_str().unwrap_or_default().starts_with("VERSION_DEACTIVATED"), "{r}");
    assert_eq!(w.jobs(&later).await[0]["attempts"], 1, "a refusal is not retried");
    assert!(!dump.exists(), "Terraform started");

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}
