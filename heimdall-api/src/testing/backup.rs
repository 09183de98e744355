//! A backup of a test API's database taken while it serves, and its
//! restore, with the tools and steps `docs/operations.md` gives an
//! operator: `pg_dump --format=custom` and `pg_restore --clean`, SQLite's
//! `.backup` and `.restore`; every API process stopped for the restore and
//! started again after it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{spawn_server, TestApi, TestDatabase};
use crate::db;

/// A backup file, removed with the value.
#[derive(Debug)]
pub struct Backup {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestApi {
    /// The database as it is now, taken while the API serves.
    pub async fn backup(&self) -> Backup {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("heimdall.backup");
        match &self.database {
            TestDatabase::Sqlite { url, .. } => {
                let backup = format!(".backup '{}'", path.display());
                run("sqlite3", &[Path::new(sqlite_file(url)).as_os_str(), backup.as_ref()]).await;
            }
            TestDatabase::Postgres { url, .. } => {
                run(
                    "pg_dump",
                    &["--format=custom".as_ref(), "--file".as_ref(), path.as_os_str(), url.as_ref()],
                )
                .await;
            }
        }
        Backup { path, _dir: dir }
    }

    /// Stops serving, restores `backup` with the pool closed, and
    /// serves again on the same ports, CA and issuer with a new pool: a
    /// `heimdall-api serve` restarted on the restored database, which its
    /// Agents reach at the URL they know.
    pub async fn restore(&mut self, backup: &Backup) {
        if let Some(stop) = self.shutdown.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(60), task).await.expect("the API stops").ok();
        }
        self.store.pool().close().await;
        match &self.database {
            TestDatabase::Sqlite { url, .. } => {
                // SQLite's own restore, which takes the database's locks:
                // the pool's connections close on threads of their own,
                // a moment after `close` returns.
                let restore = format!(".restore '{}'", backup.path.display());
                let file = Path::new(sqlite_file(url)).as_os_str();
                run("sqlite3", &["-cmd".as_ref(), ".timeout 10000".as_ref(), file, restore.as_ref()]).await;
            }
            TestDatabase::Postgres { url, .. } => {
                let args = ["--clean", "--if-exists", "--single-transaction", "--no-owner", "--dbname", url];
                let mut args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
                args.push(backup.path.as_os_str());
                run("pg_restore", &args).await;
            }
        }
        self.store = db::connect(self.database.url()).await.expect("connect the restored database");
        let agent_addr: SocketAddr =
            self.agent_url.trim_start_matches("https://").parse().expect("the Agent channel's address");
        let options = super::Options { bind: Some((self.addr, agent_addr)), ..self.options.clone() };
        let mut server = spawn_server(self.store.clone(), self.database.url(), &self.ca_dir, &options).await;
        self.shutdown = server.shutdown.take();
        self.task = server.task.take();
        let health = format!("{}/v1/health", self.url);
        let ca = std::fs::read(self.ca_dir.join("ca.pem")).expect("the CA");
        let client = reqwest::Client::builder()
            .use_rustls_tls()
            .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("the CA"))
            .build()
            .expect("a client");
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !client.get(&health).send().await.is_ok_and(|r| r.status().is_success()) {
            assert!(std::time::Instant::now() < deadline, "the restarted API never served");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn sqlite_file(url: &str) -> &str {
    url.trim_start_matches("sqlite://")
}

async fn run(program: &str, args: &[&std::ffi::OsStr]) {
    let out = tokio::process::Command::new(program)
        .args(args)
        .output()
        .await
        .unwrap_or_else(|err| panic!("{program} must be installed (scripts/setup.sh): {err}"));
    assert!(out.status.success(), "{program}: {}", String::from_utf8_lossy(&out.stderr));
}
