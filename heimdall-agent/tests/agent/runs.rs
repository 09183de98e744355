use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::support::{kill_with_children, s3_get, s3_keys, s3_put, World};

const RUN: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_transcript_provisions_with_state_in_the_bucket_and_delete_destroys() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let _agent = w.run_agent(&config);

    let id = w
        .create("recibos", "bucket", json!({ "bucket": "checkout-recibos", "tags": { "team": "payments" } }))
        .await;
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    assert_eq!(r["outputs"]["bucket"], "checkout-recibos");
    assert_eq!(r["outputs"]["secret"], "<sensitive>", "a sensitive output is stored as <sensitive>");
    let jobs = w.jobs(&id).await;
    assert_eq!((jobs[0]["status"].as_str(), jobs[0]["attempts"].as_i64()), (Some("completed"), Some(1)));

    // The state is in the account's bucket, under the Resource's key.
    let key = format!("heimdall/{id}.tfstate");
    assert!(s3_keys(&w.bucket, "heimdall/").contains(&key), "{:?}", s3_keys(&w.bucket, ""));
    let state: serde_json::Value = serde_json::from_str(&s3_get(&w.bucket, &key)).unwrap();
    assert!(!state["resources"].as_array().unwrap().is_empty());
    // The log has the plan; no credential reached it.
    let log = w.job_log(jobs[0]["id"].as_str().unwrap()).await;
    assert!(log.contains("terraform_data.bucket"), "{log}");
    assert!(!log.contains("testing"), "the AWS secret reached the job log");

    // Delete really destroys; the Resource stays listed.
    let (status, _) = w.call(Method::DELETE, &format!("/v1/resources/{id}"), None).await;
    assert_eq!(status, 202);
    let r = w.wait_for(&id, &["deleted", "failed"], RUN).await;
    assert_eq!(r["status"], "deleted", "{:?}", w.jobs(&id).await);
    let state: serde_json::Value = serde_json::from_str(&s3_get(&w.bucket, &key)).unwrap();
    assert!(state["resources"].as_array().unwrap().is_empty(), "destroy left resources: {state}");
    let (_, listed) = w.call(Method::GET, "/v1/resources?status=deleted", None).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_run_nothing_and_failures_retry_to_three() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;

    // A module outside the allowlist: failed, not retried, nothing ran.
    let _agent = w.run_agent(&config);
    let elsewhere = w.create("evil", "elsewhere", json!({ "bucket": "evil-bucket" })).await;
    let r = w.wait_for(&elsewhere, &["failed", "provisioned"], RUN).await;
    assert!(r["reason"].as_str().unwrap().starts_with("MODULE_NOT_ALLOWED"), "{r}");
    assert_eq!(w.jobs(&elsewhere).await[0]["attempts"], 1);
    assert!(!s3_keys(&w.bucket, "heimdall/").iter().any(|k| k.contains(&elsewhere)));

    // A failing module: three attempts, then failed with Terraform's error.
    let failing = w.create("failing", "bucket", json!({ "bucket": "failing-bucket", "fail": true })).await;
    let r = w.wait_for(&failing, &["failed", "provisioned"], RUN).await;
    let job = &w.jobs(&failing).await[0];
    assert_eq!((job["status"].as_str(), job["attempts"].as_i64()), (Some("failed"), Some(3)), "{job}");
    assert!(r["reason"].as_str().unwrap().contains("failing on purpose"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checksum_mismatch_refuses_the_job() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let text = std::fs::read_to_string(&config).unwrap();
    let pinned = text.lines().find(|l| l.trim_start().starts_with("sha256")).unwrap().to_owned();
    std::fs::write(&config, text.replace(&pinned, &format!("sha256 = \"{}\"", "0".repeat(64)))).unwrap();
    let _agent = w.run_agent(&config);
    let id = w.create("pinned", "bucket", json!({ "bucket": "pinned-bucket" })).await;
    let r = w.wait_for(&id, &["failed", "provisioned"], RUN).await;
    assert!(r["reason"].as_str().unwrap().starts_with("TERRAFORM_CHECKSUM_MISMATCH"), "{r}");
    assert_eq!(w.jobs(&id).await[0]["attempts"], 1, "not retried");
    assert!(s3_keys(&w.bucket, "heimdall/").is_empty(), "nothing ran");
}

/// The Agent measures the pinned Terraform once and again whenever the
/// file changes: a binary changed under a running Agent, same size and
/// modification time put back, is refused at the next job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_changed_under_a_running_agent_is_refused_at_the_next_job() {
    let w = World::new().await;
    let copy = w.dir.path().join("terraform");
    std::fs::copy(crate::support::terraform(), &copy).unwrap();
    let config = w.enroll_with("agent-1", &copy).await;
    let _agent = w.run_agent(&config);
    let first = w.create("first", "bucket", json!({ "bucket": "first-bucket" })).await;
    assert_eq!(w.wait_for(&first, &["provisioned", "failed"], RUN).await["status"], "provisioned");

    // One byte changed in place (a comment), the modification time put back.
    let modified = std::fs::metadata(&copy).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&copy).unwrap();
    let at = bytes.windows(3).position(|w| w == b"\n# ").unwrap() + 3;
    bytes[at] = if bytes[at] == b'X' { b'Y' } else { b'X' };
    std::fs::write(&copy, &bytes).unwrap();
    std::fs::File::options().write(true).open(&copy).unwrap().set_modified(modified).unwrap();
    let second = w.create("second", "bucket", json!({ "bucket": "second-bucket" })).await;
    let r = w.wait_for(&second, &["failed", "provisioned"], RUN).await;
    assert!(r["reason"].as_str().unwrap().starts_with("TERRAFORM_CHECKSUM_MISMATCH"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_apply_cancelled_by_delete_never_runs_and_revoked_agents_are_refused() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    // No Agent yet: the apply waits in the queue, then a delete cancels it.
    let id = w.create("never", "bucket", json!({ "bucket": "never-bucket" })).await;
    let (status, deleted) = w.call(Method::DELETE, &format!("/v1/resources/{id}"), None).await;
    assert_eq!((status, deleted["status"].as_str()), (200, Some("deleted")));
    let mut agent = w.run_agent(&config);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let jobs = w.jobs(&id).await;
    assert_eq!((jobs[0]["status"].as_str(), jobs[0]["attempts"].as_i64()), (Some("cancelled"), Some(0)));
    assert!(s3_keys(&w.bucket, "heimdall/").is_empty());

    // Revoking the Agent shuts it out at once.
    let (status, _) = w.call(Method::DELETE, "/v1/agents/agent-1", None).await;
    assert_eq!(status, 200);
    let id = w.create("after-revoke", "bucket", json!({ "bucket": "after-revoke" })).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(w.resource(&id).await["status"], "queued", "a revoked Agent ran a job");
    let _ = agent.start_kill();
    let log = std::fs::read_to_string(config.with_extension("log")).unwrap();
    assert!(log.contains("UNAUTHENTICATED") || log.contains("revoked"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_killed_mid_apply_loses_nothing() {
    let w = World::new().await;
    let first = w.enroll("agent-a").await;
    let second = w.enroll("agent-b").await;
    let mut a = w.run_agent(&first);
    let id = w.create("slow", "bucket", json!({ "bucket": "slow-bucket", "sleep_seconds": 12 })).await;

    // Wait until the apply is under way and its lock was reported.
    let deadline = std::time::Instant::now() + RUN;
    loop {
        let jobs = w.jobs(&id).await;
        if jobs[0]["state_lock_id"].is_string() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no lock reported: {jobs:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    a.start_kill().unwrap(); // SIGKILL: no goodbye, the lock stays in the bucket
    let _ = a.wait().await;
    assert!(
        s3_keys(&w.bucket, "heimdall/").iter().any(|k| k.ends_with(".tflock")),
        "the dead apply's lock is there"
    );
    let left = first.with_file_name("work");
    assert!(std::fs::read_dir(&left).unwrap().next().is_some(), "the killed run left its directory");

    let _b = w.run_agent(&second);
    let r = w.wait_for(&id, &["provisioned", "failed"], Duration::from_secs(180)).await;
    let job = &w.jobs(&id).await[0];
    assert_eq!(r["status"], "provisioned", "{job}");
    assert_eq!((job["attempts"].as_i64(), job["agent"].as_str()), (Some(2), Some("agent-b")), "{job}");
    assert!(w.job_log(job["id"].as_str().unwrap()).await.contains("Taking over the state lock"));
    assert!(!s3_keys(&w.bucket, "heimdall/").iter().any(|k| k.ends_with(".tflock")), "the lock was released");
    // Restarted, the killed Agent clears what its dead run left (it may
    // hold a job's credential files) before it runs anything.
    let _a = w.run_agent(&first);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::fs::read_dir(&left).unwrap().next().is_some() {
        assert!(std::time::Instant::now() < deadline, "the dead run's directory is still there");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// An Agent killed with its Terraform 0.2 s, 1 s and 3 s after its apply
/// took the state lock, before any heartbeat could report the lock: each
/// job is finished by another Agent, which learns the lock from the bucket
/// and forces it because a dead attempt of that job made it. A lock that
/// someone else put in its place meanwhile is left alone: the job fails
/// on it, saying whose it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_killed_in_the_first_seconds_of_an_apply_leaves_its_job_to_the_next() {
    let w = World::new().await;
    let rescuer = w.enroll("agent-rescuer").await;
    let mut killed = Vec::new();
    for (n, delay_ms) in [200u64, 1_000, 3_000, 500].into_iter().enumerate() {
        let config = w.enroll(&format!("agent-{n}")).await;
        let mut agent = w.run_agent(&config);
        let id = w
            .create(
                &format!("early-{n}"),
                "bucket",
                json!({ "bucket": format!("early-{n}"), "sleep_seconds": 8 }),
            )
            .await;
        let lock = format!("heimdall/{id}.tfstate.tflock");
        let deadline = std::time::Instant::now() + RUN;
        while !s3_keys(&w.bucket, "heimdall/").contains(&lock) {
            assert!(
                std::time::Instant::now() < deadline,
                "the apply never took its lock: {:?}",
                w.jobs(&id).await
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        kill_with_children(&mut agent).await;
        let job = &w.jobs(&id).await[0];
        assert!(
            job["state_lock_id"].is_null(),
            "the lock was reported; this is not the first seconds: {job}"
        );
        assert!(s3_keys(&w.bucket, "heimdall/").contains(&lock), "the dead apply's lock is in the bucket");
        killed.push((id, lock, delay_ms));
    }
    // The last one's lock is taken by a person before any Agent is back.
    let (foreign_id, foreign_lock, _) = killed.pop().unwrap();
    let created =
        time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap();
    let alice = json!({ "ID": "alices-lock", "Operation": "OperationTypeApply", "Info": "", "Who": "alice@laptop",
                        "Version": "1.9.8", "Created": created, "Path": format!("{}/{foreign_lock}", w.bucket) });
    s3_put(&w.bucket, &foreign_lock, &alice.to_string());

    let _rescuer = w.run_agent(&rescuer);
    let r = w.wait_for(&foreign_id, &["failed", "provisioned"], Duration::from_secs(180)).await;
    let job = &w.jobs(&foreign_id).await[0];
    assert_eq!((r["status"].as_str(), job["attempts"].as_i64()), (Some("failed"), Some(3)), "{job}");
    assert!(r["reason"].as_str().unwrap().contains("locked by alice@laptop (lock alices-lock"), "{r}");
    assert!(w.job_log(job["id"].as_str().unwrap()).await.contains("Leaving the state lock alices-lock"));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&s3_get(&w.bucket, &foreign_lock)).unwrap()["ID"],
        "alices-lock"
    );
    for (id, lock, delay_ms) in killed {
        let r = w.wait_for(&id, &["provisioned", "failed"], Duration::from_secs(180)).await;
        let job = &w.jobs(&id).await[0];
        // The rescuer's first attempt finishes it: it waited on no lock.
        let (status, agent, attempts) =
            (r["status"].as_str(), job["agent"].as_str(), job["attempts"].as_i64());
        assert_eq!(
            (status, agent, attempts),
            (Some("provisioned"), Some("agent-rescuer"), Some(2)),
            "killed at {delay_ms} ms: {job}"
        );
        let log = w.job_log(job["id"].as_str().unwrap()).await;
        assert!(log.contains("Taking over the state lock"), "killed at {delay_ms} ms: {log}");
        assert!(!s3_keys(&w.bucket, "heimdall/").contains(&lock), "the lock was released");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_running_job_finish_then_exits() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let mut agent = w.run_agent(&config);
    let id = w.create("graceful", "bucket", json!({ "bucket": "graceful-bucket", "sleep_seconds": 4 })).await;
    w.wait_for(&id, &["applying"], RUN).await;
    let pid = agent.id().unwrap().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = tokio::time::timeout(Duration::from_secs(60), agent.wait()).await.expect("exits").unwrap();
    assert!(status.success(), "{status}");
    // It finished the job before leaving, and took no other.
    let r = w.resource(&id).await;
    let log = std::fs::read_to_string(config.with_extension("log")).unwrap_or_default();
    assert_eq!(r["status"], "provisioned", "{r}\nagent log:\n{log}");
    let later = w.create("after", "bucket", json!({ "bucket": "after-bucket" })).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(w.resource(&later).await["status"], "queued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_master_key_keeps_the_agent_from_starting() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let store = config.with_file_name("values.db");
    let with_key = |key: &str| {
        let key_file = config.with_file_name(format!("{}.key", &key[..4]));
        std::fs::write(&key_file, key).unwrap();
        let text = std::fs::read_to_string(&config).unwrap();
        let base = text.split("\n[values]").next().unwrap().to_owned();
        std::fs::write(
            &config,
            format!(
                "{base}\n[values]\nsqlite_path = {:?}\nmaster_key_file = {:?}\n",
                store.display().to_string(),
                key_file.display().to_string()
            ),
        )
        .unwrap();
    };
    // First start creates the store under key A.
    with_key(&"a1".repeat(32));
    let mut agent = w.run_agent(&config);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(agent.try_wait().unwrap().is_none(), "the Agent runs with its key");
    agent.start_kill().unwrap();
    let _ = agent.wait().await;
    // Key B does not open it: the Agent refuses to start, saying why, and never shows a key.
    with_key(&"b2".repeat(32));
    let mut agent = w.run_agent(&config);
    let status = tokio::time::timeout(Duration::from_secs(20), agent.wait()).await.expect("exits").unwrap();
    assert!(!status.success());
    let log = std::fs::read_to_string(config.with_extension("log")).unwrap();
    assert!(log.contains("does not open this store"), "{log}");
    assert!(!log.contains(&"b2".repeat(8)) && !log.contains(&"a1".repeat(8)), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_reads_reach_the_access_log_on_sync() {
    use heimdall_agent::values::store::ServedRead;

    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    w.post(&w.api.owner_token, "/v1/secrets", json!({ "name": "db-password" })).await;
    let (_, agents) = w.call(Method::GET, "/v1/agents", None).await;
    let agent_id: heimdall_core::ids::AgentId = agents[0]["id"].as_str().unwrap().parse().unwrap();
    let (_, dev) = w.call(Method::GET, "/v1/environments/dev", None).await;
    let dev_id: heimdall_core::ids::CatalogId = dev["id"].as_str().unwrap().parse().unwrap();

    let key = [7u8; 32];
    let key_file = config.with_file_name("master.key");
    std::fs::write(&key_file, key).unwrap();
    let store_path = config.with_file_name("values.db");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{text}\n[values]\nsqlite_path = {:?}\nmaster_key_file = {:?}\nsync_seconds = 1\n",
            store_path.display().to_string(),
            key_file.display().to_string()
        ),
    )
    .unwrap();

    // Two reads recorded (as the read path does, before serving), in one second.
    let master = heimdall_agent::values::crypto::MasterKey::from_bytes(&key, "test").unwrap();
    let store = heimdall_agent::values::store::sqlite::open(&store_path, &master).await.unwrap();
    let at_micros = time::OffsetDateTime::now_utc().unix_timestamp() * 1_000_000;
    for _ in 0..2 {
        let record = ServedRead {
            accessor: "ana@example.com".into(),
            at_micros,
            secret: "db-password".into(),
            environment: dev_id,
            version: 1,
            source: "10.0.0.7".into(),
            served_by: agent_id,
        };
        store.append_access_record(&record).await.unwrap();
    }
    store.close().await;

    let _agent = w.run_agent(&config);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let log = loop {
        let (_, log) = w.call(Method::GET, "/v1/secrets/db-password/access-log", None).await;
        if log.as_array().is_some_and(|l| !l.is_empty()) {
            break log;
        }
        assert!(std::time::Instant::now() < deadline, "no access records arrived: {log}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let row = &log[0];
    assert_eq!(log.as_array().unwrap().len(), 1, "{log}");
    assert_eq!(
        (
            row["accessor"].as_str(),
            row["environment"].as_str(),
            row["served_by"].as_str(),
            row["from"].as_str(),
            row["reads"].as_u64()
        ),
        (Some("ana@example.com"), Some("dev"), Some("agent-1"), Some("10.0.0.7"), Some(2)),
        "{row}"
    );
    // Later syncs do not count them again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, again) = w.call(Method::GET, "/v1/secrets/db-password/access-log", None).await;
    assert_eq!(again[0]["reads"], 2);
}

/// Terraform sees only what the job needs (PATH, HOME in the job's
/// directory, TF_*, the AWS credentials the state backend uses), never the
/// Agent's master key variable nor anything else of its environment. A
/// wrapper pinned as the Agent's terraform writes down what it was given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_runs_with_an_allowlisted_environment_and_never_the_master_key() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new().await;
    let dump = w.dir.path().join("terraform-env");
    let wrapper = w.dir.path().join("terraform");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nenv >> '{}'\necho '---' >> '{}'\nexec '{}' \"$@\"\n",
            dump.display(),
            dump.display(),
            crate::support::terraform().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = w.enroll_with("agent-1", &wrapper).await;
    let _ = std::fs::remove_file(&dump); // what enroll's `terraform version` saw
    let text = std::fs::read_to_string(&config).unwrap();
    let store = config.with_file_name("values.db");
    std::fs::write(
        &config,
        format!(
            "{text}\n[values]\nsqlite_path = {:?}\nmaster_key_env = \"HEIMDALL_TEST_MASTER_KEY\"\n",
            store.display().to_string()
        ),
    )
    .unwrap();
    let key = "5f".repeat(32);
    let _agent = w.run_agent_with(
        &config,
        &[
            ("HEIMDALL_TEST_MASTER_KEY", &key),
            ("UNRELATED_SECRET", "leak-marker-3f9"),
            ("TF_VAR_input", "{}"),
        ],
    );
    let id = w.create("env-check", "bucket", json!({ "bucket": "env-check" })).await;
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    let seen = std::fs::read_to_string(&dump).unwrap();
    let runs: Vec<&str> = seen.split("---\n").filter(|r| !r.trim().is_empty()).collect();
    assert!(runs.len() >= 2, "init and apply at least: {runs:?}");
    let work = config.with_file_name("work");
    for run in runs {
        let names: Vec<&str> = run.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
        // The account federates: its temporary keys come in a file, and the
        // Agent's own keys stay out.
        for needed in
            ["PATH", "HOME", "TF_CLI_CONFIG_FILE", "TF_IN_AUTOMATION", "AWS_SHARED_CREDENTIALS_FILE"]
        {
            assert!(names.contains(&needed), "{needed} missing from Terraform's environment: {names:?}");
        }
        assert!(!names.contains(&"AWS_ACCESS_KEY_ID"), "the Agent's own keys reached Terraform: {names:?}");
        let home = run.lines().find_map(|l| l.strip_prefix("HOME=")).unwrap();
        assert!(home.starts_with(&work.display().to_string()), "HOME is not the job's directory: {home}");
        for never in ["HEIMDALL_TEST_MASTER_KEY", "UNRELATED_SECRET", "TF_VAR_input", "HEIMDALL_LOG"] {
            assert!(!names.contains(&never), "{never} reached Terraform: {names:?}");
        }
        assert!(!run.contains(&key) && !run.contains("leak-marker-3f9"), "a secret reached Terraform");
    }
}

/// A job runs in the Resource's region, else its account's: modules that
/// declare `heimdall_region` get it, and Terraform's AWS environment
/// (`AWS_REGION`, `AWS_DEFAULT_REGION`) names it, whatever the Agent's own
/// environment says. A module may not set `heimdall_*` itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_run_in_the_resources_region_else_the_accounts() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let module = crate::support::repo().join("tests/fixtures/modules/regional").display().to_string();
    w.post(
        &owner,
        "/v1/schemas",
        json!({ "type": "regional", "input_schema": { "type": "object" },
        "module": { "source": module, "version": "1.0.0" } }),
    )
    .await;
    let dump = w.dir.path().join("terraform-env");
    let wrapper = w.dir.path().join("terraform");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n{{ echo \"AWS_REGION=$AWS_REGION AWS_DEFAULT_REGION=$AWS_DEFAULT_REGION\"; }} >> '{}'\nexec '{}' \"$@\"\n",
            dump.display(),
            crate::support::terraform().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = w.enroll_with("agent-1", &wrapper).await;
    let _ = std::fs::remove_file(&dump); // what enroll's `terraform version` saw
    let _agent = w.run_agent_with(&config, &[("AWS_REGION", "ap-south-1")]);

    let body = json!({ "component": "receipts", "schema": "regional", "environment": "dev",
        "name": "paris", "region": "eu-west-3", "input": { "name": "paris" } });
    let paris = w.post(&owner, "/v1/resources", body).await["id"].as_str().unwrap().to_owned();
    let r = w.wait_for(&paris, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&paris).await);
    assert_eq!(r["outputs"]["region"], "eu-west-3", "{r}");
    let seen = std::fs::read_to_string(&dump).unwrap();
    assert!(seen.lines().all(|l| l == "AWS_REGION=eu-west-3 AWS_DEFAULT_REGION=eu-west-3"), "{seen}");

    std::fs::remove_file(&dump).unwrap();
    let home = w.create("home", "regional", json!({ "name": "home" })).await;
    let r = w.wait_for(&home, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&home).await);
    assert_eq!(r["outputs"]["region"], "us-east-1", "the account's region: {r}");
    let seen = std::fs::read_to_string(&dump).unwrap();
    assert!(seen.lines().all(|l| l == "AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1"), "{seen}");

    // The region is Heimdall's to set: a request naming it is refused, nothing queued.
    let body = json!({ "component": "receipts", "schema": "regional", "environment": "dev",
        "name": "own", "input": { "name": "own", "heimdall_region": "xx" } });
    let (status, refused) = w.call(reqwest::Method::POST, "/v1/resources", Some(body)).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (422, Some("SCHEMA_VIOLATION")), "{refused}");
    let (_, all) = w.call(reqwest::Method::GET, "/v1/resources", None).await;
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
}

/// A schema that names no module runs the module the Agent's operator maps
/// to its type in agent.toml, still under the allowlist; a type with no
/// mapping fails with MODULE_NOT_ALLOWED naming it, and nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_without_a_module_runs_what_the_agent_maps_to_its_type() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    for kind in ["mapped", "unmapped"] {
        w.post(&owner, "/v1/schemas", json!({ "type": kind, "input_schema": { "type": "object" } })).await;
    }
    let config = w.enroll("agent-1").await;
    let text = std::fs::read_to_string(&config).unwrap();
    let module = crate::support::module_dir().display().to_string();
    std::fs::write(
        &config,
        format!("{text}\n[modules.by_type.mapped]\nsource = {module:?}\nversion = \"1.0.0\"\n"),
    )
    .unwrap();
    let _agent = w.run_agent(&config);

    let mapped = w.create("mapped", "mapped", json!({ "bucket": "mapped-bucket" })).await;
    let r = w.wait_for(&mapped, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&mapped).await);
    assert_eq!(r["outputs"]["bucket"], "mapped-bucket", "{r}");

    let unmapped = w.create("unmapped", "unmapped", json!({ "bucket": "unmapped-bucket" })).await;
    let r = w.wait_for(&unmapped, &["provisioned", "failed"], RUN).await;
    let reason = r["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("MODULE_NOT_ALLOWED") && reason.contains("schema unmapped"), "{r}");
    assert_eq!(w.jobs(&unmapped).await[0]["attempts"], 1, "a refusal is not retried");
    assert!(!s3_keys(&w.bucket, "heimdall/").iter().any(|k| k.contains(&unmapped)), "nothing ran");
}

/// A git module runs at its version: Heimdall adds `?ref=<version>` to a
/// source that names no ref (a real git repository here, fetched by
/// Terraform over file://), and a source asking for another ref is refused
/// before anything runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_module_runs_at_its_version_and_no_other_ref() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let repo = w.dir.path().join("modules.git");
    let git = crate::support::git;
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::copy(crate::support::module_dir().join("main.tf"), repo.join("main.tf")).unwrap();
    git(&["init", "-q"], &repo);
    git(&["add", "main.tf"], &repo);
    git(&["commit", "-q", "-m", "bucket"], &repo);
    git(&["tag", "v1.0.0"], &repo);
    let source = format!("git::file://{}", repo.display());
    for (kind, source) in [("pinned", source.clone()), ("moving", format!("{source}?ref=main"))] {
        w.post(
            &owner,
            "/v1/schemas",
            json!({ "type": kind, "input_schema": { "type": "object" },
            "module": { "source": source, "version": "v1.0.0" } }),
        )
        .await;
    }
    let config = w.enroll("agent-1").await;
    let mut table: toml::Table = toml::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let allowed = table["modules"]["allowed_sources"].as_array_mut().unwrap();
    allowed.push(toml::Value::String(format!("git::file://{}*", w.dir.path().display())));
    std::fs::write(&config, toml::to_string(&table).unwrap()).unwrap();
    let _agent = w.run_agent(&config);

    let pinned = w.create("pinned", "pinned", json!({ "bucket": "pinned-bucket" })).await;
    let r = w.wait_for(&pinned, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&pinned).await);
    let log = w.job_log(w.jobs(&pinned).await[0]["id"].as_str().unwrap()).await;
    assert!(log.contains("ref=v1.0.0"), "Terraform fetched the version's ref: {log}");

    let moving = w.create("moving", "moving", json!({ "bucket": "moving-bucket" })).await;
    let r = w.wait_for(&moving, &["provisioned", "failed"], RUN).await;
    let reason = r["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("MODULE_NOT_ALLOWED") && reason.contains("another ref"), "{r}");
}
