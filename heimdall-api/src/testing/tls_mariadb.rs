//! A MariaDB server of the test's own that accepts TLS only
//! (`require_secure_transport = ON`), as a managed MySQL-family database
//! that requires it does: `mariadb-install-db` and `mariadbd` on a free
//! port, a server certificate from a CA made here, and an administrative
//! login with a password. Dropped: stopped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct TlsMariadb {
    dir: tempfile::TempDir,
    server: Child,
    pub port: u16,
    /// The CA that signed the server's certificate (PEM).
    pub ca_file: PathBuf,
    /// The administrative login (`admin`) and its password.
    pub admin: String,
    pub password: String,
}

impl TlsMariadb {
    /// Starts the server; panics with the reason if it cannot (no MariaDB
    /// server on this machine is a failure, not a skip).
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let port = super::tls_postgres::free_port();
        let password = format!("pw-{}", uuid::Uuid::new_v4().simple());
        let (ca_pem, cert_pem, key_pem) = super::tls_postgres::server_certificate();
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca_pem).expect("write CA");
        std::fs::write(dir.path().join("server.pem"), cert_pem).expect("write certificate");
        std::fs::write(dir.path().join("server.key"), key_pem).expect("write key");
        let install = Command::new("mariadb-install-db")
            .args([
                "--no-defaults",
                "--user=root",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
            ])
            .arg(format!("--datadir={}", data.display()))
            .output()
            .expect("mariadb-install-db (install MariaDB's server)");
        assert!(install.status.success(), "mariadb-install-db: {}", String::from_utf8_lossy(&install.stderr));
        let at = |name: &str| format!("{}", dir.path().join(name).display());
        let log = std::fs::File::create(dir.path().join("log")).expect("log");
        let server = Command::new("mariadbd")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .args([
                "--user=root",
                "--bind-address=127.0.0.1",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=16M",
            ])
            .arg(format!("--port={port}"))
            .arg(format!("--socket={}", at("sock")))
            .arg(format!("--pid-file={}", at("pid")))
            .arg(format!("--ssl-cert={}", at("server.pem")))
            .arg(format!("--ssl-key={}", at("server.key")))
            .arg(format!("--ssl-ca={}", at("ca.pem")))
            .arg("--require-secure-transport=ON")
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("mariadbd");
        let server = TlsMariadb { dir, server, port, ca_file, admin: "admin".into(), password };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !server.dir.path().join("sock").exists() {
            assert!(
                Instant::now() < deadline,
                "mariadbd did not start: {}",
                std::fs::read_to_string(server.dir.path().join("log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server.sql(&format!(
            "CREATE USER admin@'%' IDENTIFIED BY '{}'; GRANT ALL ON *.* TO admin@'%' WITH GRANT OPTION",
            server.password
        ));
        server
    }

    /// Runs `sql` as root over the server's Unix socket.
    pub fn sql(&self, sql: &str) {
        let socket = self.dir.path().join("sock");
        let mut last = String::new();
        // The socket appears a moment before the server takes logins.
        for _ in 0..100 {
            let out = Command::new("mariadb")
                .args(["--no-defaults", "-u", "root", "-S"])
                .arg(&socket)
                .args(["-e", sql])
                .output()
                .expect("mariadb client");
            if out.status.success() {
                return;
            }
            last = String::from_utf8_lossy(&out.stderr).into_owned();
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("mariadb -e {sql:?}: {last}");
    }
}

impl Drop for TlsMariadb {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}
