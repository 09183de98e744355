//! A PostgreSQL that accepts TLS only, as a managed database that requires
//! it does (RDS with `rds.force_ssl`, Cloud SQL, a `hostssl`-only
//! `pg_hba.conf`), against the real `heimdall-api` binary: with
//! `sslmode=verify-full` it bootstraps and serves; a CA that did not sign
//! the server's certificate, and a URL that offers no TLS, are refused
//! with the setting that fixes them and no password.

use std::process::Stdio;
use std::time::Duration;

use heimdall_api::testing::TlsPostgres;

const BIN: &str = env!("CARGO_BIN_EXE_heimdall-api");

async fn api(args: &[&str]) -> std::process::Output {
    tokio::process::Command::new(BIN).args(args).output().await.unwrap()
}

#[tokio::test]
async fn the_api_bootstraps_and_serves_on_a_database_that_accepts_tls_only() {
    let server = TlsPostgres::start();
    server.create_database("heimdall");
    let url = server.verified_url("heimdall");
    let boot = api(&[
        "bootstrap",
        "--database-url",
        &url,
        "--org",
        "acme",
        "--owner",
        "owner@example.com",
        "--output",
        "json",
    ])
    .await;
    assert!(boot.status.success(), "{}", String::from_utf8_lossy(&boot.stderr));
    let token = serde_json::from_slice::<serde_json::Value>(&boot.stdout).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = tokio::process::Command::new(BIN)
        .args(["serve", "--database-url", &url, "--listen", &format!("127.0.0.1:{port}"), "--insecure-http"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    let whoami = format!("http://127.0.0.1:{port}/v1/whoami");
    let mut answer = None;
    for _ in 0..200 {
        if let Ok(response) = http.get(&whoami).bearer_auth(&token).send().await {
            answer = Some(response);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let Some(answer) = answer else {
        child.start_kill().unwrap();
        let out = child.wait_with_output().await.unwrap();
        panic!("heimdall-api did not serve: {}", String::from_utf8_lossy(&out.stderr));
    };
    assert_eq!(answer.status(), 200);
    let body: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(body["member"]["email"], "owner@example.com", "{body}");
    assert_eq!(body["organization"]["name"], "acme", "{body}");
}

#[tokio::test]
async fn a_wrong_ca_or_a_url_without_tls_is_refused_with_the_fix_and_no_password() {
    let server = TlsPostgres::start();
    server.create_database("heimdall");
    let wrong_ca = server
        .url("heimdall", &format!("sslmode=verify-full&sslrootcert={}", server.wrong_ca_file.display()));
    let cleartext = server.url("heimdall", "sslmode=disable");
    for (url, says) in [
        (
            wrong_ca,
            "the server's certificate is not signed by the CA given (sslmode=verify-full&sslrootcert=",
        ),
        (cleartext, "the server accepts TLS connections only: ask for it with sslmode=verify-full"),
    ] {
        let out = api(&["migrate", "--database-url", &url]).await;
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(
                "error: UNAVAILABLE: cannot connect to the Postgres database at postgres://localhost:"
            ),
            "{stderr}"
        );
        assert!(stderr.contains(says), "{stderr}");
        assert!(!stderr.contains(&server.password) && out.stdout.is_empty(), "{stderr}");
    }
}
