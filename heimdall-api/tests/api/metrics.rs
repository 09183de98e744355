//! `serve --metrics-listen`: the real binary serves `GET /metrics` on a
//! listener of its own, with requests by route *template* and status,
//! latency histograms and the job queue, and no secret name or email in
//! any label.

use serde_json::json;

use crate::support::{bootstrap_binary, serve_binary, world, Client};

async fn scrape(metrics_port: u16) -> Option<String> {
    reqwest::get(format!("http://127.0.0.1:{metrics_port}/metrics")).await.ok()?.text().await.ok()
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_the_queue_and_name_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("heimdall.db").display());
    let token = bootstrap_binary(&url).await;
    let args = |ports: &[u16], api: &mut tokio::process::Command| {
        let (people, metrics) = (format!("127.0.0.1:{}", ports[0]), format!("127.0.0.1:{}", ports[1]));
        api.args([
            "serve",
            "--database-url",
            &url,
            "--insecure-http",
            "--listen",
            &people,
            "--metrics-listen",
            &metrics,
        ]);
    };
    let (mut api, ports) = serve_binary(dir.path(), 2, args, |ports| async move {
        scrape(ports[1]).await.is_some()
            && reqwest::get(format!("http://127.0.0.1:{}/v1/health", ports[0])).await.is_ok()
    })
    .await;
    let (port, metrics_port) = (ports[0], ports[1]);
    let c = Client::for_url(&format!("http://127.0.0.1:{port}"));

    c.get("/v1/secrets/db-password", &token).await.expect_error(404, "NOT_FOUND");
    c.post("/v1/secrets", &token, json!({ "name": "db-password" })).await.expect(201);
    c.get("/v1/secrets/db-password", &token).await.expect(200);
    let w = world(&c, &token).await;
    let body = json!({ "component": w.component, "schema": w.schema, "environment": w.dev, "name": "receipts",
                       "input": { "bucket": "acme-receipts" } });
    c.post("/v1/resources", &token, body).await.expect(201);

    let text = scrape(metrics_port).await.unwrap();
    let line = |route: &str, method: &str, status: u16| {
        format!(
            "heimdall_http_requests_total{{listener=\"people\",route=\"{route}\",method=\"{method}\",status=\"{status}\"}} 1"
        )
    };
    for expected in [
        line("/v1/secrets/{key}", "GET", 404),
        line("/v1/secrets/{key}", "GET", 200),
        line("/v1/secrets", "POST", 201),
        "heimdall_jobs{operation=\"apply\",status=\"queued\"} 1".to_owned(),
        // Nothing running, nothing queued to destroy: 0, not a missing series.
        "heimdall_jobs{operation=\"apply\",status=\"running\"} 0".to_owned(),
        "heimdall_jobs{operation=\"destroy\",status=\"queued\"} 0".to_owned(),
        "heimdall_http_request_duration_seconds_bucket{".to_owned(),
        "# TYPE heimdall_job_claim_wait_seconds histogram".to_owned(),
    ] {
        assert!(text.contains(&expected), "no {expected:?} in:\n{text}");
    }
    for kept_out in ["db-password", "owner@example.com", "acme-receipts", &token] {
        assert!(!text.contains(kept_out), "{kept_out:?} in a label:\n{text}");
    }
    api.start_kill().unwrap();
    let _ = api.wait().await;
}
