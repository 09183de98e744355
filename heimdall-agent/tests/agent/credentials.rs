//! Static cloud credentials, end to end: a secret set through the Agent's
//! local API, named by a cloud account, read by the Agent for each job the
//! way every read is (recorded first, shown in the access log as the
//! Agent's), and given to Terraform as files, never in its environment.

use std::os::unix::fs::PermissionsExt;

use reqwest::Method;
use serde_json::json;

use crate::support::World;
use crate::values::{eventually, holding_secret, HoldingAgent};

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
    let marker = format!("static-secret-{}", uuid::Uuid::new_v4().simple());
    let value =
        json!({ "access_key_id": "AKIASTATIC", "secret_access_key": marker, "session_token": "tok-marker" });
    let HoldingAgent { process: mut agent, local_url, owner: ana } =
        holding_secret(&w, &config, "aws-keys", &value.to_string(), &[]).await;
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
        log.as_array().is_some_and(|l| {
            l.iter().any(|e| e["accessor"] == "agent agent-1 for owner@example.com" && e["version"] == 1)
        })
    })
    .await;

    // Nothing of the value in the API's database, the job log or the Agent's log.
    let job = w.jobs(&id).await[0]["id"].as_str().unwrap().to_owned();
    w.assert_kept_out(&config, &job, &[&marker, "tok-marker"]).await;

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

/// What went through the STS proxy: each request's form, each answer.
#[derive(Clone, Default)]
struct Exchanges(std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>);

/// A proxy in front of moto's STS that writes down each exchange (the
/// token the API sent, the credentials moto answered), and answers as STS
/// does when a role's trust policy refuses the token for the role named
/// `denied`: moto itself checks no trust policy.
async fn sts_proxy(moto: String) -> (String, Exchanges) {
    let seen = Exchanges::default();
    let recorded = seen.clone();
    let app = axum::Router::new().fallback(move |body: String| {
        let (moto, seen) = (moto.clone(), recorded.clone());
        async move {
            if body.contains("role%2Fdenied") || body.contains("role/denied") {
                let refusal = "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>Not authorized to perform sts:AssumeRoleWithWebIdentity</Message></Error></ErrorResponse>";
                return (axum::http::StatusCode::FORBIDDEN, refusal.to_owned());
            }
            let answer = reqwest::Client::new()
                .post(format!("{moto}/"))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            let (status, text) = (answer.status().as_u16(), answer.text().await.unwrap());
            seen.0.lock().unwrap().push((body, text.clone()));
            (axum::http::StatusCode::from_u16(status).unwrap(), text)
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

fn form_field(form: &str, name: &str) -> String {
    let fields: Vec<(String, String)> = serde_urlencoded::from_str(form).unwrap();
    fields.into_iter().find(|(k, _)| k == name).map(|(_, v)| v).unwrap()
}

fn xml_field(xml: &str, tag: &str) -> String {
    let start = xml.find(&format!("<{tag}>")).unwrap() + tag.len() + 2;
    let end = xml[start..].find(&format!("</{tag}>")).unwrap() + start;
    xml[start..end].to_owned()
}

/// Checks an ES256 JWT against a JWK Set, as a cloud does; returns its claims.
pub(crate) fn verified_claims(token: &str, jwks: &serde_json::Value) -> serde_json::Value {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "a compact JWT");
    let header: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
    assert_eq!(header["alg"], "ES256");
    let key =
        jwks["keys"].as_array().unwrap().iter().find(|k| k["kid"] == header["kid"]).expect("published kid");
    let mut point = vec![4u8];
    point.extend(URL_SAFE_NO_PAD.decode(key["x"].as_str().unwrap()).unwrap());
    point.extend(URL_SAFE_NO_PAD.decode(key["y"].as_str().unwrap()).unwrap());
    let signed = format!("{}.{}", parts[0], parts[1]);
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point)
        .verify(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(parts[2]).unwrap())
        .expect("the token verifies against the API's published key");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oidc_job_runs_with_sts_credentials_its_identity_token_was_traded_for() {
    let moto = crate::support::moto_start();
    let (sts, exchanges) = sts_proxy(moto).await;
    let w = World::with_sts(heimdall_api::testing::TestDatabase::postgres().await, Some(sts)).await;
    let owner = w.api.owner_token.clone();
    let dump = w.dir.path().join("terraform-saw");
    let wrapper = w.dir.path().join("terraform");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n{{ echo \"key-in-env=${{AWS_ACCESS_KEY_ID:-none}} profile=$AWS_PROFILE\"; \
             cat \"$AWS_SHARED_CREDENTIALS_FILE\" 2>/dev/null; }} >> '{}'\nexec '{}' \"$@\"\n",
            dump.display(),
            crate::support::terraform().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = w.enroll_with("agent-1", &wrapper).await;
    let _ = std::fs::remove_file(&dump);
    let mut agent = w.run_agent(&config);

    // The world's account federates (auth oidc, a role to assume).
    let id = w.create("federated", "bucket", json!({ "bucket": "federated" })).await;
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);

    // The API sent STS a token its own published keys verify, for this job.
    let (request, answer) = exchanges.0.lock().unwrap()[0].clone();
    assert_eq!(form_field(&request, "Action"), "AssumeRoleWithWebIdentity");
    assert_eq!(form_field(&request, "RoleArn"), "arn:aws:iam::123456789012:role/heimdall");
    let job = &w.jobs(&id).await[0];
    let job_id = job["id"].as_str().unwrap();
    assert!(form_field(&request, "RoleSessionName").contains(&job_id.replace('-', "")[..16]));
    let (_, discovery) = w.call(Method::GET, "/.well-known/openid-configuration", None).await;
    let jwks = reqwest::get(discovery["jwks_uri"].as_str().unwrap()).await.unwrap().json().await.unwrap();
    let claims = verified_claims(&form_field(&request, "WebIdentityToken"), &jwks);
    assert_eq!(claims["iss"], discovery["issuer"]);
    assert_eq!(claims["aud"], "sts.amazonaws.com");
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 300);
    assert_eq!(claims["job_id"], job_id);
    let org = w.api.bootstrapped.organization.id.to_string();
    let sub = claims["sub"].as_str().unwrap();
    assert!(
        sub.starts_with(&format!("organization:{org}:system:")) && sub.ends_with(&format!(":resource:{id}")),
        "{sub}"
    );

    // Terraform ran with STS's temporary keys, from a file, not the Agent's.
    let (key_id, secret, session) = (
        xml_field(&answer, "AccessKeyId"),
        xml_field(&answer, "SecretAccessKey"),
        xml_field(&answer, "SessionToken"),
    );
    let saw = std::fs::read_to_string(&dump).unwrap();
    assert!(
        saw.lines().filter(|l| l.starts_with("key-in-env=")).all(|l| l == "key-in-env=none profile=heimdall"),
        "{saw}"
    );
    assert!(saw.contains(&format!("aws_access_key_id = {key_id}")) && saw.contains(&session), "{saw}");
    // Nowhere else: not the API's database, the job log or the Agent's log.
    let token = form_field(&request, "WebIdentityToken");
    w.assert_kept_out(&config, job_id, &[&secret, &session, &token]).await;

    // A role that refuses the token: the job fails with STS's reason, once, and nothing runs.
    w.post(&owner, "/v1/cloud-accounts", json!({ "name": "denied", "provider": "aws", "region": "us-east-1",
        "state_bucket": w.bucket, "auth": { "kind": "oidc", "role_arn": "arn:aws:iam::123456789012:role/denied" } }))
        .await;
    // For the System: replacing the organization's link would be refused,
    // as `federated` keeps its state on the world's account.
    w.post(
        &owner,
        "/v1/cloud-accounts/denied/links",
        json!({ "scope": "system", "scope_id": "checkout", "environment": "dev" }),
    )
    .await;
    std::fs::remove_file(&dump).unwrap();
    let denied = w.create("denied", "bucket", json!({ "bucket": "denied" })).await;
    let r = w.wait_for(&denied, &["provisioned", "failed"], RUN).await;
    let reason = r["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("AccessDenied") && reason.contains("AssumeRoleWithWebIdentity"), "{r}");
    assert_eq!(w.jobs(&denied).await[0]["attempts"], 1, "a refused role is not retried");
    assert!(!dump.exists(), "Terraform started");

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}

/// A schema property marked `x-heimdall-secret` takes a secret's name; the
/// Agent reads that secret for the job (recorded first, as its own read)
/// and gives the module its value as a sensitive variable. The value is in
/// no row, job log or Agent log, and its tfvars file goes with the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_input_reaches_the_module_as_a_sensitive_variable() {
    use sha2::Digest;
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let module = crate::support::repo().join("tests/fixtures/modules/with-password").display().to_string();
    w.post(
        &owner,
        "/v1/schemas",
        json!({ "type": "database", "module": { "source": module, "version": "1.0.0" },
            "input_schema": { "type": "object", "required": ["name", "admin_password"],
                "properties": { "name": { "type": "string" },
                    "admin_password": { "type": "string", "x-heimdall-secret": true } } } }),
    )
    .await;
    let config = w.enroll("agent-1").await;
    let marker = format!("pw-{}", uuid::Uuid::new_v4().simple());
    let mut agent = holding_secret(&w, &config, "orders-admin", &marker, &[]).await.process;

    let id =
        w.create("orders", "database", json!({ "name": "orders", "admin_password": "orders-admin" })).await;
    let r = w.wait_for(&id, &["provisioned", "failed"], RUN).await;
    assert_eq!(r["status"], "provisioned", "{:?}", w.jobs(&id).await);
    let digest = hex::encode(sha2::Sha256::digest(marker.as_bytes()));
    assert_eq!(r["outputs"]["admin_password_sha256"], digest.as_str(), "{r}");

    eventually(&config, "the Agent's read in the access log", || async {
        let (_, log) = w.call(Method::GET, "/v1/secrets/orders-admin/access-log", None).await;
        log.as_array().is_some_and(|l| {
            l.iter().any(|e| e["accessor"] == "agent agent-1 for owner@example.com" && e["version"] == 1)
        })
    })
    .await;
    let job = w.jobs(&id).await[0]["id"].as_str().unwrap().to_owned();
    w.assert_kept_out(&config, &job, &[&marker]).await;
    let work = config.parent().unwrap().join("work");
    assert!(work.is_dir(), "{}", work.display());
    let left: Vec<_> =
        walk(&work).into_iter().filter(|p| p.ends_with("heimdall-secrets.auto.tfvars.json")).collect();
    assert!(left.is_empty(), "the values file outlived the job: {left:?}");

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}

/// Every file under `dir` (none if it does not exist).
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries.flatten().flat_map(|e| if e.path().is_dir() { walk(&e.path()) } else { vec![e.path()] }).collect()
}
