//! The Agent's value store: one scripted scenario, run on SQLite and on
//! PostgreSQL (a fresh database `heimdall_agent_test_<random>` on the
//! machine's server, dropped afterwards).

use heimdall_agent::crypto::MasterKey;
use heimdall_agent::store::{
    self, AccessRecord, Backend, InventoryEntry, SqlValueStore, StoreError, ValueAddress, ValueStore,
};
use heimdall_core::ids::{AgentId, CatalogId, OrgId};
use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, Row};
use uuid::Uuid;

/// Where the scenario's store lives, and raw access to it "from outside".
enum Place {
    Sqlite { dir: tempfile::TempDir },
    Postgres { admin_url: String, name: String, url: String },
}

impl Place {
    fn sqlite() -> Self {
        Place::Sqlite { dir: tempfile::tempdir().unwrap() }
    }

    async fn postgres() -> Self {
        sqlx::any::install_default_drivers();
        let admin_url = heimdall_api::testing::postgres_admin_url();
        let name = format!("heimdall_agent_test_{}", Uuid::new_v4().simple());
        let admin = AnyPoolOptions::new()
            .max_connections(1)
            .connect(&admin_url)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL must run for this test: {e}"));
        sqlx::query(&format!("CREATE DATABASE {name}")).execute(&admin).await.unwrap();
        admin.close().await;
        let (base, _) = admin_url.rsplit_once('/').unwrap();
        let url = format!("{base}/{name}");
        Place::Postgres { admin_url, name, url }
    }

    fn sqlite_path(&self) -> std::path::PathBuf {
        match self {
            Place::Sqlite { dir } => dir.path().join("agent-store.db"),
            Place::Postgres { .. } => unreachable!(),
        }
    }

    async fn open(&self, master: &MasterKey) -> Result<SqlValueStore, StoreError> {
        match self {
            Place::Sqlite { .. } => store::sqlite::open(&self.sqlite_path(), master).await,
            Place::Postgres { url, .. } => store::postgres::open(url, master).await,
        }
    }

    /// A separate connection, as an operator (or attacker) with database access would have.
    async fn raw(&self) -> AnyPool {
        sqlx::any::install_default_drivers();
        let url = match self {
            Place::Sqlite { .. } => format!("sqlite://{}", self.sqlite_path().display()),
            Place::Postgres { url, .. } => url.clone(),
        };
        AnyPoolOptions::new().max_connections(1).connect(&url).await.unwrap()
    }

    /// Makes the next access-record insert for `accessor` fail inside the
    /// transaction, after the counter row was already updated.
    async fn fail_inserts_for(&self, raw: &AnyPool, accessor: &str) {
        match self {
            Place::Sqlite { .. } => {
                sqlx::query(&format!(
                    "CREATE TRIGGER refuse_record BEFORE INSERT ON access_records \
                     WHEN NEW.accessor = '{accessor}' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
                ))
                .execute(raw)
                .await
                .unwrap();
            }
            Place::Postgres { .. } => {
                sqlx::query(&format!(
                    "CREATE FUNCTION refuse_record() RETURNS trigger LANGUAGE plpgsql AS $$ \
                     BEGIN IF NEW.accessor = '{accessor}' THEN RAISE EXCEPTION 'refused by the test'; END IF; \
                     RETURN NEW; END $$"
                ))
                .execute(raw)
                .await
                .unwrap();
                sqlx::query(
                    "CREATE TRIGGER refuse_record BEFORE INSERT ON access_records \
                     FOR EACH ROW EXECUTE FUNCTION refuse_record()",
                )
                .execute(raw)
                .await
                .unwrap();
            }
        }
    }

    /// Undoes [`Self::fail_inserts_for`].
    async fn allow_inserts(&self, raw: &AnyPool) {
        let drop = match self {
            Place::Sqlite { .. } => "DROP TRIGGER refuse_record",
            Place::Postgres { .. } => "DROP TRIGGER refuse_record ON access_records",
        };
        sqlx::query(drop).execute(raw).await.unwrap();
    }

    /// Everything the store holds at rest, as bytes: the SQLite file and
    /// its WAL; on PostgreSQL every row of every table as text (bytea
    /// renders as hex, so the caller looks for the hex form too).
    async fn at_rest(&self, raw: &AnyPool) -> Vec<u8> {
        match self {
            Place::Sqlite { dir } => {
                let mut bytes = Vec::new();
                let mut seen = 0;
                for entry in std::fs::read_dir(dir.path()).unwrap() {
                    let path = entry.unwrap().path();
                    bytes.extend(std::fs::read(&path).unwrap());
                    seen += 1;
                }
                assert!(seen >= 2, "expected the database file and its WAL");
                bytes
            }
            Place::Postgres { .. } => {
                let tables: Vec<String> = sqlx::query(
                    "SELECT table_name::text AS t FROM information_schema.tables \
                     WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
                )
                .fetch_all(raw)
                .await
                .unwrap()
                .iter()
                .map(|r| r.get("t"))
                .collect();
                assert!(tables.iter().any(|t| t == "secret_values"), "{tables:?}");
                let mut text = String::new();
                for table in tables {
                    let rows = sqlx::query(&format!("SELECT CAST(t AS TEXT) AS row FROM \"{table}\" t"))
                        .fetch_all(raw)
                        .await
                        .unwrap();
                    for r in rows {
                        text.push_str(&r.get::<String, _>("row"));
                        text.push('\n');
                    }
                }
                text.into_bytes()
            }
        }
    }

    async fn counter(&self, raw: &AnyPool) -> i64 {
        sqlx::query("SELECT last_seq FROM access_counter WHERE id = 1")
            .fetch_one(raw)
            .await
            .unwrap()
            .get::<i64, _>("last_seq")
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Place::Postgres { admin_url, name, .. } = self {
            let (admin_url, name) = (admin_url.clone(), name.clone());
            // Drop runs outside any runtime guarantee: use a private one.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(async {
                    if let Ok(admin) = AnyPoolOptions::new().max_connections(1).connect(&admin_url).await {
                        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                            .execute(&admin)
                            .await;
                    }
                });
            })
            .join();
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn key(byte: u8) -> MasterKey {
    MasterKey::from_bytes(&[byte; 32], "test").unwrap()
}

async fn scenario(place: Place, backend: Backend) {
    let org = OrgId::from_uuid(Uuid::new_v4());
    let dev = CatalogId::from_uuid(Uuid::new_v4());
    let prod = CatalogId::from_uuid(Uuid::new_v4());
    let agent = AgentId::from_uuid(Uuid::new_v4());
    let at = |secret: &str, environment: CatalogId, version: u32| ValueAddress {
        org,
        secret: secret.to_owned(),
        environment,
        version,
    };
    let marker = format!("PLAINTEXT-MARKER-{}", Uuid::new_v4().simple());
    let v = |n: u32| format!("{marker}-v{n}");

    let opened = place.open(&key(1)).await.unwrap();
    assert_eq!(opened.backend(), backend);
    let key_id = opened.current_key_id().to_owned();
    let store: Box<dyn ValueStore> = Box::new(opened);

    // Put and get; an address never written is None.
    store.put_value(&at("db-password", dev, 1), v(1).as_bytes()).await.unwrap();
    store.put_value(&at("db-password", dev, 2), v(2).as_bytes()).await.unwrap();
    store.put_value(&at("db-password", prod, 1), v(3).as_bytes()).await.unwrap();
    store.put_value(&at("api-key", dev, 1), v(4).as_bytes()).await.unwrap();
    let got = store.get_value(&at("db-password", dev, 2)).await.unwrap().unwrap();
    assert_eq!(got.as_slice(), v(2).as_bytes());
    assert_eq!(
        store.get_value(&at("db-password", dev, 1)).await.unwrap().unwrap().as_slice(),
        v(1).as_bytes()
    );
    assert!(store.get_value(&at("db-password", dev, 3)).await.unwrap().is_none());
    assert!(store.get_value(&at("nothing", prod, 1)).await.unwrap().is_none());

    // A version is never overwritten.
    let err = store.put_value(&at("db-password", dev, 2), b"other").await.unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists { version: 2, .. }), "{err:?}");
    assert!(!err.to_string().contains("other"));
    assert_eq!(
        store.get_value(&at("db-password", dev, 2)).await.unwrap().unwrap().as_slice(),
        v(2).as_bytes()
    );

    // Latest version per (secret, environment).
    assert_eq!(store.latest_version(org, "db-password", dev).await.unwrap(), Some(2));
    assert_eq!(store.latest_version(org, "db-password", prod).await.unwrap(), Some(1));
    assert_eq!(store.latest_version(org, "missing", dev).await.unwrap(), None);

    // Nothing at rest holds a plaintext.
    let raw = place.raw().await;
    let rest = place.at_rest(&raw).await;
    assert!(contains(&rest, b"db-password"), "the at-rest check must see the store's rows");
    assert!(!contains(&rest, marker.as_bytes()), "a plaintext value is in the store at rest");
    assert!(!contains(&rest, hex::encode(marker.as_bytes()).as_bytes()), "a plaintext value (hex) at rest");

    // Deactivate: a tombstone, Deactivated on read, no fallback to v1, no
    // revival by a late write; still the latest version.
    store.deactivate(&at("db-password", dev, 2)).await.unwrap();
    let err = store.get_value(&at("db-password", dev, 2)).await.unwrap_err();
    assert!(matches!(err, StoreError::Deactivated { version: 2, .. }), "{err:?}");
    assert_eq!(store.latest_version(org, "db-password", dev).await.unwrap(), Some(2));
    let err = store.put_value(&at("db-password", dev, 2), v(2).as_bytes()).await.unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists { .. }), "{err:?}");
    let tombstone = sqlx::query(
        "SELECT COUNT(*) AS n FROM secret_values WHERE secret = 'db-password' AND version = 2 \
         AND ciphertext IS NULL AND nonce IS NULL AND deactivated = 1",
    )
    .fetch_one(&raw)
    .await
    .unwrap()
    .get::<i64, _>("n");
    assert_eq!(tombstone, 1, "the ciphertext was replaced by a tombstone");
    // Deactivating a version this Agent never held leaves a tombstone too.
    store.deactivate(&at("api-key", prod, 7)).await.unwrap();
    assert!(matches!(store.get_value(&at("api-key", prod, 7)).await, Err(StoreError::Deactivated { .. })));

    // The inventory for the sync report: addresses and flags only.
    let inventory = store.inventory().await.unwrap();
    let entry = |secret: &str, environment, version, deactivated| InventoryEntry {
        org,
        secret: secret.to_owned(),
        environment,
        version,
        deactivated,
    };
    for expected in [
        entry("api-key", dev, 1, false),
        entry("api-key", prod, 7, true),
        entry("db-password", dev, 1, false),
        entry("db-password", dev, 2, true),
        entry("db-password", prod, 1, false),
    ] {
        assert!(inventory.contains(&expected), "{expected:?} missing from {inventory:?}");
    }
    assert_eq!(inventory.len(), 5);

    // A ciphertext moved to another row does not decrypt: rename the row.
    sqlx::query("UPDATE secret_values SET secret = 'moved' WHERE secret = 'api-key' AND version = 1")
        .execute(&raw)
        .await
        .unwrap();
    let err = store.get_value(&at("moved", dev, 1)).await.unwrap_err();
    assert!(matches!(err, StoreError::Undecryptable { .. }), "{err:?}");
    assert!(!err.to_string().contains(&marker));
    // … nor does one copied over another version's row.
    sqlx::query(
        "UPDATE secret_values SET nonce = (SELECT nonce FROM secret_values WHERE secret = 'db-password' AND version = 1 AND environment_id = $1), \
         ciphertext = (SELECT ciphertext FROM secret_values WHERE secret = 'db-password' AND version = 1 AND environment_id = $1) \
         WHERE secret = 'db-password' AND environment_id = $2",
    )
    .bind(dev.to_string())
    .bind(prod.to_string())
    .execute(&raw)
    .await
    .unwrap();
    assert!(matches!(
        store.get_value(&at("db-password", prod, 1)).await,
        Err(StoreError::Undecryptable { .. })
    ));

    // Access records: 1, 2, 3… with no gap, even when an insert fails
    // after the counter row was updated in its transaction.
    let record = |accessor: &str, version| AccessRecord {
        accessor: accessor.to_owned(),
        at_micros: 1_700_000_000_000_000 + i64::from(version),
        secret: "db-password".into(),
        environment: dev,
        version,
        source: "127.0.0.1:50000".into(),
        served_by: agent,
    };
    assert_eq!(store.append_access_record(&record("ana@example.com", 1)).await.unwrap(), 1);
    assert_eq!(store.append_access_record(&record("bo@example.com", 1)).await.unwrap(), 2);
    place.fail_inserts_for(&raw, "refused@example.com").await;
    let err = store.append_access_record(&record("refused@example.com", 1)).await.unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert_eq!(place.counter(&raw).await, 2, "the counter advanced for a record that was not written");
    assert_eq!(store.append_access_record(&record("ana@example.com", 2)).await.unwrap(), 3);
    assert_eq!(store.append_access_record(&record("cy@example.com", 1)).await.unwrap(), 4);
    // A group commit with one refused record writes none of them.
    let batch = [record("ana@example.com", 3), record("refused@example.com", 3)];
    assert!(matches!(store.append_access_records(&batch).await, Err(StoreError::Unavailable(_))));
    assert_eq!(place.counter(&raw).await, 4, "a refused batch used sequence numbers");
    assert!(matches!(store.append_access_records(&[]).await, Err(StoreError::Invalid(_))));
    let all = store.access_records_after(0, 100).await.unwrap();
    assert_eq!(all.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3, 4]);
    place.allow_inserts(&raw).await;
    let batch = [record("dee@example.com", 1), record("eve@example.com", 1), record("fay@example.com", 1)];
    assert_eq!(store.append_access_records(&batch).await.unwrap(), 5);
    let all = store.access_records_after(4, 100).await.unwrap();
    assert_eq!(
        all.iter().map(|r| (r.seq, r.record.accessor.as_str())).collect::<Vec<_>>(),
        [(5, "dee@example.com"), (6, "eve@example.com"), (7, "fay@example.com")]
    );
    let all = store.access_records_after(0, 100).await.unwrap();
    assert_eq!(all[2].record, record("ana@example.com", 2));
    let page = store.access_records_after(1, 2).await.unwrap();
    assert_eq!(page.iter().map(|r| r.seq).collect::<Vec<_>>(), [2, 3]);
    assert!(store.access_records_after(7, 10).await.unwrap().is_empty());

    // Delete a secret: every version in every environment goes.
    assert_eq!(store.delete_secret(org, "db-password").await.unwrap(), 3);
    assert!(store.get_value(&at("db-password", dev, 1)).await.unwrap().is_none());
    assert_eq!(store.latest_version(org, "db-password", dev).await.unwrap(), None);
    assert!(store.inventory().await.unwrap().iter().all(|e| e.secret != "db-password"));

    // Still no plaintext at rest after all of that.
    let rest = place.at_rest(&raw).await;
    assert!(!contains(&rest, marker.as_bytes()), "a plaintext value is in the store at rest");
    assert!(!contains(&rest, hex::encode(marker.as_bytes()).as_bytes()));
    raw.close().await;

    // A wrong master key refuses to open the store, naming the key id only.
    let err = place.open(&key(2)).await.unwrap_err();
    assert_eq!(err, StoreError::WrongMasterKey { key_id: key_id.clone() });
    assert_eq!(err.to_string(), format!("the master key does not open this store (key id {key_id})"));
    // The right key still opens it, and reads what the first handle wrote.
    let again = place.open(&key(1)).await.unwrap();
    assert_eq!(again.current_key_id(), key_id);
    assert_eq!(again.get_value(&at("api-key", prod, 7)).await.unwrap_err().to_string(), {
        StoreError::Deactivated { secret: "api-key".into(), environment: prod, version: 7 }.to_string()
    });
    again.put_value(&at("fresh", dev, 1), b"after reopen").await.unwrap();
    assert_eq!(store.get_value(&at("fresh", dev, 1)).await.unwrap().unwrap().as_slice(), b"after reopen");
    again.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_scenario_on_sqlite() {
    scenario(Place::sqlite(), Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_scenario_on_postgres() {
    scenario(Place::postgres().await, Backend::Postgres).await;
}

#[tokio::test]
async fn invalid_addresses_are_refused_before_the_database() {
    let place = Place::sqlite();
    let store = place.open(&key(3)).await.unwrap();
    let org = OrgId::from_uuid(Uuid::new_v4());
    let environment = CatalogId::from_uuid(Uuid::new_v4());
    let bad = [
        ValueAddress { org, secret: String::new(), environment, version: 1 },
        ValueAddress { org, secret: "x".repeat(store::MAX_NAME_LEN + 1), environment, version: 1 },
        ValueAddress { org, secret: "ok".into(), environment, version: 0 },
    ];
    for at in bad {
        assert!(matches!(store.put_value(&at, b"v").await, Err(StoreError::Invalid(_))), "{at:?}");
    }
    let at = ValueAddress { org, secret: "big".into(), environment, version: 1 };
    let big = vec![0u8; store::MAX_VALUE_LEN + 1];
    assert!(matches!(store.put_value(&at, &big).await, Err(StoreError::Invalid(_))));
    assert!(store.inventory().await.unwrap().is_empty());
}
