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

/// `heimdall-agent token ARGS --config CONFIG`, which must fail: its stderr.
fn token_command_fails(config: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_heimdall-agent"))
        .arg("token")
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .unwrap();
    assert!(!out.status.success(), "token {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
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
    w.post(&owner, "/v1/environments", json!({ "name": "prod" })).await;
    w.post(&owner, "/v1/environments/prod/agents", json!({ "agent": "agent-1" })).await;
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

/// `PUT` (or `DELETE`) `path` on the Agent with `bearer`, and the answer.
async fn send(
    http: &reqwest::Client,
    method: Method,
    url: String,
    bearer: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = http.request(method, url).header("Authorization", bearer.to_owned());
    if let Some(body) = body {
        request = request.body(body.to_string());
    }
    let answer = request.send().await.unwrap();
    let status = answer.status();
    (status, answer.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_writes_and_deletes_through_the_api_attributed_to_it() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let held = holding_secret(&w, &config, "billing-db", "s3cret", &[]).await;
    let owner = w.api.owner_token.clone();
    let agent = agent_id(&config);
    let accessor = format!("program billing-api@{agent}");
    // Without an owner's allowance, a token that writes is not even made.
    let refused = token_command_fails(
        &config,
        &[
            "create",
            "--name",
            "billing-api",
            "--environment",
            "dev",
            "--secret",
            "billing-*",
            "--verb",
            "write",
        ],
    );
    assert!(refused.contains("FORBIDDEN") && refused.contains("allow-programs"), "{refused}");
    assert!(token_command(&config, &["list"]).as_array().unwrap().is_empty(), "nothing kept");
    w.post(
        &owner,
        "/v1/agents/agent-1/program-allowances",
        json!({ "environment": "dev", "secret": "billing-*", "verbs": ["write", "delete"] }),
    )
    .await;
    let made = token_command(
        &config,
        &[
            "create",
            "--name",
            "billing-api",
            "--environment",
            "dev",
            "--secret",
            "billing-*",
            "--verb",
            "read",
            "--verb",
            "write",
            "--verb",
            "delete",
        ],
    );
    assert_eq!(made["verbs"], json!(["read", "write", "delete"]), "{made}");
    let writer = format!("Bearer {}", made["token"].as_str().unwrap());
    let reader = token_command(
        &config,
        &["create", "--name", "billing-ro", "--environment", "dev", "--secret", "billing-*"],
    );
    let reader = format!("Bearer {}", reader["token"].as_str().unwrap());
    let http = no_certificate(&config);
    let value_url = |name: &str| format!("{}/v1/secrets/{name}/value", held.local_url);

    // Written (with the SDK a program uses): the API numbers version 2 (it
    // never sees the value), the Agent stores it with the grant, and the
    // program reads it back.
    let ca = std::fs::read_to_string(config.with_file_name("ca.pem")).unwrap();
    let sdk =
        heimdall_sdk::AgentClient::with_program_token(&held.local_url, made["token"].as_str().unwrap(), &ca)
            .unwrap();
    let written = sdk.write_as_program("billing-db", "dev", "r0tated").await.unwrap();
    assert_eq!(written, json!({ "name": "billing-db", "environment": "dev", "version": 2 }));
    let (status, read) =
        send(&http, Method::GET, format!("{}?environment=dev", value_url("billing-db")), &writer, None).await;
    assert_eq!((status, &read["value"], &read["version"]), (StatusCode::OK, &json!("r0tated"), &json!(2)));
    let (_, detail) = w.call(Method::GET, "/v1/secrets/billing-db", None).await;
    let versions = detail["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2, "{detail}");
    assert!(versions.iter().any(|v| v["version"] == 2 && v["created_by"] == accessor.as_str()), "{detail}");
    let (_, events) = w.call(Method::GET, "/v1/events", None).await;
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "secret.version_created" && e["actor"] == accessor.as_str()),
        "the version is attributed to the program: {events}"
    );
    assert!(!events.to_string().contains("r0tated"), "no value at the API");

    // A read-only token neither writes nor deletes; no version is numbered.
    let (status, _) = send(
        &http,
        Method::PUT,
        value_url("billing-db"),
        &reader,
        Some(json!({ "environment": "dev", "value": "x" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = send(
        &http,
        Method::DELETE,
        format!("{}/v1/secrets/billing-db?environment=dev", held.local_url),
        &reader,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Out of the token's scope, or a person's way with a version and grant:
    // refused before the API is asked.
    w.post(&owner, "/v1/secrets", json!({ "name": "payments-db" })).await;
    let (status, _) = send(
        &http,
        Method::PUT,
        value_url("payments-db"),
        &writer,
        Some(json!({ "environment": "dev", "value": "x" })),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = send(
        &http,
        Method::PUT,
        value_url("billing-db"),
        &writer,
        Some(json!({ "environment": "dev", "version": 3, "grant": "g", "value": "x" })),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a program's body has no version nor grant");
    let (_, detail) = w.call(Method::GET, "/v1/secrets/billing-db", None).await;
    assert_eq!(detail["versions"].as_array().unwrap().len(), 2, "nothing numbered: {detail}");

    // The API decides again, whatever the Agent asks on the channel: an
    // environment this Agent does not hold, a personal secret.
    let (_, staging) = w.call(Method::POST, "/v1/environments", Some(json!({ "name": "staging" }))).await;
    let channel =
        heimdall_agent::channel::Channel::new(&heimdall_agent::config::AgentConfig::load(&config).unwrap())
            .unwrap();
    let program = heimdall_wire::ProgramCaller {
        token_id: made["id"].as_str().unwrap().to_owned(),
        name: "billing-api".into(),
    };
    let secret_id = detail["secret"]["id"].as_str().unwrap().parse().unwrap();
    let ask = |environment_id: &str, secret_id| heimdall_wire::ProgramVersionRequest {
        program: program.clone(),
        secret_id,
        environment_id: environment_id.parse().unwrap(),
    };
    let refused =
        channel.program_version(&ask(staging["id"].as_str().unwrap(), secret_id)).await.unwrap_err();
    assert!(
        matches!(&refused, heimdall_agent::channel::ChannelError::Api(e) if e.code == heimdall_core::ErrorCode::Forbidden),
        "{refused}"
    );
    let (_, dev) = w.call(Method::GET, "/v1/environments/dev", None).await;
    let certificate = held.owner.certificate_sha256().unwrap();
    let (_, personal) = w
        .call(
            Method::POST,
            "/v1/secrets",
            Some(json!({ "name": "billing-notes", "personal": true, "certificate_sha256": certificate })),
        )
        .await;
    let personal_id = personal["id"].as_str().unwrap().parse().unwrap();
    let refused = channel.program_version(&ask(dev["id"].as_str().unwrap(), personal_id)).await.unwrap_err();
    assert!(
        matches!(&refused, heimdall_agent::channel::ChannelError::Api(e) if e.code == heimdall_core::ErrorCode::NotFound),
        "{refused}"
    );

    // Deleted in dev by the program: every holder drops it on its next sync.
    let started = sdk.delete_as_program("billing-db", "dev").await.unwrap();
    assert_eq!(
        (started.secret.as_str(), started.environment.as_str(), started.status.as_str()),
        ("billing-db", "dev", "deleting")
    );
    eventually(&config, "billing-db deleted in dev", || async {
        let (_, detail) = w.call(Method::GET, "/v1/secrets/billing-db", None).await;
        detail["environment_deletions"][0]["status"] == "deleted"
    })
    .await;
    let (_, events) = w.call(Method::GET, "/v1/events", None).await;
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "secret.deletion_started" && e["actor"] == accessor.as_str()),
        "{events}"
    );

    // An organization forbid on writes applies to programs too.
    w.post(&owner, "/v1/secrets", json!({ "name": "billing-key" })).await;
    w.post(
        &owner,
        "/v1/policies",
        json!({ "name": "no-program-writes", "text": "forbid (principal is Heimdall::Program, action == Heimdall::Action::\"secret.write\", resource);" }),
    )
    .await;
    eventually(&config, "the forbid to refuse the program's write", || async {
        let (status, _) = send(
            &http,
            Method::PUT,
            value_url("billing-key"),
            &writer,
            Some(json!({ "environment": "dev", "value": "k" })),
        )
        .await;
        status == StatusCode::FORBIDDEN
    })
    .await;
}

/// The local API's own OpenAPI document, served without a credential:
/// every operation it lists reaches a handler (not the router's "no such
/// route") and answers only a status the document lists for it, and a
/// path it does not list is the router's miss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_api_document_lists_what_the_agent_serves() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let held = holding_secret(&w, &config, "billing-db", "s3cret", &[]).await;
    let token = token_command(
        &config,
        &["create", "--name", "docs", "--environment", "dev", "--secret", "billing-*"],
    )["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let http = no_certificate(&config);
    let document: Value =
        http.get(format!("{}/v1/openapi.json", held.local_url)).send().await.unwrap().json().await.unwrap();
    let mut operations = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            operations += 1;
            let concrete = path
                .replace("{name}", "billing-db")
                .replace("{environment}", "dev")
                .replace("{key}", "billing-db");
            let reply = http
                .request(
                    Method::from_bytes(method.to_uppercase().as_bytes()).unwrap(),
                    format!("{}{concrete}", held.local_url),
                )
                .bearer_auth(&token)
                .header("content-type", "application/json")
                .body(if method == "get" || method == "delete" { "" } else { "{}" })
                .send()
                .await
                .unwrap();
            let status = reply.status().as_u16();
            let body: Value = reply.json().await.unwrap_or(Value::Null);
            assert!(
                !(status == 404 && body["error"]["message"] == "no such route"),
                "{method} {path} is documented but not routed"
            );
            assert!(
                operation["responses"].get(status.to_string()).is_some(),
                "{method} {path} answered {status} ({body}), which its document does not list"
            );
        }
    }
    assert!(operations >= 8, "{operations} operations in {document}");
    let miss = http.get(format!("{}/v1/valuez", held.local_url)).send().await.unwrap();
    assert_eq!(miss.status(), StatusCode::NOT_FOUND);
}

/// What the Agent channel answers `ask` with: its error's code.
async fn refused_code<T: std::fmt::Debug>(
    ask: impl std::future::Future<Output = Result<T, heimdall_agent::channel::ChannelError>>,
) -> heimdall_core::ErrorCode {
    match ask.await {
        Err(heimdall_agent::channel::ChannelError::Api(e)) => e.code,
        other => panic!("not refused by the API: {other:?}"),
    }
}

/// Whoever holds an Agent's key (its certificate and key) can ask the
/// Agent channel anything: the API lets a program write or delete only
/// through a token id that Agent registered, live, inside an owner's
/// allowance as it stands now. Invented ids, a token's scope stretched,
/// a revoked token and a withdrawn allowance: nothing numbered, nothing
/// deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_key_alone_writes_or_deletes_nothing_an_owner_did_not_allow() {
    use heimdall_core::program::Verb;
    use heimdall_core::ErrorCode;
    use heimdall_wire::{ProgramCaller, ProgramDeletionRequest, ProgramVersionRequest, RegisterProgramToken};
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let held = holding_secret(&w, &config, "billing-db", "s3cret", &[]).await;
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/secrets", json!({ "name": "payments-db" })).await;
    set(&w, &owner, &held.owner, "payments-db", "dev", "p4y").await;
    let channel =
        heimdall_agent::channel::Channel::new(&heimdall_agent::config::AgentConfig::load(&config).unwrap())
            .unwrap();
    let (_, dev) = w.call(Method::GET, "/v1/environments/dev", None).await;
    let dev_id: heimdall_core::ids::CatalogId = dev["id"].as_str().unwrap().parse().unwrap();
    let id_of = |detail: &Value| detail["secret"]["id"].as_str().unwrap().parse().unwrap();
    let billing = id_of(&w.call(Method::GET, "/v1/secrets/billing-db", None).await.1);
    let payments = id_of(&w.call(Method::GET, "/v1/secrets/payments-db", None).await.1);
    let as_program =
        |token_id: &str, name: &str| ProgramCaller { token_id: token_id.into(), name: name.into() };
    let version = |who: ProgramCaller, secret_id| ProgramVersionRequest {
        program: who,
        secret_id,
        environment_id: dev_id,
    };
    let deletion = |who: ProgramCaller, secret_id| ProgramDeletionRequest {
        program: who,
        secret_id,
        environment_id: dev_id,
    };

    // An invented token id: the Agent's word alone numbers and deletes nothing.
    let invented = as_program("0123456789abcdef", "billing-api");
    assert_eq!(
        refused_code(channel.program_version(&version(invented.clone(), payments))).await,
        ErrorCode::Unauthenticated
    );
    assert_eq!(
        refused_code(channel.program_deletion(&deletion(invented, payments))).await,
        ErrorCode::Unauthenticated
    );

    // Registering a token that writes needs an owner's allowance, and must
    // fit inside it.
    let register = |id: &str, secrets: &[&str], verbs: &[Verb]| RegisterProgramToken {
        id: id.into(),
        name: "billing-api".into(),
        environment: "dev".into(),
        secrets: secrets.iter().map(|s| (*s).to_owned()).collect(),
        verbs: verbs.to_vec(),
        expires_at: None,
    };
    let writes = register("00000000000000aa", &["billing-*"], &[Verb::Write]);
    assert_eq!(refused_code(channel.register_program_token(&writes)).await, ErrorCode::Forbidden);
    w.post(
        &owner,
        "/v1/agents/agent-1/program-allowances",
        json!({ "environment": "dev", "secret": "billing-*", "verbs": ["write"] }),
    )
    .await;
    let everything = register("00000000000000ab", &["*"], &[Verb::Write, Verb::Delete]);
    assert_eq!(refused_code(channel.register_program_token(&everything)).await, ErrorCode::Forbidden);
    let registered = channel.register_program_token(&writes).await.unwrap();
    assert_eq!(registered.environment_id, dev_id);
    let token = as_program("00000000000000aa", "billing-api");

    // Inside the allowance it works; outside it (another secret, another
    // verb, another name for the token), nothing.
    channel.program_version(&version(token.clone(), billing)).await.unwrap();
    assert_eq!(
        refused_code(channel.program_version(&version(token.clone(), payments))).await,
        ErrorCode::NotFound
    );
    assert_eq!(
        refused_code(channel.program_deletion(&deletion(token.clone(), billing))).await,
        ErrorCode::Forbidden
    );
    let renamed = as_program("00000000000000aa", "someone-else");
    assert_eq!(
        refused_code(channel.program_version(&version(renamed, billing))).await,
        ErrorCode::Unauthenticated
    );

    // The allowance withdrawn: refused at once, whatever the token says.
    let withdraw =
        format!("{}/v1/agents/agent-1/program-allowances?environment=dev&secret=billing-*", w.api.url);
    let gone = w.http.delete(withdraw).bearer_auth(&owner).send().await.unwrap();
    assert_eq!(gone.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        refused_code(channel.program_version(&version(token.clone(), billing))).await,
        ErrorCode::Forbidden
    );
    // Revoked: unknown from now on.
    channel.revoke_program_token("00000000000000aa").await.unwrap();
    assert_eq!(
        refused_code(channel.program_version(&version(token, billing))).await,
        ErrorCode::Unauthenticated
    );

    // What happened: one version numbered (inside the allowance), nothing
    // deleted, and every step in the audit feed.
    let (_, payments_now) = w.call(Method::GET, "/v1/secrets/payments-db", None).await;
    assert_eq!(payments_now["versions"].as_array().unwrap().len(), 1, "{payments_now}");
    assert!(payments_now["environment_deletions"].as_array().is_none_or(|d| d.is_empty()), "{payments_now}");
    let (_, billing_now) = w.call(Method::GET, "/v1/secrets/billing-db", None).await;
    assert_eq!(billing_now["versions"].as_array().unwrap().len(), 2, "{billing_now}");
    let (_, events) = w.call(Method::GET, "/v1/events?limit=200", None).await;
    let actions: Vec<&str> = events.as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    for action in [
        "agent.programs_allowed",
        "program_token.registered",
        "agent.programs_disallowed",
        "program_token.revoked",
    ] {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }
    drop(held);
}

/// A token reaches its environment by id: renaming `dev` away and `prod`
/// to `dev` does not make a dev token a prod token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_reaches_its_environment_by_id_whatever_it_is_called_later() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let held = holding_secret(&w, &config, "billing-db", "dev-value", &[]).await;
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/environments", json!({ "name": "prod" })).await;
    w.post(&owner, "/v1/environments/prod/agents", json!({ "agent": "agent-1" })).await;
    set(&w, &owner, &held.owner, "billing-db", "prod", "prod-value").await;
    let token = token_command(
        &config,
        &["create", "--name", "billing-api", "--environment", "dev", "--secret", "billing-*"],
    )["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let http = no_certificate(&config);
    let read = |environment: &str| {
        http.get(format!("{}/v1/secrets/billing-db/value?environment={environment}", held.local_url))
            .bearer_auth(&token)
            .send()
    };
    let first = read("dev").await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(first.json::<Value>().await.unwrap()["value"], "dev-value");

    for (from, to) in [("dev", "old-dev"), ("prod", "dev")] {
        let (status, body) =
            w.call(Method::PATCH, &format!("/v1/environments/{from}"), Some(json!({ "name": to }))).await;
        assert_eq!(status, 200, "{body}");
    }
    eventually(&config, "the renames to reach the Agent", || async {
        read("old-dev").await.unwrap().status() == StatusCode::OK
    })
    .await;
    let now_dev = read("dev").await.unwrap();
    assert_eq!(now_dev.status(), StatusCode::FORBIDDEN, "the new `dev` is prod");
    assert!(!now_dev.text().await.unwrap().contains("prod-value"));
    drop(held);
}

/// Someone who can write the Agent's disk but holds no master key copies
/// the token list back from before a revocation: the revoked token stays
/// refused (the API no longer lists it as live), and the Agent tells the
/// API of a revocation it did not hear.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_list_copied_back_revives_no_revoked_token() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let held = holding_secret(&w, &config, "billing-db", "s3cret", &[]).await;
    let token = token_command(
        &config,
        &["create", "--name", "billing-api", "--environment", "dev", "--secret", "billing-*"],
    )["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let http = no_certificate(&config);
    let read = || {
        http.get(format!("{}/v1/secrets/billing-db/value?environment=dev", held.local_url))
            .bearer_auth(&token)
            .send()
    };
    assert_eq!(read().await.unwrap().status(), StatusCode::OK);
    let file = config.with_file_name("program-tokens.sealed");
    let before = std::fs::read(&file).unwrap();
    let revoked = token_command(&config, &["revoke", "billing-api"]);
    assert_eq!(revoked["api_told"], true, "{revoked}");
    assert_eq!(read().await.unwrap().status(), StatusCode::UNAUTHORIZED);

    // Copied back (a new file, as a restore makes): the list does not
    // open (older than one written), and the token stays refused.
    let copy = config.with_file_name("program-tokens.restored");
    std::fs::write(&copy, &before).unwrap();
    std::fs::rename(&copy, &file).unwrap();
    let refused = token_command_fails(&config, &["list"]);
    assert!(refused.contains("copy put back"), "{refused}");
    for _ in 0..3 {
        assert_eq!(read().await.unwrap().status(), StatusCode::UNAUTHORIZED);
        tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    }
    let (_, tokens) = w.call(Method::GET, "/v1/agents/agent-1/program-tokens", None).await;
    assert!(tokens[0]["revoked_at"].is_string(), "{tokens}");
    // Restarted on the old list: the API's word decides, before and after
    // the first sync.
    let mut process = held.process;
    process.kill().await.unwrap();
    let mut agent = w.run_agent(&config);
    eventually(&config, "the restarted Agent's local API", || async {
        http.get(format!("{}/v1/health", held.local_url)).send().await.is_ok()
    })
    .await;
    for _ in 0..3 {
        assert_eq!(read().await.unwrap().status(), StatusCode::UNAUTHORIZED);
        tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    }
    agent.kill().await.unwrap();
}

/// `token create` and `token revoke` run at once: each sees the other's
/// change, and the list keeps every token made and every revocation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_commands_run_at_once_lose_nothing() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let held = holding_secret(&w, &config, "billing-db", "s3cret", &[]).await;
    token_command(&config, &["create", "--name", "first", "--environment", "dev", "--secret", "billing-*"]);
    let commands: Vec<Vec<String>> = (0..4)
        .map(|n| {
            ["create", "--name", &format!("program-{n}"), "--environment", "dev", "--secret", "billing-*"]
                .map(str::to_owned)
                .to_vec()
        })
        .chain([["revoke", "first"].map(str::to_owned).to_vec()])
        .collect();
    let running: Vec<_> = commands
        .into_iter()
        .map(|args| {
            let config = config.clone();
            std::thread::spawn(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                token_command(&config, &args)
            })
        })
        .collect();
    for command in running {
        command.join().unwrap();
    }
    let listed = token_command(&config, &["list"]);
    let names: Vec<&str> = listed.as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names.len(), 5, "{listed}");
    let first = listed.as_array().unwrap().iter().find(|t| t["name"] == "first").unwrap();
    assert_eq!(first["state"], "revoked", "{listed}");
    let (_, registered) = w.call(Method::GET, "/v1/agents/agent-1/program-tokens", None).await;
    assert_eq!(registered.as_array().unwrap().len(), 5, "{registered}");
    drop(held);
}

/// What one token can hold of an Agent: at most a few watches open at once
/// (not the connection cap), and `*` for an environment the Agent does not
/// know is one sync's wait, not one per secret of the scope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_token_holds_a_few_watches_and_an_unknown_environment_costs_one_sync() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let held = holding_secret(&w, &config, "billing-db", "s3cret", &[]).await;
    let owner = w.api.owner_token.clone();
    for n in 0..5 {
        w.post(&owner, "/v1/secrets", json!({ "name": format!("billing-{n}") })).await;
    }
    let token = token_command(
        &config,
        &["create", "--name", "watcher", "--environment", "dev", "--secret", "billing-*"],
    )["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let http = no_certificate(&config);
    let watch_url = format!("{}/v1/values/watch", held.local_url);
    let first: Value = http
        .post(&watch_url)
        .bearer_auth(&token)
        .body(json!({ "environment": "dev", "secrets": ["billing-db"] }).to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let since = first["fingerprint"].as_str().unwrap().to_owned();
    let body = json!({ "environment": "dev", "secrets": ["billing-db"], "since": since }).to_string();
    let mut open = Vec::new();
    for _ in 0..heimdall_agent::local_api::watch::MAX_PER_CALLER {
        let request = http.post(&watch_url).bearer_auth(&token).body(body.clone()).send();
        open.push(tokio::spawn(request));
    }
    // Once those are open (a poll waits 25 s), one more is refused at once.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let extra = http
        .post(&watch_url)
        .bearer_auth(&token)
        .body(body.clone())
        .timeout(std::time::Duration::from_secs(10))
        .send()
        .await
        .unwrap();
    assert_eq!(extra.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(open.iter().all(|r| !r.is_finished()), "each of the first ones is still waiting");
    for request in open {
        request.abort();
    }

    let started = std::time::Instant::now();
    let unknown =
        http.get(format!("{}/v1/eso/nowhere/*", held.local_url)).bearer_auth(&token).send().await.unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    // One sync asked for and waited on (3 s at most), not one per secret.
    assert!(started.elapsed() < std::time::Duration::from_secs(9), "{:?}", started.elapsed());
    drop(held);
}
