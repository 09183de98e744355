//! Refused input never leaks: a marker fed in many invalid inputs appears
//! in no response, no log line of the real `heimdall-api` binary (at debug
//! level), and no stored row.

use serde_json::json;

use crate::support::{serve_binary, world, Client};

const MARKER: &str = "ZZ-LEAK-MARKER-91";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_input_leaves_no_trace_in_responses_logs_or_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("heimdall.db");
    let url = format!("sqlite://{}", db_path.display());

    let token = crate::support::bootstrap_binary(&url).await;

    let args = |ports: &[u16], api: &mut tokio::process::Command| {
        let listen = format!("127.0.0.1:{}", ports[0]);
        api.args(["serve", "--database-url", &url, "--listen", &listen, "--insecure-http"]);
        api.env("HEIMDALL_LOG", "debug,tower_http=trace");
        // Structured logs, as a log shipper takes them.
        api.env("HEIMDALL_LOG_FORMAT", "json");
    };
    let health = |ports: Vec<u16>| async move {
        reqwest::get(format!("http://127.0.0.1:{}/v1/health", ports[0])).await.is_ok()
    };
    let (mut server, ports) = serve_binary(dir.path(), 1, args, health).await;
    let log_path = dir.path().join("api.log");
    let c = Client::for_url(&format!("http://127.0.0.1:{}", ports[0]));
    let w = world(&c, &token).await;

    let resource = |input: serde_json::Value| json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "r", "input": input });
    let bodies = vec![
        ("/v1/resources", resource(json!({ "bucket": MARKER }))),
        ("/v1/resources", resource(json!({ "bucket": "abc", "tier": MARKER }))),
        ("/v1/resources", resource(json!({ "bucket": "abc", "versioning": MARKER }))),
        ("/v1/resources", resource(json!({ "bucket": "abc", "unexpected": MARKER }))),
        ("/v1/resources", resource(json!({ "bucket": "abc", "tags": { "k": [MARKER] } }))),
        ("/v1/resources", resource(json!({ "bucket": ["abc", MARKER] }))),
        ("/v1/resources", resource(json!(MARKER))),
        (
            "/v1/resources",
            json!({ "component": w.component, "schema": w.schema, "environment": "prod", "name": "r", "input": { "bucket": "abc", "note": MARKER } }),
        ),
        (
            "/v1/resources",
            json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": MARKER, "input": {} }),
        ),
        (
            "/v1/resources",
            json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "r", "input": {}, "x": MARKER }),
        ),
        ("/v1/members", json!({ "email": MARKER, "role": "member" })),
        ("/v1/members", json!({ "email": "a@example.com", "role": MARKER })),
        ("/v1/domains", json!({ "name": MARKER })),
        (
            "/v1/cloud-accounts",
            json!({ "name": "a", "provider": MARKER, "region": "eu", "state_bucket": "abc", "auth": { "kind": "oidc", "role_arn": "r" } }),
        ),
    ];
    for (path, body) in bodies {
        let reply = c.post(path, &token, body).await;
        assert!(reply.status.is_client_error(), "{path}: {}", reply.text);
        assert!(!reply.text.contains(MARKER), "{path} echoed the marker: {}", reply.text);
    }
    // A change refused on the same grounds.
    let ok = c.post("/v1/resources", &token, resource(json!({ "bucket": "fine-bucket" }))).await.expect(201);
    let rid = ok["id"].as_str().unwrap();
    let reply = c
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/resources/{rid}"),
            &token,
            Some(json!({ "input": { "bucket": MARKER } })),
        )
        .await;
    assert_eq!(reply.status, 422);
    assert!(!reply.text.contains(MARKER));

    server.start_kill().unwrap();
    let _ = server.wait().await;
    let logs = std::fs::read_to_string(&log_path).unwrap();
    assert!(logs.contains("request"), "expected debug logs, got: {logs:.500}");
    assert!(!logs.contains(MARKER), "the marker reached the logs");
    // One JSON object per line, and no terminal colours in a file.
    for line in logs.lines().filter(|l| !l.trim().is_empty()) {
        let event: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(event["level"].is_string() && event["fields"].is_object(), "{line}");
    }
    assert!(!logs.contains('\u{1b}'), "escape sequences in a log file");

    // Every byte the database holds, WAL included.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!bytes.windows(MARKER.len()).any(|w| w == MARKER.as_bytes()), "the marker was stored");
    }
}
