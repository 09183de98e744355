//! The Agent's value store: one scripted scenario, run on SQLite, on
//! PostgreSQL (a fresh database `heimdall_agent_test_<random>` on the
//! machine's server, dropped afterwards) and on DynamoDB (a fresh table in
//! moto, deleted afterwards); and the master key in KMS (moto).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use heimdall_agent::aws::AwsSettings;
use heimdall_agent::values::crypto::{KeySealer, MasterKey};
use heimdall_agent::values::kms::KmsKey;
use heimdall_agent::values::store::dynamodb::MAX_ACCESS_BATCH;
use heimdall_agent::values::store::{
    self, Backend, InventoryEntry, ServedRead, ValueAddress, ValueStoreError, Vault,
};
use heimdall_api::testing::TlsPostgres;
use heimdall_core::ids::{AgentId, CatalogId, OrgId};
use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, Row};
use uuid::Uuid;

/// Where the scenario's store lives, and raw access to it "from outside".
enum Place {
    Sqlite {
        dir: tempfile::TempDir,
    },
    /// `_server`: a PostgreSQL of the test's own that accepts TLS only.
    Postgres {
        admin_url: String,
        name: String,
        url: String,
        _server: Option<Box<TlsPostgres>>,
    },
    Dynamo {
        moto_url: String,
        table: String,
    },
}

/// A connection "from outside" the store: SQL, or the DynamoDB API.
enum Raw {
    Sql(AnyPool),
    Dynamo(aws_sdk_dynamodb::Client),
}

impl Raw {
    fn sql(&self) -> &AnyPool {
        match self {
            Raw::Sql(pool) => pool,
            Raw::Dynamo(_) => unreachable!("not an SQL place"),
        }
    }

    fn dynamo(&self) -> &aws_sdk_dynamodb::Client {
        match self {
            Raw::Dynamo(client) => client,
            Raw::Sql(_) => unreachable!("not a DynamoDB place"),
        }
    }

    async fn close(self) {
        if let Raw::Sql(pool) = self {
            pool.close().await;
        }
    }
}

/// The SDK configuration for moto at `url`: this crate's HTTPS client and
/// overrides, with static test credentials (moto takes any).
pub(crate) async fn aws_config(url: &str) -> aws_config::SdkConfig {
    let settings = AwsSettings { region: Some("us-east-1".into()), endpoint_url: Some(url.to_owned()) };
    heimdall_agent::aws::loader(&settings)
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "testing",
            "testing",
            None,
            None,
            "heimdall-tests",
        ))
        .load()
        .await
}

pub(crate) type Item = HashMap<String, AttributeValue>;

fn ddb_key(pk: &str, sk: &str) -> Item {
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk.into())),
        ("sk".to_owned(), AttributeValue::S(sk.into())),
    ])
}

/// The table layout of `store::dynamodb` (its module docs), as an outsider reads it.
pub(crate) fn ddb_value_key(at: &ValueAddress) -> Item {
    ddb_key(&format!("value#{}#{}", at.org, at.secret), &format!("{}#{:010}", at.environment, at.version))
}

const PLANTED: &str = "planted-by-the-test";

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
        Place::Postgres { admin_url, name, url, _server: None }
    }

    /// A database on a server that refuses cleartext, reached as an
    /// operator would write it: `sslmode=verify-full` and the server's CA.
    fn tls_postgres() -> Self {
        let server = TlsPostgres::start();
        let name = format!("heimdall_agent_test_{}", Uuid::new_v4().simple());
        server.create_database(&name);
        let (admin_url, url) = (server.verified_url("postgres"), server.verified_url(&name));
        Place::Postgres { admin_url, name, url, _server: Some(Box::new(server)) }
    }

    /// A fresh table name in moto (the store creates the table).
    fn dynamo() -> Self {
        let moto_url = crate::support::moto_start();
        Place::Dynamo { moto_url, table: format!("heimdall-test-{}", Uuid::new_v4().simple()) }
    }

    fn sqlite_path(&self) -> std::path::PathBuf {
        match self {
            Place::Sqlite { dir } => dir.path().join("agent-store.db"),
            _ => unreachable!(),
        }
    }

    /// Opens the store here; returns it with the id of its current data key.
    async fn open(&self, keys: &dyn KeySealer) -> Result<(Vault, String), ValueStoreError> {
        let (s, backend) = match self {
            Place::Sqlite { .. } => (store::sqlite::open(&self.sqlite_path(), keys).await?, Backend::Sqlite),
            Place::Postgres { url, .. } => (store::postgres::open(url, keys).await?, Backend::Postgres),
            Place::Dynamo { moto_url, table } => {
                let s = store::dynamodb::open_with(&aws_config(moto_url).await, table, keys).await?;
                assert!(format!("{s:?}").contains(table.as_str()), "{s:?}");
                (s, Backend::DynamoDb)
            }
        };
        assert_eq!(s.backend(), backend);
        let id = s.current_key_id().to_owned();
        Ok((s, id))
    }

    /// A separate connection, as an operator (or attacker) with database access would have.
    async fn raw(&self) -> Raw {
        sqlx::any::install_default_drivers();
        let url = match self {
            Place::Sqlite { .. } => format!("sqlite://{}", self.sqlite_path().display()),
            Place::Postgres { url, .. } => url.clone(),
            Place::Dynamo { moto_url, .. } => {
                return Raw::Dynamo(aws_sdk_dynamodb::Client::new(&aws_config(moto_url).await))
            }
        };
        Raw::Sql(AnyPoolOptions::new().max_connections(1).connect(&url).await.unwrap())
    }

    fn table(&self) -> &str {
        match self {
            Place::Dynamo { table, .. } => table,
            _ => unreachable!(),
        }
    }

    async fn get_item(&self, raw: &Raw, key: Item) -> Option<Item> {
        raw.dynamo()
            .get_item()
            .table_name(self.table())
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
    }

    /// Every item of the table, page by page.
    async fn scan(&self, raw: &Raw) -> Vec<Item> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = raw
                .dynamo()
                .scan()
                .table_name(self.table())
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .unwrap();
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(next) => start = Some(next),
                None => return items,
            }
        }
    }

    /// Makes the next access-record insert for `accessor` fail inside the
    /// transaction, after the counter row was already updated. DynamoDB has
    /// no triggers: there an item is planted at `seq`, the number the
    /// refused record will take, so the transaction's `attribute_not_exists`
    /// condition on that record fails (whoever the accessor).
    async fn fail_inserts_for(&self, raw: &Raw, accessor: &str, at: (AgentId, &str, u64)) {
        let (agent, epoch, seq) = at;
        let raw_sql = match self {
            Place::Dynamo { .. } => {
                let mut item = ddb_key(&format!("access#{agent}#{epoch}"), &format!("{seq:020}"));
                item.insert("seq".into(), AttributeValue::N(seq.to_string()));
                item.insert("accessor".into(), AttributeValue::S(PLANTED.into()));
                raw.dynamo().put_item().table_name(self.table()).set_item(Some(item)).send().await.unwrap();
                return;
            }
            _ => raw.sql(),
        };
        match self {
            Place::Dynamo { .. } => unreachable!(),
            Place::Sqlite { .. } => {
                sqlx::query(&format!(
                    "CREATE TRIGGER refuse_record BEFORE INSERT ON access_records \
                     WHEN NEW.accessor = '{accessor}' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
                ))
                .execute(raw_sql)
                .await
                .unwrap();
            }
            Place::Postgres { .. } => {
                sqlx::query(&format!(
                    "CREATE OR REPLACE FUNCTION refuse_record() RETURNS trigger LANGUAGE plpgsql AS $$ \
                     BEGIN IF NEW.accessor = '{accessor}' THEN RAISE EXCEPTION 'refused by the test'; END IF; \
                     RETURN NEW; END $$"
                ))
                .execute(raw_sql)
                .await
                .unwrap();
                sqlx::query(
                    "CREATE TRIGGER refuse_record BEFORE INSERT ON access_records \
                     FOR EACH ROW EXECUTE FUNCTION refuse_record()",
                )
                .execute(raw_sql)
                .await
                .unwrap();
            }
        }
    }

    /// Undoes [`Self::fail_inserts_for`]. On DynamoDB, first checks that the
    /// refused commit wrote nothing over the planted items.
    async fn allow_inserts(&self, raw: &Raw) {
        let drop = match self {
            Place::Sqlite { .. } => "DROP TRIGGER refuse_record",
            Place::Postgres { .. } => "DROP TRIGGER refuse_record ON access_records",
            Place::Dynamo { .. } => {
                let planted: Vec<Item> = self
                    .scan(raw)
                    .await
                    .into_iter()
                    .filter(|i| {
                        i.get("pk").and_then(|pk| pk.as_s().ok()).is_some_and(|pk| pk.starts_with("access#"))
                    })
                    .filter(|i| i.get("accessor") == Some(&AttributeValue::S(PLANTED.into())))
                    .collect();
                assert_eq!(planted.len(), 1, "the planted item was overwritten or lost");
                for item in planted {
                    assert_eq!(item.len(), 4, "the refused commit wrote over the planted item: {item:?}");
                    let key = ddb_key(item["pk"].as_s().unwrap(), item["sk"].as_s().unwrap());
                    raw.dynamo()
                        .delete_item()
                        .table_name(self.table())
                        .set_key(Some(key))
                        .send()
                        .await
                        .unwrap();
                }
                return;
            }
        };
        sqlx::query(drop).execute(raw.sql()).await.unwrap();
    }

    /// Whether the version's item is a tombstone: no key id, nonce or ciphertext.
    async fn is_tombstone(&self, raw: &Raw, at: &ValueAddress) -> bool {
        if let Place::Dynamo { .. } = self {
            let item = self.get_item(raw, ddb_value_key(at)).await.expect("the tombstone's item");
            return item.get("deactivated") == Some(&AttributeValue::Bool(true))
                && !["key_id", "nonce", "ciphertext"].iter().any(|a| item.contains_key(*a));
        }
        sqlx::query(
            "SELECT COUNT(*) AS n FROM secret_values WHERE org_id = $1 AND secret = $2 AND environment_id = $3 \
             AND version = $4 AND key_id IS NULL AND ciphertext IS NULL AND nonce IS NULL AND deactivated = 1",
        )
        .bind(at.org.to_string())
        .bind(&at.secret)
        .bind(at.environment.to_string())
        .bind(i64::from(at.version))
        .fetch_one(raw.sql())
        .await
        .unwrap()
        .get::<i64, _>("n")
            == 1
    }

    /// Renames the row at `from` to the secret `to`, ciphertext untouched.
    async fn move_value(&self, raw: &Raw, from: &ValueAddress, to: &str) {
        if let Place::Dynamo { .. } = self {
            let mut item = self.get_item(raw, ddb_value_key(from)).await.unwrap();
            let moved = ValueAddress { secret: to.to_owned(), ..from.clone() };
            item.extend(ddb_value_key(&moved));
            item.insert("secret".into(), AttributeValue::S(to.into()));
            let client = raw.dynamo();
            client
                .delete_item()
                .table_name(self.table())
                .set_key(Some(ddb_value_key(from)))
                .send()
                .await
                .unwrap();
            client.put_item().table_name(self.table()).set_item(Some(item)).send().await.unwrap();
            return;
        }
        sqlx::query(
            "UPDATE secret_values SET secret = $1 WHERE org_id = $2 AND secret = $3 AND environment_id = $4 \
             AND version = $5",
        )
        .bind(to)
        .bind(from.org.to_string())
        .bind(&from.secret)
        .bind(from.environment.to_string())
        .bind(i64::from(from.version))
        .execute(raw.sql())
        .await
        .unwrap();
    }

    /// Copies the nonce and ciphertext of `from` over those of `to`.
    async fn copy_ciphertext(&self, raw: &Raw, from: &ValueAddress, to: &ValueAddress) {
        if let Place::Dynamo { .. } = self {
            let source = self.get_item(raw, ddb_value_key(from)).await.unwrap();
            raw.dynamo()
                .update_item()
                .table_name(self.table())
                .set_key(Some(ddb_value_key(to)))
                .update_expression("SET nonce = :nonce, ciphertext = :ciphertext")
                .expression_attribute_values(":nonce", source["nonce"].clone())
                .expression_attribute_values(":ciphertext", source["ciphertext"].clone())
                .send()
                .await
                .unwrap();
            return;
        }
        sqlx::query(
            "UPDATE secret_values SET \
             nonce = (SELECT nonce FROM secret_values WHERE secret = $1 AND version = $2 AND environment_id = $3), \
             ciphertext = (SELECT ciphertext FROM secret_values WHERE secret = $1 AND version = $2 AND environment_id = $3) \
             WHERE secret = $4 AND version = $5 AND environment_id = $6",
        )
        .bind(&from.secret)
        .bind(i64::from(from.version))
        .bind(from.environment.to_string())
        .bind(&to.secret)
        .bind(i64::from(to.version))
        .bind(to.environment.to_string())
        .execute(raw.sql())
        .await
        .unwrap();
    }

    /// The keyring as stored: (key id, sealed key, check value) per entry.
    async fn keyring(&self, raw: &Raw) -> Vec<(String, Vec<u8>, Vec<u8>)> {
        if let Place::Dynamo { .. } = self {
            return self
                .scan(raw)
                .await
                .into_iter()
                .filter(|i| i.get("pk") == Some(&AttributeValue::S("keyring".into())))
                .map(|i| {
                    (
                        i["key_id"].as_s().unwrap().clone(),
                        i["sealed_key"].as_b().unwrap().as_ref().to_vec(),
                        i["check_value"].as_b().unwrap().as_ref().to_vec(),
                    )
                })
                .collect();
        }
        sqlx::query("SELECT key_id, sealed_key, check_value FROM data_keys ORDER BY generation")
            .fetch_all(raw.sql())
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get("key_id"), r.get("sealed_key"), r.get("check_value")))
            .collect()
    }

    /// Everything the store holds at rest, as bytes: the SQLite file and
    /// its WAL; on PostgreSQL every row of every table as text (bytea
    /// renders as hex, so the caller looks for the hex form too); on
    /// DynamoDB every attribute of every item of a full scan (binary as is).
    async fn at_rest(&self, raw: &Raw) -> Vec<u8> {
        let raw = match self {
            Place::Dynamo { .. } => {
                let mut bytes = Vec::new();
                for item in self.scan(raw).await {
                    for (name, value) in item {
                        bytes.extend(name.as_bytes());
                        bytes.push(b'=');
                        match value {
                            AttributeValue::S(v) | AttributeValue::N(v) => bytes.extend(v.as_bytes()),
                            AttributeValue::B(v) => bytes.extend(v.as_ref()),
                            other => bytes.extend(format!("{other:?}").as_bytes()),
                        }
                        bytes.push(b'\n');
                    }
                }
                return bytes;
            }
            _ => raw.sql(),
        };
        match self {
            Place::Dynamo { .. } => unreachable!(),
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

    /// An Agent's access counter, read from outside.
    async fn counter(&self, raw: &Raw, agent: AgentId) -> i64 {
        if let Place::Dynamo { .. } = self {
            let item = self
                .get_item(raw, ddb_key("counter", &format!("access#{agent}")))
                .await
                .expect("the counter item");
            return item["last_seq"].as_n().unwrap().parse().unwrap();
        }
        sqlx::query("SELECT last_seq FROM access_counters WHERE agent_id = $1")
            .bind(agent.to_string())
            .fetch_one(raw.sql())
            .await
            .unwrap()
            .get::<i64, _>("last_seq")
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Place::Dynamo { moto_url, table } = self {
            let (moto_url, table) = (moto_url.clone(), table.clone());
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(async {
                    let client = aws_sdk_dynamodb::Client::new(&aws_config(&moto_url).await);
                    let _ = client.delete_table().table_name(table).send().await;
                });
            })
            .join();
        }
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

async fn scenario(place: Place) {
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

    let (store, key_id) = place.open(&key(1)).await.unwrap();

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
    assert!(matches!(err, ValueStoreError::AlreadyExists { version: 2, .. }), "{err:?}");
    assert!(!err.to_string().contains("other"));
    assert_eq!(
        store.get_value(&at("db-password", dev, 2)).await.unwrap().unwrap().as_slice(),
        v(2).as_bytes()
    );

    // Latest version per (secret, environment).
    assert_eq!(store.latest_version(org, "db-password", dev).await.unwrap(), Some(2));
    assert_eq!(store.latest_version(org, "db-password", prod).await.unwrap(), Some(1));
    assert_eq!(store.latest_version(org, "missing", dev).await.unwrap(), None);
    // … and its value, what a read without a version serves (cached on SQL:
    // this handle's own writes below must show at once).
    let (version, value) = store.latest_value(org, "db-password", dev).await.unwrap().unwrap();
    assert_eq!((version, value.as_slice()), (2, v(2).as_bytes()));
    assert!(store.latest_value(org, "missing", dev).await.unwrap().is_none());

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
    assert!(matches!(err, ValueStoreError::Deactivated { version: 2, .. }), "{err:?}");
    assert_eq!(store.latest_version(org, "db-password", dev).await.unwrap(), Some(2));
    let err = store.latest_value(org, "db-password", dev).await.unwrap_err();
    assert!(matches!(err, ValueStoreError::Deactivated { version: 2, .. }), "no fallback to v1: {err:?}");
    let err = store.put_value(&at("db-password", dev, 2), v(2).as_bytes()).await.unwrap_err();
    assert!(matches!(err, ValueStoreError::AlreadyExists { .. }), "{err:?}");
    assert!(
        place.is_tombstone(&raw, &at("db-password", dev, 2)).await,
        "the ciphertext was replaced by a tombstone"
    );
    // Deactivating a version this Agent never held leaves a tombstone too.
    store.deactivate(&at("api-key", prod, 7)).await.unwrap();
    assert!(matches!(
        store.get_value(&at("api-key", prod, 7)).await,
        Err(ValueStoreError::Deactivated { .. })
    ));

    // Retention erases a superseded value: its ciphertext leaves the row, a
    // tombstone says why; a tombstone or an empty address is left alone.
    store.put_value(&at("old-key", dev, 1), v(1).as_bytes()).await.unwrap();
    store.put_value(&at("old-key", dev, 2), v(2).as_bytes()).await.unwrap();
    assert!(store.erase(&at("old-key", dev, 1)).await.unwrap());
    let err = store.get_value(&at("old-key", dev, 1)).await.unwrap_err();
    assert!(matches!(err, ValueStoreError::Superseded { version: 1, .. }), "{err:?}");
    assert!(place.is_tombstone(&raw, &at("old-key", dev, 1)).await, "the ciphertext is gone from the row");
    assert!(!store.erase(&at("old-key", dev, 1)).await.unwrap(), "erased once");
    assert!(!store.erase(&at("db-password", dev, 2)).await.unwrap(), "a deactivated version stays so");
    assert!(matches!(
        store.get_value(&at("db-password", dev, 2)).await,
        Err(ValueStoreError::Deactivated { .. })
    ));
    assert!(!store.erase(&at("old-key", dev, 3)).await.unwrap(), "nothing held there");
    assert_eq!(store.get_value(&at("old-key", dev, 3)).await.unwrap(), None, "and nothing written");
    let (version, value) = store.latest_value(org, "old-key", dev).await.unwrap().unwrap();
    assert_eq!((version, value.as_slice()), (2, v(2).as_bytes()), "the current value stays");
    let err = store.put_value(&at("old-key", dev, 1), b"revived").await.unwrap_err();
    assert!(matches!(err, ValueStoreError::AlreadyExists { .. }), "no revival: {err:?}");

    // The inventory for the sync report: addresses and flags only.
    let inventory = store.inventory().await.unwrap();
    let entry = |secret: &str, environment, version, deactivated| InventoryEntry {
        org,
        secret: secret.to_owned(),
        environment,
        version,
        deactivated,
        superseded: false,
    };
    for expected in [
        entry("api-key", dev, 1, false),
        entry("api-key", prod, 7, true),
        entry("db-password", dev, 1, false),
        entry("db-password", dev, 2, true),
        entry("db-password", prod, 1, false),
        InventoryEntry { superseded: true, ..entry("old-key", dev, 1, true) },
        entry("old-key", dev, 2, false),
    ] {
        assert!(inventory.contains(&expected), "{expected:?} missing from {inventory:?}");
    }
    assert_eq!(inventory.len(), 7);

    // A ciphertext moved to another row does not decrypt: rename the row.
    place.move_value(&raw, &at("api-key", dev, 1), "moved").await;
    let err = store.get_value(&at("moved", dev, 1)).await.unwrap_err();
    assert!(matches!(err, ValueStoreError::Undecryptable { .. }), "{err:?}");
    assert!(!err.to_string().contains(&marker));
    // … nor does one copied over another version's row.
    place.copy_ciphertext(&raw, &at("db-password", dev, 1), &at("db-password", prod, 1)).await;
    assert!(matches!(
        store.get_value(&at("db-password", prod, 1)).await,
        Err(ValueStoreError::Undecryptable { .. })
    ));

    // Access records: 1, 2, 3… with no gap, even when an insert fails
    // after the counter row was updated in its transaction.
    let record = |accessor: &str, version| ServedRead {
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
    let epoch = store.numbering(agent).await.unwrap().epoch;
    assert_eq!(epoch.len(), 32, "a fresh store starts a random epoch: {epoch}");
    place.fail_inserts_for(&raw, "refused@example.com", (agent, &epoch, 3)).await;
    let err = store.append_access_record(&record("refused@example.com", 1)).await.unwrap_err();
    assert!(matches!(err, ValueStoreError::Unavailable(_)), "{err:?}");
    assert_eq!(place.counter(&raw, agent).await, 2, "the counter advanced for a record that was not written");
    place.allow_inserts(&raw).await;
    assert_eq!(store.append_access_record(&record("ana@example.com", 2)).await.unwrap(), 3);
    assert_eq!(store.append_access_record(&record("cy@example.com", 1)).await.unwrap(), 4);
    // A group commit with one refused record (the second, seq 6) writes none of them.
    place.fail_inserts_for(&raw, "refused@example.com", (agent, &epoch, 6)).await;
    let batch = [record("ana@example.com", 3), record("refused@example.com", 3)];
    assert!(matches!(store.append_access_records(&batch).await, Err(ValueStoreError::Unavailable(_))));
    assert_eq!(place.counter(&raw, agent).await, 4, "a refused batch used sequence numbers");
    assert!(matches!(store.append_access_records(&[]).await, Err(ValueStoreError::Invalid(_))));
    place.allow_inserts(&raw).await;
    let after = |n: u64, limit: u32| store.access_records_after(agent, &epoch, n, limit);
    let all = after(0, 100).await.unwrap();
    assert_eq!(all.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3, 4]);
    let batch = [record("dee@example.com", 1), record("eve@example.com", 1), record("fay@example.com", 1)];
    assert_eq!(store.append_access_records(&batch).await.unwrap(), 5);
    let all = after(4, 100).await.unwrap();
    assert_eq!(
        all.iter().map(|r| (r.seq, r.record.accessor.as_str())).collect::<Vec<_>>(),
        [(5, "dee@example.com"), (6, "eve@example.com"), (7, "fay@example.com")]
    );
    let all = after(0, 100).await.unwrap();
    assert_eq!(all[2].record, record("ana@example.com", 2));
    let page = after(1, 2).await.unwrap();
    assert_eq!(page.iter().map(|r| r.seq).collect::<Vec<_>>(), [2, 3]);
    assert!(after(7, 10).await.unwrap().is_empty());

    // Another Agent sharing this store numbers its own reads, from 1, and
    // sees only its own records; a batch served by two Agents is refused.
    let other = AgentId::from_uuid(Uuid::new_v4());
    let theirs = ServedRead { served_by: other, ..record("gus@example.com", 1) };
    assert_eq!(store.append_access_record(&theirs).await.unwrap(), 1);
    let other_epoch = store.numbering(other).await.unwrap().epoch;
    assert_ne!(other_epoch, epoch);
    let listed = store.access_records_after(other, &other_epoch, 0, 100).await.unwrap();
    assert_eq!(listed.iter().map(|r| (r.seq, r.record.served_by)).collect::<Vec<_>>(), [(1, other)]);
    assert_eq!(after(0, 100).await.unwrap().len(), 7, "the other Agent's record is not this Agent's");
    assert!(matches!(
        store.append_access_records(&[record("x@example.com", 1), theirs.clone()]).await,
        Err(ValueStoreError::Invalid(_))
    ));
    // A restarted numbering (a store restored from a backup) starts a new
    // epoch from 1; the old epoch's records stay.
    let fresh = store.restart_numbering(agent).await.unwrap();
    assert_ne!(fresh.epoch, epoch);
    assert_eq!((store.numbering(agent).await.unwrap(), fresh.last_seq), (fresh.clone(), 0));
    assert_eq!(store.append_access_record(&record("hal@example.com", 1)).await.unwrap(), 1);
    assert_eq!(store.access_records_after(agent, &fresh.epoch, 0, 100).await.unwrap().len(), 1);
    assert_eq!(after(0, 100).await.unwrap().len(), 7);

    // Unassigned from prod: only prod's versions go.
    assert_eq!(store.delete_in_environment(org, "db-password", prod, None).await.unwrap(), 1);
    assert!(store.get_value(&at("db-password", prod, 1)).await.unwrap().is_none());
    assert_eq!(store.latest_version(org, "db-password", prod).await.unwrap(), None);
    let left: Vec<(CatalogId, u32)> = store
        .inventory()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.secret == "db-password")
        .map(|e| (e.environment, e.version))
        .collect();
    assert_eq!(left, [(dev, 1), (dev, 2)], "dev stays");
    // A deletion in dev through version 1: version 2 (numbered after it
    // started) stays.
    assert_eq!(store.delete_in_environment(org, "db-password", dev, Some(1)).await.unwrap(), 1);
    assert!(store.get_value(&at("db-password", dev, 1)).await.unwrap().is_none());
    assert!(matches!(
        store.get_value(&at("db-password", dev, 2)).await,
        Err(ValueStoreError::Deactivated { .. })
    ));

    // Delete a secret: every version in every environment goes.
    assert_eq!(store.delete_secret(org, "db-password").await.unwrap(), 1);
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
    assert_eq!(err, ValueStoreError::WrongMasterKey { key_id: key_id.clone() });
    assert_eq!(err.to_string(), format!("the master key does not open this store (key id {key_id})"));
    // The right key still opens it, and reads what the first handle wrote.
    let (again, again_key_id) = place.open(&key(1)).await.unwrap();
    assert_eq!(again_key_id, key_id);
    assert_eq!(again.get_value(&at("api-key", prod, 7)).await.unwrap_err().to_string(), {
        ValueStoreError::Deactivated { secret: "api-key".into(), environment: prod, version: 7 }.to_string()
    });
    again.put_value(&at("fresh", dev, 1), b"after reopen").await.unwrap();
    assert_eq!(store.get_value(&at("fresh", dev, 1)).await.unwrap().unwrap().as_slice(), b"after reopen");
    again.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_scenario_on_sqlite() {
    scenario(Place::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_scenario_on_postgres() {
    scenario(Place::postgres().await).await;
}

/// A managed PostgreSQL that requires TLS (RDS with `rds.force_ssl`, a
/// `hostssl`-only `pg_hba.conf`): the whole scenario over verified TLS; a
/// CA that did not sign the server's certificate, and a URL that offers no
/// TLS, are refused with the reason and no password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_scenario_on_postgres_that_requires_tls() {
    let place = Place::tls_postgres();
    let Place::Postgres { _server: Some(server), name, .. } = &place else { unreachable!() };
    let key = key(7);
    let wrong_ca =
        server.url(name, &format!("sslmode=verify-full&sslrootcert={}", server.wrong_ca_file.display()));
    let err = store::postgres::open(&wrong_ca, &key).await.map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("not signed by the CA") && !err.contains(&server.password), "{err}");
    let cleartext = server.url(name, "sslmode=disable");
    let err = store::postgres::open(&cleartext, &key).await.map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("accepts TLS connections only") && !err.contains(&server.password), "{err}");
    scenario(place).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_scenario_on_dynamodb() {
    scenario(Place::dynamo()).await;
}

#[tokio::test]
async fn invalid_addresses_are_refused_before_the_database() {
    let place = Place::sqlite();
    let (store, _) = place.open(&key(3)).await.unwrap();
    let org = OrgId::from_uuid(Uuid::new_v4());
    let environment = CatalogId::from_uuid(Uuid::new_v4());
    let bad = [
        ValueAddress { org, secret: String::new(), environment, version: 1 },
        ValueAddress { org, secret: "x".repeat(store::MAX_NAME_LEN + 1), environment, version: 1 },
        ValueAddress { org, secret: "ok".into(), environment, version: 0 },
    ];
    for at in bad {
        assert!(matches!(store.put_value(&at, b"v").await, Err(ValueStoreError::Invalid(_))), "{at:?}");
    }
    let at = ValueAddress { org, secret: "big".into(), environment, version: 1 };
    let big = vec![0u8; store::MAX_VALUE_LEN + 1];
    assert!(matches!(store.put_value(&at, &big).await, Err(ValueStoreError::Invalid(_))));
    assert!(store.inventory().await.unwrap().is_empty());
}

fn a_record(n: u32) -> ServedRead {
    ServedRead {
        accessor: format!("reader-{n}@example.com"),
        at_micros: 1_700_000_000_000_000 + i64::from(n),
        secret: "db-password".into(),
        environment: CatalogId::from_uuid(Uuid::from_u128(7)),
        version: 1,
        source: "127.0.0.1:50000".into(),
        served_by: AgentId::from_uuid(Uuid::from_u128(8)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_group_commits_stay_gapless_under_concurrency_and_within_one_transaction() {
    let place = Place::dynamo();
    // Two Agents opening a new table at once: one creates it, one first key
    // wins, both use it.
    let (key_a, key_b) = (key(4), key(4));
    let (a, b) = tokio::join!(place.open(&key_a), place.open(&key_b));
    let ((a, a_key), (b, b_key)) = (a.unwrap(), b.unwrap());
    assert_eq!(a_key, b_key, "both handles opened the same first data key");
    assert_eq!(a.max_access_batch(), MAX_ACCESS_BATCH);
    assert_eq!(MAX_ACCESS_BATCH, 99);

    // A batch that would need more than one transaction is refused whole.
    let too_many: Vec<_> = (0..100).map(a_record).collect();
    let err = a.append_access_records(&too_many).await.unwrap_err();
    assert!(matches!(err, ValueStoreError::Invalid(ref m) if m.contains("at most 99")), "{err:?}");
    let raw = place.raw().await;
    let agent = a_record(0).served_by;
    // 99 records go in one transaction.
    assert_eq!(a.append_access_records(&too_many[..99]).await.unwrap(), 1);
    assert_eq!(place.counter(&raw, agent).await, 99);
    let epoch = a.numbering(agent).await.unwrap().epoch;

    // Two handles appending at once: every commit gets its own run of numbers.
    async fn append(store: &Vault, size: u32) -> Vec<(u64, u64)> {
        let batch: Vec<_> = (0..size).map(a_record).collect();
        let mut firsts = Vec::new();
        for _ in 0..6 {
            firsts.push((store.append_access_records(&batch).await.unwrap(), u64::from(size)));
        }
        firsts
    }
    let (from_a, from_b) = tokio::join!(append(&a, 3), append(&b, 2));
    let mut runs: Vec<(u64, u64)> = from_a.into_iter().chain(from_b).collect();
    runs.sort();
    let mut next = 100;
    for (first, len) in runs {
        assert_eq!(first, next, "a gap or an overlap in the sequence");
        next += len;
    }
    assert_eq!(place.counter(&raw, agent).await, i64::try_from(next - 1).unwrap());
    let all = b.access_records_after(agent, &epoch, 0, 1000).await.unwrap();
    assert_eq!(all.iter().map(|r| r.seq).collect::<Vec<_>>(), (1..next).collect::<Vec<_>>());
    // Pages: `limit` is honoured across DynamoDB's own pages.
    let page = a.access_records_after(agent, &epoch, 97, 5).await.unwrap();
    assert_eq!(page.iter().map(|r| r.seq).collect::<Vec<_>>(), [98, 99, 100, 101, 102]);
    assert!(a.access_records_after(agent, &epoch, 5, 0).await.unwrap().is_empty());

    // The store's Debug names the table and key ids, never key bytes.
    let shown = format!("{a:?}");
    assert!(shown.contains(place.table()) && shown.contains(&a_key), "{shown}");
    // The master key is 32 bytes of 4: neither its hex nor its bytes show
    // (a run long enough that a random id in the output cannot hold it).
    assert!(!shown.to_lowercase().contains(&"04".repeat(8)), "{shown}");
    assert!(!shown.contains("4, 4, 4, 4"), "{shown}");
    raw.close().await;
}

/// Hundreds of readers at once through the recorder on PostgreSQL, some of
/// whose group commits PostgreSQL refuses: one gapless run of numbers, each
/// the record of a read that was told it is durable, and nothing of the
/// refused ones (a failed commit gives its numbers back to the next).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_commits_on_postgres_stay_gapless_when_a_batch_fails() {
    use heimdall_agent::values::recorder::Recorder;
    let place = Place::postgres().await;
    let (store, _) = place.open(&key(5)).await.unwrap();
    let store = std::sync::Arc::new(store);
    let recorder = Recorder::start(store.clone(), None);
    let mut readers = tokio::task::JoinSet::new();
    for n in 0..600_u32 {
        let recorder = recorder.clone();
        readers.spawn(async move {
            let mut record = a_record(n);
            // PostgreSQL refuses a NUL in text: the whole batch fails.
            if n % 50 == 0 {
                record.accessor = "bad\0reader@example.com".into();
            }
            let accessor = record.accessor.clone();
            (accessor, recorder.record(record).await)
        });
    }
    let mut durable = Vec::new();
    let mut refused = 0;
    while let Some(joined) = readers.join_next().await {
        match joined.unwrap() {
            (accessor, Ok(seq)) => durable.push((seq, accessor)),
            (_, Err(ValueStoreError::Unavailable(_))) => refused += 1,
            (_, Err(other)) => panic!("unexpected {other:?}"),
        }
    }
    assert!(refused >= 12, "every batch with a refused record fails whole ({refused} refused)");
    durable.sort();
    let numbers: Vec<u64> = durable.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(numbers, (1..=durable.len() as u64).collect::<Vec<_>>(), "one gapless run of numbers");
    let agent = a_record(0).served_by;
    let epoch = store.numbering(agent).await.unwrap().epoch;
    let stored = store.access_records_after(agent, &epoch, 0, 1000).await.unwrap();
    let stored: Vec<(u64, String)> = stored.into_iter().map(|r| (r.seq, r.record.accessor)).collect();
    assert_eq!(stored, durable, "what is stored is exactly what readers were told is durable");
}

#[tokio::test]
async fn dynamodb_refuses_a_table_with_another_key_schema() {
    let place = Place::dynamo();
    let raw = place.raw().await;
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    };
    raw.dynamo()
        .create_table()
        .table_name(place.table())
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(KeySchemaElement::builder().attribute_name("id").key_type(KeyType::Hash).build().unwrap())
        .send()
        .await
        .unwrap();
    let err = place.open(&key(5)).await.unwrap_err();
    assert!(matches!(err, ValueStoreError::Open(ref m) if m.contains("another key schema")), "{err:?}");
}

/// A symmetric KMS key in moto; its id and ARN.
async fn kms_key(kms: &aws_sdk_kms::Client) -> (String, String) {
    let meta = kms.create_key().description("heimdall test").send().await.unwrap().key_metadata.unwrap();
    (meta.key_id().to_owned(), meta.arn().unwrap().to_owned())
}

async fn kms_scenario(place: Place, kms: &aws_sdk_kms::Client) {
    let (a_id, a_arn) = kms_key(kms).await;
    let (b_id, b_arn) = kms_key(kms).await;
    // Key A by alias: the store resolves it to the key's ARN.
    let alias = format!("alias/heimdall-test-{}", Uuid::new_v4().simple());
    kms.create_alias().alias_name(&alias).target_key_id(&a_id).send().await.unwrap();
    let key_a = KmsKey::with_client(kms.clone(), &alias).await.unwrap();
    assert_eq!(key_a.arn(), a_arn);
    assert_eq!(format!("{key_a:?}"), format!("KmsKey {{ arn: {a_arn:?} }}"));

    let marker = format!("PLAINTEXT-MARKER-{}", Uuid::new_v4().simple());
    let at = ValueAddress {
        org: OrgId::from_uuid(Uuid::new_v4()),
        secret: "db-password".into(),
        environment: CatalogId::from_uuid(Uuid::new_v4()),
        version: 1,
    };
    let (store, key_id) = place.open(&key_a).await.unwrap();
    store.put_value(&at, marker.as_bytes()).await.unwrap();
    assert_eq!(store.get_value(&at).await.unwrap().unwrap().as_slice(), marker.as_bytes());
    store.close().await;

    // The keyring holds the KMS ciphertext blob of the data key, bound to
    // the encryption context, and a check value; never the data key.
    let raw = place.raw().await;
    let keyring = place.keyring(&raw).await;
    assert_eq!(keyring.len(), 1, "one data key");
    let (stored_id, blob, check_value) = &keyring[0];
    assert_eq!(stored_id, &key_id);
    assert!(!check_value.is_empty());
    let opened = kms
        .decrypt()
        .ciphertext_blob(aws_sdk_kms::primitives::Blob::new(blob.clone()))
        .set_encryption_context(Some(KmsKey::encryption_context(&key_id)))
        .send()
        .await
        .expect("the keyring entry is a KMS ciphertext blob of key A");
    assert_eq!(opened.key_id(), Some(a_arn.as_str()));
    let data_key = opened.plaintext().unwrap().as_ref().to_vec();
    assert_eq!(data_key.len(), 32);
    assert_eq!(
        KmsKey::encryption_context(&key_id),
        HashMap::from([
            ("heimdall".to_owned(), "datakey/v1".to_owned()),
            ("key_id".to_owned(), key_id.clone())
        ])
    );
    // Without the encryption context KMS does not open it.
    assert!(kms
        .decrypt()
        .ciphertext_blob(aws_sdk_kms::primitives::Blob::new(blob.clone()))
        .send()
        .await
        .is_err());
    let rest = place.at_rest(&raw).await;
    let seen = contains(&rest, blob) || contains(&rest, hex::encode(blob).as_bytes());
    assert!(seen, "the at-rest dump must see the keyring (as is, or as hex on PostgreSQL)");
    assert!(!contains(&rest, &data_key), "the plaintext data key is at rest");
    assert!(!contains(&rest, hex::encode(&data_key).as_bytes()), "the plaintext data key (hex) is at rest");
    assert!(!contains(&rest, marker.as_bytes()), "a plaintext value is at rest");
    raw.close().await;

    // Another KMS key does not open it: refused, naming ids only.
    let key_b = KmsKey::with_client(kms.clone(), &b_id).await.unwrap();
    let err = place.open(&key_b).await.unwrap_err();
    let ValueStoreError::WrongKmsKey { key_id: refused_id, kms_key, reason } = &err else {
        panic!("{err:?}")
    };
    assert_eq!((refused_id, kms_key), (&key_id, &b_arn), "{reason}");
    let message = err.to_string();
    assert!(message.starts_with(&format!("the KMS key {b_arn} does not open this store (key id {key_id})")));
    // Nor does a local master key.
    assert_eq!(
        place.open(&key(1)).await.unwrap_err(),
        ValueStoreError::WrongMasterKey { key_id: key_id.clone() }
    );
    // Key A, by id this time, opens it again and reads what was written.
    let (again, again_id) =
        place.open(&KmsKey::with_client(kms.clone(), &a_id).await.unwrap()).await.unwrap();
    assert_eq!(again_id, key_id);
    assert_eq!(again.get_value(&at).await.unwrap().unwrap().as_slice(), marker.as_bytes());
    again.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kms_master_key_seals_the_keyring_on_sqlite_postgres_and_dynamodb() {
    let moto_url = crate::support::moto_start();
    let kms = aws_sdk_kms::Client::new(&aws_config(&moto_url).await);
    kms_scenario(Place::sqlite(), &kms).await;
    kms_scenario(Place::postgres().await, &kms).await;
    kms_scenario(Place::dynamo(), &kms).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kms_key_refuses_a_store_sealed_by_a_local_master_key_and_bad_keys_are_refused_early() {
    let moto_url = crate::support::moto_start();
    let kms = aws_sdk_kms::Client::new(&aws_config(&moto_url).await);
    let place = Place::sqlite();
    let (store, key_id) = place.open(&key(1)).await.unwrap();
    store.close().await;
    let (a_id, a_arn) = kms_key(&kms).await;
    let err = place.open(&KmsKey::with_client(kms.clone(), &a_id).await.unwrap()).await.unwrap_err();
    assert!(
        matches!(&err, ValueStoreError::WrongKmsKey { key_id: k, kms_key, .. } if *k == key_id && *kms_key == a_arn),
        "{err:?}"
    );
    assert!(err.to_string().contains("local master key"), "{err}");

    // Unknown, disabled, or not for encryption: refused before any store is touched.
    let err = KmsKey::with_client(kms.clone(), &Uuid::new_v4().to_string()).await.unwrap_err();
    assert!(err.to_string().contains("cannot be used"), "{err}");
    let (c_id, _) = kms_key(&kms).await;
    kms.disable_key().key_id(&c_id).send().await.unwrap();
    let err = KmsKey::with_client(kms.clone(), &c_id).await.unwrap_err();
    assert!(err.to_string().contains("not enabled"), "{err}");
    let signing = kms
        .create_key()
        .key_usage(aws_sdk_kms::types::KeyUsageType::SignVerify)
        .key_spec(aws_sdk_kms::types::KeySpec::EccNistP256)
        .send()
        .await
        .unwrap();
    let err = KmsKey::with_client(kms.clone(), signing.key_metadata().unwrap().key_id()).await.unwrap_err();
    assert!(err.to_string().contains("symmetric"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_opens_a_dynamodb_store_under_a_kms_key_and_refuses_another_key() {
    use std::time::Duration;

    let w = crate::support::World::new().await;
    let config = w.enroll("agent-1").await;
    let aws = aws_config(&w.moto_url).await;
    let kms = aws_sdk_kms::Client::new(&aws);
    let (a_id, _) = kms_key(&kms).await;
    let (b_id, b_arn) = kms_key(&kms).await;
    let table = format!("heimdall-e2e-{}", Uuid::new_v4().simple());
    let base = std::fs::read_to_string(&config).unwrap();
    let with_kms_key = |key: &str| {
        std::fs::write(
            &config,
            format!(
                "{base}\n[values]\ndynamodb_table = {table:?}\nmaster_key_kms = {key:?}\n\
                 aws_region = \"us-east-1\"\naws_endpoint_url = {:?}\n",
                w.moto_url
            ),
        )
        .unwrap();
    };

    // First start: the Agent creates the table and seals its first data key with key A.
    with_kms_key(&a_id);
    let mut agent = w.run_agent(&config);
    let ddb = aws_sdk_dynamodb::Client::new(&aws);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let keyring = ddb
            .get_item()
            .table_name(&table)
            .set_key(Some(ddb_key("keyring", &format!("{:010}", 1))))
            .consistent_read(true)
            .send()
            .await
            .ok()
            .and_then(|out| out.item);
        if keyring.is_some() {
            break;
        }
        let log = std::fs::read_to_string(config.with_extension("log")).unwrap_or_default();
        assert!(agent.try_wait().unwrap().is_none(), "the Agent stopped:\n{log}");
        assert!(std::time::Instant::now() < deadline, "no keyring in {table}:\n{log}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(agent.try_wait().unwrap().is_none(), "the Agent runs with key A");
    agent.start_kill().unwrap();
    let _ = agent.wait().await;

    // Key B does not open it: the Agent refuses to start and says why.
    with_kms_key(&b_id);
    let mut agent = w.run_agent(&config);
    let status = tokio::time::timeout(Duration::from_secs(30), agent.wait()).await.expect("exits").unwrap();
    assert!(!status.success());
    let log = std::fs::read_to_string(config.with_extension("log")).unwrap();
    assert!(log.contains(&format!("the KMS key {b_arn} does not open this store")), "{log}");

    let _ = ddb.delete_table().table_name(&table).send().await;
}

/// The SQL store caches each (secret, environment)'s latest row, sealed:
/// its own writes, tombstones and deletes show at once; a version written
/// by another Agent sharing the database shows within a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_latest_value_cache_sees_own_writes_at_once_and_others_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let (a, b) = (
        store::sqlite::open(&path, &key(3)).await.unwrap(),
        store::sqlite::open(&path, &key(3)).await.unwrap(),
    );
    let org = OrgId::from_uuid(Uuid::new_v4());
    let env = CatalogId::from_uuid(Uuid::new_v4());
    let at = |version| ValueAddress { org, secret: "token".into(), environment: env, version };
    async fn latest(s: &Vault, org: OrgId, env: CatalogId) -> Option<(u32, Vec<u8>)> {
        s.latest_value(org, "token", env).await.unwrap().map(|(v, value)| (v, value.to_vec()))
    }
    a.put_value(&at(1), b"one").await.unwrap();
    assert_eq!(latest(&a, org, env).await, Some((1, b"one".to_vec())));
    a.put_value(&at(2), b"two").await.unwrap();
    assert_eq!(latest(&a, org, env).await, Some((2, b"two".to_vec())), "own write shows at once");
    b.put_value(&at(3), b"three").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        latest(&a, org, env).await,
        Some((3, b"three".to_vec())),
        "another handle's write shows within a second"
    );
    a.deactivate(&at(3)).await.unwrap();
    assert!(matches!(
        a.latest_value(org, "token", env).await,
        Err(ValueStoreError::Deactivated { version: 3, .. })
    ));
    a.delete_secret(org, "token").await.unwrap();
    assert_eq!(latest(&a, org, env).await, None);
}

/// A store from before epochs (one counter for every Agent sharing it):
/// made with the old migrations only, then opened with this code. Each
/// Agent continues in the epoch `legacy` from the old counter, reads only
/// its own old records, and numbers on without reusing a number.
async fn legacy_records_keep_their_numbers(place: Place) {
    let (a, b) = (AgentId::from_uuid(Uuid::from_u128(0xa)), AgentId::from_uuid(Uuid::from_u128(0xb)));
    let old = |seq: u64, agent: AgentId| {
        (seq, ServedRead { served_by: agent, ..a_record(u32::try_from(seq).unwrap()) })
    };
    let legacy = [old(1, a), old(2, b), old(3, a)];
    match &place {
        Place::Dynamo { .. } => {
            // The table as the old code left it: its counter and records.
            let (store, _) = place.open(&key(6)).await.unwrap();
            drop(store);
            let raw = place.raw().await;
            let mut counter = ddb_key("counter", "access");
            counter.insert("last_seq".into(), AttributeValue::N("3".into()));
            raw.dynamo().put_item().table_name(place.table()).set_item(Some(counter)).send().await.unwrap();
            for (seq, r) in &legacy {
                let mut item = ddb_key("access", &format!("{seq:020}"));
                for (k, v) in [
                    ("seq", AttributeValue::N(seq.to_string())),
                    ("accessor", AttributeValue::S(r.accessor.clone())),
                    ("at", AttributeValue::N(r.at_micros.to_string())),
                    ("secret", AttributeValue::S(r.secret.clone())),
                    ("environment", AttributeValue::S(r.environment.to_string())),
                    ("version", AttributeValue::N(r.version.to_string())),
                    ("source", AttributeValue::S(r.source.clone())),
                    ("served_by", AttributeValue::S(r.served_by.to_string())),
                ] {
                    item.insert(k.into(), v);
                }
                raw.dynamo().put_item().table_name(place.table()).set_item(Some(item)).send().await.unwrap();
            }
        }
        Place::Sqlite { .. } | Place::Postgres { .. } => {
            let (dir, files): (&str, &[&str]) = match place {
                Place::Sqlite { .. } => {
                    ("sqlite", &["0001_value_store.sql", "0002_access_record_triggers.sql"])
                }
                _ => ("postgres", &["0001_value_store.sql"]),
            };
            let before = tempfile::tempdir().unwrap();
            let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(dir);
            for file in files {
                std::fs::copy(source.join(file), before.path().join(file)).unwrap();
            }
            if let Place::Sqlite { .. } = place {
                std::fs::File::create(place.sqlite_path()).unwrap();
            }
            let raw = place.raw().await;
            sqlx::migrate::Migrator::new(before.path()).await.unwrap().run(raw.sql()).await.unwrap();
            // In order: on SQLite the old triggers advance the counter.
            for (seq, r) in &legacy {
                sqlx::query(
                    "INSERT INTO access_records (seq, accessor, accessed_at, secret, environment_id, version, source, served_by) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                )
                .bind(i64::try_from(*seq).unwrap())
                .bind(r.accessor.clone())
                .bind(r.at_micros)
                .bind(r.secret.clone())
                .bind(r.environment.to_string())
                .bind(i64::from(r.version))
                .bind(r.source.clone())
                .bind(r.served_by.to_string())
                .execute(raw.sql())
                .await
                .unwrap();
            }
            sqlx::query("UPDATE access_counter SET last_seq = 3 WHERE id = 1")
                .execute(raw.sql())
                .await
                .unwrap();
            raw.close().await;
        }
    }
    let (store, _) = place.open(&key(6)).await.unwrap();
    for agent in [a, b] {
        let numbering = store.numbering(agent).await.unwrap();
        assert_eq!((numbering.epoch.as_str(), numbering.last_seq), (store::LEGACY_EPOCH, 3));
    }
    let of_a = store.access_records_after(a, store::LEGACY_EPOCH, 0, 10).await.unwrap();
    assert_eq!(
        of_a.iter().map(|r| (r.seq, r.record.clone())).collect::<Vec<_>>(),
        [legacy[0].clone(), legacy[2].clone()]
    );
    let of_b = store.access_records_after(b, store::LEGACY_EPOCH, 0, 10).await.unwrap();
    assert_eq!(of_b.iter().map(|r| r.seq).collect::<Vec<_>>(), [2]);
    // Each numbers on from the old counter, separately.
    assert_eq!(store.append_access_record(&ServedRead { served_by: a, ..a_record(4) }).await.unwrap(), 4);
    assert_eq!(store.append_access_record(&ServedRead { served_by: a, ..a_record(5) }).await.unwrap(), 5);
    assert_eq!(store.append_access_record(&ServedRead { served_by: b, ..a_record(6) }).await.unwrap(), 4);
    let of_a = store.access_records_after(a, store::LEGACY_EPOCH, 1, 10).await.unwrap();
    assert_eq!(of_a.iter().map(|r| r.seq).collect::<Vec<_>>(), [3, 4, 5]);
    assert_eq!(store.access_records_after(a, store::LEGACY_EPOCH, 0, 2).await.unwrap().len(), 2, "limit");
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_records_keep_their_numbers_on_sqlite() {
    legacy_records_keep_their_numbers(Place::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_records_keep_their_numbers_on_postgres() {
    legacy_records_keep_their_numbers(Place::postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_records_keep_their_numbers_on_dynamodb() {
    legacy_records_keep_their_numbers(Place::dynamo()).await;
}

/// A store that a newer Agent migrated is refused, naming both versions,
/// and nothing in it changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_migrated_by_a_newer_agent_is_refused_naming_both_versions() {
    let place = Place::sqlite();
    let (vault, _) = place.open(&key(3)).await.unwrap();
    drop(vault);
    let raw = place.raw().await;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES ($1, 'from a newer release', TRUE, $2, 0)",
    )
    .bind(20_991_231_000_000_i64)
    .bind(vec![0_u8; 48])
    .execute(raw.sql())
    .await
    .unwrap();
    let err = place.open(&key(3)).await.map(|_| ()).unwrap_err().to_string();
    let newest = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/sqlite"))
        .unwrap()
        .filter_map(|f| f.unwrap().file_name().to_str()?.split('_').next()?.parse::<i64>().ok())
        .max()
        .unwrap();
    assert!(
        err.contains(&format!(
            "migrated by a newer Heimdall: it has migration 20991231000000, this binary knows migrations up to {newest}"
        )),
        "{err}"
    );
    raw.close().await;
}
