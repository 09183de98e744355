//! An upgrade keeps data: what an older release wrote through its real
//! routes (`tests/fixtures/upgrade/`, made by `scripts/upgrade-fixture.sh`:
//! its README tour, three versions of a secret and their reads) is opened
//! by today's binaries, once as `heimdall dev` left it (SQLite everywhere)
//! and once as an operator's `heimdall-api serve` and enrolled Agent left
//! it (the API's database and the Agent's store on PostgreSQL). Both are
//! migrated on start; every object the old release listed is listed again,
//! with the same ids; the old values read back; then a write, a read and a
//! Terraform job run on the upgraded data.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use heimdall_e2e::{bin_dir, free_port, repo_root, sh_with, Dev};
use serde_json::Value;

#[test]
fn a_dev_directory_an_older_release_wrote_on_sqlite_is_served_by_this_one() {
    let (fixture, expected) = fixture("sqlite");
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let places = Places::new(tmp.path(), port, "");
    relocate(&fixture.join("data"), &places.data, &places);
    relocate(&fixture.join("config"), &places.config, &places);
    load_sqlite(&fixture.join("heimdall.sql"), &places.data.join("heimdall.db"), &places);
    load_sqlite(&fixture.join("agent-values.sql"), &places.data.join("agent-values.db"), &places);

    let dev = Dev::start(&places.data, &places.config, port);
    served_as_before(&|line| dev.sh(line), &expected);
    assert!(dev.stop().success());
}

#[test]
fn an_api_and_agent_an_older_release_ran_on_postgres_are_served_by_this_one() {
    let (fixture, expected) = fixture("postgres");
    let tmp = tempfile::tempdir().unwrap();
    let (api_db, store_db) = (Database::create("api"), Database::create("store"));
    // The database server the old release's service user lives on: this
    // machine's, with the names the fixture used.
    let _orders = TargetServer::fresh();
    let port = free_port();
    let places = Places::new(tmp.path(), port, &store_db.url);
    relocate(&fixture.join("data"), &places.data, &places);
    relocate(&fixture.join("config"), &places.config, &places);
    api_db.load(&fixture.join("heimdall.sql"), &places);
    store_db.load(&fixture.join("agent-values.sql"), &places);

    let bin = bin_dir();
    let log = |name: &str| std::fs::File::create(tmp.path().join(name)).unwrap();
    let api = Command::new(bin.join("heimdall-api"))
        .args(["serve", "--database-url", &api_db.url, "--listen", &format!("127.0.0.1:{port}")])
        .args(["--agent-listen", &format!("127.0.0.1:{}", port + 1)])
        .args(["--agent-public-url", &format!("https://127.0.0.1:{}", port + 1), "--ca-dir"])
        .arg(places.data.join("ca"))
        .stdout(log("api.log"))
        .stderr(log("api.err"))
        .spawn()
        .unwrap();
    let _api = Running(api);
    let sh = |line: &str| sh_with(&places.config, &repo_root(), line);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !sh("heimdall whoami").status.success() {
        let err = std::fs::read_to_string(tmp.path().join("api.err")).unwrap_or_default();
        assert!(Instant::now() < deadline, "the upgraded API never answered: {err}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let agent = Command::new(bin.join("heimdall-agent"))
        .args(["run", "--config"])
        .arg(places.data.join("agent/agent.toml"))
        .stdout(log("agent.log"))
        .stderr(log("agent.err"))
        .spawn()
        .unwrap();
    let _agent = Running(agent);
    served_as_before(&sh, &expected);

    // The rotation asked for just before the upgrade is done by today's
    // Agent: version 2 of the service user, on the other login, which connects.
    assert_eq!(expected["service_user"]["rotate_requested"], true, "{}", expected["service_user"]);
    let show = "heimdall database user show heimdall_upgrade_app --database orders --output json";
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = sh(show);
        let user: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if user["current_version"] == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the rotation in flight never finished: {user}");
        std::thread::sleep(Duration::from_millis(250));
    }
    let got = sh("heimdall secret get db-orders-heimdall_upgrade_app --environment dev");
    assert!(got.status.success(), "{}", String::from_utf8_lossy(&got.stderr));
    let credential: Value = serde_json::from_slice(&got.stdout).unwrap();
    let login = credential["username"].as_str().unwrap();
    assert_eq!(login, "heimdall_upgrade_app_b", "{credential}");
    let url = format!("postgres://{login}@127.0.0.1:5432/heimdall_upgrade_orders");
    psql(&url, &["-c", "SELECT 1"]);
}

/// The fixture's target database on this machine's PostgreSQL, as the old
/// release left it: the database, the service user's group role and its
/// two logins, the first one in use (its password is the old Agent's, in
/// the sealed store; this server trusts loopback). Removed after.
struct TargetServer;

impl TargetServer {
    fn fresh() -> Self {
        Self::clear();
        let admin = admin_url();
        psql(&admin, &["-c", "CREATE DATABASE heimdall_upgrade_orders"]);
        for role in [
            "heimdall_upgrade_app NOLOGIN",
            "heimdall_upgrade_app_a LOGIN IN ROLE heimdall_upgrade_app",
            "heimdall_upgrade_app_b NOLOGIN IN ROLE heimdall_upgrade_app",
        ] {
            psql(&admin, &["-c", &format!("CREATE ROLE {role}")]);
        }
        TargetServer
    }

    fn clear() {
        psql(&admin_url(), &["-c", "DROP DATABASE IF EXISTS heimdall_upgrade_orders WITH (FORCE)"]);
        for role in ["heimdall_upgrade_app_a", "heimdall_upgrade_app_b", "heimdall_upgrade_app"] {
            psql(&admin_url(), &["-c", &format!("DROP ROLE IF EXISTS {role}")]);
        }
    }
}

impl Drop for TargetServer {
    fn drop(&mut self) {
        Self::clear();
    }
}

fn admin_url() -> String {
    std::env::var("HEIMDALL_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// What the old release listed, and what today's lists and does on the
/// upgraded data (`sh` runs one CLI line against it).
fn served_as_before(sh: &dyn Fn(&str) -> Output, expected: &Value) {
    let json = |line: &str| -> Value {
        let out = sh(&format!("{line} --output json"));
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|err| panic!("{line}: {err}"))
    };

    // Every object the old release listed, by id, with its name.
    assert_eq!(json("heimdall whoami")["member"]["id"], expected["whoami"]["member"]["id"]);
    for (key, line) in [
        ("domains", "heimdall domain list"),
        ("systems", "heimdall system list"),
        ("components", "heimdall component list"),
        ("environments", "heimdall environment list"),
        ("agents", "heimdall agent list"),
        ("members", "heimdall member list"),
        ("policies", "heimdall policy list"),
        ("secrets", "heimdall secret list"),
        ("cloud_accounts", "heimdall cloud-account list"),
        ("schemas", "heimdall schema list"),
        ("resources", "heimdall resource list"),
        ("jobs", "heimdall job list --component receipts"),
    ] {
        let (before, now) = (ids_and_names(&expected[key]), ids_and_names(&json(line)));
        assert!(!before.is_empty(), "the fixture lists no {key}");
        assert_eq!(now, before, "{key}: what the old release listed, and what this one lists");
    }
    let statuses = |list: &Value| -> BTreeSet<(String, String)> {
        items(list).iter().map(|r| (r["name"].to_string(), r["status"].to_string())).collect()
    };
    assert_eq!(statuses(&json("heimdall resource list")), statuses(&expected["resources"]));
    let recibos = json("heimdall resource show recibos");
    assert_eq!(recibos["resource"]["status"], "provisioned");
    assert_eq!(recibos["resource"]["outputs"], expected["recibos"]["resource"]["outputs"]);
    let versions = |shown: &Value| -> BTreeSet<(String, i64)> {
        let list = shown["versions"].as_array().expect("secret show lists versions");
        list.iter().map(|v| (v["environment"].to_string(), v["version"].as_i64().unwrap())).collect()
    };
    assert_eq!(versions(&json("heimdall secret show db-password")), versions(&expected["db_password"]));
    // The audit feed: every event the old release recorded, in the same order.
    let events = |list: &Value| -> Vec<String> { items(list).iter().map(|e| e["id"].to_string()).collect() };
    let (before, now) = (events(&expected["events"]), events(&json("heimdall event list --limit 500")));
    assert!(before.len() >= 20, "{before:?}");
    let kept: Vec<&String> = now.iter().filter(|id| before.contains(id)).collect();
    assert_eq!(kept, before.iter().collect::<Vec<_>>(), "events lost or reordered");
    let reads_before = reads(&expected["access_log"]);
    assert!(reads_before >= 3, "{}", expected["access_log"]);
    assert_eq!(reads(&json("heimdall secret access-log db-password")), reads_before);

    // The values the old Agent sealed read back from the migrated store,
    // each version as it was written (the first read waits for the Agent).
    let deadline = Instant::now() + Duration::from_secs(30);
    for (version, value) in [(3, "third-value"), (2, "second-value"), (1, "s3cret-value")] {
        let got = loop {
            let got = sh(&format!("heimdall secret get db-password --environment dev --version {version}"));
            if got.status.success() || Instant::now() > deadline {
                break got;
            }
            std::thread::sleep(Duration::from_millis(250));
        };
        assert!(got.status.success(), "version {version}: {}", String::from_utf8_lossy(&got.stderr));
        assert_eq!(String::from_utf8_lossy(&got.stdout), value, "version {version}");
    }

    // A write, a read of it, and its read reported on the upgraded database.
    let set = sh("printf 'fourth-value' | heimdall secret set db-password --environment dev");
    assert!(set.status.success(), "{}", String::from_utf8_lossy(&set.stderr));
    let got = sh("heimdall secret get db-password --environment dev");
    assert!(got.status.success(), "{}", String::from_utf8_lossy(&got.stderr));
    assert_eq!(got.stdout, b"fourth-value");
    let deadline = Instant::now() + Duration::from_secs(30);
    while reads(&json("heimdall secret access-log db-password")) < reads_before + 4 {
        assert!(Instant::now() < deadline, "the reads after the upgrade never reached the access log");
        std::thread::sleep(Duration::from_millis(250));
    }

    // A job on state the old release's Terraform run wrote: the module's
    // next version, and the Resource upgraded to it in place.
    let created = sh("heimdall schema create --type bucket --input-schema examples/schemas/bucket.json \
         --module-source \"$PWD/tests/fixtures/modules/bucket\" --module-version 1.1.0");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let upgraded = sh("heimdall resource upgrade recibos --schema-version 2 --wait");
    assert!(upgraded.status.success(), "{}", String::from_utf8_lossy(&upgraded.stderr));
    let recibos = json("heimdall resource show recibos");
    assert_eq!(recibos["resource"]["status"], "provisioned", "{recibos}");
    assert_eq!(
        recibos["resource"]["outputs"]["id"], expected["recibos"]["resource"]["outputs"]["id"],
        "the same object, updated in place: {recibos}"
    );
}

/// `tests/fixtures/upgrade/KIND` and what the old release listed there;
/// refused once the fixture's Agent certificate is about to expire.
fn fixture(kind: &str) -> (PathBuf, Value) {
    let fixture = repo_root().join("tests/fixtures/upgrade").join(kind);
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.join("expected.json")).unwrap()).unwrap();
    let until = expected["agent_certificate_until"].as_u64().expect("agent_certificate_until");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert!(
        now + 86_400 < until,
        "the fixture's Agent certificate expires at {until} (unix seconds): make the fixture again with \
         `bash scripts/upgrade-fixture.sh` (docs/development.md)"
    );
    (fixture, expected)
}

/// Where the fixture's placeholders point on this machine.
struct Places {
    data: PathBuf,
    config: PathBuf,
    port: u16,
    store_url: String,
    terraform: PathBuf,
    sha: String,
}

impl Places {
    fn new(dir: &Path, port: u16, store_url: &str) -> Self {
        let terraform = repo_root().join(".venv/bin/terraform");
        assert!(terraform.is_file(), "{} is missing: run scripts/install-test-tools.sh", terraform.display());
        let out = Command::new("sha256sum").arg(&terraform).output().expect("sha256sum");
        assert!(out.status.success());
        let sha = String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap().to_owned();
        Places {
            data: dir.join("data"),
            config: dir.join("config"),
            port,
            store_url: store_url.to_owned(),
            terraform,
            sha,
        }
    }

    fn fill(&self, text: &str) -> String {
        let path = |p: &Path| p.to_str().unwrap().to_owned();
        text.replace("@DATA@", &path(&self.data))
            .replace("@CONFIG@", &path(&self.config))
            .replace("@REPO@", &path(&repo_root()))
            .replace("@TERRAFORM_SHA256@", &self.sha)
            .replace("@TERRAFORM@", &path(&self.terraform))
            .replace("@STORE_URL@", &self.store_url)
            .replace("@API_URL@", &format!("https://127.0.0.1:{}", self.port))
            .replace("@AGENT_URL@", &format!("https://127.0.0.1:{}", self.port + 1))
            .replace("@LOCAL_API@", &format!("127.0.0.1:{}", self.port + 2))
    }
}

/// Copies `from` to `to` with the placeholders filled in, and the modes a
/// data directory has (git keeps none): directories 0700, files 0600.
fn relocate(from: &Path, to: &Path, places: &Places) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700)).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            relocate(&entry.path(), &target, places);
            continue;
        }
        let bytes = std::fs::read(entry.path()).unwrap();
        match String::from_utf8(bytes) {
            Ok(text) => std::fs::write(&target, places.fill(&text)).unwrap(),
            Err(binary) => std::fs::write(&target, binary.into_bytes()).unwrap(),
        }
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

/// A `sqlite3 .dump` loaded into a new database file, as a restore does.
fn load_sqlite(dump: &Path, database: &Path, places: &Places) {
    let sql = places.fill(&std::fs::read_to_string(dump).unwrap());
    let mut child = Command::new("sqlite3")
        .arg(database)
        .stdin(Stdio::piped())
        .spawn()
        .expect("sqlite3 (scripts/setup.sh installs it)");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), sql.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success(), "sqlite3 could not load {}", dump.display());
    std::fs::set_permissions(database, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A PostgreSQL database of the test's own, dropped after it.
struct Database {
    admin: String,
    name: String,
    url: String,
}

impl Database {
    fn create(what: &str) -> Self {
        let admin = admin_url();
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let name = format!("heimdall_upgrade_{what}_{}_{nanos}", std::process::id());
        psql(&admin, &["-c", &format!("CREATE DATABASE {name}")]);
        let url = format!("{}/{name}", admin.rsplit_once('/').unwrap().0);
        Database { admin, name, url }
    }

    /// A `pg_dump` (plain SQL) loaded with psql, stopping at the first error.
    fn load(&self, dump: &Path, places: &Places) {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), places.fill(&std::fs::read_to_string(dump).unwrap())).unwrap();
        psql(&self.url, &["-v", "ON_ERROR_STOP=1", "-f", file.path().to_str().unwrap()]);
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = Command::new("psql")
            .args(["-q", &self.admin, "-c", &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)])
            .output();
    }
}

fn psql(url: &str, args: &[&str]) {
    let out = Command::new("psql").args(["-q", url]).args(args).output().expect("psql");
    assert!(out.status.success(), "psql {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A server the test started, stopped (SIGTERM, then killed) when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.0.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A list answer's items: the array itself, or its `items` page.
fn items(list: &Value) -> Vec<Value> {
    list.as_array().or_else(|| list["items"].as_array()).cloned().unwrap_or_default()
}

fn ids_and_names(list: &Value) -> BTreeSet<(String, String)> {
    items(list).iter().map(|o| (o["id"].to_string(), o["name"].to_string())).collect()
}

/// The owner's reads in an access log.
fn reads(log: &Value) -> i64 {
    items(log).iter().filter(|e| e["accessor"] == "dev@localhost").filter_map(|e| e["reads"].as_i64()).sum()
}
