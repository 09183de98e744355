//! The Agent's value store, below the [`Vault`]: backends that keep sealed
//! rows and access records, and nothing else. The vault validates, seals,
//! opens, caches and checks; a [`SealedStore`] only moves rows.
//!
//! [`sqlite`] and [`postgres`] share their SQL ([`sql`]: sqlx's `Any`
//! driver, `$N` placeholders that SQLite accepts too, ids as UUID text);
//! each holds its migrations and connection setup. [`dynamodb`] keeps
//! everything in one DynamoDB table. Each backend's `open` returns a
//! [`Vault`] over it.
//!
//! Rows hold only ciphertext, nonce and key id, never a plaintext.
//!
//! Access records carry a per-Agent sequence number taken from a counter
//! row in the same transaction as the record's insert: a failed insert rolls
//! the counter back with it, so the sequence has no gaps by construction.

pub mod dynamodb;
pub mod postgres;
mod sql;
pub mod sqlite;

use std::fmt;

use async_trait::async_trait;
use heimdall_core::ids::{AgentId, CatalogId, OrgId};

pub use crate::values::crypto::ValueAddress;
use crate::values::crypto::{SealedDataKey, SealedValue};
pub use crate::values::vault::Vault;

/// The longest value the store accepts.
pub const MAX_VALUE_LEN: usize = 1024 * 1024;
/// The longest secret name the store accepts (bytes).
pub const MAX_NAME_LEN: usize = 255;

/// What can go wrong. Driver errors arrive as text (`Unavailable`): no
/// sqlx type is part of this crate's interface, and no variant carries a
/// value or key bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueStoreError {
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
    /// A newer version replaced this one and its overlap is over: erased.
    #[error(
        "version {version} of secret {secret} was replaced by a newer one and erased in environment {environment}"
    )]
    Superseded { secret: String, environment: CatalogId, version: u32 },
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
    /// A tombstone (deactivated, or superseded).
    pub deactivated: bool,
    /// A tombstone written by retention (`heimdall_core::retention`).
    pub superseded: bool,
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

/// An access record with its sequence number (1, 2, 3… per Agent and epoch, no gaps).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedAccess {
    pub seq: u64,
    pub record: ServedRead,
}

/// Which database a store runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
    DynamoDb,
}

/// What a value's address holds: its sealed value, the tombstone of a
/// deactivated version, or that of a version erased by retention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Row {
    Sealed(SealedValue),
    Tombstone,
    Superseded,
}

/// A backend: sealed rows, the keyring's sealed data keys, the access
/// records and their counters. No plaintext, no key and no decision passes
/// through it; the [`Vault`] above it validates every argument.
#[async_trait]
pub trait SealedStore: Send + Sync + fmt::Debug {
    fn backend(&self) -> Backend;

    /// The keyring's sealed data keys, in generation order (the last is current).
    async fn data_keys(&self) -> Result<Vec<SealedDataKey>, ValueStoreError>;
    /// Stores `key` as the first data key unless there is one already.
    async fn put_first_data_key(&self, key: &SealedDataKey) -> Result<(), ValueStoreError>;
    /// Replaces a keyring entry (the same data key, sealed under another
    /// master key) if it is still exactly `old`; whether it did. One entry
    /// at a time, each atomic: `rekey` can be killed anywhere.
    async fn replace_data_key(
        &self,
        old: &SealedDataKey,
        new: &SealedDataKey,
    ) -> Result<bool, ValueStoreError>;

    /// Stores `sealed` at `at` unless the address holds a row (a value or a
    /// tombstone); `false` if it does. Never overwrites.
    async fn put_if_absent(&self, at: &ValueAddress, sealed: &SealedValue) -> Result<bool, ValueStoreError>;
    /// The row at `at`, if any.
    async fn get(&self, at: &ValueAddress) -> Result<Option<Row>, ValueStoreError>;
    /// The highest version of (secret, environment) and its row, if any.
    async fn latest(
        &self,
        org: OrgId,
        secret: &str,
        environment: CatalogId,
    ) -> Result<Option<(u32, Row)>, ValueStoreError>;
    /// Replaces the row at `at` with a tombstone, inserting one if there is none.
    async fn tombstone(&self, at: &ValueAddress) -> Result<(), ValueStoreError>;
    /// Replaces the sealed value at `at` with a superseded tombstone; `false`
    /// (and nothing changes) if there is no value there (none, or a tombstone).
    async fn erase(&self, at: &ValueAddress) -> Result<bool, ValueStoreError>;
    /// Deletes every row of the secret, or only those of `environment`
    /// (there, with `through`, only the versions up to it); returns how
    /// many went.
    async fn delete(
        &self,
        org: OrgId,
        secret: &str,
        environment: Option<CatalogId>,
        through: Option<u32>,
    ) -> Result<u64, ValueStoreError>;
    /// Every address held and whether it is a tombstone.
    async fn inventory(&self) -> Result<Vec<InventoryEntry>, ValueStoreError>;

    /// `agent`'s numbering, started if it has none (see [`Vault::numbering`]).
    async fn numbering(&self, agent: AgentId) -> Result<Numbering, ValueStoreError>;
    /// Starts `agent` on a fresh epoch from 0.
    async fn restart_numbering(&self, agent: AgentId) -> Result<Numbering, ValueStoreError>;
    /// Appends `records` (all served by `agent`, at most [`Self::max_batch`])
    /// numbered from the Agent's counter, in one transaction with the
    /// counter's update; returns the first number.
    async fn append_records(&self, agent: AgentId, records: &[ServedRead]) -> Result<u64, ValueStoreError>;
    /// `agent`'s records of `epoch` numbered above `after`, in order, at most `limit` (> 0).
    async fn records_after(
        &self,
        agent: AgentId,
        epoch: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<RecordedAccess>, ValueStoreError>;
    /// The most records one [`Self::append_records`] takes.
    fn max_batch(&self) -> usize;

    /// How far `agent`'s sealed file `purpose` was written (0: never).
    async fn generation(&self, agent: AgentId, purpose: &str) -> Result<u64, ValueStoreError>;
    /// Raises it to `to` unless it is there already or past it: it never
    /// goes back.
    async fn advance_generation(&self, agent: AgentId, purpose: &str, to: u64)
        -> Result<(), ValueStoreError>;

    /// Releases connections.
    async fn close(&self) {}
}

pub(crate) fn parse_id<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, ValueStoreError> {
    text.parse().map_err(|_| ValueStoreError::Unavailable(format!("the store holds an invalid {what}")))
}

/// Where a URL points, without user or password, for messages.
pub(crate) fn describe_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let rest = rest.split_once('?').map_or(rest, |(path, _)| path);
    format!("{scheme}://{rest}")
}
