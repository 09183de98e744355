//! Shared helpers: a raw JSON client and a catalog with a cloud account.

use std::future::Future;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use heimdall_api::testing::TestApi;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tokio::process::Child;

pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
}

pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
    pub text: String,
    /// A list page's `Heimdall-Next-After`.
    pub next_after: Option<String>,
}

impl Reply {
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("<none>")
    }

    #[track_caller]
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        self.body
    }

    #[track_caller]
    pub fn expect_error(self, status: u16, code: &str) -> Value {
        assert_eq!((self.status.as_u16(), self.code()), (status, code), "body: {}", self.body);
        self.body
    }
}

impl Client {
    pub fn new(api: &TestApi) -> Self {
        Self::for_url(&api.url)
    }

    pub fn for_url(url: &str) -> Self {
        Self { http: reqwest::Client::new(), base: url.to_owned() }
    }

    pub async fn call(&self, method: Method, path: &str, token: &str, body: Option<Value>) -> Reply {
        let mut req = self.http.request(method, format!("{}{path}", self.base)).bearer_auth(token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status();
        let next_after =
            resp.headers().get("heimdall-next-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let text = resp.text().await.expect("body");
        let body =
            if text.is_empty() { Value::Null } else { serde_json::from_str(&text).expect("JSON body") };
        Reply { status, body, text, next_after }
    }

    /// Sends `body` exactly as given (bytes), as JSON.
    pub async fn raw(&self, method: Method, path: &str, token: &str, body: &[u8]) -> Reply {
        let resp = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body.to_vec())
            .send()
            .await
            .expect("request");
        let status = resp.status();
        let next_after =
            resp.headers().get("heimdall-next-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let text = resp.text().await.expect("body");
        let body =
            if text.is_empty() { Value::Null } else { serde_json::from_str(&text).expect("JSON body") };
        Reply { status, body, text, next_after }
    }

    pub async fn get(&self, path: &str, token: &str) -> Reply {
        self.call(Method::GET, path, token, None).await
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> Reply {
        self.call(Method::POST, path, token, Some(body)).await
    }

    /// A client certificate for the token's member, its key made here; the
    /// certificate's SHA-256 (what a personal secret is bound by).
    pub async fn certificate(&self, token: &str) -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let csr = rcgen::CertificateParams::new(Vec::<String>::new())
            .and_then(|p| p.serialize_request(&key))
            .and_then(|r| r.pem())
            .unwrap();
        let issued = self.post("/v1/me/certificate", token, json!({ "csr": csr })).await.expect(201);
        issued["sha256"].as_str().unwrap().to_owned()
    }

    /// Creates a personal secret bound to a fresh certificate of the token's member.
    pub async fn personal_secret(&self, token: &str, name: &str) -> Value {
        let sha = self.certificate(token).await;
        self.post("/v1/secrets", token, json!({ "name": name, "personal": true, "certificate_sha256": sha }))
            .await
            .expect(201)
    }

    pub async fn add_member(&self, owner: &str, email: &str, role: &str) -> String {
        let body = self.post("/v1/members", owner, json!({ "email": email, "role": role })).await.expect(201);
        body["token"].as_str().unwrap().to_owned()
    }
}

/// A domain/system/component, environments `dev` and `prod`, a bucket
/// schema, and an AWS account linked to the organization for `dev` only.
pub struct World {
    pub component: String,
    pub dev: String,
    pub prod: String,
    pub schema: String,
    pub approval_schema: String,
    pub account: String,
}

/// `heimdall-api migrate` (the real binary) on `database_url`, which must succeed.
pub async fn migrate(database_url: &str) {
    let migrate = tokio::process::Command::new(env!("CARGO_BIN_EXE_heimdall-api"))
        .args(["migrate", "--database-url", database_url])
        .output()
        .await
        .unwrap();
    assert!(migrate.status.success(), "{}", String::from_utf8_lossy(&migrate.stderr));
}

/// Requests the Resource `recibos` (bucket `checkout-recibos`) of the
/// world's bucket schema in `environment`.
pub async fn request_recibos(c: &Client, owner: &str, w: &World, environment: &str) -> Value {
    let body = json!({ "component": w.component, "schema": w.schema, "environment": environment,
                       "name": "recibos", "input": { "bucket": "checkout-recibos" } });
    c.post("/v1/resources", owner, body).await.expect(201)
}

/// `heimdall-api bootstrap` (the real binary) on `database_url`: the
/// owner's token of organization `acme`, owned by owner@example.com.
pub async fn bootstrap_binary(database_url: &str) -> String {
    let boot = tokio::process::Command::new(env!("CARGO_BIN_EXE_heimdall-api"))
        .args(["bootstrap", "--database-url", database_url, "--org", "acme", "--owner", "owner@example.com"])
        .args(["--output", "json"])
        .output()
        .await
        .unwrap();
    assert!(boot.status.success(), "{}", String::from_utf8_lossy(&boot.stderr));
    let printed: Value = serde_json::from_slice(&boot.stdout).unwrap();
    printed["token"].as_str().unwrap().to_owned()
}

/// The real `heimdall-api` binary, set up by `command(ports, ..)` (its
/// arguments, its environment) on `count` ports picked here, logging to `dir/api.log`, returned once
/// `ready(ports)` says it serves.
///
/// A port found free can be taken by another process before the child
/// binds it: a child that exits before it serves is started again on fresh
/// ports, and one that never serves fails the test with its log.
pub async fn serve_binary<A, R, F>(dir: &Path, count: usize, args: A, ready: R) -> (Child, Vec<u16>)
where
    A: Fn(&[u16], &mut tokio::process::Command),
    R: Fn(Vec<u16>) -> F,
    F: Future<Output = bool>,
{
    let log_path = dir.join("api.log");
    for _attempt in 0..5 {
        let ports: Vec<u16> = (0..count).map(|_| free_port()).collect();
        let log = std::fs::File::create(&log_path).unwrap();
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_heimdall-api"));
        args(&ports, &mut command);
        let mut child = command
            // A file, not a pipe: a pipe nobody drains would stall the server.
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if ready(ports.clone()).await {
                return (child, ports);
            }
            if let Some(status) = child.try_wait().unwrap() {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                assert!(log.contains("in use"), "heimdall-api exited ({status}) before serving:\n{log}");
                break;
            }
            assert!(Instant::now() < deadline, "heimdall-api did not serve within 60 s:\n{}", {
                std::fs::read_to_string(&log_path).unwrap_or_default()
            });
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    panic!("heimdall-api found its ports taken five times over");
}

/// A port nothing listens on now (see `serve_binary` for the race).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub fn bucket_schema() -> Value {
    json!({
        "type": "object",
        "required": ["bucket"],
        "additionalProperties": false,
        "properties": {
            "bucket": { "type": "string", "pattern": "^[a-z0-9-]{3,63}$" },
            "tier": { "enum": ["standard", "glacier"] },
            "versioning": { "type": "boolean" },
            "tags": { "type": "object", "additionalProperties": { "type": "string" } },
            "replicas": { "type": "array", "items": { "type": "string" }, "maxItems": 2 }
        }
    })
}

pub async fn world(c: &Client, owner: &str) -> World {
    let id = |v: Value| v["id"].as_str().unwrap().to_owned();
    let domain = id(c.post("/v1/domains", owner, json!({ "name": "payments" })).await.expect(201));
    let system = id(c
        .post("/v1/systems", owner, json!({ "name": "checkout", "parent_id": domain }))
        .await
        .expect(201));
    let component = id(c
        .post("/v1/components", owner, json!({ "name": "receipts", "parent_id": system }))
        .await
        .expect(201));
    let dev = id(c.post("/v1/environments", owner, json!({ "name": "dev" })).await.expect(201));
    let prod = id(c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201));
    let schema = id(c
        .post(
            "/v1/schemas",
            owner,
            json!({ "type": "s3-bucket", "input_schema": bucket_schema(),
                    "defaults": { "dev": { "versioning": false, "tags": { "env": "dev" } } },
                    "module": { "source": "./modules/bucket", "version": "1.0.0" } }),
        )
        .await
        .expect(201));
    let approval_schema = id(c
        .post(
            "/v1/schemas",
            owner,
            json!({ "type": "guarded-bucket", "input_schema": bucket_schema(), "requires_approval": true }),
        )
        .await
        .expect(201));
    let account = id(c
        .post(
            "/v1/cloud-accounts",
            owner,
            json!({ "name": "aws-dev", "provider": "aws", "region": "eu-west-1", "state_bucket": "acme-tfstate",
                    "auth": { "kind": "oidc", "role_arn": "arn:aws:iam::123456789012:role/heimdall" } }),
        )
        .await
        .expect(201));
    c.post(
        &format!("/v1/cloud-accounts/{account}/links"),
        owner,
        json!({ "scope": "organization", "environment": "dev" }),
    )
    .await
    .expect(201);
    World { component, dev, prod, schema, approval_schema, account }
}

/// Registers and enrolls an Agent `name` through the real routes; its
/// mTLS client for the Agent channel and the enrollment answer.
pub async fn enroll_agent(_c: &Client, api: &TestApi, owner: &str, name: &str) -> (reqwest::Client, Value) {
    api.enroll_agent(owner, name).await
}

/// Plays the Agent for `resource`'s queued plan job: claims until it has
/// it (jobs of other Resources claimed on the way go back to the queue,
/// one attempt spent), finishes it with a plan, and answers the plan's
/// SHA-256 for the approver to name.
pub async fn run_plan_job(api: &TestApi, resource: &str) -> String {
    use heimdall_core::ids::LeaseId;
    use heimdall_core::ports::{JobOutcome, JobQueue};
    let org = api.bootstrapped.organization.id;
    let now = time::OffsetDateTime::now_utc();
    let mut others = Vec::new();
    let (job, lease) = loop {
        let lease = LeaseId::from_uuid(uuid::Uuid::new_v4());
        let job =
            api.store.claim(org, "agent-plan", None, lease, now).await.unwrap().expect("a queued plan job");
        if job.resource_id.to_string() == resource
            && job.operation == heimdall_core::infra::JobOperation::Plan
        {
            break (job, lease);
        }
        others.push((job.id, lease));
    };
    let sha256 = format!("{:064x}", job.request.revision * 7919 + 17);
    let plan = heimdall_core::plan::RevisionPlan { sha256: sha256.clone(), summary: Default::default() };
    let outputs = heimdall_core::plan::report(&plan);
    api.store.finish(job.id, lease, JobOutcome::Completed { outputs }, now).await.unwrap();
    for (id, lease) in others {
        let back = JobOutcome::Failed { reason: "put back".into(), retryable: true };
        api.store.finish(id, lease, back, now).await.unwrap();
    }
    sha256
}
