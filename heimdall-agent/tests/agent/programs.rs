//! Program tokens on the real Agent: made with `heimdall-agent token
//! create`, presented with no client certificate, read-only, scoped to one
//! environment and some secrets, subject to the organization's forbid
//! policies, recorded as `program NAME@AGENT`; and the External Secrets
//! Operator's webhook requests for `examples/kubernetes/`, replayed.

use std::path::Path;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{agent_id, repo, World};
use crate::values::{eventually, holding_secret, set};

/// `heimdall-agent token ARGS --config CONFIG --json`, parsed.
fn token_command(config: &Path, args: &[&str]) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_heimdall-agent"))
        .arg("token")
        .args(args)
        .arg("--config")
        .arg(config)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "token {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A client that trusts the installation CA and presents no certificate,
/// as ESO's webhook provider does.
fn no_certificate(config: &Path) -> reqwest::Client {
    let ca = std::fs::read(config.with_file_name("ca.pem")).unwrap();
    reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
        .build()
        .unwrap()
}

/// The double-quoted string of the first line of `file` that starts with `key` and has one.
fn quoted(file: &str, key: &str) -> String {
    let mut lines = file.lines().map(str::trim);
    let line = lines.find(|l| l.starts_with(key) && l.contains('"')).unwrap_or_else(|| panic!("no {key}"));
    line.split('"').nth(1).unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_token_reads_its_scope_only_and_serves_the_eso_webhook() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let held = holding_secret(&w, &config, "billing-db", "s3cret", &[]).await;
    let owner = w.api.owner_token.clone();
    for (secret, value) in [("billing-key", "k3y"), ("payments-db", "not-yours")] {
        w.post(&owner, "/v1/secrets", json!({ "name": secret })).await;
        assert_eq!(set(&w, &owner, &held.owner, secret, "dev", value).await, 1);
    }
    let made = token_command(
        &config,
        &["create", "--name", "billing-api", "--environment", "dev", "--secret", "billing-*"],
    );
    let token = made["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("hdp_"), "{made}");
    let listed = token_command(&config, &["list"]);
    assert_eq!(listed[0]["name"], "billing-api");
    assert!(!listed.to_string().contains(&token), "list never shows the token");

    // ESO's requests for examples/kubernetes, templates expanded as ESO does.
    let examples = repo().join("examples/kubernetes");
    let store = std::fs::read_to_string(examples.join("secret-store.yaml")).unwrap();
    let external = std::fs::read_to_string(examples.join("external-secret.yaml")).unwrap();
    let url_template = quoted(&store, "url:").replace(
        "https://heimdall-agent.heimdall.svc:7482/v1/eso/prod/",
        &format!("{}/v1/eso/dev/", held.local_url),
    );
    let authorization = quoted(&store, "Authorization:").replace("{{ .auth.token }}", &token);
    assert_eq!(quoted(&store, "jsonPath:"), "$.value");
    let http = no_certificate(&config);
    let eso_get = |key: &str| {
        let url = url_template.replace("{{ .remoteRef.key }}", key);
        assert!(!url.contains("{{") && !authorization.contains("{{"), "{url} {authorization}");
        http.get(url).header("Authorization", authorization.clone()).send()
    };
    let data_key = external.lines().map(str::trim).find_map(|l| l.strip_prefix("key: ")).unwrap().to_owned();
    assert_eq!(data_key, "billing-db");
    let one = eso_get(&data_key).await.unwrap();
    assert_eq!(one.status(), StatusCode::OK);
    assert_eq!(one.json::<Value>().await.unwrap(), json!({ "value": "s3cret" }));
    // `*` answers the scope as of the Agent's last sync (billing-key was just created).
    let extract = quoted(&external, "key:");
    let expected = json!({ "value": { "billing-db": "s3cret", "billing-key": "k3y" } });
    eventually(&config, "billing-key in the extract", || async {
        let all = eso_get(&extract).await.unwrap();
        assert_eq!(all.status(), StatusCode::OK);
        let all: Value = all.json().await.unwrap();
        assert!(all["value"].get("payments-db").is_none(), "only the scope's secrets: {all}");
        all == expected
    })
    .await;
    for absent in ["payments-db", "never-created"] {
        let refused = eso_get(absent).await.unwrap();
        assert_eq!(refused.status(), StatusCode::NOT_FOUND, "{absent}");
        assert!(!refused.text().await.unwrap().contains("not-yours"));
    }

    // The token reaches its environment only, reads only, and nothing
    // without it: no token, a wrong one.
    let base = &held.local_url;
    let get = |path: &str, auth: Option<&str>| {
        let mut request = http.get(format!("{base}{path}"));
        if let Some(auth) = auth {
            request = request.header("Authorization", auth.to_owned());
        }
        request.send()
    };
    let bearer = format!("Bearer {token}");
    let read = get("/v1/secrets/billing-db/value?environment=dev", Some(&bearer)).await.unwrap();
    assert_eq!(read.status(), StatusCode::OK);
    assert_eq!(read.json::<Value>().await.unwrap()["value"], "s3cret");
    let mut wrong = token.clone();
    wrong.replace_range(wrong.len() - 1.., if token.ends_with('0') { "1" } else { "0" });
    for (auth, status) in
        [(None, StatusCode::UNAUTHORIZED), (Some(format!("Bearer {wrong}")), StatusCode::UNAUTHORIZED)]
    {
        let refused = get("/v1/secrets/billing-db/value?environment=dev", auth.as_deref()).await.unwrap();
        assert_eq!(refused.status(), status, "{auth:?}");
    }
    let write = http
        .put(format!("{base}/v1/secrets/billing-db/value"))
        .header("Authorization", bearer.clone())
        .body(json!({ "environment": "dev", "version": 2, "value": "x", "grant": "g" }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(write.status(), StatusCode::FORBIDDEN, "a token only reads");
    let other_env = token_command(
        &config,
        &["create", "--name", "billing-prod", "--environment", "prod", "--secret", "billing-*"],
    );
    let prod_bearer = format!("Bearer {}", other_env["token"].as_str().unwrap());
    let refused = get("/v1/secrets/billing-db/value?environment=dev", Some(&prod_bearer)).await.unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN, "a prod token does not read dev");

    // Recorded before served, as the program.
    let accessor = format!("program billing-api@{}", agent_id(&config));
    eventually(&config, "the program's reads in the access log", || async {
        let (_, log) = w.call(Method::GET, "/v1/secrets/billing-db/access-log", None).await;
        log.as_array().is_some_and(|records| records.iter().any(|r| r["accessor"] == accessor.as_str()))
    })
    .await;

    // A leak: the latest version deactivated is a 404 to ESO (it then
    // deletes the Kubernetes Secret), where people get 410.
    w.post(&owner, "/v1/secrets/billing-key/deactivate", json!({ "environment": "dev", "version": 1 })).await;
    eventually(&config, "the tombstone", || async {
        eso_get("billing-key").await.unwrap().status() == StatusCode::NOT_FOUND
    })
    .await;
    let all = eso_get("*").await.unwrap().json::<Value>().await.unwrap();
    assert_eq!(all, json!({ "value": { "billing-db": "s3cret" } }));

    // An organization forbid applies to programs too.
    w.post(
        &owner,
        "/v1/policies",
        json!({ "name": "no-programs-in-dev", "text": "forbid (principal is Heimdall::Program, action == Heimdall::Action::\"secret.read\", resource) when { context.environment == \"dev\" };" }),
    )
    .await;
    eventually(&config, "the forbid to reach the Agent", || async {
        eso_get("billing-db").await.unwrap().status() == StatusCode::FORBIDDEN
    })
    .await;

    // Revoked: refused from the next request, by the running Agent.
    token_command(&config, &["revoke", "billing-api"]);
    assert_eq!(eso_get("billing-db").await.unwrap().status(), StatusCode::UNAUTHORIZED);
}
