//! Database service users on real PostgreSQL and MariaDB: the Agent makes
//! the alternating logins and their passwords, stores them as the
//! `db-<database>-<user>` secret, rotates onto the other login, keeps the
//! previous one working for the grace and locks it after; a kill at each
//! step of a rotation is rolled forward on restart. No password reaches
//! the API (its database dump is checked).

use std::path::Path;
use std::time::Duration;

use heimdall_core::dbusers::Credential;
use heimdall_sdk::{AgentClient, ErrorCode, Identity};
use serde_json::{json, Value};
use sqlx::Connection;

use crate::support::{agent_client, World};
use crate::values::{configure, eventually, identity, set, Store};

/// Where the test's databases are.
pub(crate) fn mariadb_root() -> sqlx::mysql::MySqlConnectOptions {
    sqlx::mysql::MySqlConnectOptions::new().host("127.0.0.1").port(3306).username("root")
}

/// Whether `credential` logs in, and as whom; the error otherwise.
pub(crate) async fn log_in(credential: &Credential) -> Result<String, String> {
    let who = match credential.engine {
        heimdall_core::dbusers::Engine::Postgres => {
            let options = sqlx::postgres::PgConnectOptions::new()
                .host(&credential.host)
                .port(credential.port)
                .username(&credential.username)
                .password(credential.password.expose())
                .database(&credential.database);
            let mut c = sqlx::PgConnection::connect_with(&options).await.map_err(|e| e.to_string())?;
            // The grant reached the group role, and through it the login.
            let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM orders")
                .fetch_one(&mut c)
                .await
                .map_err(|e| e.to_string())?;
            assert_eq!(n, 1);
            let (who,): (String,) = sqlx::query_as("SELECT current_user::text")
                .fetch_one(&mut c)
                .await
                .map_err(|e| e.to_string())?;
            who
        }
        heimdall_core::dbusers::Engine::Mariadb => {
            let options = sqlx::mysql::MySqlConnectOptions::new()
                .host(&credential.host)
                .port(credential.port)
                .username(&credential.username)
                .password(credential.password.expose())
                .database(&credential.database);
            let mut c = sqlx::MySqlConnection::connect_with(&options).await.map_err(|e| e.to_string())?;
            let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM orders")
                .fetch_one(&mut c)
                .await
                .map_err(|e| e.to_string())?;
            assert_eq!(n, 1);
            let (who,): (String,) = sqlx::query_as("SELECT SUBSTRING_INDEX(USER(), '@', 1)")
                .fetch_one(&mut c)
                .await
                .map_err(|e| e.to_string())?;
            who
        }
    };
    Ok(who)
}

/// A fresh application database with one table of one row; its name.
pub(crate) async fn app_database(engine: &str) -> String {
    let name = format!("orders_{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    match engine {
        "postgres" => {
            let admin_url = heimdall_api::testing::postgres_admin_url();
            let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
            sqlx::Executor::execute(&mut admin, format!("CREATE DATABASE {name}").as_str()).await.unwrap();
            let (base, _) = admin_url.rsplit_once('/').unwrap();
            let mut db = sqlx::PgConnection::connect(&format!("{base}/{name}")).await.unwrap();
            sqlx::Executor::execute(&mut db, "CREATE TABLE orders (id int); INSERT INTO orders VALUES (1)")
                .await
                .unwrap();
        }
        _ => {
            let mut root = sqlx::MySqlConnection::connect_with(&mariadb_root()).await.unwrap();
            for sql in [
                format!("CREATE DATABASE {name}"),
                format!("CREATE TABLE {name}.orders (id int)"),
                format!("INSERT INTO {name}.orders VALUES (1)"),
            ] {
                sqlx::Executor::execute(&mut root, sql.as_str()).await.unwrap();
            }
        }
    }
    name
}

/// An Agent holding `dev` that polls for database tasks every second.
pub(crate) async fn rotating_agent(w: &World, name: &str) -> (std::path::PathBuf, String) {
    let config = w.enroll(name).await;
    let (local_url, _) = configure(&config, Store::Sqlite, None);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("sync_seconds = 1\n", "sync_seconds = 1\ndatabase_poll_seconds = 1\n"),
    )
    .unwrap();
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": name })).await;
    (config, local_url)
}

/// The `orders-admin` secret made, once the Agent reports its local URL
/// as a holder of `dev`.
async fn admin_secret_held(w: &World, config: &Path, local_url: &str, owner: &str) {
    w.post(owner, "/v1/secrets", json!({ "name": "orders-admin" })).await;
    eventually(config, "the Agent's local URL", || async {
        let (_, holders) =
            w.call(reqwest::Method::GET, "/v1/secrets/orders-admin/holders?environment=dev", None).await;
        holders[0]["url"].as_str() == Some(local_url)
    })
    .await;
}

/// A World whose one Agent (running) holds `dev`, polls for database
/// tasks every second and holds the `orders-admin` secret.
struct Rotating {
    w: World,
    config: std::path::PathBuf,
    local_url: String,
    owner: String,
    agent: tokio::process::Child,
    me: Identity,
}

impl Rotating {
    async fn start() -> Self {
        let w = World::new().await;
        let (config, local_url) = rotating_agent(&w, "agent-1").await;
        let owner = w.api.owner_token.clone();
        let agent = w.run_agent(&config);
        let me = identity(&w, &owner).await;
        admin_secret_held(&w, &config, &local_url, &owner).await;
        Rotating { w, config, local_url, owner, agent, me }
    }
}

pub(crate) async fn user(w: &World, db: &str, name: &str) -> Value {
    let (status, user) =
        w.call(reqwest::Method::GET, &format!("/v1/databases/{db}/users/{name}"), None).await;
    assert_eq!(status, 200, "{user}");
    user
}

pub(crate) async fn credential(
    agent: &AgentClient,
    secret: &str,
    version: Option<i64>,
) -> Result<(i64, Credential), heimdall_sdk::Error> {
    let answer = agent.get_value(secret, "dev", version).await?;
    Ok((answer.version, serde_json::from_str(answer.value.expose()).unwrap()))
}

/// Waits for the user's current version to be `version`, with no task in flight.
pub(crate) async fn until_version(w: &World, config: &Path, db: &str, name: &str, version: i64) {
    eventually(config, &format!("version {version} of {db}/{name}"), || async {
        let u = user(w, db, name).await;
        u["current_version"] == json!(version) && u.get("pending_version").is_none()
    })
    .await;
}

/// The whole life of a service user on one engine.
async fn scenario(engine: &str, admin_value: Value, port: u16) {
    let Rotating { w, config, local_url, owner, mut agent, me } = Rotating::start().await;
    assert_eq!(set(&w, &owner, &me, "orders-admin", "dev", &admin_value.to_string()).await, 1);
    let name = app_database(engine).await;

    // Nothing but where the database is: a password in the body is refused.
    let body = json!({
        "name": "orders", "engine": engine, "host": "127.0.0.1", "port": port, "database": name,
        "environment": "dev", "admin_secret": "orders-admin",
    });
    let mut with_value = body.clone();
    with_value["password"] = json!("hunter2");
    let (status, refused) = w.call(reqwest::Method::POST, "/v1/databases", Some(with_value)).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (400, Some("VALUE_NOT_ACCEPTED")), "{refused}");
    w.post(&owner, "/v1/databases", body).await;
    let grants = if engine == "postgres" {
        "SELECT ON ALL TABLES IN SCHEMA public".to_owned()
    } else {
        format!("SELECT ON {name}.*")
    };
    let made = w
        .post(
            &owner,
            "/v1/databases/orders/users",
            json!({ "name": "app", "rotate_every": "1d", "grace": "4s", "grants": grants }),
        )
        .await;
    assert_eq!(made["secret"], "db-orders-app");

    // Created by the Agent: the app logs in with what `secret get` gives.
    until_version(&w, &config, "orders", "app", 1).await;
    let reader = agent_client(&config, &local_url, &me);
    eventually(&config, "the user's secret in the Agent's snapshot", || async {
        credential(&reader, "db-orders-app", None).await.is_ok()
    })
    .await;
    let (v1, first) = credential(&reader, "db-orders-app", None).await.unwrap();
    assert_eq!((v1, first.username.as_str()), (1, "app_a"));
    assert_eq!(log_in(&first).await.unwrap(), "app_a");

    // Rotated onto the other login; the previous one works during the grace.
    w.post(&owner, "/v1/databases/orders/users/app/rotate", json!({})).await;
    until_version(&w, &config, "orders", "app", 2).await;
    let (v2, second) = credential(&reader, "db-orders-app", None).await.unwrap();
    assert_eq!((v2, second.username.as_str()), (2, "app_b"));
    assert_ne!(first.password.expose(), second.password.expose());
    assert_eq!(log_in(&second).await.unwrap(), "app_b");
    assert_eq!(log_in(&first).await.unwrap(), "app_a", "the old login works during the grace");
    let (status, early) =
        w.call(reqwest::Method::POST, "/v1/databases/orders/users/app/rotate", Some(json!({}))).await;
    assert_eq!(
        (status, early["error"]["code"].as_str()),
        (409, Some("CONFLICT")),
        "no rotation onto a login in its grace"
    );

    // After the grace: the old login is locked, its version deactivated (410).
    eventually(&config, "the old login retired", || async {
        user(&w, "orders", "app").await.get("grace_until").is_none()
    })
    .await;
    let locked = log_in(&first).await;
    assert!(locked.is_err(), "the old credentials fail after the grace: {locked:?}");
    assert_eq!(log_in(&second).await.unwrap(), "app_b");
    // Erased after the grace (the rotation's overlap), then deactivated
    // when retired: the deactivation is what a read says in the end.
    eventually(&config, "version 1 deactivated at the Agent", || async {
        credential(&reader, "db-orders-app", Some(1)).await.err().and_then(|e| e.code())
            == Some(ErrorCode::VersionDeactivated)
    })
    .await;

    // The next rotation goes back to the first login, with a new password.
    w.post(&owner, "/v1/databases/orders/users/app/rotate", json!({})).await;
    until_version(&w, &config, "orders", "app", 3).await;
    let (_, third) = credential(&reader, "db-orders-app", None).await.unwrap();
    assert_eq!(third.username, "app_a");
    assert_eq!(log_in(&third).await.unwrap(), "app_a");

    // Each step is in the audit feed; no password is in the API's database.
    let (_, events) = w.call(reqwest::Method::GET, "/v1/events?limit=200", None).await;
    let actions: Vec<&str> = events.as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    for action in [
        "database.created",
        "database.user_created",
        "database.user_ready",
        "database.user_rotated",
        "database.login_retired",
    ] {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }
    let dump = w.api.database_text().await;
    let agent_log = std::fs::read_to_string(config.with_extension("log")).unwrap();
    for password in [&first.password, &second.password, &third.password] {
        assert!(!dump.contains(password.expose().as_str()), "a password is in the API's database");
        assert!(!agent_log.contains(password.expose().as_str()), "a password is in the Agent's log");
    }
    let listed = w.call(reqwest::Method::GET, "/v1/databases/orders/users", None).await.1;
    assert_eq!(listed[0]["current_version"], 3, "{listed}");
    agent.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_service_user_is_created_rotated_and_its_old_login_retired_after_the_grace() {
    scenario("postgres", json!({ "username": "postgres", "password": "unused-with-trust" }), 5432).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_service_user_is_created_rotated_and_its_old_login_retired_after_the_grace() {
    scenario("mariadb", json!({ "username": "root", "password": "" }), 3306).await;
}

/// Killed at each step of a rotation (before the pending version is
/// committed, after it, after the database has the password, after the
/// version is stored): the application's stored credentials keep working,
/// and the restarted Agent finishes the rotation (with the password it
/// recorded, once it recorded one). Roles are the server's, shared by the
/// tests running at once: this test's user has a name of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_killed_at_any_step_is_rolled_forward_on_restart() {
    let Rotating { w, config, local_url, owner, mut agent, me } = Rotating::start().await;
    let admin = json!({ "username": "postgres", "password": "unused-with-trust" });
    set(&w, &owner, &me, "orders-admin", "dev", &admin.to_string()).await;
    let name = app_database("postgres").await;
    w.post(
        &owner,
        "/v1/databases",
        json!({
            "name": "orders", "engine": "postgres", "host": "127.0.0.1", "port": 5432, "database": name,
            "environment": "dev", "admin_secret": "orders-admin",
        }),
    )
    .await;
    w.post(&owner, "/v1/databases/orders/users", json!({
        "name": "crash", "rotate_every": "1d", "grace": "1s", "grants": "SELECT ON ALL TABLES IN SCHEMA public",
    }))
    .await;
    until_version(&w, &config, "orders", "crash", 1).await;
    let reader = agent_client(&config, &local_url, &me);
    eventually(&config, "the user's secret", || async {
        credential(&reader, "db-orders-crash", None).await.is_ok()
    })
    .await;
    agent.kill().await.unwrap();

    let mut version = 1;
    for point in ["generated", "pending", "altered", "stored"] {
        let mut crashing = w.run_agent_with(&config, &[("HEIMDALL_TEST_CRASH_AT", point)]);
        eventually(&config, "the Agent's local API", || async {
            credential(&reader, "db-orders-crash", None).await.is_ok()
        })
        .await;
        let (held, before) = credential(&reader, "db-orders-crash", None).await.unwrap();
        assert_eq!(held, version);
        w.post(&owner, "/v1/databases/orders/users/crash/rotate", json!({})).await;
        let exited = tokio::time::timeout(Duration::from_secs(30), crashing.wait()).await;
        let status = exited.unwrap_or_else(|_| panic!("the Agent did not stop at {point}")).unwrap();
        assert!(!status.success(), "stopped at {point}: {status}");

        // Down mid-rotation: the API still names the version in flight, and
        // the application's stored credentials still log in.
        let pending = user(&w, "orders", "crash").await;
        assert_eq!(pending["pending_version"], version + 1, "{point}: {pending}");
        // (The reason is printed: this failed once in CI at `generated`
        // and has not been seen since; it must say why next time.)
        if let Err(why) = log_in(&before).await {
            panic!("{point}: the stored credentials no longer log in: {why}");
        }
        let mut restarted = w.run_agent(&config);

        // Restarted: the rotation completes with the recorded password.
        version += 1;
        until_version(&w, &config, "orders", "crash", version).await;
        let (now_held, after) = credential(&reader, "db-orders-crash", None).await.unwrap();
        assert_eq!(now_held, version);
        assert!(log_in(&after).await.is_ok(), "{point}: the rotated credentials log in");
        // The grace ends and the old login is retired before the next round.
        eventually(&config, "no login in its grace", || async {
            user(&w, "orders", "crash").await.get("grace_until").is_none()
        })
        .await;
        restarted.kill().await.unwrap();
    }
}

/// A managed database that accepts TLS only (a `hostssl`-only
/// `pg_hba.conf`, as RDS with `rds.force_ssl`; MariaDB with
/// `require_secure_transport`): registered without TLS, the user's creation
/// fails with the reason in `database user show`; registered with
/// `verify-full` and the server's CA, the service user is made over
/// verified TLS and logs in over TLS.
/// A webhook receiver on loopback: its URL, and the events it was sent.
async fn webhook() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    let received: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = std::sync::Arc::default();
    let kept = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().extend(serde_json::from_slice::<Value>(&body).ok());
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, received)
}

async fn requires_tls(engine: &str, port: u16, admin: Value, ca_file: &Path, password: &str, database: &str) {
    let Rotating { w, config, local_url, owner, mut agent, me } = Rotating::start().await;
    set(&w, &owner, &me, "orders-admin", "dev", &admin.to_string()).await;
    let grants = if engine == "postgres" {
        "SELECT ON ALL TABLES IN SCHEMA public".to_owned()
    } else {
        format!("SELECT ON {database}.*")
    };
    let user_body = json!({ "name": "app", "rotate_every": "1d", "grace": "1s", "grants": grants });

    // An owner's channel: a failed rotation is one of the events it carries.
    let notified = webhook().await;
    w.post(&owner, "/v1/notifications", json!({ "name": "ops", "webhook": notified.0 })).await;

    // Cleartext (allowed on this machine by `--tls disable`): the server refuses.
    w.post(
        &owner,
        "/v1/databases",
        json!({
            "name": "plain", "engine": engine, "host": "localhost", "port": port, "database": database,
            "environment": "dev", "admin_secret": "orders-admin", "tls": "disable",
        }),
    )
    .await;
    w.post(&owner, "/v1/databases/plain/users", user_body.clone()).await;
    eventually(&config, "the refusal in the user's last error", || async {
        user(&w, "plain", "app").await["last_error"].as_str().is_some_and(|e| e.contains("cannot connect"))
    })
    .await;
    let refused = user(&w, "plain", "app").await;
    let reason = refused["last_error"].as_str().unwrap();
    assert!(reason.contains("--tls verify-full --ca-file") && !reason.contains(password), "{reason}");
    // ... and the same reason reaches the owner's channel.
    eventually(&config, "the failure notified", || async {
        notified.1.lock().unwrap().iter().any(|event| event["action"] == "database.rotation_failed")
    })
    .await;
    let events = notified.1.lock().unwrap().clone();
    let failed = events.iter().find(|event| event["action"] == "database.rotation_failed").unwrap();
    let told = failed["detail"]["reason"].as_str().unwrap_or_default();
    assert!(told.contains("--tls verify-full --ca-file"), "{failed}");
    assert!(!failed.to_string().contains(password), "{failed}");

    // Verified TLS, with the database's own CA: made, and the login works.
    let ca_pem = std::fs::read_to_string(ca_file).unwrap();
    w.post(
        &owner,
        "/v1/databases",
        json!({
            "name": "orders", "engine": engine, "host": "localhost", "port": port, "database": database,
            "environment": "dev", "admin_secret": "orders-admin", "tls": "verify-full", "ca_pem": ca_pem,
        }),
    )
    .await;
    w.post(&owner, "/v1/databases/orders/users", user_body).await;
    until_version(&w, &config, "orders", "app", 1).await;
    let reader = agent_client(&config, &local_url, &me);
    eventually(&config, "the user's secret", || async {
        credential(&reader, "db-orders-app", None).await.is_ok()
    })
    .await;
    let (_, made) = credential(&reader, "db-orders-app", None).await.unwrap();
    let n: i64 = if engine == "postgres" {
        let options = sqlx::postgres::PgConnectOptions::new()
            .host(&made.host)
            .port(made.port)
            .username(&made.username)
            .password(made.password.expose())
            .database(&made.database)
            .ssl_mode(sqlx::postgres::PgSslMode::VerifyFull)
            .ssl_root_cert(ca_file);
        let mut app = sqlx::PgConnection::connect_with(&options).await.unwrap();
        sqlx::query_scalar("SELECT count(*) FROM orders").fetch_one(&mut app).await.unwrap()
    } else {
        let options = sqlx::mysql::MySqlConnectOptions::new()
            .host(&made.host)
            .port(made.port)
            .username(&made.username)
            .password(made.password.expose())
            .database(&made.database)
            .ssl_mode(sqlx::mysql::MySqlSslMode::VerifyIdentity)
            .ssl_ca(ca_file);
        let mut app = sqlx::MySqlConnection::connect_with(&options).await.unwrap();
        sqlx::query_scalar("SELECT count(*) FROM orders").fetch_one(&mut app).await.unwrap()
    };
    assert_eq!(n, 1);
    let dump = w.api.database_text().await;
    assert!(!dump.contains(password) && !dump.contains(made.password.expose().as_str()));
    agent.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_user_on_a_postgres_that_requires_tls_is_made_over_verified_tls() {
    let server = heimdall_api::testing::TlsPostgres::start();
    server.create_database("orders_tls");
    server.psql("orders_tls", "CREATE TABLE orders (id int); INSERT INTO orders VALUES (1)");
    let admin = json!({ "username": "postgres", "password": server.password });
    requires_tls("postgres", server.port, admin, &server.ca_file, &server.password, "orders_tls").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_user_on_a_mariadb_that_requires_tls_is_made_over_verified_tls() {
    let server = heimdall_api::testing::TlsMariadb::start();
    server.sql("CREATE DATABASE orders_tls; CREATE TABLE orders_tls.orders (id int); INSERT INTO orders_tls.orders VALUES (1)");
    let admin = json!({ "username": server.admin, "password": server.password });
    requires_tls("mariadb", server.port, admin, &server.ca_file, &server.password, "orders_tls").await;
}

/// The roles of `user` (its group and both logins) that exist on `engine`'s server.
async fn roles_left(engine: &str, user: &str) -> i64 {
    let [a, b] = heimdall_core::dbusers::logins(user);
    if engine == "postgres" {
        let mut admin =
            sqlx::PgConnection::connect(&heimdall_api::testing::postgres_admin_url()).await.unwrap();
        sqlx::query_scalar("SELECT count(*) FROM pg_roles WHERE rolname IN ($1, $2, $3)")
            .bind(user)
            .bind(&a)
            .bind(&b)
            .fetch_one(&mut admin)
            .await
            .unwrap()
    } else {
        let mut root = sqlx::MySqlConnection::connect_with(&mariadb_root()).await.unwrap();
        sqlx::query_scalar("SELECT count(*) FROM mysql.user WHERE User IN (?, ?, ?)")
            .bind(user)
            .bind(&a)
            .bind(&b)
            .fetch_one(&mut root)
            .await
            .unwrap()
    }
}

/// `database user delete` on real PostgreSQL and MariaDB: the login keeps
/// working through the grace, then the Agent drops both logins and the
/// group role (granted privileges revoked first), the user is gone, its
/// secret is deleted from the Agent, and the database can be deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_service_user_loses_both_logins_after_the_grace_on_postgres_and_mariadb() {
    let Rotating { w, config, local_url, owner, mut agent, me } = Rotating::start().await;
    let reader = agent_client(&config, &local_url, &me);
    for (engine, port, admin) in [
        ("postgres", 5432, json!({ "username": "postgres", "password": "unused-with-trust" })),
        ("mariadb", 3306, json!({ "username": "root", "password": "" })),
    ] {
        let admin_secret = format!("{engine}-admin");
        w.post(&owner, "/v1/secrets", json!({ "name": admin_secret })).await;
        set(&w, &owner, &me, &admin_secret, "dev", &admin.to_string()).await;
        let name = app_database(engine).await;
        let db = format!("{engine}-orders");
        w.post(
            &owner,
            "/v1/databases",
            json!({
                "name": db, "engine": engine, "host": "127.0.0.1", "port": port, "database": name,
                "environment": "dev", "admin_secret": admin_secret,
            }),
        )
        .await;
        // Roles are the server's, not one database's: a name of this test's own.
        let user_name = format!("gone_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let grants = if engine == "postgres" {
            "SELECT ON ALL TABLES IN SCHEMA public".to_owned()
        } else {
            format!("SELECT ON {name}.*")
        };
        w.post(
            &owner,
            &format!("/v1/databases/{db}/users"),
            json!({ "name": user_name, "rotate_every": "1d", "grace": "1s", "grants": grants }),
        )
        .await;
        until_version(&w, &config, &db, &user_name, 1).await;
        let secret = heimdall_core::dbusers::secret_name(&db, &user_name);
        eventually(&config, "the user's secret", || async {
            credential(&reader, &secret, None).await.is_ok()
        })
        .await;
        let (_, login) = credential(&reader, &secret, None).await.unwrap();
        assert_eq!(roles_left(engine, &user_name).await, 3, "{engine}: the group and both logins");

        // Deleted: the current login works through the grace.
        let path = format!("/v1/databases/{db}/users/{user_name}");
        let (status, deleting) = w.call(reqwest::Method::DELETE, &format!("{path}?grace=5s"), None).await;
        assert_eq!(status, 202, "{deleting}");
        assert!(deleting["drop_after"].is_string(), "{deleting}");
        assert!(log_in(&login).await.is_ok(), "{engine}: the login works during the grace");

        // Then dropped: nothing of the user is left on the server.
        eventually(&config, "the user gone", || async {
            w.call(reqwest::Method::GET, &path, None).await.0 == 404
        })
        .await;
        let refused = log_in(&login).await;
        assert!(refused.is_err(), "{engine}: the login fails once dropped: {refused:?}");
        assert_eq!(roles_left(engine, &user_name).await, 0, "{engine}: no role left");
        eventually(&config, "the user's secret deleted from the Agent", || async {
            credential(&reader, &secret, None).await.is_err()
        })
        .await;
        let (status, body) = w.call(reqwest::Method::DELETE, &format!("/v1/databases/{db}"), None).await;
        assert_eq!(status, 204, "{engine}: the database has no users left: {body}");
    }
    let (_, events) = w.call(reqwest::Method::GET, "/v1/events?action=database.user_deleted", None).await;
    assert_eq!(events.as_array().map(Vec::len), Some(2), "{events}");
    agent.kill().await.unwrap();
}
