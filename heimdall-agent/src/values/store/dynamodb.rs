//! DynamoDB: the whole store in one table (`[values] dynamodb_table`),
//! created by [`open`] if missing (on-demand billing) with a string
//! partition key `pk` and a string sort key `sk`:
//!
//! | item            | `pk`                      | `sk`                          | other attributes |
//! |-----------------|---------------------------|-------------------------------|------------------|
//! | keyring entry   | `keyring`                 | generation, 10 digits         | `key_id`, `sealed_key` (B), `check_value` (B) |
//! | value           | `value#<org>#<secret>`    | `<environment>#<version, 10 digits>` | `org`, `secret`, `environment`, `version` (N), `deactivated` (BOOL), `key_id`, `nonce` (B), `ciphertext` (B) |
//! | tombstone       | as the value              | as the value                  | as the value, `deactivated = true`, no key id, nonce or ciphertext; `superseded = true` when retention erased it |
//! | access counter  | `counter`                 | `access#<agent>`              | `epoch`, `last_seq` (N) |
//! | access record   | `access#<agent>#<epoch>`  | seq, 20 digits                | `seq` (N), `accessor`, `at` (N), `secret`, `environment`, `version` (N), `source`, `served_by` |
//! | legacy counter  | `counter`                 | `access`                      | `last_seq` (N): the counter all Agents shared before epochs |
//! | legacy record   | `access`                  | seq, 20 digits                | as a record (epoch `legacy`, told apart by `served_by`) |
//!
//! Org and environment ids are fixed-length UUIDs, so `pk` and `sk` parse
//! back unambiguously whatever the secret's name holds; zero-padded numbers
//! sort as numbers. One partition per secret keeps the latest version (a
//! reverse query, limit 1) and a secret's delete (a query) off table scans;
//! only the inventory scans. Every read that decides something is strongly
//! consistent.
//!
//! **Values are never overwritten**: a put is conditional
//! (`attribute_not_exists(pk)`), a tombstone replaces the whole item.
//!
//! **Each Agent numbers its own reads, within an epoch** (see
//! [`Vault::numbering`]): Agents sharing a table each have a counter
//! item and a partition per epoch. A table from before epochs keeps its
//! records in `access`, and an Agent's first numbering there continues the
//! legacy counter in the epoch `legacy`.
//!
//! **The access sequence has no gaps**: a group commit reads the Agent's
//! counter item (`last_seq = L` in epoch `E`), then writes one
//! `TransactWriteItems`: the counter updated to `L + n` on the condition
//! that it still holds `L` and `E`, and each
//! record put at `L + 1 …` on the condition that no item is there. DynamoDB
//! applies all of it or none of it; a concurrent appender that moved the
//! counter first makes the condition fail and the commit is retried on the
//! new value, so a number is used only by a record that was written with
//! it. A record already at a number the counter has not reached (something
//! outside the Agent wrote it) refuses the commit without a retry: nothing
//! is written and the counter stays. The SDK sends an idempotency token, so
//! its own retry of a transaction that did commit does not commit it twice.
//!
//! DynamoDB takes at most 100 items per transaction, so a group commit takes
//! at most [`MAX_ACCESS_BATCH`] = 99 records (plus the counter); a larger
//! batch is refused `Invalid` rather than split, since split transactions
//! would not be all-or-none ([`Vault::max_access_batch`] tells a group
//! committer the limit).
//!
//! An Agent's records of one epoch share one partition: a partition takes
//! about 1,000 writes a second, far above what one Agent's audited reads
//! need once they are group-committed.

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, Put, ReturnValue,
    ScalarAttributeType, TableStatus, TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;
use heimdall_core::ids::{AgentId, CatalogId, OrgId};

use super::{
    new_epoch, parse_id, Backend, InventoryEntry, Numbering, RecordedAccess, Row, SealedStore, ServedRead,
    ValueAddress, ValueStoreError, Vault, LEGACY_EPOCH,
};
use crate::aws::{describe, AwsSettings};
use crate::values::crypto::{KeySealer, SealedDataKey, SealedValue};

/// Records per group commit: DynamoDB's 100 items per transaction, less the counter.
pub const MAX_ACCESS_BATCH: usize = 99;
/// Group-commit attempts when a concurrent appender moved the counter first.
const COMMIT_ATTEMPTS: u32 = 8;
/// How long `open` waits for a new table to become ACTIVE.
const TABLE_WAIT: Duration = Duration::from_secs(120);

const KEYRING_PK: &str = "keyring";
const COUNTER_PK: &str = "counter";
/// The legacy counter's sort key, and the prefix of each Agent's.
const COUNTER_SK: &str = "access";
/// The legacy records' partition, and the prefix of each Agent's.
const ACCESS_PK: &str = "access";
/// Sealed files' generations: one item per Agent and file.
const GENERATION_PREFIX: &str = "generation#";
const VALUE_PREFIX: &str = "value#";

type Item = HashMap<String, AttributeValue>;

/// Where the store lives: the table's name and how to reach AWS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynamoConfig {
    /// The table's name (created if missing).
    pub table: String,
    pub aws: AwsSettings,
}

/// [`SealedStore`] over one DynamoDB table.
struct DynamoRows {
    client: Client,
    table: String,
}

impl fmt::Debug for DynamoRows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamoRows").field("table", &self.table).finish()
    }
}

/// Opens (creating the table if needed) the store in `cfg.table`, with the
/// SDK's default credentials. A key that does not open it is
/// [`ValueStoreError::WrongMasterKey`] (or `WrongKmsKey`).
/// The store's rows in `cfg.table`, with no key opened (for `rekey`).
pub async fn connect(cfg: &DynamoConfig) -> Result<Box<dyn SealedStore>, ValueStoreError> {
    validate_table_name(&cfg.table)?;
    let config = crate::aws::sdk_config(&cfg.aws).await.map_err(|e| ValueStoreError::Open(e.to_string()))?;
    crate::aws::require_region(&config).map_err(|e| ValueStoreError::Open(e.to_string()))?;
    let client = Client::new(&config);
    ensure_table(&client, &cfg.table).await?;
    Ok(Box::new(DynamoRows { client, table: cfg.table.clone() }))
}

pub async fn open(cfg: &DynamoConfig, keys: &dyn KeySealer) -> Result<Vault, ValueStoreError> {
    validate_table_name(&cfg.table)?;
    let config = crate::aws::sdk_config(&cfg.aws).await.map_err(|e| ValueStoreError::Open(e.to_string()))?;
    open_with(&config, &cfg.table, keys).await
}

/// Opens the store in `table` with an SDK configuration the caller loaded
/// (see [`crate::aws::loader`]): creates the table if it is missing, waits
/// until it is ACTIVE, and opens the vault over it with `keys`.
pub async fn open_with(
    config: &aws_config::SdkConfig,
    table: &str,
    keys: &dyn KeySealer,
) -> Result<Vault, ValueStoreError> {
    validate_table_name(table)?;
    crate::aws::require_region(config).map_err(|e| ValueStoreError::Open(e.to_string()))?;
    let client = Client::new(config);
    ensure_table(&client, table).await?;
    Vault::open(Box::new(DynamoRows { client, table: table.to_owned() }), keys).await
}

/// DynamoDB's rule for table names: 3 to 255 of `A-Z a-z 0-9 _ - .`.
pub fn validate_table_name(table: &str) -> Result<(), ValueStoreError> {
    let ok = (3..=255).contains(&table.len())
        && table.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(ValueStoreError::Open(
            "a DynamoDB table name is 3 to 255 characters of A-Z, a-z, 0-9, '_', '-' and '.'".into(),
        ))
    }
}

fn unavailable<E, R>(operation: &str, err: &SdkError<E, R>) -> ValueStoreError
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: fmt::Debug,
{
    ValueStoreError::Unavailable(format!("DynamoDB {operation}: {}", describe(err)))
}

fn invalid_item(what: &str) -> ValueStoreError {
    ValueStoreError::Unavailable(format!("the store holds an invalid {what}"))
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl fmt::Display) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn b(v: Vec<u8>) -> AttributeValue {
    AttributeValue::B(Blob::new(v))
}

fn generation_pk(agent: AgentId) -> String {
    format!("{GENERATION_PREFIX}{agent}")
}

fn key(pk: String, sk: String) -> Item {
    HashMap::from([("pk".to_owned(), s(pk)), ("sk".to_owned(), s(sk))])
}

fn value_pk(org: OrgId, secret: &str) -> String {
    format!("{VALUE_PREFIX}{org}#{secret}")
}

fn value_sk(environment: CatalogId, version: u32) -> String {
    format!("{environment}#{version:010}")
}

fn value_key(at: &ValueAddress) -> Item {
    key(value_pk(at.org, &at.secret), value_sk(at.environment, at.version))
}

fn seq_sk(seq: u64) -> String {
    format!("{seq:020}")
}

fn get_s<'a>(item: &'a Item, name: &str) -> Result<&'a str, ValueStoreError> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v),
        _ => Err(invalid_item(name)),
    }
}

fn get_n<T: std::str::FromStr>(item: &Item, name: &str) -> Result<T, ValueStoreError> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().map_err(|_| invalid_item(name)),
        _ => Err(invalid_item(name)),
    }
}

fn get_b(item: &Item, name: &str) -> Option<Vec<u8>> {
    match item.get(name) {
        Some(AttributeValue::B(v)) => Some(v.as_ref().to_vec()),
        _ => None,
    }
}

fn get_bool(item: &Item, name: &str) -> Result<bool, ValueStoreError> {
    match item.get(name) {
        Some(AttributeValue::Bool(v)) => Ok(*v),
        _ => Err(invalid_item(name)),
    }
}

impl DynamoRows {
    async fn get(&self, pk: String, sk: String, what: &str) -> Result<Option<Item>, ValueStoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable(&format!("GetItem ({what})"), &e))?;
        Ok(out.item)
    }

    /// Puts `item` unless its key is taken; `false` if it was.
    async fn put_new(&self, item: Item, operation: &str) -> Result<bool, ValueStoreError> {
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match put {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                Ok(false)
            }
            Err(e) => Err(unavailable(operation, &e)),
        }
    }

    async fn read_numbering(&self, agent: AgentId) -> Result<Option<Numbering>, ValueStoreError> {
        let Some(item) = self.get(COUNTER_PK.into(), counter_sk(agent), "access counter").await? else {
            return Ok(None);
        };
        Ok(Some(Numbering { epoch: get_s(&item, "epoch")?.to_owned(), last_seq: get_n(&item, "last_seq")? }))
    }

    /// Every page of a query, with `limit` items at most (0: no limit).
    async fn query_all(
        &self,
        condition: &str,
        values: Item,
        projection: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Item>, ValueStoreError> {
        self.query_filtered(condition, None, values, projection, limit).await
    }

    /// [`Self::query_all`] with a filter on the items read.
    async fn query_filtered(
        &self,
        condition: &str,
        filter: Option<&str>,
        values: Item,
        projection: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Item>, ValueStoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let mut query = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression(condition)
                .set_expression_attribute_values(Some(values.clone()))
                .consistent_read(true)
                .set_exclusive_start_key(start.take());
            if let Some(p) = projection {
                query = query.projection_expression(p);
            }
            if let Some(f) = filter {
                query = query.filter_expression(f);
            }
            if limit > 0 {
                query = query.limit(i32::try_from(limit - items.len()).unwrap_or(i32::MAX));
            }
            let out = query.send().await.map_err(|e| unavailable("Query", &e))?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(next) if limit == 0 || items.len() < limit => start = Some(next),
                _ => return Ok(items),
            }
        }
    }
}

fn counter_sk(agent: AgentId) -> String {
    format!("{COUNTER_SK}#{agent}")
}

fn counter_item(agent: AgentId, numbering: &Numbering) -> Item {
    let mut item = key(COUNTER_PK.into(), counter_sk(agent));
    item.insert("epoch".into(), s(&numbering.epoch));
    item.insert("last_seq".into(), n(numbering.last_seq));
    item
}

fn access_pk(agent: AgentId, epoch: &str) -> String {
    format!("{ACCESS_PK}#{agent}#{epoch}")
}

async fn load_keyring(client: &Client, table: &str) -> Result<Vec<SealedDataKey>, ValueStoreError> {
    let mut sealed = Vec::new();
    for item in keyring_items(client, table).await? {
        let entry = || -> Result<SealedDataKey, ValueStoreError> {
            Ok(SealedDataKey {
                key_id: get_s(&item, "key_id")?.to_owned(),
                sealed_key: get_b(&item, "sealed_key").ok_or_else(|| invalid_item("sealed key"))?,
                check_value: get_b(&item, "check_value").ok_or_else(|| invalid_item("check value"))?,
            })
        };
        sealed.push(entry().map_err(|e| ValueStoreError::Open(e.to_string()))?);
    }
    Ok(sealed)
}

/// Every keyring item, every page, sorted by sk (the zero-padded
/// generation: the last is current).
async fn keyring_items(client: &Client, table: &str) -> Result<Vec<Item>, ValueStoreError> {
    let mut items = Vec::new();
    let mut start: Option<Item> = None;
    loop {
        let out = client
            .query()
            .table_name(table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(KEYRING_PK))
            .consistent_read(true)
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .map_err(|e| ValueStoreError::Open(format!("DynamoDB Query (keyring): {}", describe(&e))))?;
        items.extend(out.items.unwrap_or_default());
        match out.last_evaluated_key {
            Some(next) => start = Some(next),
            None => return Ok(items),
        }
    }
}

/// Creates the table if it is missing, checks its key schema, and waits
/// until it is ACTIVE.
async fn ensure_table(client: &Client, table: &str) -> Result<(), ValueStoreError> {
    let open_err =
        |op: &str, detail: String| ValueStoreError::Open(format!("DynamoDB {op} {table}: {detail}"));
    let described = client.describe_table().table_name(table).send().await;
    match described {
        Ok(_) => {}
        Err(e) if e.as_service_error().is_some_and(|e| e.is_resource_not_found_exception()) => {
            let attribute = |name: &str| {
                AttributeDefinition::builder()
                    .attribute_name(name)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .map_err(|e| open_err("CreateTable", e.to_string()))
            };
            let key_element = |name: &str, kind: KeyType| {
                KeySchemaElement::builder()
                    .attribute_name(name)
                    .key_type(kind)
                    .build()
                    .map_err(|e| open_err("CreateTable", e.to_string()))
            };
            let created = client
                .create_table()
                .table_name(table)
                .billing_mode(BillingMode::PayPerRequest)
                .attribute_definitions(attribute("pk")?)
                .attribute_definitions(attribute("sk")?)
                .key_schema(key_element("pk", KeyType::Hash)?)
                .key_schema(key_element("sk", KeyType::Range)?)
                .send()
                .await;
            if let Err(e) = created {
                // Another Agent created it first: fine, wait for it below.
                if !e.as_service_error().is_some_and(|e| e.is_resource_in_use_exception()) {
                    return Err(open_err("CreateTable", describe(&e)));
                }
            }
            tracing::info!(table, "created the DynamoDB table for the value store");
        }
        Err(e) => return Err(open_err("DescribeTable", describe(&e))),
    }

    let deadline = Instant::now() + TABLE_WAIT;
    loop {
        let out = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| open_err("DescribeTable", describe(&e)))?;
        let Some(description) = out.table else { return Err(open_err("DescribeTable", "no table".into())) };
        let has_key = |name: &str, kind: KeyType| {
            description.key_schema().iter().any(|k| k.attribute_name() == name && *k.key_type() == kind)
                && description
                    .attribute_definitions()
                    .iter()
                    .any(|a| a.attribute_name() == name && *a.attribute_type() == ScalarAttributeType::S)
        };
        if !(has_key("pk", KeyType::Hash)
            && has_key("sk", KeyType::Range)
            && description.key_schema().len() == 2)
        {
            return Err(open_err(
                "DescribeTable",
                "the table exists with another key schema (the store needs pk: string, hash; sk: string, \
                 range)"
                    .into(),
            ));
        }
        match description.table_status() {
            Some(TableStatus::Active) => return Ok(()),
            Some(TableStatus::Creating | TableStatus::Updating) | None => {}
            Some(other) => return Err(open_err("DescribeTable", format!("the table is {}", other.as_str()))),
        }
        if Instant::now() >= deadline {
            return Err(open_err("DescribeTable", format!("not ACTIVE after {} s", TABLE_WAIT.as_secs())));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn access_item(epoch: &str, seq: u64, r: &ServedRead) -> Item {
    let mut item = key(access_pk(r.served_by, epoch), seq_sk(seq));
    item.insert("seq".into(), n(seq));
    item.insert("accessor".into(), s(&r.accessor));
    item.insert("at".into(), n(r.at_micros));
    item.insert("secret".into(), s(&r.secret));
    item.insert("environment".into(), s(r.environment.to_string()));
    item.insert("version".into(), n(r.version));
    item.insert("source".into(), s(&r.source));
    item.insert("served_by".into(), s(r.served_by.to_string()));
    item
}

fn access_record(item: &Item) -> Result<RecordedAccess, ValueStoreError> {
    Ok(RecordedAccess {
        seq: get_n(item, "seq")?,
        record: ServedRead {
            accessor: get_s(item, "accessor")?.to_owned(),
            at_micros: get_n(item, "at")?,
            secret: get_s(item, "secret")?.to_owned(),
            environment: parse_id(get_s(item, "environment")?, "environment id")?,
            version: get_n(item, "version")?,
            source: get_s(item, "source")?.to_owned(),
            served_by: parse_id(get_s(item, "served_by")?, "agent id")?,
        },
    })
}

/// A value item: a tombstone, or its sealed value. An item that lost its
/// nonce or ciphertext does not open (`Undecryptable`, in the vault).
fn row_of(item: &Item) -> Result<Row, ValueStoreError> {
    if superseded(item)? {
        return Ok(Row::Superseded);
    }
    if get_bool(item, "deactivated")? {
        return Ok(Row::Tombstone);
    }
    Ok(Row::Sealed(SealedValue {
        key_id: get_s(item, "key_id").map(str::to_owned).unwrap_or_default(),
        nonce: get_b(item, "nonce").unwrap_or_default(),
        ciphertext: get_b(item, "ciphertext").unwrap_or_default(),
    }))
}

/// A value item's key and address, a tombstone or not (no key id, nonce
/// or ciphertext yet).
fn value_item(at: &ValueAddress, deactivated: bool) -> Item {
    let mut item = value_key(at);
    item.insert("org".into(), s(at.org.to_string()));
    item.insert("secret".into(), s(&at.secret));
    item.insert("environment".into(), s(at.environment.to_string()));
    item.insert("version".into(), n(at.version));
    item.insert("deactivated".into(), AttributeValue::Bool(deactivated));
    item
}

/// Whether a value item is a tombstone retention wrote (absent on items
/// from before retention: no).
fn superseded(item: &Item) -> Result<bool, ValueStoreError> {
    match item.get("superseded") {
        None => Ok(false),
        Some(_) => get_bool(item, "superseded"),
    }
}

fn build_err(e: impl fmt::Display) -> ValueStoreError {
    ValueStoreError::Unavailable(format!("cannot build a DynamoDB request: {e}"))
}

#[async_trait]
impl SealedStore for DynamoRows {
    fn backend(&self) -> Backend {
        Backend::DynamoDb
    }

    async fn data_keys(&self) -> Result<Vec<SealedDataKey>, ValueStoreError> {
        load_keyring(&self.client, &self.table).await
    }

    async fn put_first_data_key(&self, first: &SealedDataKey) -> Result<(), ValueStoreError> {
        let mut item = key(KEYRING_PK.to_owned(), format!("{:010}", 1));
        item.insert("key_id".into(), s(&first.key_id));
        item.insert("sealed_key".into(), b(first.sealed_key.clone()));
        item.insert("check_value".into(), b(first.check_value.clone()));
        // Two Agents opening a new table at once: one put wins.
        match self.put_new(item, "PutItem (keyring)").await {
            Err(ValueStoreError::Unavailable(e)) => Err(ValueStoreError::Open(e)),
            other => other.map(drop),
        }
    }

    async fn replace_data_key(
        &self,
        old: &SealedDataKey,
        new: &SealedDataKey,
    ) -> Result<bool, ValueStoreError> {
        let items = keyring_items(&self.client, &self.table).await?;
        let entry = items.into_iter().find(|i| get_s(i, "key_id").is_ok_and(|id| id == old.key_id));
        let Some(mut item) = entry else { return Ok(false) };
        item.insert("sealed_key".into(), b(new.sealed_key.clone()));
        // Only if it is still exactly what was read.
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("sealed_key = :old")
            .expression_attribute_values(":old", b(old.sealed_key.clone()))
            .send()
            .await;
        match put {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                Ok(false)
            }
            Err(e) => Err(unavailable("PutItem (keyring)", &e)),
        }
    }

    async fn put_if_absent(&self, at: &ValueAddress, sealed: &SealedValue) -> Result<bool, ValueStoreError> {
        let mut item = value_item(at, false);
        item.insert("key_id".into(), s(&sealed.key_id));
        item.insert("nonce".into(), b(sealed.nonce.clone()));
        item.insert("ciphertext".into(), b(sealed.ciphertext.clone()));
        self.put_new(item, "PutItem").await
    }

    async fn get(&self, at: &ValueAddress) -> Result<Option<Row>, ValueStoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(value_key(at)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable("GetItem", &e))?;
        out.item.as_ref().map(row_of).transpose()
    }

    async fn latest(
        &self,
        org: OrgId,
        secret: &str,
        environment: CatalogId,
    ) -> Result<Option<(u32, Row)>, ValueStoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :environment)")
            .expression_attribute_values(":pk", s(value_pk(org, secret)))
            .expression_attribute_values(":environment", s(format!("{environment}#")))
            .scan_index_forward(false)
            .limit(1)
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable("Query", &e))?;
        out.items().first().map(|item| Ok((get_n(item, "version")?, row_of(item)?))).transpose()
    }

    async fn tombstone(&self, at: &ValueAddress) -> Result<(), ValueStoreError> {
        // The whole item is replaced: no key id, nonce or ciphertext stays.
        let item = value_item(at, true);
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| unavailable("PutItem", &e))?;
        Ok(())
    }

    async fn erase(&self, at: &ValueAddress) -> Result<bool, ValueStoreError> {
        // The whole item is replaced, only if it still holds a value.
        let mut item = value_item(at, true);
        item.insert("superseded".into(), AttributeValue::Bool(true));
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("deactivated = :value")
            .expression_attribute_values(":value", AttributeValue::Bool(false))
            .send()
            .await;
        match put {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                Ok(false)
            }
            Err(e) => Err(unavailable("PutItem", &e)),
        }
    }

    async fn delete(
        &self,
        org: OrgId,
        secret: &str,
        environment: Option<CatalogId>,
        through: Option<u32>,
    ) -> Result<u64, ValueStoreError> {
        let mut values = HashMap::from([(":pk".to_owned(), s(value_pk(org, secret)))]);
        let condition = match (environment, through) {
            (None, _) => "pk = :pk",
            (Some(env), None) => {
                // The sort key is `<environment>#<version>`.
                values.insert(":env".to_owned(), s(format!("{env}#")));
                "pk = :pk AND begins_with(sk, :env)"
            }
            (Some(env), Some(through)) => {
                // Zero-padded versions sort as numbers.
                values.insert(":low".to_owned(), s(value_sk(env, 0)));
                values.insert(":high".to_owned(), s(value_sk(env, through)));
                "pk = :pk AND sk BETWEEN :low AND :high"
            }
        };
        let keys = self.query_all(condition, values, Some("pk, sk"), 0).await?;
        let mut deleted = 0;
        for k in keys {
            let out = self
                .client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(k))
                .return_values(ReturnValue::AllOld)
                .send()
                .await
                .map_err(|e| unavailable("DeleteItem", &e))?;
            if out.attributes.is_some_and(|a| !a.is_empty()) {
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    async fn inventory(&self) -> Result<Vec<InventoryEntry>, ValueStoreError> {
        let mut entries = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression("begins_with(pk, :prefix)")
                .expression_attribute_values(":prefix", s(VALUE_PREFIX))
                .projection_expression("org, secret, environment, #version, deactivated, superseded")
                .expression_attribute_names("#version", "version")
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| unavailable("Scan", &e))?;
            for item in out.items() {
                entries.push(InventoryEntry {
                    org: parse_id(get_s(item, "org")?, "organization id")?,
                    secret: get_s(item, "secret")?.to_owned(),
                    environment: parse_id(get_s(item, "environment")?, "environment id")?,
                    version: get_n(item, "version")?,
                    deactivated: get_bool(item, "deactivated")?,
                    superseded: superseded(item)?,
                });
            }
            match out.last_evaluated_key {
                Some(next) => start = Some(next),
                None => break,
            }
        }
        // The SQL store's order: ids as text, then name, then version.
        entries.sort_by_cached_key(|e| {
            (e.org.to_string(), e.secret.clone(), e.environment.to_string(), e.version)
        });
        Ok(entries)
    }

    async fn generation(&self, agent: AgentId, purpose: &str) -> Result<u64, ValueStoreError> {
        match self.get(generation_pk(agent), purpose.to_owned(), "sealed file generation").await? {
            Some(item) => get_n::<u64>(&item, "generation"),
            None => Ok(0),
        }
    }

    async fn advance_generation(
        &self,
        agent: AgentId,
        purpose: &str,
        to: u64,
    ) -> Result<(), ValueStoreError> {
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(generation_pk(agent), purpose.to_owned())))
            .update_expression("SET generation = :to")
            .condition_expression("attribute_not_exists(generation) OR generation < :to")
            .expression_attribute_values(":to", n(to))
            .send()
            .await;
        match sent {
            Ok(_) => Ok(()),
            // Already there, or past it: it never goes back.
            Err(e)
                if e.as_service_error().is_some_and(|e| {
                    matches!(e, aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(_))
                }) =>
            {
                Ok(())
            }
            Err(e) => Err(unavailable("UpdateItem (sealed file generation)", &e)),
        }
    }

    async fn numbering(&self, agent: AgentId) -> Result<Numbering, ValueStoreError> {
        if let Some(n) = self.read_numbering(agent).await? {
            return Ok(n);
        }
        let legacy = match self.get(COUNTER_PK.into(), COUNTER_SK.into(), "legacy access counter").await? {
            Some(item) => get_n::<u64>(&item, "last_seq")?,
            None => 0,
        };
        let start = if legacy > 0 {
            Numbering { epoch: LEGACY_EPOCH.to_owned(), last_seq: legacy }
        } else {
            Numbering { epoch: new_epoch(), last_seq: 0 }
        };
        // Two handles starting one Agent's numbering at once: one put wins.
        self.put_new(counter_item(agent, &start), "PutItem (access counter)").await?;
        self.read_numbering(agent)
            .await?
            .ok_or_else(|| ValueStoreError::Unavailable("the access counter item is missing".into()))
    }

    async fn restart_numbering(&self, agent: AgentId) -> Result<Numbering, ValueStoreError> {
        let fresh = Numbering { epoch: new_epoch(), last_seq: 0 };
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(counter_item(agent, &fresh)))
            .send()
            .await
            .map_err(|e| unavailable("PutItem (access counter)", &e))?;
        Ok(fresh)
    }

    async fn append_records(&self, agent: AgentId, records: &[ServedRead]) -> Result<u64, ValueStoreError> {
        let count = records.len() as u64;
        for attempt in 0..COMMIT_ATTEMPTS {
            let Numbering { epoch, last_seq: last } = self.numbering(agent).await?;
            let first = last + 1;
            let counter = Update::builder()
                .table_name(&self.table)
                .set_key(Some(key(COUNTER_PK.into(), counter_sk(agent))))
                .update_expression("SET last_seq = :next")
                .condition_expression("last_seq = :expected AND epoch = :epoch")
                .expression_attribute_values(":next", n(last + count))
                .expression_attribute_values(":expected", n(last))
                .expression_attribute_values(":epoch", s(&epoch))
                .build()
                .map_err(build_err)?;
            let mut items = vec![TransactWriteItem::builder().update(counter).build()];
            for (seq, record) in (first..).zip(records) {
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(access_item(&epoch, seq, record)))
                    .condition_expression("attribute_not_exists(pk)")
                    .build()
                    .map_err(build_err)?;
                items.push(TransactWriteItem::builder().put(put).build());
            }
            let sent = self.client.transact_write_items().set_transact_items(Some(items)).send().await;
            let err = match sent {
                Ok(_) => return Ok(first),
                Err(e) => e,
            };
            let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
                err.as_service_error()
            else {
                return Err(unavailable("TransactWriteItems", &err));
            };
            let reasons = cancelled.cancellation_reasons();
            let code = |i: usize| reasons.get(i).and_then(|r| r.code()).unwrap_or("None");
            // The counter moved since it was read (another appender
            // committed first; its records may also be where ours would
            // go), or another transaction held one of the items: retry.
            let raced = code(0) == "ConditionalCheckFailed"
                || (0..=records.len()).any(|i| code(i) == "TransactionConflict");
            if !raced {
                // The counter still held `last`, yet a record is already at
                // one of the next numbers: not written by a commit.
                if let Some(taken) = (1..=records.len()).find(|&i| code(i) == "ConditionalCheckFailed") {
                    return Err(ValueStoreError::Unavailable(format!(
                        "access record {} is already in the store although the counter is at {last}: \
                         something outside the Agent wrote it; nothing was written",
                        last + taken as u64
                    )));
                }
                return Err(unavailable("TransactWriteItems", &err));
            }
            // Another appender moved the counter first: retry on its value.
            let jitter = u64::from(uuid::Uuid::new_v4().as_fields().1 % 20);
            tokio::time::sleep(Duration::from_millis(5 * u64::from(attempt + 1) + jitter)).await;
        }
        Err(ValueStoreError::Unavailable(format!(
            "the access counter kept moving under concurrent appenders ({COMMIT_ATTEMPTS} attempts); nothing \
             was written"
        )))
    }

    async fn records_after(
        &self,
        agent: AgentId,
        epoch: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<RecordedAccess>, ValueStoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let limit = limit as usize;
        let mut items = Vec::new();
        // The legacy epoch starts in the shared partition of before epochs
        // (its numbers are all below the ones written since).
        if epoch == LEGACY_EPOCH {
            items = self
                .query_filtered(
                    "pk = :pk AND sk > :after",
                    Some("served_by = :agent"),
                    HashMap::from([
                        (":pk".to_owned(), s(ACCESS_PK)),
                        (":after".to_owned(), s(seq_sk(after))),
                        (":agent".to_owned(), s(agent.to_string())),
                    ]),
                    None,
                    limit,
                )
                .await?;
            items.truncate(limit);
        }
        if items.len() < limit {
            items.extend(
                self.query_all(
                    "pk = :pk AND sk > :after",
                    HashMap::from([
                        (":pk".to_owned(), s(access_pk(agent, epoch))),
                        (":after".to_owned(), s(seq_sk(after))),
                    ]),
                    None,
                    limit - items.len(),
                )
                .await?,
            );
        }
        items.iter().map(access_record).collect()
    }

    fn max_batch(&self) -> usize {
        MAX_ACCESS_BATCH
    }
}
