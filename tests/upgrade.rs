//! An upgrade keeps data: the `heimdall dev` data directory an older
//! release wrote through its real routes (`tests/fixtures/upgrade/`, made by
//! `scripts/upgrade-fixture.sh`: its README tour, three versions of a secret
//! and their reads) is opened by today's binaries. The API's database and
//! the Agent's value store are migrated on start; every object the old
//! release listed is listed again, with the same ids; the old values read
//! back; then a write, a read and a Terraform job run on the upgraded data.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use heimdall_e2e::{free_port, repo_root, Dev};
use serde_json::Value;

#[test]
fn a_data_directory_an_older_release_wrote_is_served_by_this_one() {
    let fixture = repo_root().join("tests/fixtures/upgrade");
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.join("expected.json")).unwrap()).unwrap();
    let until = expected["agent_certificate_until"].as_u64().expect("agent_certificate_until");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert!(
        now + 86_400 < until,
        "the fixture's Agent certificate expires at {until} (unix seconds): make the fixture again with \
         `bash scripts/upgrade-fixture.sh` (docs/development.md)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = (tmp.path().join("data"), tmp.path().join("config"));
    let terraform = repo_root().join(".venv/bin/terraform");
    assert!(terraform.is_file(), "{} is missing: run scripts/install-test-tools.sh", terraform.display());
    let sha = sha256_hex(&terraform);
    let places = Places {
        data: data.to_str().unwrap(),
        config: config.to_str().unwrap(),
        repo: repo_root().to_str().unwrap().to_owned(),
        terraform: terraform.to_str().unwrap(),
        sha: &sha,
    };
    relocate(&fixture.join("data"), &data, &places);
    relocate(&fixture.join("config"), &config, &places);
    load_dump(&fixture.join("heimdall.sql"), &data.join("heimdall.db"), &places);
    load_dump(&fixture.join("agent-values.sql"), &data.join("agent-values.db"), &places);

    let dev = Dev::start(&data, &config, free_port());
    let json = |line: &str| -> Value {
        let out = dev.sh(&format!("{line} --output json"));
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
    // each version as it was written.
    for (version, value) in [(3, "third-value"), (2, "second-value"), (1, "s3cret-value")] {
        let got = dev.sh(&format!("heimdall secret get db-password --environment dev --version {version}"));
        assert!(got.status.success(), "version {version}: {}", String::from_utf8_lossy(&got.stderr));
        assert_eq!(String::from_utf8_lossy(&got.stdout), value, "version {version}");
    }

    // A write, a read of it, and its read reported on the upgraded database.
    let set = dev.sh("printf 'fourth-value' | heimdall secret set db-password --environment dev");
    assert!(set.status.success(), "{}", String::from_utf8_lossy(&set.stderr));
    let got = dev.sh("heimdall secret get db-password --environment dev");
    assert!(got.status.success(), "{}", String::from_utf8_lossy(&got.stderr));
    assert_eq!(got.stdout, b"fourth-value");
    let deadline = Instant::now() + Duration::from_secs(30);
    while reads(&json("heimdall secret access-log db-password")) < reads_before + 4 {
        assert!(Instant::now() < deadline, "the reads after the upgrade never reached the access log");
        std::thread::sleep(Duration::from_millis(250));
    }

    // A job on state the old release's Terraform run wrote: the module's
    // next version, and the Resource upgraded to it in place.
    let created = dev.sh("heimdall schema create --type bucket --input-schema examples/schemas/bucket.json \
         --module-source \"$PWD/tests/fixtures/modules/bucket\" --module-version 1.1.0");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let upgraded = dev.sh("heimdall resource upgrade recibos --schema-version 2 --wait");
    assert!(upgraded.status.success(), "{}", String::from_utf8_lossy(&upgraded.stderr));
    let recibos = json("heimdall resource show recibos");
    assert_eq!(recibos["resource"]["status"], "provisioned", "{recibos}");
    assert_eq!(
        recibos["resource"]["outputs"]["id"], expected["recibos"]["resource"]["outputs"]["id"],
        "the same object, updated in place: {recibos}"
    );
    assert!(dev.stop().success());
}

/// Where the fixture's placeholders point on this machine.
struct Places<'a> {
    data: &'a str,
    config: &'a str,
    repo: String,
    terraform: &'a str,
    sha: &'a str,
}

impl Places<'_> {
    fn fill(&self, text: &str) -> String {
        text.replace("@DATA@", self.data)
            .replace("@CONFIG@", self.config)
            .replace("@REPO@", &self.repo)
            .replace("@TERRAFORM_SHA256@", self.sha)
            .replace("@TERRAFORM@", self.terraform)
    }
}

/// Copies `from` to `to` with the placeholders filled in, and the modes a
/// data directory has (git keeps none): directories 0700, files 0600.
fn relocate(from: &Path, to: &Path, places: &Places<'_>) {
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
fn load_dump(dump: &Path, database: &Path, places: &Places<'_>) {
    let sql = places.fill(&std::fs::read_to_string(dump).unwrap());
    let mut child = Command::new("sqlite3")
        .arg(database)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("sqlite3 (scripts/install-test-tools.sh installs it)");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), sql.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success(), "sqlite3 could not load {}", dump.display());
    std::fs::set_permissions(database, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn sha256_hex(file: &Path) -> String {
    let out = Command::new("sha256sum").arg(file).output().expect("sha256sum");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap().to_owned()
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
