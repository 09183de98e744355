//! Test support (feature `testing`): a real API server on a loopback port,
//! over SQLite in a temporary directory or a fresh PostgreSQL database; a
//! PostgreSQL and a MariaDB server of the test's own that accept TLS only.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

mod backup;
mod tls_mariadb;
mod tls_postgres;

use std::net::SocketAddr;

use heimdall_wire::Bootstrapped;
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::config::{FileConfig, ServeConfig};
use crate::db::{self, SqlStore};
use crate::SystemClock;

pub use backup::Backup;
pub use tls_mariadb::TlsMariadb;
pub use tls_postgres::TlsPostgres;

/// `HEIMDALL_TEST_POSTGRES_URL`, else the machine's PostgreSQL.
pub fn postgres_admin_url() -> String {
    std::env::var("HEIMDALL_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// A database that exists for one test and is dropped after it.
#[derive(Debug)]
pub enum TestDatabase {
    Sqlite { _dir: tempfile::TempDir, url: String },
    Postgres { admin_url: String, name: String, url: String },
}

impl TestDatabase {
    pub async fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("heimdall.db").display());
        TestDatabase::Sqlite { _dir: dir, url }
    }

    /// Creates `heimdall_test_<random>` on the PostgreSQL server.
    pub async fn postgres() -> Self {
        use sqlx::Connection;
        let admin_url = postgres_admin_url();
        let name = format!("heimdall_test_{}", Uuid::new_v4().simple());
        let mut conn = sqlx::PgConnection::connect(&admin_url)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL must run at {}: {e}", db::describe_url(&admin_url)));
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create test database");
        conn.close().await.ok();
        let base = admin_url.rsplit_once('/').map_or(admin_url.as_str(), |(b, _)| b);
        let url = format!("{base}/{name}");
        TestDatabase::Postgres { admin_url, name, url }
    }

    pub fn url(&self) -> &str {
        match self {
            TestDatabase::Sqlite { url, .. } | TestDatabase::Postgres { url, .. } => url,
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let TestDatabase::Postgres { admin_url, name, .. } = self {
            let (admin_url, name) = (admin_url.clone(), name.clone());
            // Drop runs outside any runtime guarantee: use a private one.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
                rt.block_on(async {
                    use sqlx::Connection;
                    let mut conn = sqlx::PgConnection::connect(&admin_url).await.ok()?;
                    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut conn)
                        .await
                        .ok()?;
                    conn.close().await.ok()
                })
            })
            .join();
        }
    }
}

/// A DNS name in the test API's own certificates (besides loopback).
pub const API_TEST_NAME: &str = "api.heimdall.test";

/// A running API with a bootstrapped organization `acme` owned by
/// `owner@example.com`.
#[derive(Debug)]
pub struct TestApi {
    pub url: String,
    pub addr: SocketAddr,
    pub owner_token: String,
    pub bootstrapped: Bootstrapped,
    pub store: SqlStore,
    /// The mTLS Agent channel (`https://127.0.0.1:PORT`) and its CA.
    pub agent_url: String,
    pub ca_dir: std::path::PathBuf,
    _ca_tmp: tempfile::TempDir,
    shutdown: Option<oneshot::Sender<()>>,
    /// The server's task: a restore waits for it to end.
    task: Option<tokio::task::JoinHandle<()>>,
    /// How it was started: a restart serves the same way.
    options: Options,
    // Declared last: dropped after the server has been told to stop.
    pub database: TestDatabase,
}

impl TestApi {
    pub async fn sqlite() -> Self {
        Self::start(TestDatabase::sqlite().await).await
    }

    pub async fn postgres() -> Self {
        Self::start(TestDatabase::postgres().await).await
    }

    /// The API serving people plain HTTP (the tests' usual client).
    pub async fn start(database: TestDatabase) -> Self {
        Self::start_with(database, false).await
    }

    /// The API serving people HTTPS with a certificate from its CA, as
    /// `heimdall-api serve --ca-dir` does.
    pub async fn https(database: TestDatabase) -> Self {
        Self::start_with(database, true).await
    }

    /// The API federating `oidc` accounts' jobs with the STS at `sts_endpoint` (moto).
    pub async fn with_sts(database: TestDatabase, sts_endpoint: &str) -> Self {
        let options = Options { sts_endpoint: Some(sts_endpoint.to_owned()), ..Options::default() };
        Self::with_options(database, options).await
    }

    async fn start_with(database: TestDatabase, https: bool) -> Self {
        Self::with_options(database, Options { https, ..Options::default() }).await
    }

    /// The API reading time from `clock` (a `ManualClock` drives schedules).
    pub async fn with_clock(
        database: TestDatabase,
        clock: std::sync::Arc<dyn heimdall_core::clock::Clock>,
    ) -> Self {
        Self::with_options(database, Options { clock: Some(clock), ..Options::default() }).await
    }

    /// The API on `database`, bootstrapped, as `options` say.
    pub async fn with_options(database: TestDatabase, options: Options) -> Self {
        let store = db::connect(database.url()).await.expect("connect test database");
        let bootstrapped = crate::bootstrap::bootstrap(&store, &SystemClock, "acme", "owner@example.com")
            .await
            .expect("bootstrap");
        let ca_tmp = tempfile::tempdir().expect("temp dir");
        let mut server = spawn_server(store.clone(), database.url(), ca_tmp.path(), &options).await;
        TestApi {
            url: server.url.clone(),
            addr: server.addr,
            owner_token: bootstrapped.token.clone(),
            bootstrapped,
            store,
            agent_url: server.agent_url.clone(),
            ca_dir: ca_tmp.path().to_path_buf(),
            _ca_tmp: ca_tmp,
            shutdown: server.shutdown.take(),
            task: server.task.take(),
            options,
            database,
        }
    }

    /// Registers (with `token`, which may register Agents) and enrolls an
    /// Agent `name` through the real routes: its mTLS client for the Agent
    /// channel, and the enrollment answer.
    pub async fn enroll_agent(&self, token: &str, name: &str) -> (reqwest::Client, serde_json::Value) {
        let people = reqwest::Client::new();
        let registration: serde_json::Value = people
            .post(format!("{}/v1/agents/registrations", self.url))
            .bearer_auth(token)
            .json(&serde_json::json!({ "name": name }))
            .send()
            .await
            .expect("register an Agent")
            .error_for_status()
            .expect("the registration answers 201")
            .json()
            .await
            .expect("the registration");
        let key = rcgen::KeyPair::generate().expect("a key");
        let csr = rcgen::CertificateParams::default()
            .serialize_request(&key)
            .expect("a CSR")
            .pem()
            .expect("its PEM");
        let enrolled: serde_json::Value = people
            .post(format!("{}/v1/agents/enroll", self.url))
            .json(&serde_json::json!({ "token": registration["token"], "csr_pem": csr }))
            .send()
            .await
            .expect("enroll")
            .error_for_status()
            .expect("the enrollment answers 201")
            .json()
            .await
            .expect("the enrollment");
        let ca = enrolled["ca_pem"].as_str().expect("ca_pem");
        let identity = format!(
            "{}\n{}",
            enrolled["certificate_pem"].as_str().expect("certificate_pem"),
            key.serialize_pem()
        );
        let client = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).expect("the CA"))
            .identity(reqwest::Identity::from_pem(identity.as_bytes()).expect("the identity"))
            .build()
            .expect("the Agent's client");
        (client, enrolled)
    }

    /// Another API process on the same database, CA and issuer: a replica
    /// behind the same load balancer. It stops when dropped.
    /// PostgreSQL only (SQLite serves one process).
    pub async fn replica(&self, options: Options) -> Replica {
        assert!(matches!(self.database, TestDatabase::Postgres { .. }), "replicas share a PostgreSQL");
        let store = db::connect(self.database.url()).await.expect("connect test database");
        let https = options.https;
        let replica = spawn_server(store, self.database.url(), &self.ca_dir, &options).await;
        if !https {
            // Serving: what a replica does as it starts (`start_sync_epoch`) is done.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let health = format!("{}/v1/health", replica.url);
            while !reqwest::get(&health).await.is_ok_and(|r| r.status().is_success()) {
                assert!(std::time::Instant::now() < deadline, "the replica never served");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
        replica
    }
}

/// How a test API is started.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// People's listener serves HTTPS with a certificate from its CA.
    pub https: bool,
    /// Federate `oidc` accounts' jobs with this STS (moto).
    pub sts_endpoint: Option<String>,
    /// Read time from this clock (default: the system's).
    pub clock: Option<std::sync::Arc<dyn heimdall_core::clock::Clock>>,
    /// How often a waiting claim re-checks the queue unwoken (default 1 s).
    pub claim_recheck: Option<std::time::Duration>,
    /// Webhooks may not reach this machine (the default config's): by
    /// default the tests' receivers on loopback are allowed.
    pub webhooks_off_loopback: bool,
    /// Listen on these addresses (people's, the Agent channel's) rather
    /// than on free ports: a restart keeps its Agents' URL.
    pub bind: Option<(SocketAddr, SocketAddr)>,
}

/// One running API server: where it listens; it stops when dropped.
#[derive(Debug)]
pub struct Replica {
    pub url: String,
    pub addr: SocketAddr,
    pub agent_url: String,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// Serves the API on `store` (at `database_url`) with the CA and issuer
/// kept in `ca_dir`.
async fn spawn_server(
    store: db::SqlStore,
    database_url: &str,
    ca_dir: &std::path::Path,
    options: &Options,
) -> Replica {
    let mut config = ServeConfig::resolve(
        Some(database_url.to_owned()),
        Some("127.0.0.1:0".into()),
        FileConfig::default(),
    )
    .expect("test config");
    // Failed notifications are tried again within the test's patience.
    config.notification_retry = std::time::Duration::from_millis(200);
    // The tests' webhook receivers listen on loopback, which only an
    // owner's allow-list opens (`webhook_allow_cidrs`).
    if !options.webhooks_off_loopback {
        config.webhook_allow_cidrs = vec!["127.0.0.0/8".parse().expect("a range")];
    }
    if let Some(recheck) = options.claim_recheck {
        config.claim_recheck = recheck;
    }
    let (listen, agent_listen) = options.bind.unwrap_or((config.listen, ([127, 0, 0, 1], 0).into()));
    let listener = tokio::net::TcpListener::bind(listen).await.expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let ca = crate::pki::Ca::load_or_create(ca_dir).expect("test CA");
    let scheme = if options.https { "https" } else { "http" };
    let people_tls = options.https.then(|| {
        std::sync::Arc::new(
            ca.https_server_config(&["localhost".into(), "127.0.0.1".into()]).expect("people's TLS"),
        )
    });
    let agent_listener = tokio::net::TcpListener::bind(agent_listen).await.expect("bind loopback");
    let agent_url = format!("https://127.0.0.1:{}", agent_listener.local_addr().expect("addr").port());
    let agents = crate::AgentListener {
        listener: agent_listener,
        ca: std::sync::Arc::new(ca),
        public_url: agent_url.clone(),
        // A name of the API's own, beside the loopback ones: Agents may
        // not get a certificate for it.
        tls_names: vec!["localhost".into(), "127.0.0.1".into(), API_TEST_NAME.into()],
        federation: Some(crate::federation::Federation::new(
            std::sync::Arc::new(
                crate::oidc::Issuer::load_or_create(&ca_dir.join("oidc"), &format!("{scheme}://{addr}"))
                    .expect("test OIDC issuer"),
            ),
            options.sts_endpoint.clone(),
        )),
        notifications: Some(std::sync::Arc::new(
            crate::notifications::SigningKey::load_or_create(&ca_dir.join("notifications.key"))
                .expect("notification key"),
        )),
    };
    let clock = options.clock.clone().unwrap_or_else(|| std::sync::Arc::new(SystemClock));
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(async move {
        let stop = async {
            let _ = rx.await;
        };
        let _ =
            crate::serve_with_clock(listener, people_tls, Some(agents), store, &config, clock, stop).await;
    });
    Replica { url: format!("{scheme}://{addr}"), addr, agent_url, shutdown: Some(tx), task: Some(task) }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

impl Drop for TestApi {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// Every row of every table of a PostgreSQL database, as text.
pub async fn dump_rows(pool: &sqlx::AnyPool) -> String {
    use sqlx::Row;
    let tables: Vec<String> = sqlx::query(
        "SELECT table_name::text AS t FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    )
    .fetch_all(pool)
    .await
    .expect("list tables")
    .iter()
    .map(|r| r.get("t"))
    .collect();
    assert!(!tables.is_empty(), "the database has no tables");
    let mut text = String::new();
    for table in tables {
        for row in sqlx::query(&format!("SELECT CAST(t AS TEXT) AS row FROM \"{table}\" t"))
            .fetch_all(pool)
            .await
            .expect("read rows")
        {
            text.push_str(&row.get::<String, _>("row"));
            text.push('\n');
        }
    }
    text
}

impl TestApi {
    /// Everything the API's database holds, as text: on SQLite the database
    /// file and its WAL byte for byte; on PostgreSQL every row of every table.
    pub async fn database_text(&self) -> String {
        match &self.database {
            TestDatabase::Sqlite { url, .. } => {
                let path = url.trim_start_matches("sqlite://");
                let mut bytes = std::fs::read(path).unwrap_or_default();
                bytes.extend(std::fs::read(format!("{path}-wal")).unwrap_or_default());
                String::from_utf8_lossy(&bytes).into_owned()
            }
            TestDatabase::Postgres { .. } => dump_rows(self.store.pool()).await,
        }
    }
}
