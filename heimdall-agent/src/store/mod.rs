//! The Agent's value store: secret values sealed under the Agent's keys
//! (see [`crate::crypto`]), and the access records of every read.
//!
//! [`ValueStore`] is what the Agent's read, write and sync paths will call.
//! [`SqlValueStore`] implements it over SQLite ([`sqlite::open`]) or
//! PostgreSQL ([`postgres::open`]): the query text is shared (sqlx's `Any`
//! driver, `$N` placeholders that SQLite accepts too, ids as UUID text);
//! each backend module holds its migrations and connection setup.
//! [`dynamodb::DynamoValueStore`] implements it over one DynamoDB table.
//!
//! Rows hold only ciphertext, nonce and key id, never a plaintext. The
//! keyring holds data keys sealed by a [`KeySealer`] (the local master key
//! or a KMS key); opening the store opens every one of them, so a wrong
//! key is refused before anything else happens
//! ([`StoreError::WrongMasterKey`], [`StoreError::WrongKmsKey`]).
//!
//! Access records carry a per-Agent sequence number taken from a counter
//! row in the same transaction as the record's insert: a failed insert rolls
//! the counter back with it, so the sequence has no gaps by construction.

pub mod dynamodb;
pub mod postgres;
pub mod sqlite;

use std::collections::HashMap;
use std::fmt;

use async_trait::async_trait;
use heimdall_core::ids::{AgentId, CatalogId, OrgId};
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};
use zeroize::Zeroizing;

pub use crate::crypto::ValueAddress;
use crate::crypto::{CryptoError, DataKey, KeySealer, SealedDataKey, SealedValue};

/// The longest value the store accepts.
pub const MAX_VALUE_LEN: usize = 1024 * 1024;
/// The longest secret name the store accepts (bytes).
pub const MAX_NAME_LEN: usize = 255;

/// What can go wrong. Driver errors arrive as text (`Unavailable`): no
/// sqlx type is part of this crate's interface, and no variant carries a
/// value or key bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The master key does not open the store's keyring: the Agent must not start.
    #[error("the master key does not open this store (key id {key_id})")]
    WrongMasterKey { key_id: String },
    /// The KMS key does not open the store's keyring: the Agent must not start.
    #[error("the KMS key {kms_key} does not open this store (key id {key_id}): {reason}")]
    WrongKmsKey { key_id: String, kms_key: String, reason: String },
    /// A value is already stored (or was deactivated) at this address; versions are never overwritten.
    #[error("version {version} of secret {secret} is already stored in environment {environment}")]
    AlreadyExists { secret: String, environment: CatalogId, version: u32 },
    /// This version was deactivated: its value was replaced by a tombstone.
    #[error("version {version} of secret {secret} was deactivated in environment {environment}")]
    Deactivated { secret: String, environment: CatalogId, version: u32 },
    /// The row's ciphertext does not open at its address: altered or moved.
    #[error(
        "the stored value of version {version} of secret {secret} does not decrypt (key id {key_id}): it \
         was altered or moved"
    )]
    Undecryptable { secret: String, version: u32, key_id: String },
    #[error("invalid request to the store: {0}")]
    Invalid(String),
    /// The database refused or could not be reached.
    #[error("the Agent's store is unavailable: {0}")]
    Unavailable(String),
    /// The store could not be opened (connection, migrations, keyring).
    #[error("cannot open the Agent's store: {0}")]
    Open(String),
}

/// One line of the sync report: what the store holds, never a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InventoryEntry {
    pub org: OrgId,
    pub secret: String,
    pub environment: CatalogId,
    pub version: u32,
    pub deactivated: bool,
}

/// One read of one value, written before the value is served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServedRead {
    /// The reader's email (from their client certificate).
    pub accessor: String,
    /// Microseconds since the Unix epoch.
    pub at_micros: i64,
    pub secret: String,
    pub environment: CatalogId,
    pub version: u32,
    /// Where the request came from (address as text).
    pub source: String,
    /// This Agent.
    pub served_by: AgentId,
}

/// One Agent's numbering in a store: the epoch and the last number used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Numbering {
    pub epoch: String,
    pub last_seq: u64,
}

/// The epoch an Agent continues in a store from before epochs.
pub const LEGACY_EPOCH: &str = heimdall_core::access::LEGACY_EPOCH;

/// A fresh epoch.
pub(crate) fn new_epoch() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The one Agent a batch of records was served by.
pub(crate) fn serving_agent(records: &[ServedRead]) -> Result<AgentId, StoreError> {
    let first =
        records.first().ok_or_else(|| StoreError::Invalid("an empty batch of access records".into()))?;
    if records.iter().any(|r| r.served_by != first.served_by) {
        return Err(StoreError::Invalid("a batch of access records is served by one Agent".into()));
    }
    Ok(first.served_by)
}

/// An access record with its sequence number (1, 2, 3… per Agent and epoch, no gaps).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedAccess {
    pub seq: u64,
    pub record: ServedRead,
}

/// The Agent's encrypted store. Open it with a backend's `open` function.
#[async_trait]
pub trait ValueStore: Send + Sync + fmt::Debug {
    /// Seals and stores a value; refuses (`AlreadyExists`) if the address
    /// already holds a value or a tombstone.
    async fn put_value(&self, at: &ValueAddress, plaintext: &[u8]) -> Result<(), StoreError>;

    /// The value, `None` if never stored here, `Deactivated` for a tombstone.
    async fn get_value(&self, at: &ValueAddress) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError>;

    /// The highest version held for (secret, environment), deactivated or
    /// not: a deactivated latest version is *not* skipped (no fallback to an
    /// older version).
    async fn latest_version(
        &self,
        org: OrgId,
        secret: &str,
        environment: CatalogId,
    ) -> Result<Option<u32>, StoreError>;

    /// Replaces the version's ciphertext with a tombstone (inserting one if
    /// this Agent never held the version, so a late write cannot revive it).
    async fn deactivate(&self, at: &ValueAddress) -> Result<(), StoreError>;

    /// What a read without a version serves: the highest version held for
    /// (secret, environment) and its value; `Deactivated` if that version
    /// is a tombstone (no fallback to an older one); `None` if none is held.
    async fn latest_value(
        &self,
        org: OrgId,
        secret: &str,
        environment: CatalogId,
    ) -> Result<Option<(u32, Zeroizing<Vec<u8>>)>, StoreError> {
        let Some(version) = self.latest_version(org, secret, environment).await? else { return Ok(None) };
        let at = ValueAddress { org, secret: secret.to_owned(), environment, version };
        Ok(self.get_value(&at).await?.map(|value| (version, value)))
    }

    /// Deletes every version of the secret in every environment; returns
    /// how many rows went.
    async fn delete_secret(&self, org: OrgId, secret: &str) -> Result<u64, StoreError>;

    /// What the store holds, for the sync report: addresses and whether each
    /// is deactivated, never a value.
    async fn inventory(&self) -> Result<Vec<InventoryEntry>, StoreError>;

    /// `agent`'s numbering of its reads in this store: its epoch and the
    /// last number used. The first call for an Agent starts one: a fresh
    /// random epoch from 0 (or, in a store from before epochs, the old
    /// shared counter's value in the epoch `legacy`). Agents that share a
    /// store each have their own.
    async fn numbering(&self, agent: AgentId) -> Result<Numbering, StoreError>;

    /// Starts `agent` on a new epoch from 0: its store was restored from a
    /// backup and its numbers have been used already. The old epoch's
    /// records stay.
    async fn restart_numbering(&self, agent: AgentId) -> Result<Numbering, StoreError>;

    /// Durably records reads in one transaction (a group commit) and
    /// returns the sequence number of the first; the others follow it one
    /// by one, in the serving Agent's current epoch. The numbers are taken
    /// from the Agent's counter row in the same transaction as the inserts:
    /// all are written, or none and no number is used. An empty batch, or
    /// one served by more than one Agent, is `Invalid`.
    async fn append_access_records(&self, records: &[ServedRead]) -> Result<u64, StoreError>;

    /// Durably records one read and returns its sequence number.
    async fn append_access_record(&self, record: &ServedRead) -> Result<u64, StoreError> {
        self.append_access_records(std::slice::from_ref(record)).await
    }

    /// `agent`'s records of `epoch` with a sequence number above `after`, in
    /// order, at most `limit`.
    async fn access_records_after(
        &self,
        agent: AgentId,
        epoch: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<RecordedAccess>, StoreError>;

    /// The most records one [`Self::append_access_records`] call takes; a
    /// larger batch is `Invalid` (a group committer splits its batches at
    /// this size). 100 on SQL (one INSERT statement); 99 on DynamoDB (100 items per
    /// transaction, one of them the counter).
    fn max_access_batch(&self) -> usize {
        usize::MAX
    }

    /// Releases connections; the store cannot be used afterwards.
    async fn close(&self) {}
}

/// Which database a [`SqlValueStore`] runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The data keys, opened. Values are sealed under `current`; older keys
/// stay to open what they sealed.
pub(crate) struct Keyring {
    keys: HashMap<String, DataKey>,
    current: String,
}

impl Keyring {
    /// Opens every sealed data key (in generation order; the last one is
    /// current). A key `sealer` does not open refuses the whole store.
    pub(crate) async fn open(sealed: &[SealedDataKey], sealer: &dyn KeySealer) -> Result<Self, StoreError> {
        let mut keys = HashMap::new();
        let mut current = String::new();
        for s in sealed {
            let key = sealer.unseal_data_key(s).await.map_err(keyring_error)?;
            current = s.key_id.clone();
            keys.insert(s.key_id.clone(), key);
        }
        if keys.is_empty() {
            return Err(StoreError::Open("the keyring is empty".into()));
        }
        Ok(Self { keys, current })
    }

    pub(crate) fn current_id(&self) -> &str {
        &self.current
    }

    pub(crate) fn current(&self) -> &DataKey {
        &self.keys[&self.current]
    }

    pub(crate) fn get(&self, key_id: &str) -> Option<&DataKey> {
        self.keys.get(key_id)
    }
}

/// A keyring that did not open: the wrong key, or a sealer that failed.
fn keyring_error(e: CryptoError) -> StoreError {
    match e {
        CryptoError::WrongMasterKey { key_id } => StoreError::WrongMasterKey { key_id },
        CryptoError::WrongKmsKey { key_id, kms_key, reason } => {
            StoreError::WrongKmsKey { key_id, kms_key, reason }
        }
        other => StoreError::Open(other.to_string()),
    }
}

/// A fresh first data key for a new store, sealed by `sealer`.
pub(crate) async fn first_data_key(sealer: &dyn KeySealer) -> Result<SealedDataKey, StoreError> {
    let (_key, sealed) = sealer.new_data_key().await.map_err(keyring_error)?;
    // The key is dropped (zeroized) here: the store opens the keyring it
    // reads back, whoever's first key won.
    Ok(sealed)
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring").field("keys", &self.keys.len()).field("current", &self.current).finish()
    }
}

/// [`ValueStore`] over SQLite or PostgreSQL.
#[derive(Debug)]
pub struct SqlValueStore {
    pool: AnyPool,
    backend: Backend,
    keyring: Keyring,
    latest: LatestCache,
    /// SQLite only: (Agent, epoch, next access record number), between group commits.
    next_seq: tokio::sync::Mutex<Option<(AgentId, String, i64)>>,
}

/// Access records per group commit on SQL stores: one INSERT statement of
/// 8 parameters a row, well under SQLite's and PostgreSQL's limits.
const RECORDS_PER_INSERT: usize = 100;

/// How long a cached "latest version" row is trusted. This Agent's own
/// writes, tombstones and deletes invalidate at once; the TTL bounds how
/// long a version written by *another* Agent sharing this database stays
/// unseen.
const LATEST_TTL: std::time::Duration = std::time::Duration::from_secs(1);

/// The latest row per (org, secret, environment), sealed as stored (the
/// cache holds ciphertext, never a plaintext): a read without a version
/// then costs no query, only the open and its access record.
#[derive(Default)]
struct LatestCache {
    rows: std::sync::Mutex<HashMap<(OrgId, String, CatalogId), LatestRow>>,
    /// Bumped by every invalidation; a lookup caches its answer only if no
    /// invalidation happened while it queried.
    generation: std::sync::atomic::AtomicU64,
}

impl fmt::Debug for LatestCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.rows.lock().map_or(0, |r| r.len());
        f.debug_struct("LatestCache").field("rows", &len).finish()
    }
}

#[derive(Clone)]
struct LatestRow {
    version: u32,
    /// `None`: a tombstone.
    sealed: Option<SealedValue>,
    fetched: std::time::Instant,
}

impl LatestCache {
    fn get(&self, key: &(OrgId, String, CatalogId)) -> Option<LatestRow> {
        let rows = self.rows.lock().ok()?;
        rows.get(key).filter(|r| r.fetched.elapsed() < LATEST_TTL).cloned()
    }

    fn put(&self, key: (OrgId, String, CatalogId), row: LatestRow, generation: u64) {
        if let Ok(mut rows) = self.rows.lock() {
            if self.generation.load(std::sync::atomic::Ordering::SeqCst) == generation {
                rows.insert(key, row);
            }
        }
    }

    fn invalidate(&self, org: OrgId, secret: &str) {
        self.generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if let Ok(mut rows) = self.rows.lock() {
            rows.retain(|(o, s, _), _| !(*o == org && s == secret));
        }
    }
}

fn db(err: sqlx::Error) -> StoreError {
    StoreError::Unavailable(err.to_string())
}

pub(crate) fn validate(at: &ValueAddress) -> Result<(), StoreError> {
    validate_name(&at.secret)?;
    if at.version == 0 {
        return Err(StoreError::Invalid("versions start at 1".into()));
    }
    Ok(())
}

pub(crate) fn validate_name(secret: &str) -> Result<(), StoreError> {
    if secret.is_empty() || secret.len() > MAX_NAME_LEN {
        return Err(StoreError::Invalid(format!("a secret name is 1 to {MAX_NAME_LEN} bytes")));
    }
    Ok(())
}

fn to_u32(v: i64, what: &str) -> Result<u32, StoreError> {
    u32::try_from(v).map_err(|_| StoreError::Unavailable(format!("the store holds an invalid {what}")))
}

pub(crate) fn parse_id<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, StoreError> {
    text.parse().map_err(|_| StoreError::Unavailable(format!("the store holds an invalid {what}")))
}

impl SqlValueStore {
    /// Runs the migrations and opens the keyring with `sealer`, creating
    /// the first data key on a new store.
    pub(crate) async fn open_pool(
        pool: AnyPool,
        backend: Backend,
        migrator: &sqlx::migrate::Migrator,
        sealer: &dyn KeySealer,
    ) -> Result<Self, StoreError> {
        migrator.run(&pool).await.map_err(|e| StoreError::Open(format!("migrations failed: {e}")))?;
        let mut sealed = load_keyring(&pool).await?;
        if sealed.is_empty() {
            let s = first_data_key(sealer).await?;
            // Two Agents opening a new database at once: one insert wins,
            // both then open the winner's key.
            sqlx::query(
                "INSERT INTO data_keys (generation, key_id, sealed_key, check_value) VALUES (1, $1, $2, $3) \
                 ON CONFLICT (generation) DO NOTHING",
            )
            .bind(s.key_id)
            .bind(s.sealed_key)
            .bind(s.check_value)
            .execute(&pool)
            .await
            .map_err(|e| StoreError::Open(e.to_string()))?;
            sealed = load_keyring(&pool).await?;
        }
        let keyring = Keyring::open(&sealed, sealer).await?;
        Ok(Self { pool, backend, keyring, latest: LatestCache::default(), next_seq: Default::default() })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The id of the data key new values are sealed under.
    pub fn current_key_id(&self) -> &str {
        self.keyring.current_id()
    }

    /// Closes the connections (the store cannot be used afterwards).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Opens a sealed value at its address; a tombstone is `Deactivated`,
    /// anything that does not open (altered, moved, unknown key) is
    /// `Undecryptable`.
    fn open(
        &self,
        at: &ValueAddress,
        sealed: Option<&SealedValue>,
    ) -> Result<Zeroizing<Vec<u8>>, StoreError> {
        let Some(sealed) = sealed else {
            return Err(StoreError::Deactivated {
                secret: at.secret.clone(),
                environment: at.environment,
                version: at.version,
            });
        };
        let undecryptable = || StoreError::Undecryptable {
            secret: at.secret.clone(),
            version: at.version,
            key_id: sealed.key_id.clone(),
        };
        let key = self.keyring.get(&sealed.key_id).ok_or_else(undecryptable)?;
        key.open_value(at, sealed).map_err(|_| undecryptable())
    }

    /// SQLite: the whole group commit is one multi-row INSERT, so one
    /// statement, one transaction, one round trip and one fsync; the
    /// triggers of migration 0003 advance the Agent's counter row inside it
    /// and refuse any number but the next. The next number is kept here
    /// between commits (this handle is the file's writer); if something
    /// else moved the counter, the insert is refused whole and retried once
    /// from the counter row.
    async fn append_in_one_statement(
        &self,
        agent: AgentId,
        records: &[ServedRead],
    ) -> Result<u64, StoreError> {
        let mut next = self.next_seq.lock().await;
        let sql = records_insert_sql(records.len());
        for attempt in 0..2 {
            let (epoch, first) = match next.as_ref() {
                Some((a, epoch, first)) if *a == agent => (epoch.clone(), *first),
                _ => {
                    let n = self.numbering(agent).await?;
                    (n.epoch, i64::try_from(n.last_seq).unwrap_or(i64::MAX) + 1)
                }
            };
            match bind_records(sqlx::query(&sql), &epoch, first, records).execute(&self.pool).await {
                Ok(_) => {
                    *next = Some((agent, epoch, first + i64::try_from(records.len()).unwrap_or(i64::MAX)));
                    return u64::try_from(first)
                        .map_err(|_| StoreError::Unavailable("invalid sequence number".into()));
                }
                Err(e) => {
                    *next = None;
                    if attempt == 0 && e.to_string().contains("access record out of sequence") {
                        continue;
                    }
                    return Err(db(e));
                }
            }
        }
        Err(StoreError::Unavailable("the access counter moved under this Agent twice".into()))
    }

    async fn read_numbering(&self, agent: AgentId) -> Result<Option<Numbering>, StoreError> {
        let row = sqlx::query("SELECT epoch, last_seq FROM access_counters WHERE agent_id = $1")
            .bind(agent.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.map(|r| {
            let last: i64 = r.try_get("last_seq").map_err(db)?;
            Ok(Numbering {
                epoch: r.try_get("epoch").map_err(db)?,
                last_seq: u64::try_from(last)
                    .map_err(|_| StoreError::Unavailable("invalid sequence number".into()))?,
            })
        })
        .transpose()
    }

    fn current_key(&self) -> &DataKey {
        self.keyring.current()
    }
}

async fn load_keyring(pool: &AnyPool) -> Result<Vec<SealedDataKey>, StoreError> {
    let rows = sqlx::query("SELECT key_id, sealed_key, check_value FROM data_keys ORDER BY generation")
        .fetch_all(pool)
        .await
        .map_err(|e| StoreError::Open(e.to_string()))?;
    rows.iter()
        .map(|r| {
            Ok(SealedDataKey {
                key_id: r.try_get("key_id").map_err(db)?,
                sealed_key: r.try_get("sealed_key").map_err(db)?,
                check_value: r.try_get("check_value").map_err(db)?,
            })
        })
        .collect()
}

/// A `secret_values` row's sealed value; `None` for a tombstone. A row
/// with some but not all of key id, nonce and ciphertext opens as
/// `Undecryptable` (see [`SqlValueStore::open`]).
fn sealed_from_row(row: &AnyRow) -> Result<Option<SealedValue>, StoreError> {
    let deactivated: i64 = row.try_get("deactivated").map_err(db)?;
    if deactivated != 0 {
        return Ok(None);
    }
    let key_id: Option<String> = row.try_get("key_id").map_err(db)?;
    let nonce: Option<Vec<u8>> = row.try_get("nonce").map_err(db)?;
    let ciphertext: Option<Vec<u8>> = row.try_get("ciphertext").map_err(db)?;
    Ok(Some(SealedValue {
        key_id: key_id.unwrap_or_default(),
        nonce: nonce.unwrap_or_default(),
        ciphertext: ciphertext.unwrap_or_default(),
    }))
}

/// Parameters per access record in [`records_insert_sql`].
const RECORD_PARAMS: usize = 9;

/// `INSERT INTO access_records … VALUES ($1…$9), ($10…$18), …` for `rows` records.
fn records_insert_sql(rows: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO access_records (seq, accessor, accessed_at, secret, environment_id, version, source, served_by, epoch) VALUES ",
    );
    for i in 0..rows {
        let p = i * RECORD_PARAMS;
        if i > 0 {
            sql.push_str(", ");
        }
        let placeholders: Vec<String> = (1..=RECORD_PARAMS).map(|k| format!("${}", p + k)).collect();
        sql.push('(');
        sql.push_str(&placeholders.join(", "));
        sql.push(')');
    }
    sql
}

/// Binds `records` numbered from `first` in `epoch` to [`records_insert_sql`]'s placeholders.
fn bind_records<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    epoch: &str,
    first: i64,
    records: &[ServedRead],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for (seq, record) in (first..).zip(records) {
        query =
            bind_fields(query.bind(seq), record).bind(record.served_by.to_string()).bind(epoch.to_owned());
    }
    query
}

/// A record's own fields, in the order both inserts list them.
fn bind_fields<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    record: &ServedRead,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(record.accessor.clone())
        .bind(record.at_micros)
        .bind(record.secret.clone())
        .bind(record.environment.to_string())
        .bind(i64::from(record.version))
        .bind(record.source.clone())
}

fn access_record(row: &AnyRow) -> Result<RecordedAccess, StoreError> {
    let seq: i64 = row.try_get("seq").map_err(db)?;
    let environment: String = row.try_get("environment_id").map_err(db)?;
    let served_by: String = row.try_get("served_by").map_err(db)?;
    Ok(RecordedAccess {
        seq: u64::try_from(seq).map_err(|_| StoreError::Unavailable("invalid sequence number".into()))?,
        record: ServedRead {
            accessor: row.try_get("accessor").map_err(db)?,
            at_micros: row.try_get("accessed_at").map_err(db)?,
            secret: row.try_get("secret").map_err(db)?,
            environment: parse_id(&environment, "environment id")?,
            version: to_u32(row.try_get("version").map_err(db)?, "version")?,
            source: row.try_get("source").map_err(db)?,
            served_by: parse_id(&served_by, "agent id")?,
        },
    })
}

#[async_trait]
impl ValueStore for SqlValueStore {
    async fn put_value(&self, at: &ValueAddress, plaintext: &[u8]) -> Result<(), StoreError> {
        validate(at)?;
        if plaintext.len() > MAX_VALUE_LEN {
            return Err(StoreError::Invalid(format!("a value is at most {MAX_VALUE_LEN} bytes")));
        }
        let sealed =
            self.current_key().seal_value(at, plaintext).map_err(|e| StoreError::Invalid(e.to_string()))?;
        let done = sqlx::query(
            "INSERT INTO secret_values (org_id, secret, environment_id, version, key_id, nonce, ciphertext, deactivated) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 0) \
             ON CONFLICT (org_id, secret, environment_id, version) DO NOTHING",
        )
        .bind(at.org.to_string())
        .bind(&at.secret)
        .bind(at.environment.to_string())
        .bind(i64::from(at.version))
        .bind(sealed.key_id)
        .bind(sealed.nonce)
        .bind(sealed.ciphertext)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        self.latest.invalidate(at.org, &at.secret);
        if done.rows_affected() == 0 {
            return Err(StoreError::AlreadyExists {
                secret: at.secret.clone(),
                environment: at.environment,
                version: at.version,
            });
        }
        Ok(())
    }

    async fn get_value(&self, at: &ValueAddress) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        validate(at)?;
        let row = sqlx::query(
            "SELECT key_id, nonce, ciphertext, deactivated FROM secret_values \
             WHERE org_id = $1 AND secret = $2 AND environment_id = $3 AND version = $4",
        )
        .bind(at.org.to_string())
        .bind(&at.secret)
        .bind(at.environment.to_string())
        .bind(i64::from(at.version))
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        let Some(row) = row else { return Ok(None) };
        let sealed = sealed_from_row(&row)?;
        self.open(at, sealed.as_ref()).map(Some)
    }

    async fn latest_value(
        &self,
        org: OrgId,
        secret: &str,
        environment: CatalogId,
    ) -> Result<Option<(u32, Zeroizing<Vec<u8>>)>, StoreError> {
        validate_name(secret)?;
        let key = (org, secret.to_owned(), environment);
        let row = match self.latest.get(&key) {
            Some(row) => row,
            None => {
                let generation = self.latest.generation.load(std::sync::atomic::Ordering::SeqCst);
                let found = sqlx::query(
                    "SELECT version, key_id, nonce, ciphertext, deactivated FROM secret_values \
                     WHERE org_id = $1 AND secret = $2 AND environment_id = $3 ORDER BY version DESC LIMIT 1",
                )
                .bind(org.to_string())
                .bind(secret)
                .bind(environment.to_string())
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?;
                let Some(found) = found else { return Ok(None) };
                let row = LatestRow {
                    version: to_u32(found.try_get("version").map_err(db)?, "version")?,
                    sealed: sealed_from_row(&found)?,
                    fetched: std::time::Instant::now(),
                };
                self.latest.put(key, row.clone(), generation);
                row
            }
        };
        let at = ValueAddress { org, secret: secret.to_owned(), environment, version: row.version };
        self.open(&at, row.sealed.as_ref()).map(|value| Some((row.version, value)))
    }

    async fn latest_version(
        &self,
        org: OrgId,
        secret: &str,
        environment: CatalogId,
    ) -> Result<Option<u32>, StoreError> {
        validate_name(secret)?;
        let row = sqlx::query(
            "SELECT MAX(version) AS latest FROM secret_values \
             WHERE org_id = $1 AND secret = $2 AND environment_id = $3",
        )
        .bind(org.to_string())
        .bind(secret)
        .bind(environment.to_string())
        .fetch_one(&self.pool)
        .await
        .map_err(db)?;
        let latest: Option<i64> = row.try_get("latest").map_err(db)?;
        latest.map(|v| to_u32(v, "version")).transpose()
    }

    async fn deactivate(&self, at: &ValueAddress) -> Result<(), StoreError> {
        validate(at)?;
        sqlx::query(
            "INSERT INTO secret_values (org_id, secret, environment_id, version, key_id, nonce, ciphertext, deactivated) \
             VALUES ($1, $2, $3, $4, NULL, NULL, NULL, 1) \
             ON CONFLICT (org_id, secret, environment_id, version) \
             DO UPDATE SET key_id = NULL, nonce = NULL, ciphertext = NULL, deactivated = 1",
        )
        .bind(at.org.to_string())
        .bind(&at.secret)
        .bind(at.environment.to_string())
        .bind(i64::from(at.version))
        .execute(&self.pool)
        .await
        .map_err(db)?;
        self.latest.invalidate(at.org, &at.secret);
        Ok(())
    }

    async fn delete_secret(&self, org: OrgId, secret: &str) -> Result<u64, StoreError> {
        validate_name(secret)?;
        let done = sqlx::query("DELETE FROM secret_values WHERE org_id = $1 AND secret = $2")
            .bind(org.to_string())
            .bind(secret)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        self.latest.invalidate(org, secret);
        Ok(done.rows_affected())
    }

    async fn inventory(&self) -> Result<Vec<InventoryEntry>, StoreError> {
        let rows = sqlx::query(
            "SELECT org_id, secret, environment_id, version, deactivated FROM secret_values \
             ORDER BY org_id, secret, environment_id, version",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        rows.iter()
            .map(|r| {
                let org: String = r.try_get("org_id").map_err(db)?;
                let environment: String = r.try_get("environment_id").map_err(db)?;
                let deactivated: i64 = r.try_get("deactivated").map_err(db)?;
                Ok(InventoryEntry {
                    org: parse_id(&org, "organization id")?,
                    secret: r.try_get("secret").map_err(db)?,
                    environment: parse_id(&environment, "environment id")?,
                    version: to_u32(r.try_get("version").map_err(db)?, "version")?,
                    deactivated: deactivated != 0,
                })
            })
            .collect()
    }

    async fn numbering(&self, agent: AgentId) -> Result<Numbering, StoreError> {
        if let Some(n) = self.read_numbering(agent).await? {
            return Ok(n);
        }
        let legacy = sqlx::query("SELECT last_seq FROM access_legacy_counter WHERE id = 1")
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?
            .map(|r| r.try_get::<i64, _>("last_seq"))
            .transpose()
            .map_err(db)?;
        let (epoch, last) = match legacy {
            Some(last) => (LEGACY_EPOCH.to_owned(), last),
            None => (new_epoch(), 0),
        };
        // Two handles starting one Agent's numbering at once: one insert wins.
        sqlx::query(
            "INSERT INTO access_counters (agent_id, epoch, last_seq) VALUES ($1, $2, $3) ON CONFLICT (agent_id) DO NOTHING",
        )
        .bind(agent.to_string())
        .bind(epoch)
        .bind(last)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        self.read_numbering(agent)
            .await?
            .ok_or_else(|| StoreError::Unavailable("the access counter row is missing".into()))
    }

    async fn restart_numbering(&self, agent: AgentId) -> Result<Numbering, StoreError> {
        let mut next = self.next_seq.lock().await;
        *next = None;
        let epoch = new_epoch();
        sqlx::query(
            "INSERT INTO access_counters (agent_id, epoch, last_seq) VALUES ($1, $2, 0) \
             ON CONFLICT (agent_id) DO UPDATE SET epoch = excluded.epoch, last_seq = 0",
        )
        .bind(agent.to_string())
        .bind(epoch.clone())
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(Numbering { epoch, last_seq: 0 })
    }

    async fn append_access_records(&self, records: &[ServedRead]) -> Result<u64, StoreError> {
        let agent = serving_agent(records)?;
        let count =
            i64::try_from(records.len()).map_err(|_| StoreError::Invalid("batch too large".into()))?;
        if records.len() > self.max_access_batch() {
            return Err(StoreError::Invalid(format!(
                "at most {} access records per group commit",
                self.max_access_batch()
            )));
        }
        if self.backend == Backend::Sqlite {
            return self.append_in_one_statement(agent, records).await;
        }
        // PostgreSQL: one statement, so one round trip and one commit. The
        // Agent's counter row is the sequence: the CTE's update and the
        // insert commit together or not at all, and its row lock orders
        // concurrent appenders of one Agent.
        let mut sql = String::from(
            "WITH counter AS (UPDATE access_counters SET last_seq = last_seq + $1 WHERE agent_id = $2 \
             RETURNING epoch, last_seq) \
             INSERT INTO access_records (seq, accessor, accessed_at, secret, environment_id, version, source, served_by, epoch) \
             SELECT counter.last_seq - $1 + r.ord, r.accessor, r.accessed_at, r.secret, r.environment_id, r.version, \
             r.source, $2, counter.epoch FROM counter, (VALUES ",
        );
        for i in 0..records.len() {
            let p = 2 + i * 7;
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!(
                "(${}::bigint, ${}::text, ${}::bigint, ${}::text, ${}::text, ${}::bigint, ${}::text)",
                p + 1,
                p + 2,
                p + 3,
                p + 4,
                p + 5,
                p + 6,
                p + 7
            ));
        }
        sql.push_str(
            ") AS r(ord, accessor, accessed_at, secret, environment_id, version, source) RETURNING seq",
        );
        for attempt in 0..2 {
            let mut query = sqlx::query(&sql).bind(count).bind(agent.to_string());
            for (ord, record) in (1_i64..).zip(records) {
                query = bind_fields(query.bind(ord), record);
            }
            let rows = query.fetch_all(&self.pool).await.map_err(db)?;
            let first = rows
                .iter()
                .map(|r| r.try_get::<i64, _>("seq"))
                .collect::<Result<Vec<_>, _>>()
                .map_err(db)?
                .into_iter()
                .min();
            match first {
                Some(first) => {
                    return u64::try_from(first)
                        .map_err(|_| StoreError::Unavailable("invalid sequence number".into()))
                }
                // No counter row yet for this Agent: start its numbering.
                None if attempt == 0 => {
                    self.numbering(agent).await?;
                }
                None => break,
            }
        }
        Err(StoreError::Unavailable("the insert of access records returned nothing".into()))
    }

    fn max_access_batch(&self) -> usize {
        RECORDS_PER_INSERT
    }

    async fn access_records_after(
        &self,
        agent: AgentId,
        epoch: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<RecordedAccess>, StoreError> {
        let after =
            i64::try_from(after).map_err(|_| StoreError::Invalid("sequence number too large".into()))?;
        let rows = sqlx::query(
            "SELECT seq, accessor, accessed_at, secret, environment_id, version, source, served_by \
             FROM access_records WHERE served_by = $1 AND epoch = $2 AND seq > $3 ORDER BY seq LIMIT $4",
        )
        .bind(agent.to_string())
        .bind(epoch.to_owned())
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        rows.iter().map(access_record).collect()
    }

    async fn close(&self) {
        self.pool.close().await;
    }
}

/// Where a URL points, without user or password, for messages.
pub(crate) fn describe_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let rest = rest.split_once('?').map_or(rest, |(path, _)| path);
    format!("{scheme}://{rest}")
}
