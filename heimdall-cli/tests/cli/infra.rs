//! Infrastructure Manager: schemas, cloud accounts, Resources, jobs and `--wait`.

use std::path::Path;
use std::time::Duration;

use heimdall_api::testing::TestApi;
use heimdall_core::ids::{JobId, LeaseId};
use heimdall_core::ports::{JobOutcome, JobQueue};
use heimdall_wire::Job;
use serde_json::json;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::support::{cells, json_of, write_file, Heimdall, Run, Transcript, BIN};

/// A JSON Schema with every kind of rule the refusals name.
const BUCKET_SCHEMA: &str = r#"{
  "type": "object",
  "required": ["bucket"],
  "properties": {
    "bucket": { "type": "string", "pattern": "^[a-z0-9][a-z0-9-]{2,62}$" },
    "tier": { "enum": ["standard", "archive"] },
    "versioning": { "type": "boolean" },
    "tags": { "type": "object", "additionalProperties": { "type": "string" } }
  },
  "additionalProperties": false
}
"#;

const DATABASE_SCHEMA: &str = r#"{
  "type": "object",
  "required": ["engine"],
  "properties": { "engine": { "enum": ["postgres", "mysql"] }, "size_gb": { "type": "integer", "minimum": 1 } },
  "additionalProperties": false
}
"#;

async fn id_of(h: &Heimdall, args: &[&str]) -> String {
    let value = json_of(h, args).await;
    let id = value.get("resource").unwrap_or(&value)["id"].as_str().expect("an id");
    id.to_owned()
}

/// Waits until a job is queued, then claims it as `agent-1`, like an Agent.
async fn claim(api: &TestApi) -> (Job, LeaseId) {
    let org = api.bootstrapped.organization.id;
    for _ in 0..200 {
        let lease = LeaseId::from_uuid(Uuid::new_v4());
        if let Some(job) =
            api.store.claim(org, "agent-1", None, lease, OffsetDateTime::now_utc()).await.expect("claim")
        {
            return (job, lease);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no job was queued within 10s");
}

/// Plays the Agent for the next plan job: finishes it with a plan (jobs
/// claimed on the way go back to the queue) and answers its SHA-256.
async fn run_plan_job(api: &TestApi) -> String {
    let mut others = Vec::new();
    let (job, lease) = loop {
        let (job, lease) = claim(api).await;
        if job.operation == heimdall_core::infra::JobOperation::Plan {
            break (job, lease);
        }
        others.push((job.id, lease));
    };
    let summary = heimdall_core::import::PlanSummary {
        add: 1,
        changes: vec!["module.resource.terraform_data.database create".into()],
        ..Default::default()
    };
    let sha256 = "5e1f".repeat(16);
    let outputs =
        heimdall_core::plan::report(&heimdall_core::plan::RevisionPlan { sha256: sha256.clone(), summary });
    finish(api, job.id, lease, JobOutcome::Completed { outputs }).await;
    for (id, lease) in others {
        finish(api, id, lease, JobOutcome::Failed { reason: "put back".into(), retryable: true }).await;
    }
    sha256
}

async fn finish(api: &TestApi, job: JobId, lease: LeaseId, outcome: JobOutcome) {
    api.store.finish(job, lease, outcome, OffsetDateTime::now_utc()).await.expect("finish");
}

/// domain payments → system checkout → component api; environments dev,
/// prod and staging; cloud account aws-dev linked for dev only.
async fn infra_world(t: &mut Transcript, h: &Heimdall, tmp: &Path) {
    t.run(h, &["domain", "create", "payments"]).await;
    t.run(h, &["system", "create", "checkout", "--domain", "payments"]).await;
    t.run(h, &["component", "create", "api", "--system", "checkout"]).await;
    for env in ["dev", "prod", "staging"] {
        t.run(h, &["environment", "create", env]).await;
    }
    let schema = write_file(tmp, "bucket.schema.json", BUCKET_SCHEMA);
    let defaults = write_file(tmp, "bucket.defaults.json", r#"{ "dev": { "tier": "standard" } }"#);
    let created = t
        .run(
            h,
            &[
                "schema",
                "create",
                "--type",
                "s3-bucket",
                "--input-schema",
                &schema,
                "--defaults",
                &defaults,
                "--module-source",
                "git::https://git.example.com/modules/s3-bucket",
                "--module-version",
                "v1.2.0",
            ],
        )
        .await;
    assert_eq!(created.code, 0, "{created:?}");
    let account = [
        "cloud-account",
        "create",
        "aws-dev",
        "--provider",
        "aws",
        "--region",
        "eu-west-1",
        "--state-bucket",
        "acme-tf-state",
        "--auth",
        "oidc",
        "--role-arn",
        "arn:aws:iam::123456789012:role/heimdall",
    ];
    assert_eq!(t.run(h, &account).await.code, 0);
    let link = ["cloud-account", "link", "aws-dev", "--scope", "organization", "--environment", "dev"];
    assert_eq!(t.run(h, &link).await.code, 0);
}

/// The API on SQLite with [`infra_world`], and the CLI pointed at it.
async fn infra_cli() -> (TestApi, tempfile::TempDir, Heimdall) {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    infra_world(&mut Transcript::default(), &h, tmp.path()).await;
    (api, tmp, h)
}

/// `resource <verb>` of a Resource `name` of component api in dev, from
/// the s3-bucket schema, with `input`.
fn new_resource_args(verb: &str, name: &str, input: &str) -> Vec<String> {
    let args = ["resource", verb, "--component", "api", "--schema", "s3-bucket", "--environment", "dev"];
    args.iter()
        .map(|a| (*a).to_owned())
        .chain(["--name", name, "--input", input].map(str::to_owned))
        .collect()
}

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infra_tour_in_tables() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let mut t = Transcript::default();

    infra_world(&mut t, &h, tmp.path()).await;
    t.run(&h, &["schema", "list"]).await;
    t.run(&h, &["schema", "show", "s3-bucket"]).await;
    t.run(&h, &["cloud-account", "list"]).await;
    t.run(&h, &["cloud-account", "show", "aws-dev"]).await;

    // The documented transcript, with ids as in the seed.
    let component = id_of(&h, &["component", "show", "api"]).await;
    let schema = id_of(&h, &["schema", "show", "s3-bucket"]).await;
    let dev = id_of(&h, &["environment", "show", "dev"]).await;
    let create = [
        "resource",
        "create",
        "--component",
        &component,
        "--schema",
        &schema,
        "--environment",
        &dev,
        "--name",
        "recibos",
        "--input",
        r#"{"bucket":"checkout-recibos"}"#,
    ];
    let created = t.run(&h, &create).await;
    let line =
        created.stdout.strip_prefix("✓ Resource created: recibos (").and_then(|l| l.strip_suffix(")\n"));
    let resource: Uuid = line.and_then(|id| id.parse().ok()).unwrap_or_else(|| panic!("{created:?}"));
    let resource = resource.to_string();
    let jobs = t.run(&h, &["job", "list", "--component", &component, "--resource", &resource]).await;
    assert!(jobs.stdout.starts_with("JOB ID  "), "{}", jobs.stdout);
    let table = cells(&jobs.stdout);
    assert_eq!(table[0], ["JOB ID", "OPERATION", "STATUS", "ATTEMPTS", "REASON", "QUEUED AT"]);
    assert_eq!(table.len(), 2, "{}", jobs.stdout);
    assert_eq!(table[1][1..5], ["apply", "queued", "0/3", "-"], "{}", jobs.stdout);

    // Refusals: every field and rule, never a value; nothing stored.
    let marker = "LEAKCHECK";
    let bad_input = json!({
        "bucket": format!("Not_A_Bucket_{marker}"),
        "tier": format!("platinum-{marker}"),
        "versioning": format!("yes-{marker}"),
        "tags": { "team": 42 },
        "owner": format!("{marker}@example.com"),
    })
    .to_string();
    let refused = t
        .run(
            &h,
            &[
                "resource",
                "create",
                "--component",
                "api",
                "--schema",
                "s3-bucket",
                "--environment",
                "dev",
                "--name",
                "leaky",
                "--input",
                &bad_input,
            ],
        )
        .await;
    assert_eq!(refused.code, 7, "{refused:?}");
    assert!(refused.stderr.contains("SCHEMA_VIOLATION"), "{refused:?}");
    for (path, rule) in
        [("/bucket", "pattern"), ("/tier", "enum"), ("/versioning", "type"), ("/tags/team", "type")]
    {
        assert!(refused.stderr.contains(&format!("  {path}: {rule}")), "{path} {rule}: {}", refused.stderr);
    }
    assert!(!refused.stdout.contains(marker) && !refused.stderr.contains(marker), "{refused:?}");
    let missing = [
        "resource",
        "create",
        "--component",
        "api",
        "--schema",
        "s3-bucket",
        "--environment",
        "dev",
        "--name",
        "leaky",
        "--input",
        "{}",
    ];
    assert_eq!(t.run(&h, &missing).await.code, 7);
    let unlinked = [
        "resource",
        "create",
        "--component",
        "api",
        "--schema",
        "s3-bucket",
        "--environment",
        "staging",
        "--name",
        "nowhere",
        "--input",
        r#"{"bucket":"nowhere-1"}"#,
    ];
    let no_account = t.run(&h, &unlinked).await;
    assert_eq!(no_account.code, 7);
    assert!(no_account.stderr.contains("NO_CLOUD_ACCOUNT"), "{no_account:?}");

    // An Agent claims the job, writes its log, and finishes.
    let (job, lease) = claim(&api).await;
    assert_eq!(job.resource_id.to_string(), resource);
    api.store
        .append_log(
            job.id,
            lease,
            "Terraform will perform the following actions:\n  + terraform_data.bucket\n",
        )
        .await
        .expect("append log");
    let running = t.run(&h, &["job", "list", "--resource", "recibos"]).await;
    assert_eq!(&cells(&running.stdout)[1][1..4], ["apply", "running", "1/3"], "{}", running.stdout);
    t.run(&h, &["resource", "list"]).await;
    let outputs = json!({ "arn": "arn:aws:s3:::checkout-recibos", "password": "<sensitive>" });
    finish(&api, job.id, lease, JobOutcome::Completed { outputs }).await;
    let job_id = job.id.to_string();
    t.run(&h, &["job", "show", &job_id]).await;
    t.run(&h, &["job", "log", &job_id]).await;
    t.run(
        &h,
        &["resource", "update", "recibos", "--input", r#"{"bucket":"checkout-recibos","versioning":true}"#],
    )
    .await;
    t.run(&h, &["resource", "show", "recibos"]).await;
    t.run(&h, &["job", "list", "--resource", "recibos"]).await;

    // A failure: the reason is cut in the table, whole in `job show`; retry queues again.
    let (job, lease) = claim(&api).await;
    let reason = "Error: creating S3 Bucket (checkout-recibos): operation error S3: CreateBucket, \
                  https response error StatusCode: 409, BucketAlreadyExists";
    finish(&api, job.id, lease, JobOutcome::Failed { reason: reason.into(), retryable: false }).await;
    t.run(&h, &["job", "list", "--resource", "recibos"]).await;
    t.run(&h, &["resource", "retry", "recibos"]).await;
    t.run(&h, &["resource", "list", "--status", "queued"]).await;
    // Every Resource's jobs: whose each one is, the newest first.
    let every = t.run(&h, &["job", "list", "--component", "api", "--newest-first"]).await;
    let table = cells(&every.stdout);
    assert_eq!(table[0][..3], ["JOB ID", "RESOURCE", "OPERATION"], "{}", every.stdout);
    assert_eq!(
        table[1][1..4],
        ["recibos", "apply", "queued"],
        "the retry, queued last, first: {}",
        every.stdout
    );

    // A Resource that never ran: deleted at once, its queued apply cancelled.
    let tmp_bucket = [
        "resource",
        "create",
        "--component",
        "api",
        "--schema",
        "s3-bucket",
        "--environment",
        "dev",
        "--name",
        "scratch",
        "--input",
        r#"{"bucket":"scratch-1"}"#,
    ];
    t.run(&h, &tmp_bucket).await;
    // On a terminal (`script` gives it one) the delete asks first, and "n"
    // changes nothing; a script (no terminal) is never asked.
    let asked = on_a_terminal(&h, "resource delete scratch", "n\n").await;
    assert!(asked.contains("Destroy Resource scratch ("), "{asked}");
    assert!(asked.contains("not deleted (nothing was changed)"), "{asked}");
    assert_eq!(json_of(&h, &["resource", "show", "scratch"]).await["resource"]["status"], "queued");
    let deleted = t.run(&h, &["resource", "delete", "scratch"]).await;
    assert!(deleted.stdout.starts_with("✓ Resource deleted: scratch ("), "{deleted:?}");
    let scratch = json_of(&h, &["resource", "list", "--status", "deleted"]).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let cancelled = t.run(&h, &["job", "list", "--resource", &scratch]).await;
    assert_eq!(cells(&cancelled.stdout)[1][1..4], ["apply", "cancelled", "0/3"], "{}", cancelled.stdout);
    t.run(&h, &["resource", "list", "--environment", "dev"]).await;

    // Approval: never the requester's own; another admin approves the revision they read.
    let db_schema = write_file(tmp.path(), "db.schema.json", DATABASE_SCHEMA);
    let approval_schema =
        ["schema", "create", "--type", "database", "--input-schema", "-", "--requires-approval"];
    let run =
        h.run_with_stdin(&approval_schema, Some(&std::fs::read_to_string(&db_schema).expect("read"))).await;
    t.record(&[&approval_schema[..], &["<", "db.schema.json"]].concat(), &run);
    assert_eq!(run.code, 0, "{run:?}");
    let added = json_of(&h, &["member", "add", "ana@example.com", "--role", "admin"]).await;
    let ana = Heimdall::with_env(&api, added["token"].as_str().expect("token"), tmp.path());
    let ledger = [
        "resource",
        "create",
        "--component",
        "api",
        "--schema",
        "database",
        "--environment",
        "dev",
        "--name",
        "ledger",
        "--input",
        r#"{"engine":"postgres"}"#,
    ];
    t.run(&h, &ledger).await;
    let own = t.run(&h, &["resource", "approve", "ledger", "--revision", "1"]).await;
    assert_eq!(own.code, 4, "{own:?}");
    assert!(own.stderr.contains("SELF_APPROVAL"), "{own:?}");
    let stale = t.run(&ana, &["resource", "approve", "ledger", "--revision", "2"]).await;
    assert_eq!(stale.code, 6, "{stale:?}");
    // The approver reads the plan, and approves exactly that plan.
    let sha = run_plan_job(&api).await;
    let shown = t.run(&ana, &["resource", "plan", "ledger"]).await;
    assert!(shown.stdout.contains(&format!("--plan {}", &sha[..12])), "{shown:?}");
    let unnamed = t.run(&ana, &["resource", "approve", "ledger", "--revision", "1"]).await;
    assert_eq!(unnamed.code, 6, "{unnamed:?}");
    assert!(unnamed.stderr.contains("STALE_PLAN"), "{unnamed:?}");
    let approved = t
        .run(
            &ana,
            &[
                "resource",
                "approve",
                "ledger",
                "--revision",
                "1",
                "--plan",
                &sha[..12],
                "--reason",
                "sized right",
            ],
        )
        .await;
    assert_eq!(approved.stdout, "✓ Resource approved: ledger, revision 1 (queued)\n", "{approved:?}");
    t.run(&h, &["resource", "update", "ledger", "--input", r#"{"engine":"postgres","size_gb":20}"#]).await;
    t.run(&ana, &["resource", "refuse", "ledger", "--revision", "2", "--reason", "too big for dev"]).await;
    t.run(&h, &["resource", "show", "ledger"]).await;

    // Day two: version 2 of the schema (a new module version, no approval);
    // the Resource moves to it with a new revision, never back without consent.
    let version_2 = ["schema", "create", "--type", "database", "--input-schema", "-"];
    let run = h.run_with_stdin(&version_2, Some(&std::fs::read_to_string(&db_schema).expect("read"))).await;
    t.record(&[&version_2[..], &["<", "db.schema.json"]].concat(), &run);
    assert_eq!(run.code, 0, "{run:?}");
    t.run(&h, &["resource", "list", "--outdated"]).await;
    t.run(&h, &["schema", "show", "database"]).await;
    let upgraded = t.run(&h, &["resource", "upgrade", "ledger", "--schema-version", "2"]).await;
    assert_eq!(
        upgraded.stdout, "✓ Resource upgraded: ledger to schema version 2, revision 3 (queued)\n",
        "{upgraded:?}"
    );
    let back = t.run(&h, &["resource", "upgrade", "ledger", "--to-version", "1"]).await;
    assert!(back.code != 0 && back.stderr.contains("--allow-downgrade"), "{back:?}");
    t.run(&h, &["resource", "show", "ledger"]).await;
    let outdated = t.run(&h, &["resource", "list", "--type", "database", "--outdated"]).await;
    assert!(!outdated.stdout.contains("ledger"), "on the newest version now: {outdated:?}");

    // Usage errors, before any request.
    let missing_file = tmp.path().join("nope.json");
    let missing_file = missing_file.to_str().expect("utf-8");
    let broken = write_file(tmp.path(), "broken.json", "{\"type\": \"object\",,}");
    for args in [
        &["schema", "create", "--type", "x", "--input-schema", missing_file][..],
        &["schema", "create", "--type", "x", "--input-schema", &broken],
        &["schema", "create", "--type", "x", "--input-schema", &db_schema, "--defaults", &broken],
        &[
            "cloud-account",
            "create",
            "gcp-dev",
            "--provider",
            "gcp",
            "--region",
            "europe-west1",
            "--state-bucket",
            "acme-state",
            "--auth",
            "static",
            "--role-arn",
            "arn:x",
        ],
        &["resource", "update", "recibos", "--input", "{\"bucket\": "],
    ] {
        let run = t.run(&h, args).await;
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
    }
    // A member reads Resources and jobs, but not cloud accounts.
    let bob = json_of(&h, &["member", "add", "bob@example.com", "--role", "member"]).await;
    let bob_token = bob["token"].as_str().expect("token").to_owned();
    let bob_dir = tmp.path().join("bob");
    let bob = Heimdall::with_env(&api, &bob_token, &bob_dir);
    assert_eq!(t.run(&bob, &["cloud-account", "list"]).await.code, 4);
    assert_eq!(bob.run(&["job", "list"]).await.code, 0);

    // Day two: the account changes in place; where its Resources keep
    // state, it stays; while they do, neither its link nor it goes.
    t.run(
        &h,
        &["cloud-account", "update", "aws-dev", "--region", "eu-central-1", "--drift-check-every", "24h"],
    )
    .await;
    assert_eq!(
        t.run(&h, &["cloud-account", "update", "aws-dev", "--state-bucket", "other-tfstate"]).await.code,
        6
    );
    let unlink = ["cloud-account", "unlink", "aws-dev", "--scope", "organization", "--environment", "dev"];
    assert_eq!(t.run(&h, &unlink).await.code, 6);
    assert_eq!(t.run(&h, &["cloud-account", "delete", "aws-dev"]).await.code, 6);
    assert_eq!(t.run(&h, &["cloud-account", "update", "aws-dev"]).await.code, 2);
    // A schema version retired: deprecated (its Resources go on), and kept
    // while Resources use it.
    t.run(&h, &["schema", "deprecate", "s3-bucket", "--version", "1"]).await;
    t.run(&h, &["schema", "list", "--type", "s3-bucket"]).await;
    assert_eq!(t.run(&h, &["schema", "delete", "s3-bucket", "--version", "1"]).await.code, 6);
    assert_eq!(t.run(&h, &["schema", "delete", "s3-bucket"]).await.code, 2);
    t.run(&h, &["schema", "undeprecate", "s3-bucket", "--version", "1"]).await;

    let printed: Vec<&str> = t.0.lines().filter(|l| !l.starts_with("$ heimdall ")).collect();
    assert!(!printed.join("\n").contains(marker), "an input value leaked into the output");
    crate::snapshot("infra_tour_table", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infra_tour_in_json() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    let mut setup = Transcript::default();
    infra_world(&mut setup, &h, tmp.path()).await;
    let mut t = Transcript::default();
    fn json<'a>(args: &[&'a str]) -> Vec<&'a str> {
        [args, &["--output", "json"][..]].concat()
    }

    t.run(&h, &json(&["schema", "list"])).await;
    t.run(&h, &json(&["schema", "show", "s3-bucket"])).await;
    t.run(&h, &json(&["cloud-account", "list"])).await;
    t.run(&h, &json(&["cloud-account", "show", "aws-dev"])).await;
    let create = [
        "resource",
        "create",
        "--component",
        "api",
        "--schema",
        "s3-bucket",
        "--environment",
        "dev",
        "--name",
        "recibos",
        "--input",
        r#"{"bucket":"checkout-recibos"}"#,
    ];
    t.run(&h, &json(&create)).await;
    t.run(&h, &json(&["resource", "list"])).await;
    t.run(&h, &json(&["resource", "show", "recibos"])).await;
    let jobs = t.run(&h, &json(&["job", "list", "--resource", "recibos"])).await;
    let job_id = serde_json::from_str::<serde_json::Value>(&jobs.stdout).expect("json")[0]["id"]
        .as_str()
        .expect("job id")
        .to_owned();
    t.run(&h, &json(&["job", "show", &job_id])).await;
    t.run(&h, &json(&["job", "log", &job_id])).await;
    t.run(&h, &json(&["resource", "update", "recibos", "--input", r#"{"bucket":"checkout-recibos-2"}"#]))
        .await;
    let refused =
        t.run(&h, &json(&["resource", "update", "recibos", "--input", r#"{"bucket":"Nope!"}"#])).await;
    assert_eq!(refused.code, 7);
    let error: serde_json::Value = serde_json::from_str(&refused.stderr).expect("error as JSON");
    assert_eq!(error["error"]["code"], "SCHEMA_VIOLATION");
    assert_eq!(error["error"]["fields"], json!([{ "path": "/bucket", "rule": "pattern" }]));
    t.run(&h, &json(&["resource", "delete", "recibos"])).await;
    t.run(&h, &json(&["job", "list", "--component", "api"])).await;

    // Every successful stdout is one JSON document; lists are arrays.
    for chunk in t.0.split("\n\n").filter(|c| c.contains("[exit 0]")) {
        let body: Vec<&str> =
            chunk.lines().skip(1).filter(|l| !l.starts_with("[exit") && !l.starts_with("stderr|")).collect();
        let value: serde_json::Value =
            serde_json::from_str(&body.join("\n")).unwrap_or_else(|e| panic!("{e}: {chunk}"));
        if chunk.lines().next().is_some_and(|l| l.contains(" list")) {
            assert!(value.is_array(), "{chunk}");
        }
    }
    crate::snapshot("infra_tour_json", &t.0, &[(&tmp.path().display().to_string(), "[TMP]")]);
}

/// `--wait` polls until the Agent (here: the test, through the store) ends the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_follows_the_job_to_its_end() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall::with_env(&api, &api.owner_token, tmp.path());
    infra_world(&mut Transcript::default(), &h, tmp.path()).await;
    let create = |name: &'static str, bucket: &'static str, extra: &[&'static str]| -> Vec<String> {
        let input = format!(r#"{{"bucket":"{bucket}"}}"#);
        [
            "resource",
            "create",
            "--component",
            "api",
            "--schema",
            "s3-bucket",
            "--environment",
            "dev",
            "--name",
            name,
            "--input",
            &input,
        ]
        .iter()
        .chain(extra)
        .map(|s| (*s).to_owned())
        .collect()
    };
    let spawn = |args: Vec<String>| h.command(&args.iter().map(String::as_str).collect::<Vec<_>>()).spawn();
    let done = |child: tokio::process::Child| async move {
        let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("finished within 60s")
            .expect("output");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8(output.stdout).expect("utf-8"),
            stderr: String::from_utf8(output.stderr).expect("utf-8"),
        }
    };

    // Provisioned: the created line, then the final status.
    let child = spawn(create("waited", "waited-1", &["--wait", "--timeout", "30s"])).expect("spawn");
    let (job, lease) = claim(&api).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    finish(&api, job.id, lease, JobOutcome::Completed { outputs: json!({ "arn": "arn:x" }) }).await;
    let run = done(child).await;
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("✓ Resource created: waited ("), "{run:?}");
    assert_eq!(lines[1..], ["✓ Resource waited is provisioned (revision 1)"], "{run:?}");
    assert_eq!(run.stderr, "", "no progress without a terminal");

    // Failed, in JSON mode: only the final Resource on stdout, FAILED on stderr, exit 1.
    let child = spawn(create("doomed", "doomed-1", &["--wait", "--output", "json"])).expect("spawn");
    let (job, lease) = claim(&api).await;
    let failure = JobOutcome::Failed { reason: "apply failed: AccessDenied".into(), retryable: false };
    finish(&api, job.id, lease, failure).await;
    let run = done(child).await;
    assert_eq!(run.code, 1, "{run:?}");
    let resource: serde_json::Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    assert_eq!((resource["name"].as_str(), resource["status"].as_str()), (Some("doomed"), Some("failed")));
    let error: serde_json::Value = serde_json::from_str(&run.stderr).expect("error as JSON");
    assert_eq!(error["error"]["message"], "FAILED: apply failed: AccessDenied");

    // Nobody claims: the wait gives up after --timeout, exit 1; the job stays queued.
    let started = std::time::Instant::now();
    let run = h.run(&["resource", "retry", "doomed", "--wait", "--timeout", "1s"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.starts_with("✓ Resource retried: doomed, revision 1 (queued)"), "{run:?}");
    assert!(
        run.stderr.contains("timed out after 1s waiting for Resource doomed: it is still queued"),
        "{run:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let (job, lease) = claim(&api).await;
    finish(&api, job.id, lease, JobOutcome::Completed { outputs: json!({}) }).await;

    // Delete of a Resource that ran: a destroy job, waited for.
    let child = h.command(&["resource", "delete", "waited", "--wait"]).spawn().expect("spawn");
    let (job, lease) = claim(&api).await;
    assert_eq!(job.operation.as_str(), "destroy");
    finish(&api, job.id, lease, JobOutcome::Completed { outputs: json!({}) }).await;
    let run = done(child).await;
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("✓ Resource deletion queued: waited ("), "{run:?}");
    assert_eq!(lines[1..], ["✓ Resource waited is deleted"], "{run:?}");

    // Pending approval ends a wait at once.
    let mut approval = Transcript::default();
    let schema = write_file(tmp.path(), "db.json", DATABASE_SCHEMA);
    let args = ["schema", "create", "--type", "database", "--input-schema", &schema, "--requires-approval"];
    assert_eq!(approval.run(&h, &args).await.code, 0);
    let run = h
        .run(&[
            "resource",
            "create",
            "--component",
            "api",
            "--schema",
            "database",
            "--environment",
            "dev",
            "--name",
            "ledger",
            "--input",
            r#"{"engine":"mysql"}"#,
            "--wait",
        ])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.ends_with(
            "✓ Resource ledger is pending_approval: revision 1 waits for another person's approval\n"
        ),
        "{run:?}"
    );
}

/// `terraform export` writes the package of the last apply into a new
/// directory; before an apply it is CONFLICT, and it never writes over
/// files already there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_export_writes_the_last_applied_root_module() {
    let (api, tmp, h) = infra_cli().await;
    let create = new_resource_args("create", "exported", r#"{"bucket":"exported-1"}"#);
    assert_eq!(h.run(&as_strs(&create)).await.code, 0);
    let out = tmp.path().join("package");
    let out_arg = out.display().to_string();
    let early = h.run(&["terraform", "export", "exported", "--out", &out_arg]).await;
    assert_eq!(early.code, 6, "CONFLICT before an apply: {early:?}");
    assert!(!out.exists(), "nothing written");

    let (job, lease) = claim(&api).await;
    finish(&api, job.id, lease, JobOutcome::Completed { outputs: json!({}) }).await;
    let run = h.run(&["terraform", "export", "exported", "--out", &out_arg]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("✓ Exported "), "{run:?}");
    let backend = std::fs::read_to_string(out.join("backend.tf")).expect("backend.tf");
    assert!(
        backend.contains(&format!("key          = \"heimdall/{}.tfstate\"", job.resource_id)),
        "{backend}"
    );
    assert!(backend.contains("bucket       = \"acme-tf-state\""), "{backend}");
    let main = std::fs::read_to_string(out.join("main.tf")).expect("main.tf");
    assert!(
        main.contains("source = \"git::https://git.example.com/modules/s3-bucket?ref=v1.2.0\""),
        "{main}"
    );
    for name in ["terraform.tfvars.json", "README.md"] {
        assert!(out.join(name).is_file(), "{name}");
    }

    let again = h.run(&["terraform", "export", "exported", "--out", &out_arg]).await;
    assert_eq!(again.code, 2, "a directory with files is refused: {again:?}");
    assert_eq!(std::fs::read_to_string(out.join("backend.tf")).expect("still there"), backend);
}

/// `job log --follow` prints the log as the Agent reports it, each part
/// once, and exits with the job: 0 completed, 1 failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_log_follow_streams_until_the_job_ends() {
    let (api, _tmp, h) = infra_cli().await;
    for (name, outcome, code) in [("followed", true, 0), ("followed-fail", false, 1)] {
        let input = format!(r#"{{"bucket":"{name}"}}"#);
        let create = new_resource_args("create", name, &input);
        assert_eq!(h.run(&as_strs(&create)).await.code, 0);
        let (job, lease) = claim(&api).await;
        let id = job.id.to_string();
        let child = h.command(&["job", "log", &id, "--follow"]).spawn().expect("spawn");
        api.store.append_log(job.id, lease, "Plan: 1 to add\n").await.expect("log");
        tokio::time::sleep(Duration::from_millis(1200)).await;
        api.store.append_log(job.id, lease, "Apply complete!\n").await.expect("log");
        let result = if outcome {
            JobOutcome::Completed { outputs: json!({}) }
        } else {
            JobOutcome::Failed { reason: "boom".into(), retryable: false }
        };
        finish(&api, job.id, lease, result).await;
        let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
            .await
            .expect("follow ends with the job")
            .expect("output");
        let stdout = String::from_utf8(output.stdout).expect("utf-8");
        assert_eq!(stdout, "Plan: 1 to add\nApply complete!\n", "each part once");
        assert_eq!(output.status.code(), Some(code), "{}", String::from_utf8_lossy(&output.stderr));
    }
}

/// `resource import` checks its `--import ADDRESS=ID` flags before asking.
/// `heimdall apply --prune` of a schema type a Resource is on is refused
/// before any version is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruning_a_schema_in_use_deletes_no_version() {
    let (_api, tmp, h) = infra_cli().await;
    // The Resource is on version 1; version 2, newer, is on nothing.
    let create = new_resource_args("create", "kept", r#"{"bucket":"kept-1"}"#);
    let made = h.run(&as_strs(&create)).await;
    assert_eq!(made.code, 0, "{made:?}");
    let schema = write_file(tmp.path(), "v2.schema.json", r#"{"type":"object"}"#);
    let v2 = ["schema", "create", "--type", "s3-bucket", "--input-schema", &schema];
    assert_eq!(h.run(&v2).await.code, 0);
    let file = write_file(tmp.path(), "no-schemas.yaml", "schemas: []\n");
    let refused = h.run(&["apply", "-f", &file, "--prune", "--auto-approve"]).await;
    assert_eq!(refused.code, 6, "NOT_EMPTY: {refused:?}");
    assert!(refused.stderr.contains("1 Resource(s) use it; no version was deleted"), "{refused:?}");
    let versions = json_of(&h, &["schema", "list", "--type", "s3-bucket"]).await;
    assert_eq!(versions.as_array().map(Vec::len), Some(2), "both versions stay: {versions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_import_flags_are_checked_before_any_request() {
    let (_api, _tmp, h) = infra_cli().await;
    let base = new_resource_args("import", "legacy", r#"{"bucket":"legacy-logs"}"#);
    let with = |import: &str| {
        base.iter().cloned().chain(["--import".to_owned(), import.to_owned()]).collect::<Vec<_>>()
    };
    for bad in ["no-equals", "aws_s3_bucket=legacy", "aws_s3_bucket.this="] {
        let run = h.run(&as_strs(&with(bad))).await;
        assert_eq!(run.code, 2, "{bad}: {run:?}");
    }
    assert_eq!(h.run(&as_strs(&base)).await.code, 2, "--import is required");
    let run = h.run(&as_strs(&with("aws_s3_bucket.this=legacy-logs"))).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("✓ Resource import requested: legacy ("), "{run:?}");
    let jobs = json_of(&h, &["job", "list", "--resource", "legacy"]).await;
    assert_eq!(jobs[0]["operation"], "import", "{jobs}");
}

/// `heimdall ARGS` run under `script`, so that its stdin is a terminal,
/// with `input` typed in; what the terminal showed.
async fn on_a_terminal(h: &Heimdall, args: &str, input: &str) -> String {
    use tokio::io::AsyncWriteExt;
    let mut cmd = tokio::process::Command::new("script");
    cmd.args(["-qec", &format!("{BIN} {args}"), "/dev/null"])
        .env("HEIMDALL_CONFIG_DIR", &h.config_dir)
        .env_remove("HEIMDALL_PROFILE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(url) = &h.url {
        cmd.env("HEIMDALL_API_URL", url);
    }
    if let Some(token) = &h.token {
        cmd.env("HEIMDALL_TOKEN", token);
    }
    let mut child = cmd.spawn().expect("script (util-linux) runs heimdall on a terminal");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).await.expect("type the answer");
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("done within 60 s")
        .expect("its output");
    String::from_utf8_lossy(&output.stdout).into_owned()
}
