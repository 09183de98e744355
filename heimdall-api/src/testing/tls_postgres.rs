//! A PostgreSQL server of the test's own that accepts TLS only, as a managed
//! database that requires it does: `initdb` and `pg_ctl` on a free port, a
//! server certificate from a CA made here, `hostssl` lines alone in
//! `pg_hba.conf`, and a password (SCRAM) on its superuser. Dropped: stopped.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

#[derive(Debug)]
pub struct TlsPostgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    /// The CA that signed the server's certificate (PEM).
    pub ca_file: PathBuf,
    /// A CA that signed nothing this server shows.
    pub wrong_ca_file: PathBuf,
    /// The superuser's password: a test checks no output carries it.
    pub password: String,
}

impl TlsPostgres {
    /// Starts the server; panics with the reason if it cannot (no `initdb`
    /// on this machine is a failure, not a skip).
    pub fn start() -> Self {
        let bin = bin_dir();
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let port = free_port();
        let password = format!("pw-{}", uuid::Uuid::new_v4().simple());
        let (ca_pem, cert_pem, key_pem) = server_certificate();
        let (wrong_ca, _, _) = server_certificate();
        let ca_file = dir.path().join("ca.pem");
        let wrong_ca_file = dir.path().join("wrong-ca.pem");
        std::fs::write(&ca_file, ca_pem).expect("write CA");
        std::fs::write(&wrong_ca_file, wrong_ca).expect("write wrong CA");
        // initdb refuses root: the server runs as the machine's postgres user.
        let owner = as_server_user(dir.path());
        run(owner.command(&bin.join("initdb")).args(["-D"]).arg(&data).args([
            "-U",
            "postgres",
            "--auth-local=trust",
            "--auth-host=reject",
        ]));
        write_owned(&data.join("server.crt"), &cert_pem, &owner);
        write_owned(&data.join("server.key"), &key_pem, &owner);
        let conf = format!(
            "\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\nport = {port}\n\
             listen_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\npassword_encryption = 'scram-sha-256'\n\
             fsync = off\n",
            dir.path().display()
        );
        append(&data.join("postgresql.conf"), &conf);
        // TLS or nothing: no `host` line, so a cleartext client is refused.
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
        )
        .expect("pg_hba.conf");
        owner.chown(&data.join("pg_hba.conf"));
        run(owner
            .command(&bin.join("pg_ctl"))
            .arg("-D")
            .arg(&data)
            .args(["-w", "-l"])
            .arg(dir.path().join("log"))
            .arg("start"));
        let server = TlsPostgres { dir, bin, port, ca_file, wrong_ca_file, password };
        server.psql("postgres", &format!("ALTER USER postgres PASSWORD '{}'", server.password));
        server
    }

    /// `CREATE DATABASE name`, over the server's Unix socket.
    pub fn create_database(&self, name: &str) {
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
    }

    /// A URL with the password, for `database` and these query parameters.
    pub fn url(&self, database: &str, params: &str) -> String {
        format!("postgres://postgres:{}@localhost:{}/{database}?{params}", self.password, self.port)
    }

    /// The URL an operator writes for a database that requires TLS.
    pub fn verified_url(&self, database: &str) -> String {
        self.url(database, &format!("sslmode=verify-full&sslrootcert={}", self.ca_file.display()))
    }

    /// Runs `sql` in `database` as the superuser, over the Unix socket.
    pub fn psql(&self, database: &str, sql: &str) {
        let psql = self.bin.join("psql");
        let psql = if psql.exists() { psql } else { PathBuf::from("psql") };
        run(Command::new(psql)
            .args(["-v", "ON_ERROR_STOP=1", "-q", "-U", "postgres", "-h"])
            .arg(self.dir.path())
            .args(["-p", &self.port.to_string(), "-d", database, "-c", sql]));
    }
}

impl Drop for TlsPostgres {
    fn drop(&mut self) {
        let owner = as_server_user(self.dir.path());
        let _ = owner
            .command(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-m", "immediate", "stop"])
            .output();
    }
}

/// The newest PostgreSQL server binaries installed (Debian keeps them
/// under /usr/lib/postgresql/<major>/bin).
fn bin_dir() -> PathBuf {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let major = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((major, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .expect("initdb not found under /usr/lib/postgresql: install PostgreSQL's server")
}

/// A CA, and a server certificate it signed for `localhost` and
/// `127.0.0.1`, with its key: (CA, certificate, key), PEM.
pub(super) fn server_certificate() -> (String, String, String) {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca = CertificateParams::default();
    ca.distinguished_name.push(DnType::CommonName, "test database CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    let ca_pem = ca.self_signed(&ca_key).expect("CA").pem();
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key).expect("issuer");
    let key = KeyPair::generate().expect("server key");
    let mut params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).expect("names");
    params.distinguished_name.push(DnType::CommonName, "localhost");
    let cert = params.signed_by(&key, &issuer).expect("server certificate");
    (ca_pem, cert.pem(), key.serialize_pem())
}

/// Who runs the server: this user, or `postgres` when this is root.
struct ServerUser(Option<(u32, u32)>);

fn as_server_user(dir: &Path) -> ServerUser {
    let root = id(&["-u"]) == 0;
    let user = root.then(|| (id(&["-u", "postgres"]), id(&["-g", "postgres"])));
    let owner = ServerUser(user);
    owner.chown(dir);
    owner
}

impl ServerUser {
    fn command(&self, program: &Path) -> Command {
        match self.0 {
            Some(_) => {
                let mut command = Command::new("runuser");
                command.args(["-u", "postgres", "--"]).arg(program);
                command
            }
            None => Command::new(program),
        }
    }

    fn chown(&self, path: &Path) {
        if let Some((uid, gid)) = self.0 {
            std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown to postgres");
        }
    }
}

fn id(args: &[&str]) -> u32 {
    let out = Command::new("id").args(args).output().expect("id");
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().unwrap_or_else(|_| panic!("id {args:?} printed {text:?}"))
}

fn write_owned(path: &Path, text: &str, owner: &ServerUser) {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    owner.chown(path);
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).expect("open");
    file.write_all(text.as_bytes()).expect("append");
}

fn run(command: &mut Command) {
    let out = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}
