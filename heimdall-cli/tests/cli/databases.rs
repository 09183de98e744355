//! `heimdall database` end to end with `heimdall dev` (its Agent holds the
//! values) and the machine's PostgreSQL: a service user made by the Agent,
//! read with `secret get`, an application under `heimdall run --watch`
//! restarted onto the rotated credentials within the grace period, and the
//! user deleted (both logins dropped). Roles belong to the whole server,
//! so this test's user has a name no other test uses (`web`).

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::dev::free_ports;
use crate::support::{cells, json_of, Heimdall, BIN};

/// `psql` as the machine's admin (trust on 127.0.0.1), or as `user`.
fn psql(database: &str, user: &str, sql: &str) -> Result<String, String> {
    let out = std::process::Command::new("psql")
        .args(["-h", "127.0.0.1", "-p", "5432", "-U", user, "-d", database, "-XAtc", sql])
        .output()
        .map_err(|e| format!("psql: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

async fn until<F: Fn() -> bool>(what: &str, check: F) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until what `shown` answers satisfies `done`.
async fn until_shown<S, F>(shown: &S, what: &str, done: impl Fn(&serde_json::Value) -> bool)
where
    S: Fn() -> F,
    F: std::future::Future<Output = serde_json::Value>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    while !done(&shown().await) {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_user_is_made_by_the_agent_and_run_watch_moves_onto_each_rotation() {
    let repo =
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repo root").canonicalize().expect("repo");
    for binary in ["heimdall-api", "heimdall-agent"] {
        assert!(Path::new(BIN).with_file_name(binary).exists(), "run `cargo build --workspace --bins` first");
    }
    assert!(repo.join(".venv/bin/terraform").exists(), "run `bash scripts/install-test-tools.sh` first");
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall { url: None, token: None, config_dir: tmp.path().join("config") };
    let listen = format!("127.0.0.1:{}", free_ports());
    let data = tmp.path().join("data");
    let mut dev = h.command(&["dev", "--data", data.to_str().expect("utf-8"), "--listen", &listen]);
    dev.current_dir(&repo).env_remove("HEIMDALL_TERRAFORM").env_remove("TF_CLI_CONFIG_FILE");
    let mut child = dev.spawn().expect("start heimdall dev");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let ready = tokio::time::timeout(Duration::from_secs(90), async {
        while let Some(line) = lines.next_line().await.expect("read") {
            if line.starts_with("Press Ctrl-C") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(ready, Ok(true), "heimdall dev came up");

    let name = format!("orders_{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    psql("postgres", "postgres", &format!("CREATE DATABASE {name}")).expect("create database");
    psql(&name, "postgres", "CREATE TABLE orders (id int); INSERT INTO orders VALUES (7)").expect("table");
    for args in [
        &["environment", "create", "dev"][..],
        &["environment", "assign-agent", "dev", "dev"],
        &["secret", "create", "orders-admin"],
    ] {
        let run = h.run(args).await;
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
    }
    let admin = r#"{"username":"postgres","password":"unused-with-trust"}"#;
    let set = h.run_with_stdin(&["secret", "set", "orders-admin", "--environment", "dev"], Some(admin)).await;
    assert_eq!(set.code, 0, "{set:?}");
    let created = h
        .run(&[
            "database",
            "create",
            "orders",
            "--engine",
            "postgres",
            "--host",
            "127.0.0.1",
            "--database",
            &name,
            "--environment",
            "dev",
            "--admin-secret",
            "orders-admin",
        ])
        .await;
    assert_eq!(
        created.stdout, "✓ Database created: orders (postgres at 127.0.0.1:5432, in dev, TLS disable)\n",
        "{created:?}"
    );
    let bad = h
        .run(&[
            "database",
            "user",
            "create",
            "web",
            "--database",
            "orders",
            "--rotate-every",
            "1y",
            "--grace",
            "5s",
        ])
        .await;
    assert_eq!(bad.code, 7, "{bad:?}");
    assert!(bad.stderr.contains("INVALID_INPUT"), "{}", bad.stderr);
    let made = h
        .run(&[
            "database",
            "user",
            "create",
            "web",
            "--database",
            "orders",
            "--rotate-every",
            "30d",
            "--grace",
            "5s",
            "--grant",
            "SELECT ON ALL TABLES IN SCHEMA public",
        ])
        .await;
    assert_eq!(made.code, 0, "{made:?}");
    assert!(made.stdout.starts_with("✓ Service user created: web in database orders\n"), "{}", made.stdout);

    // The Agent creates it: `secret get` gives credentials that log in.
    let shown = || async { json_of(&h, &["database", "user", "show", "web", "--database", "orders"]).await };
    until_shown(&shown, "the Agent to create the user", |u| u["current_version"] == 1).await;
    let got = h.run(&["secret", "get", "db-orders-web", "--environment", "dev"]).await;
    let first: serde_json::Value = serde_json::from_str(&got.stdout).expect("the value is JSON");
    assert_eq!(first["username"], "web_a", "{first}");
    assert_eq!(
        psql(&name, "web_a", "SELECT id FROM orders").as_deref(),
        Ok("7"),
        "the grant reached the login"
    );

    // The application gets the credentials and is restarted on each rotation.
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    std::fs::write(project.join("heimdall.yaml"), "environment: dev\nsecrets:\n  DB: db-orders-web\n")
        .expect("yaml");
    let seen = project.join("seen");
    let script = format!(
        r#"printf '%s\n' "$DB" | sed 's/.*"username":"\([a-z_]*\)".*/\1/' >> '{}'; exec sleep 60"#,
        seen.display()
    );
    let mut watcher = h.command(&["run", "--watch", "--", "sh", "-c", &script]);
    let watcher = watcher.current_dir(&project).spawn().expect("heimdall run --watch");
    let seen_now = || std::fs::read_to_string(&seen).unwrap_or_default();
    until("the program to start with web_a", || seen_now() == "web_a\n").await;
    let rotated = h.run(&["database", "user", "rotate", "web", "--database", "orders"]).await;
    assert_eq!(rotated.code, 0, "{rotated:?}");
    until("the program to restart with web_b", || seen_now() == "web_a\nweb_b\n").await;
    let during = shown().await;
    assert!(during["grace_until"].is_string(), "restarted within the grace: {during}");
    assert_eq!(psql(&name, "web_b", "SELECT current_user").as_deref(), Ok("web_b"));

    // After the grace the old login is locked; the listing says where things stand.
    until_shown(&shown, "the old login to be retired", |u| u.get("grace_until").is_none()).await;
    assert!(psql(&name, "web_a", "SELECT 1").is_err(), "the old login is locked after the grace");
    let listed = h.run(&["database", "user", "list", "--database", "orders"]).await;
    let rows = cells(&listed.stdout);
    assert_eq!(rows[0][..4], ["USER", "SECRET", "STATUS", "VERSION"], "{}", listed.stdout);
    assert_eq!(rows[1][..4], ["web", "db-orders-web", "ready", "2"], "{}", listed.stdout);

    // Moved (here the same server by another name): the next rotation's
    // Agent connects there and the value names it; with a user, the
    // database stays registered.
    let moved = h.run(&["database", "update", "orders", "--host", "localhost"]).await;
    assert_eq!(moved.code, 0, "{moved:?}");
    assert_eq!(h.run(&["database", "delete", "orders"]).await.code, 6, "it still has a service user");
    let rotated = h.run(&["database", "user", "rotate", "web", "--database", "orders"]).await;
    assert_eq!(rotated.code, 0, "{rotated:?}");
    until_shown(&shown, "the rotation after the move", |u| u["current_version"] == 3).await;
    let third = h.run(&["secret", "get", "db-orders-web", "--environment", "dev"]).await;
    let third: serde_json::Value = serde_json::from_str(&third.stdout).expect("JSON");
    assert_eq!(
        (third["host"].as_str(), third["username"].as_str()),
        (Some("localhost"), Some("web_a")),
        "{third}"
    );
    assert_eq!(psql(&name, "web_a", "SELECT current_user").as_deref(), Ok("web_a"));

    // No password in the API's log (nor the Agent's), nor in the API's database.
    let second = h.run(&["secret", "get", "db-orders-web", "--environment", "dev"]).await;
    let second: serde_json::Value = serde_json::from_str(&second.stdout).expect("JSON");
    let api_db = std::fs::read(data.join("heimdall.db")).expect("the API's SQLite database");
    let api_db = String::from_utf8_lossy(&api_db).into_owned();
    for file in ["api.log", "agent.log"] {
        let text = std::fs::read_to_string(data.join(file)).expect("log");
        for credential in [&first, &second] {
            let password = credential["password"].as_str().expect("password");
            assert!(!text.contains(password), "a password is in {file}");
            assert!(!api_db.contains(password), "a password is in the API's database");
        }
    }

    // Deleted: `deleting` through the grace, then the Agent drops both
    // logins and the group role, the user is gone and the database can go.
    let deleted =
        h.run(&["database", "user", "delete", "web", "--database", "orders", "--grace", "2s"]).await;
    assert_eq!(deleted.code, 0, "{deleted:?}");
    assert!(
        deleted.stdout.starts_with("✓ Deletion requested: web in database orders\n"),
        "{}",
        deleted.stdout
    );
    let listed = h.run(&["database", "user", "list", "--database", "orders"]).await;
    assert_eq!(cells(&listed.stdout)[1][..3], ["web", "db-orders-web", "deleting"], "{}", listed.stdout);
    let roles = "SELECT count(*) FROM pg_roles WHERE rolname IN ('web', 'web_a', 'web_b')";
    until("both logins and the group dropped", || psql("postgres", "postgres", roles).as_deref() == Ok("0"))
        .await;
    // The drop is reported just after the statements ran.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    let gone = loop {
        let shown = h.run(&["database", "user", "show", "web", "--database", "orders"]).await;
        if shown.code != 0 || tokio::time::Instant::now() > deadline {
            break shown;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(gone.code, 5, "the user is gone once dropped: {gone:?}");
    let emptied = h.run(&["database", "delete", "orders"]).await;
    assert_eq!(emptied.code, 0, "{emptied:?}");

    let _ =
        std::process::Command::new("kill").args(["-TERM", &watcher.id().expect("pid").to_string()]).status();
    let _ = watcher.wait_with_output().await;
    let _ =
        std::process::Command::new("kill").args(["-TERM", &child.id().expect("pid").to_string()]).status();
    let _ = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
}
