//! The vault: what the Agent's read, write and sync paths call, the same
//! over every backend. It validates addresses and sizes, seals values
//! under the current data key and opens them with the key that sealed
//! them, turns tombstones into `Deactivated`, caches the latest row of each
//! (secret, environment), and checks batches of access records. A backend
//! ([`SealedStore`]: SQLite, PostgreSQL, DynamoDB) only moves sealed rows.
//!
//! Opening the vault opens every data key of the store's keyring with the
//! [`KeySealer`] (the master key or a KMS key): a wrong key is refused
//! before anything else happens ([`ValueStoreError::WrongMasterKey`],
//! [`ValueStoreError::WrongKmsKey`]).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use heimdall_core::ids::{AgentId, CatalogId, OrgId};
use zeroize::Zeroizing;

use crate::values::crypto::{CryptoError, DataKey, KeySealer, SealedDataKey, SealedValue};
use crate::values::store::{
    Backend, InventoryEntry, Numbering, RecordedAccess, Row, SealedStore, ServedRead, ValueAddress,
    ValueStoreError, MAX_NAME_LEN, MAX_VALUE_LEN,
};

/// How long a cached latest row is trusted. This Agent's own writes,
/// tombstones and deletes invalidate at once; the TTL bounds how long a
/// version written by *another* Agent sharing the store stays unseen.
const LATEST_TTL: Duration = Duration::from_secs(1);

/// The Agent's encrypted value store over one backend.
pub struct Vault {
    rows: Box<dyn SealedStore>,
    keyring: Keyring,
    latest: LatestCache,
    /// Bumped whenever a value is stored, deactivated or deleted here: what
    /// `POST /v1/values/watch` waits on.
    changes: tokio::sync::watch::Sender<u64>,
}

impl fmt::Debug for Vault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vault")
            .field("rows", &self.rows)
            .field("keyring", &self.keyring)
            .field("latest", &self.latest)
            .finish()
    }
}

impl Vault {
    /// Opens the keyring of `rows` with `sealer`, creating the first data
    /// key on a new store (two Agents opening one at once: one key wins,
    /// both open it).
    pub async fn open(rows: Box<dyn SealedStore>, sealer: &dyn KeySealer) -> Result<Self, ValueStoreError> {
        let mut sealed = rows.data_keys().await?;
        if sealed.is_empty() {
            let (_key, first) = sealer.new_data_key().await.map_err(keyring_error)?;
            // The key is dropped (zeroized) here: the store opens the
            // keyring it reads back, whoever's first key won.
            rows.put_first_data_key(&first).await?;
            sealed = rows.data_keys().await?;
        }
        let keyring = Keyring::open(&sealed, sealer).await?;
        Ok(Self { rows, keyring, latest: LatestCache::default(), changes: tokio::sync::watch::channel(0).0 })
    }

    pub fn backend(&self) -> Backend {
        self.rows.backend()
    }

    /// The id of the data key new values are sealed under.
    pub fn current_key_id(&self) -> &str {
        &self.keyring.current
    }

    /// Seals a record of the Agent's own under the current data key
    /// (`DataKey::seal_record`); the caller keeps it where it likes.
    pub fn seal_record(
        &self,
        purpose: &str,
        owner: &str,
        plaintext: &[u8],
    ) -> Result<SealedValue, ValueStoreError> {
        let key = self.keyring.current();
        key.seal_record(purpose, owner, plaintext).map_err(|e| ValueStoreError::Invalid(e.to_string()))
    }

    /// Opens a record [`Self::seal_record`] sealed, with the key that sealed it.
    pub fn open_record(
        &self,
        purpose: &str,
        owner: &str,
        sealed: &SealedValue,
    ) -> Result<Zeroizing<Vec<u8>>, ValueStoreError> {
        let key = self.keyring.keys.get(&sealed.key_id).ok_or_else(|| {
            ValueStoreError::Invalid(format!(
                "sealed under data key {}, which this store does not have",
                sealed.key_id
            ))
        })?;
        key.open_record(purpose, owner, sealed).map_err(|e| ValueStoreError::Invalid(e.to_string()))
    }

    /// Seals and stores a value; refuses (`AlreadyExists`) if the address
    /// already holds a value or a tombstone.
    pub async fn put_value(&self, at: &ValueAddress, plaintext: &[u8]) -> Result<(), ValueStoreError> {
        validate(at)?;
        if plaintext.len() > MAX_VALUE_LEN {
            return Err(ValueStoreError::Invalid(format!("a value is at most {MAX_VALUE_LEN} bytes")));
        }
        let sealed = self
            .keyring
            .current()
            .seal_value(at, plaintext)
            .map_err(|e| ValueStoreError::Invalid(e.to_string()))?;
        let stored = self.rows.put_if_absent(at, &sealed).await;
        self.latest.invalidate(at.org, &at.secret);
        self.changed();
        if !stored? {
            return Err(ValueStoreError::AlreadyExists {
                secret: at.secret.clone(),
                environment: at.environment,
                version: at.version,
            });
        }
        Ok(())
    }

    /// The value, `None` if never stored here, `Deactivated` or
    /// `Superseded` for a tombstone.
    pub async fn get_value(&self, at: &ValueAddress) -> Result<Option<Zeroizing<Vec<u8>>>, ValueStoreError> {
        validate(at)?;
        match self.rows.get(at).await? {
            Some(row) => self.open_row(at, &row).map(Some),
            None => Ok(None),
        }
    }

    /// What a read without a version serves: the highest version held for
    /// (secret, environment) and its value; `Deactivated` if that version
    /// is a tombstone (no fallback to an older one); `None` if none is held.
    pub async fn latest_value(
        &self,
        org: OrgId,
        secret: &str,
        environment: CatalogId,
    ) -> Result<Option<(u32, Zeroizing<Vec<u8>>)>, ValueStoreError> {
        let Some((version, row)) = self.latest_row(org, secret, environment).await? else { return Ok(None) };
        let at = ValueAddress { org, secret: secret.to_owned(), environment, version };
        self.open_row(&at, &row).map(|value| Some((version, value)))
    }

    /// The highest version held for (secret, environment), deactivated or
    /// not.
    pub async fn latest_version(
        &self,
        org: OrgId,
        secret: &str,
        environment: CatalogId,
    ) -> Result<Option<u32>, ValueStoreError> {
        Ok(self.latest_row(org, secret, environment).await?.map(|(version, _)| version))
    }

    /// Replaces the version's ciphertext with a tombstone (inserting one if
    /// this Agent never held the version, so a late write cannot revive it).
    pub async fn deactivate(&self, at: &ValueAddress) -> Result<(), ValueStoreError> {
        validate(at)?;
        let done = self.rows.tombstone(at).await;
        self.latest.invalidate(at.org, &at.secret);
        self.changed();
        done
    }

    /// Erases a version a newer one replaced (`heimdall_core::retention`):
    /// its ciphertext goes and a superseded tombstone stays. Whether there
    /// was a value to erase (a tombstone stays as it is).
    pub async fn erase(&self, at: &ValueAddress) -> Result<bool, ValueStoreError> {
        validate(at)?;
        let done = self.rows.erase(at).await;
        self.latest.invalidate(at.org, &at.secret);
        self.changed();
        done
    }

    /// Deletes every version of the secret in every environment; returns
    /// how many rows went.
    pub async fn delete_secret(&self, org: OrgId, secret: &str) -> Result<u64, ValueStoreError> {
        validate_name(secret)?;
        let done = self.rows.delete(org, secret, None, None).await;
        self.latest.invalidate(org, secret);
        self.changed();
        done
    }

    /// Deletes the versions of the secret in one environment (all of them,
    /// or those up to `through`: a deletion's); returns how many rows went.
    pub async fn delete_in_environment(
        &self,
        org: OrgId,
        secret: &str,
        environment: CatalogId,
        through: Option<u32>,
    ) -> Result<u64, ValueStoreError> {
        validate_name(secret)?;
        let done = self.rows.delete(org, secret, Some(environment), through).await;
        self.latest.invalidate(org, secret);
        self.changed();
        done
    }

    /// What the store holds, for the sync report: addresses and whether each
    /// is deactivated, never a value. Ordered by org, secret, environment
    /// (ids as text) and version on every backend.
    pub async fn inventory(&self) -> Result<Vec<InventoryEntry>, ValueStoreError> {
        let mut entries = self.rows.inventory().await?;
        entries.sort_by_cached_key(|e| {
            (e.org.to_string(), e.secret.clone(), e.environment.to_string(), e.version)
        });
        Ok(entries)
    }

    /// `agent`'s numbering of its reads in this store: its epoch and the
    /// last number used. The first call for an Agent starts one: a fresh
    /// random epoch from 0 (or, in a store from before epochs, the old
    /// shared counter's value in the epoch `legacy`). Agents that share a
    /// store each have their own.
    pub async fn numbering(&self, agent: AgentId) -> Result<Numbering, ValueStoreError> {
        self.rows.numbering(agent).await
    }

    /// How far `agent`'s sealed file `purpose` was written (0: never).
    pub async fn generation(&self, agent: AgentId, purpose: &str) -> Result<u64, ValueStoreError> {
        self.rows.generation(agent, purpose).await
    }

    /// Raises that generation to `to`; it never goes back.
    pub async fn advance_generation(
        &self,
        agent: AgentId,
        purpose: &str,
        to: u64,
    ) -> Result<(), ValueStoreError> {
        self.rows.advance_generation(agent, purpose, to).await
    }

    /// Starts `agent` on a new epoch from 0: its store was restored from a
    /// backup and its numbers have been used already. The old epoch's
    /// records stay.
    pub async fn restart_numbering(&self, agent: AgentId) -> Result<Numbering, ValueStoreError> {
        self.rows.restart_numbering(agent).await
    }

    /// Durably records reads in one transaction (a group commit) and
    /// returns the sequence number of the first; the others follow it one
    /// by one, in the serving Agent's current epoch. All are written, or
    /// none and no number is used. An empty batch, one served by more than
    /// one Agent, or one over [`Self::max_access_batch`] is `Invalid`.
    pub async fn append_access_records(&self, records: &[ServedRead]) -> Result<u64, ValueStoreError> {
        let first = records
            .first()
            .ok_or_else(|| ValueStoreError::Invalid("an empty batch of access records".into()))?;
        if records.iter().any(|r| r.served_by != first.served_by) {
            return Err(ValueStoreError::Invalid("a batch of access records is served by one Agent".into()));
        }
        if records.len() > self.rows.max_batch() {
            return Err(ValueStoreError::Invalid(format!(
                "at most {} access records per group commit on {:?}",
                self.rows.max_batch(),
                self.rows.backend()
            )));
        }
        self.rows.append_records(first.served_by, records).await
    }

    /// Durably records one read and returns its sequence number.
    pub async fn append_access_record(&self, record: &ServedRead) -> Result<u64, ValueStoreError> {
        self.append_access_records(std::slice::from_ref(record)).await
    }

    /// `agent`'s records of `epoch` with a sequence number above `after`, in
    /// order, at most `limit`.
    pub async fn access_records_after(
        &self,
        agent: AgentId,
        epoch: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<RecordedAccess>, ValueStoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.rows.records_after(agent, epoch, after, limit).await
    }

    /// The most records one [`Self::append_access_records`] call takes: 100
    /// on SQL (one INSERT statement), 99 on DynamoDB (100 items per
    /// transaction, one of them the counter).
    pub fn max_access_batch(&self) -> usize {
        self.rows.max_batch()
    }

    /// Releases connections; the store cannot be used afterwards.
    pub async fn close(&self) {
        self.rows.close().await;
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver that wakes whenever something may have changed here.
    pub fn watch_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The highest version held for (secret, environment), and whether it
    /// is deactivated; `None` if none is held. Opens nothing.
    pub async fn latest_state(
        &self,
        org: OrgId,
        secret: &str,
        environment: CatalogId,
    ) -> Result<Option<(u32, bool)>, ValueStoreError> {
        let found = self.latest_row(org, secret, environment).await?;
        Ok(found.map(|(version, row)| (version, !matches!(row, Row::Sealed(_)))))
    }

    /// The latest row, from the cache while it is fresh.
    async fn latest_row(
        &self,
        org: OrgId,
        secret: &str,
        environment: CatalogId,
    ) -> Result<Option<(u32, Row)>, ValueStoreError> {
        validate_name(secret)?;
        let key = (org, secret.to_owned(), environment);
        if let Some(cached) = self.latest.get(&key) {
            return Ok(Some(cached));
        }
        let generation = self.latest.generation.load(Ordering::SeqCst);
        let found = self.rows.latest(org, secret, environment).await?;
        if let Some(found) = &found {
            self.latest.put(key, found.clone(), generation);
        }
        Ok(found)
    }

    /// Opens a row at its address; a tombstone is `Deactivated` (or
    /// `Superseded`, written by retention), anything
    /// that does not open (altered, moved, unknown key) is `Undecryptable`.
    fn open_row(&self, at: &ValueAddress, row: &Row) -> Result<Zeroizing<Vec<u8>>, ValueStoreError> {
        let sealed = match row {
            Row::Sealed(sealed) => sealed,
            Row::Tombstone => {
                return Err(ValueStoreError::Deactivated {
                    secret: at.secret.clone(),
                    environment: at.environment,
                    version: at.version,
                })
            }
            Row::Superseded => {
                return Err(ValueStoreError::Superseded {
                    secret: at.secret.clone(),
                    environment: at.environment,
                    version: at.version,
                })
            }
        };
        let undecryptable = || ValueStoreError::Undecryptable {
            secret: at.secret.clone(),
            version: at.version,
            key_id: sealed.key_id.clone(),
        };
        let key = self.keyring.keys.get(&sealed.key_id).ok_or_else(undecryptable)?;
        key.open_value(at, sealed).map_err(|_| undecryptable())
    }
}

fn validate(at: &ValueAddress) -> Result<(), ValueStoreError> {
    validate_name(&at.secret)?;
    if at.version == 0 {
        return Err(ValueStoreError::Invalid("versions start at 1".into()));
    }
    Ok(())
}

fn validate_name(secret: &str) -> Result<(), ValueStoreError> {
    if secret.is_empty() || secret.len() > MAX_NAME_LEN {
        return Err(ValueStoreError::Invalid(format!("a secret name is 1 to {MAX_NAME_LEN} bytes")));
    }
    Ok(())
}

/// The data keys, opened. Values are sealed under `current`; older keys
/// stay to open what they sealed.
struct Keyring {
    keys: HashMap<String, DataKey>,
    current: String,
}

impl Keyring {
    /// Opens every sealed data key (in generation order; the last one is
    /// current). A key `sealer` does not open refuses the whole store.
    async fn open(sealed: &[SealedDataKey], sealer: &dyn KeySealer) -> Result<Self, ValueStoreError> {
        let mut keys = HashMap::new();
        let mut current = String::new();
        for s in sealed {
            let key = sealer.unseal_data_key(s).await.map_err(keyring_error)?;
            current = s.key_id.clone();
            keys.insert(s.key_id.clone(), key);
        }
        if keys.is_empty() {
            return Err(ValueStoreError::Open("the keyring is empty".into()));
        }
        Ok(Self { keys, current })
    }

    fn current(&self) -> &DataKey {
        &self.keys[&self.current]
    }
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring").field("keys", &self.keys.len()).field("current", &self.current).finish()
    }
}

/// A keyring that did not open: the wrong key, or a sealer that failed.
fn keyring_error(e: CryptoError) -> ValueStoreError {
    match e {
        CryptoError::WrongMasterKey { key_id } => ValueStoreError::WrongMasterKey { key_id },
        CryptoError::WrongKmsKey { key_id, kms_key, reason } => {
            ValueStoreError::WrongKmsKey { key_id, kms_key, reason }
        }
        other => ValueStoreError::Open(other.to_string()),
    }
}

/// (org, secret, environment).
type LatestKey = (OrgId, String, CatalogId);

/// The latest row per (org, secret, environment), sealed as stored (the
/// cache holds ciphertext, never a plaintext): a read without a version
/// then costs no query, only the open and its access record.
#[derive(Default)]
struct LatestCache {
    rows: Mutex<HashMap<LatestKey, (u32, Row, Instant)>>,
    /// Bumped by every invalidation; a lookup caches its answer only if no
    /// invalidation happened while it queried.
    generation: AtomicU64,
}

impl fmt::Debug for LatestCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.rows.lock().map_or(0, |r| r.len());
        f.debug_struct("LatestCache").field("rows", &len).finish()
    }
}

impl LatestCache {
    fn get(&self, key: &LatestKey) -> Option<(u32, Row)> {
        let rows = self.rows.lock().ok()?;
        let (version, row, fetched) = rows.get(key)?;
        (fetched.elapsed() < LATEST_TTL).then(|| (*version, row.clone()))
    }

    fn put(&self, key: LatestKey, (version, row): (u32, Row), generation: u64) {
        if let Ok(mut rows) = self.rows.lock() {
            if self.generation.load(Ordering::SeqCst) == generation {
                rows.insert(key, (version, row, Instant::now()));
            }
        }
    }

    fn invalidate(&self, org: OrgId, secret: &str) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut rows) = self.rows.lock() {
            rows.retain(|(o, s, _), _| !(*o == org && s == secret));
        }
    }
}
