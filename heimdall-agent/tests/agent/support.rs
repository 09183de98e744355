//! A world for Agent tests: API, moto bucket, catalog, schema, account,
//! and helpers to enroll and run Agents.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use heimdall_api::testing::TestApi;
use serde_json::{json, Value};
use tokio::process::{Child, Command};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

pub fn terraform() -> PathBuf {
    let tf = repo().join(".venv/bin/terraform");
    assert!(
        tf.exists(),
        "{} is missing: run `bash scripts/install-test-tools.sh` (scripts/test.sh does)",
        tf.display()
    );
    tf
}

pub fn module_dir() -> PathBuf {
    repo().join("tests/fixtures/modules/bucket")
}

fn moto(args: &[&str]) -> String {
    let out = std::process::Command::new("bash")
        .arg(repo().join("scripts/moto.sh"))
        .args(args)
        .output()
        .expect("moto.sh");
    assert!(out.status.success(), "moto.sh {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Starts moto (or reuses the running one); its URL.
pub fn moto_start() -> String {
    moto(&["start"])
}

/// The S3 object keys under `prefix` in `bucket`, read through the S3 protocol.
pub fn s3_keys(bucket: &str, prefix: &str) -> Vec<String> {
    moto(&["ls", bucket, prefix])
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or("").to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

pub fn s3_get(bucket: &str, key: &str) -> String {
    moto(&["cat", bucket, key])
}

/// Writes `body` to `key`, as any S3 client would.
pub fn s3_put(bucket: &str, key: &str, body: &str) {
    use std::io::Write as _;
    let mut child = std::process::Command::new("bash")
        .arg(repo().join("scripts/moto.sh"))
        .args(["put", bucket, key])
        .stdin(Stdio::piped())
        .spawn()
        .expect("moto.sh");
    child.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success(), "moto.sh put {bucket} {key}");
}

/// `git ARGS` in `dir` as a test author, which must succeed.
pub fn git(args: &[&str], dir: &std::path::Path) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Plain `terraform` (the pinned one) in `dir`, as a person runs it, with
/// moto's test keys: its exit code and its output.
pub fn plain_terraform(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = std::process::Command::new(terraform())
        .args(args)
        .current_dir(dir)
        .env("TF_CLI_CONFIG_FILE", repo().join(".venv/terraformrc"))
        .env("CHECKPOINT_DISABLE", "1")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// [`plain_terraform`] that must succeed; its output.
pub fn plain_terraform_ok(dir: &Path, args: &[&str]) -> String {
    let (code, text) = plain_terraform(dir, args);
    assert_eq!(code, 0, "terraform {args:?}: {text}");
    text
}

pub struct World {
    pub api: TestApi,
    pub http: reqwest::Client,
    pub moto_url: String,
    pub bucket: String,
    pub dir: tempfile::TempDir,
}

impl World {
    /// The API on PostgreSQL.
    pub async fn new() -> Self {
        Self::on(heimdall_api::testing::TestDatabase::postgres().await).await
    }

    /// The API on `database`, federating `oidc` jobs with moto's STS.
    pub async fn on(database: heimdall_api::testing::TestDatabase) -> Self {
        Self::with_sts(database, None).await
    }

    /// [`Self::on`] with STS at `sts` instead of moto's.
    pub async fn with_sts(database: heimdall_api::testing::TestDatabase, sts: Option<String>) -> Self {
        let moto_url = moto(&["start"]);
        let api = TestApi::with_sts(database, sts.as_deref().unwrap_or(&moto_url)).await;
        let bucket = format!("state-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        moto(&["bucket", &bucket]);
        let world =
            World { api, http: reqwest::Client::new(), moto_url, bucket, dir: tempfile::tempdir().unwrap() };
        let owner = world.api.owner_token.clone();
        let id = |v: &Value| v["id"].as_str().unwrap().to_owned();
        let d = id(&world.post(&owner, "/v1/domains", json!({ "name": "payments" })).await);
        let s = id(&world.post(&owner, "/v1/systems", json!({ "name": "checkout", "parent_id": d })).await);
        world.post(&owner, "/v1/components", json!({ "name": "receipts", "parent_id": s })).await;
        world.post(&owner, "/v1/environments", json!({ "name": "dev" })).await;
        let module = module_dir().display().to_string();
        world
            .post(&owner, "/v1/schemas", json!({ "type": "bucket", "input_schema": { "type": "object" }, "module": { "source": module, "version": "1.0.0" } }))
            .await;
        world
            .post(&owner, "/v1/schemas", json!({ "type": "elsewhere", "input_schema": { "type": "object" }, "module": { "source": "git::https://example.com/evil.git", "version": "1.0.0" } }))
            .await;
        world
            .post(
                &owner,
                "/v1/cloud-accounts",
                json!({ "name": "aws", "provider": "aws", "region": "us-east-1", "state_bucket": world.bucket,
                        "auth": { "kind": "oidc", "role_arn": "arn:aws:iam::123456789012:role/heimdall" } }),
            )
            .await;
        world
            .post(
                &owner,
                "/v1/cloud-accounts/aws/links",
                json!({ "scope": "organization", "environment": "dev" }),
            )
            .await;
        world
    }

    /// An AWS account named `moto` whose state endpoint is moto's in its
    /// own settings (as a user's account names its store), linked for
    /// `dev` in place of the world's: what plain `terraform` from an
    /// exported package reaches too.
    pub async fn link_moto_account(&self) {
        let owner = self.api.owner_token.clone();
        let account = json!({ "name": "moto", "provider": "aws", "region": "us-east-1", "state_bucket": self.bucket,
            "state_endpoint": self.moto_url, "auth": { "kind": "oidc", "role_arn": "arn:aws:iam::123456789012:role/heimdall" } });
        self.post(&owner, "/v1/cloud-accounts", account).await;
        let link = json!({ "scope": "organization", "environment": "dev" });
        self.post(&owner, "/v1/cloud-accounts/moto/links", link).await;
    }

    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req =
            self.http.request(method, format!("{}{path}", self.api.url)).bearer_auth(&self.api.owner_token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (status, if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap() })
    }

    pub async fn post(&self, token: &str, path: &str, body: Value) -> Value {
        let resp = self
            .http
            .post(format!("{}{path}", self.api.url))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let body: Value = resp.json().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {body}");
        body
    }

    /// Registers and enrolls an Agent with the real binary; returns its config path.
    pub async fn enroll(&self, name: &str) -> PathBuf {
        self.enroll_with(name, &terraform()).await
    }

    /// [`Self::enroll`] pinning another terraform executable.
    pub async fn enroll_with(&self, name: &str, terraform: &Path) -> PathBuf {
        let reg = self.post(&self.api.owner_token, "/v1/agents/registrations", json!({ "name": name })).await;
        let data = self.dir.path().join(name);
        let allow = format!("{}/tests/fixtures/modules/*", repo().display());
        let out = Command::new(env!("CARGO_BIN_EXE_heimdall-agent"))
            .args(["enroll", "--api", &self.api.url, "--data"])
            .arg(&data)
            .arg("--terraform")
            .arg(terraform)
            .args(["--allow-module", &allow, "--s3-endpoint", &self.moto_url])
            .env("HEIMDALL_REGISTRATION_TOKEN", reg["token"].as_str().unwrap())
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "enroll: {}", String::from_utf8_lossy(&out.stderr));
        data.join("agent.toml")
    }

    pub fn run_agent(&self, config: &Path) -> Child {
        self.run_agent_with(config, &[])
    }

    /// [`Self::run_agent`] with more environment variables.
    pub fn run_agent_with(&self, config: &Path, env: &[(&str, &str)]) -> Child {
        self.run_agent_binary(Path::new(env!("CARGO_BIN_EXE_heimdall-agent")), config, env)
    }

    /// [`Self::run_agent_with`] from another copy of the Agent's binary.
    pub fn run_agent_binary(&self, binary: &Path, config: &Path, env: &[(&str, &str)]) -> Child {
        let log = std::fs::File::create(config.with_extension("log")).unwrap();
        Command::new(binary)
            .envs(env.iter().copied())
            .args(["run", "--config"])
            .arg(config)
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("CHECKPOINT_DISABLE", "1")
            .env("TF_CLI_CONFIG_FILE", repo().join(".venv/terraformrc"))
            .env("HEIMDALL_LOG", "info")
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            // Its own process group, so that a test can kill it with its
            // Terraform, as a container's end or a host's crash does.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    }

    pub async fn create(&self, name: &str, schema: &str, input: Value) -> String {
        let body = json!({ "component": "receipts", "schema": schema, "environment": "dev", "name": name, "input": input });
        self.post(&self.api.owner_token, "/v1/resources", body).await["id"].as_str().unwrap().to_owned()
    }

    pub async fn jobs(&self, resource: &str) -> Vec<Value> {
        let (_, jobs) = self.call(reqwest::Method::GET, &format!("/v1/jobs?resource={resource}"), None).await;
        jobs.as_array().unwrap().clone()
    }

    pub async fn resource(&self, id: &str) -> Value {
        self.call(reqwest::Method::GET, &format!("/v1/resources/{id}"), None).await.1["resource"].clone()
    }

    /// Waits until the Resource reaches one of `statuses`.
    /// Waits until the Resource is at `revision` and done with it
    /// (`provisioned` or `failed`).
    pub async fn wait_for_revision(&self, id: &str, revision: i64, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let r = self.resource(id).await;
            let done = matches!(r["status"].as_str(), Some("provisioned" | "failed"));
            if done
                && r["revision"] == revision
                && self.jobs(id).await.iter().all(|j| j["status"] != "queued")
            {
                return r;
            }
            assert!(Instant::now() < deadline, "resource stuck at {r}: jobs {:?}", self.jobs(id).await);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub async fn wait_for(&self, id: &str, statuses: &[&str], within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let r = self.resource(id).await;
            if statuses.contains(&r["status"].as_str().unwrap_or("")) {
                return r;
            }
            assert!(
                Instant::now() < deadline,
                "resource stuck in {}: jobs {:?}",
                r["status"],
                self.jobs(id).await
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Fails if any of `needles` is in the API's database rows, `job`'s
    /// log or the log of the Agent configured at `config`: where a
    /// credential or a value must never land.
    pub async fn assert_kept_out(&self, config: &Path, job: &str, needles: &[&str]) {
        let rows = heimdall_api::testing::dump_rows(self.api.store.pool()).await;
        let job_log = self.job_log(job).await;
        let agent_log = std::fs::read_to_string(config.with_extension("log")).unwrap();
        for (place, text) in [("API database", &rows), ("job log", &job_log), ("Agent log", &agent_log)] {
            for needle in needles {
                assert!(!needle.is_empty() && !text.contains(needle), "{needle:?} is in the {place}");
            }
        }
    }

    pub async fn job_log(&self, job: &str) -> String {
        self.call(reqwest::Method::GET, &format!("/v1/jobs/{job}/log"), None).await.1["content"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    }
}

/// SIGKILL to `agent` and every process it started (its Terraform): what
/// a killed container or a crashed host leaves, nothing cleaned up.
pub async fn kill_with_children(agent: &mut Child) {
    let group = format!("-{}", agent.id().expect("running"));
    assert!(std::process::Command::new("kill").args(["-KILL", "--", &group]).status().unwrap().success());
    let _ = agent.wait().await;
}

/// The id of the Agent enrolled at `config` (its certificate's URI SAN).
pub fn agent_id(config: &Path) -> heimdall_core::ids::AgentId {
    heimdall_agent::config::AgentConfig::load(config).unwrap().agent_id().unwrap()
}

/// A client for that Agent's local API at `url`, as `who`: it accepts only
/// a certificate naming that Agent.
pub fn agent_client(config: &Path, url: &str, who: &heimdall_sdk::Identity) -> heimdall_sdk::AgentClient {
    heimdall_sdk::AgentClient::new(url, who, agent_id(config), None).unwrap()
}

/// A `terraform_data` of the bucket module made outside Heimdall, with
/// plain `terraform` and its own local state under `dir`: its id.
pub fn made_outside(dir: &Path, bucket: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let module = module_dir().display().to_string();
    std::fs::write(
        dir.join("main.tf"),
        format!("module \"made\" {{\n  source = {module:?}\n  bucket = {bucket:?}\n}}\noutput \"id\" {{\n  value = module.made.id\n}}\n"),
    )
    .unwrap();
    plain_terraform_ok(dir, &["init", "-input=false", "-no-color"]);
    plain_terraform_ok(dir, &["apply", "-input=false", "-auto-approve", "-no-color"]);
    let made: Value = serde_json::from_str(&plain_terraform_ok(dir, &["output", "-json"])).unwrap();
    made["id"]["value"].as_str().unwrap().to_owned()
}

impl World {
    /// Writes Resource `id`'s exported package into `dir`, as a person
    /// would edit it to run it by hand: the region the regional module
    /// needs, and its input's `from` replaced by `to`.
    pub async fn export_edited(&self, id: &str, dir: &Path, from: &str, to: &str) {
        let (_, package) = self.call(reqwest::Method::GET, &format!("/v1/resources/{id}/export"), None).await;
        std::fs::create_dir_all(dir).unwrap();
        for file in package["files"].as_array().unwrap() {
            let mut content = file["content"].as_str().unwrap().to_owned();
            if file["path"] == "main.tf" {
                content = content.replace(
                    "module \"resource\" {\n",
                    "module \"resource\" {\n  heimdall_region = \"us-east-1\"\n",
                );
            }
            if file["path"] == "terraform.tfvars.json" {
                content = content.replace(from, to);
            }
            std::fs::write(dir.join(file["path"].as_str().unwrap()), content).unwrap();
        }
    }
}
