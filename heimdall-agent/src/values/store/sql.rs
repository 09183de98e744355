//! The SQL both relational backends share: sealed rows in `secret_values`,
//! the keyring in `data_keys`, access records and their per-Agent counters.
//! sqlx's `Any` driver; `$N` placeholders, which SQLite accepts too; ids as
//! UUID text.

use async_trait::async_trait;
use heimdall_core::ids::{AgentId, CatalogId, OrgId};
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row as _};

use super::{
    new_epoch, parse_id, Backend, InventoryEntry, Numbering, RecordedAccess, Row, SealedStore, ServedRead,
    ValueAddress, ValueStoreError, LEGACY_EPOCH,
};
use crate::values::crypto::{SealedDataKey, SealedValue};

/// Access records per group commit on SQL stores: one INSERT statement of
/// 9 parameters a row, well under SQLite's and PostgreSQL's limits.
const RECORDS_PER_INSERT: usize = 100;

/// [`SealedStore`] over SQLite or PostgreSQL.
#[derive(Debug)]
pub(crate) struct SqlRows {
    pool: AnyPool,
    backend: Backend,
    /// SQLite only: (Agent, epoch, next access record number), between group commits.
    next_seq: tokio::sync::Mutex<Option<(AgentId, String, i64)>>,
}

fn db(err: sqlx::Error) -> ValueStoreError {
    ValueStoreError::Unavailable(err.to_string())
}

fn to_u32(v: i64, what: &str) -> Result<u32, ValueStoreError> {
    u32::try_from(v).map_err(|_| ValueStoreError::Unavailable(format!("the store holds an invalid {what}")))
}

impl SqlRows {
    /// Runs the migrations on `pool`.
    pub(crate) async fn migrate(
        pool: AnyPool,
        backend: Backend,
        migrator: &sqlx::migrate::Migrator,
    ) -> Result<Self, ValueStoreError> {
        migrator.run(&pool).await.map_err(|e| {
            ValueStoreError::Open(match e {
                sqlx::migrate::MigrateError::VersionMissing(applied) => {
                    let known = migrator.iter().map(|m| m.version).max().unwrap_or(0);
                    heimdall_tls::database::newer_schema(applied, known)
                }
                other => format!("migrations failed: {other}"),
            })
        })?;
        Ok(Self { pool, backend, next_seq: Default::default() })
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
    ) -> Result<u64, ValueStoreError> {
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
                        .map_err(|_| ValueStoreError::Unavailable("invalid sequence number".into()));
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
        Err(ValueStoreError::Unavailable("the access counter moved under this Agent twice".into()))
    }

    async fn read_numbering(&self, agent: AgentId) -> Result<Option<Numbering>, ValueStoreError> {
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
                    .map_err(|_| ValueStoreError::Unavailable("invalid sequence number".into()))?,
            })
        })
        .transpose()
    }
}

async fn load_keyring(pool: &AnyPool) -> Result<Vec<SealedDataKey>, ValueStoreError> {
    let rows = sqlx::query("SELECT key_id, sealed_key, check_value FROM data_keys ORDER BY generation")
        .fetch_all(pool)
        .await
        .map_err(|e| ValueStoreError::Open(e.to_string()))?;
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

/// A `secret_values` row: a tombstone, or its sealed value. A row with some
/// but not all of key id, nonce and ciphertext does not open
/// (`Undecryptable`, in the vault).
fn row_of(row: &AnyRow) -> Result<Row, ValueStoreError> {
    let deactivated: i64 = row.try_get("deactivated").map_err(db)?;
    let superseded: i64 = row.try_get("superseded").map_err(db)?;
    if superseded != 0 {
        return Ok(Row::Superseded);
    }
    if deactivated != 0 {
        return Ok(Row::Tombstone);
    }
    let key_id: Option<String> = row.try_get("key_id").map_err(db)?;
    let nonce: Option<Vec<u8>> = row.try_get("nonce").map_err(db)?;
    let ciphertext: Option<Vec<u8>> = row.try_get("ciphertext").map_err(db)?;
    Ok(Row::Sealed(SealedValue {
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

fn access_record(row: &AnyRow) -> Result<RecordedAccess, ValueStoreError> {
    let seq: i64 = row.try_get("seq").map_err(db)?;
    let environment: String = row.try_get("environment_id").map_err(db)?;
    let served_by: String = row.try_get("served_by").map_err(db)?;
    Ok(RecordedAccess {
        seq: u64::try_from(seq)
            .map_err(|_| ValueStoreError::Unavailable("invalid sequence number".into()))?,
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
impl SealedStore for SqlRows {
    fn backend(&self) -> Backend {
        self.backend
    }

    async fn data_keys(&self) -> Result<Vec<SealedDataKey>, ValueStoreError> {
        load_keyring(&self.pool).await
    }

    async fn put_first_data_key(&self, key: &SealedDataKey) -> Result<(), ValueStoreError> {
        sqlx::query(
            "INSERT INTO data_keys (generation, key_id, sealed_key, check_value) VALUES (1, $1, $2, $3) \
             ON CONFLICT (generation) DO NOTHING",
        )
        .bind(key.key_id.clone())
        .bind(key.sealed_key.clone())
        .bind(key.check_value.clone())
        .execute(&self.pool)
        .await
        .map_err(|e| ValueStoreError::Open(e.to_string()))?;
        Ok(())
    }

    async fn replace_data_key(
        &self,
        old: &SealedDataKey,
        new: &SealedDataKey,
    ) -> Result<bool, ValueStoreError> {
        let done = sqlx::query("UPDATE data_keys SET sealed_key = $1 WHERE key_id = $2 AND sealed_key = $3")
            .bind(new.sealed_key.clone())
            .bind(old.key_id.clone())
            .bind(old.sealed_key.clone())
            .execute(&self.pool)
            .await
            .map_err(|e| ValueStoreError::Unavailable(e.to_string()))?;
        Ok(done.rows_affected() == 1)
    }

    async fn put_if_absent(&self, at: &ValueAddress, sealed: &SealedValue) -> Result<bool, ValueStoreError> {
        let done = sqlx::query(
            "INSERT INTO secret_values (org_id, secret, environment_id, version, key_id, nonce, ciphertext, deactivated) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 0) \
             ON CONFLICT (org_id, secret, environment_id, version) DO NOTHING",
        )
        .bind(at.org.to_string())
        .bind(&at.secret)
        .bind(at.environment.to_string())
        .bind(i64::from(at.version))
        .bind(sealed.key_id.clone())
        .bind(sealed.nonce.clone())
        .bind(sealed.ciphertext.clone())
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(done.rows_affected() == 1)
    }

    async fn get(&self, at: &ValueAddress) -> Result<Option<Row>, ValueStoreError> {
        let row = sqlx::query(
            "SELECT key_id, nonce, ciphertext, deactivated, superseded FROM secret_values \
             WHERE org_id = $1 AND secret = $2 AND environment_id = $3 AND version = $4",
        )
        .bind(at.org.to_string())
        .bind(&at.secret)
        .bind(at.environment.to_string())
        .bind(i64::from(at.version))
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        row.as_ref().map(row_of).transpose()
    }

    async fn latest(
        &self,
        org: OrgId,
        secret: &str,
        environment: CatalogId,
    ) -> Result<Option<(u32, Row)>, ValueStoreError> {
        let found = sqlx::query(
            "SELECT version, key_id, nonce, ciphertext, deactivated, superseded FROM secret_values \
             WHERE org_id = $1 AND secret = $2 AND environment_id = $3 ORDER BY version DESC LIMIT 1",
        )
        .bind(org.to_string())
        .bind(secret)
        .bind(environment.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        let Some(found) = found else { return Ok(None) };
        Ok(Some((to_u32(found.try_get("version").map_err(db)?, "version")?, row_of(&found)?)))
    }

    async fn tombstone(&self, at: &ValueAddress) -> Result<(), ValueStoreError> {
        sqlx::query(
            "INSERT INTO secret_values (org_id, secret, environment_id, version, key_id, nonce, ciphertext, deactivated) \
             VALUES ($1, $2, $3, $4, NULL, NULL, NULL, 1) \
             ON CONFLICT (org_id, secret, environment_id, version) \
             DO UPDATE SET key_id = NULL, nonce = NULL, ciphertext = NULL, deactivated = 1, superseded = 0",
        )
        .bind(at.org.to_string())
        .bind(&at.secret)
        .bind(at.environment.to_string())
        .bind(i64::from(at.version))
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(())
    }

    async fn erase(&self, at: &ValueAddress) -> Result<bool, ValueStoreError> {
        let done = sqlx::query(
            "UPDATE secret_values SET key_id = NULL, nonce = NULL, ciphertext = NULL, deactivated = 1, superseded = 1 \
             WHERE org_id = $1 AND secret = $2 AND environment_id = $3 AND version = $4 AND deactivated = 0",
        )
        .bind(at.org.to_string())
        .bind(&at.secret)
        .bind(at.environment.to_string())
        .bind(i64::from(at.version))
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(done.rows_affected() == 1)
    }

    async fn delete(
        &self,
        org: OrgId,
        secret: &str,
        environment: Option<CatalogId>,
        through: Option<u32>,
    ) -> Result<u64, ValueStoreError> {
        let sql = match (environment, through) {
            (None, _) => "DELETE FROM secret_values WHERE org_id = $1 AND secret = $2",
            (Some(_), None) => {
                "DELETE FROM secret_values WHERE org_id = $1 AND secret = $2 AND environment_id = $3"
            }
            (Some(_), Some(_)) => {
                "DELETE FROM secret_values WHERE org_id = $1 AND secret = $2 AND environment_id = $3 AND version <= $4"
            }
        };
        let mut query = sqlx::query(sql).bind(org.to_string()).bind(secret);
        if let Some(env) = environment {
            query = query.bind(env.to_string());
            if let Some(through) = through {
                query = query.bind(i64::from(through));
            }
        }
        let done = query.execute(&self.pool).await.map_err(db)?;
        Ok(done.rows_affected())
    }

    async fn inventory(&self) -> Result<Vec<InventoryEntry>, ValueStoreError> {
        let rows = sqlx::query(
            "SELECT org_id, secret, environment_id, version, deactivated, superseded FROM secret_values \
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
                let superseded: i64 = r.try_get("superseded").map_err(db)?;
                Ok(InventoryEntry {
                    org: parse_id(&org, "organization id")?,
                    secret: r.try_get("secret").map_err(db)?,
                    environment: parse_id(&environment, "environment id")?,
                    version: to_u32(r.try_get("version").map_err(db)?, "version")?,
                    deactivated: deactivated != 0,
                    superseded: superseded != 0,
                })
            })
            .collect()
    }

    async fn generation(&self, agent: AgentId, purpose: &str) -> Result<u64, ValueStoreError> {
        let row =
            sqlx::query("SELECT generation FROM sealed_generations WHERE agent_id = $1 AND purpose = $2")
                .bind(agent.to_string())
                .bind(purpose.to_owned())
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?;
        let generation = row.map(|r| r.try_get::<i64, _>("generation")).transpose().map_err(db)?.unwrap_or(0);
        u64::try_from(generation).map_err(|_| ValueStoreError::Unavailable("a negative generation".into()))
    }

    async fn advance_generation(
        &self,
        agent: AgentId,
        purpose: &str,
        to: u64,
    ) -> Result<(), ValueStoreError> {
        let to =
            i64::try_from(to).map_err(|_| ValueStoreError::Invalid("a generation out of range".into()))?;
        sqlx::query(
            "INSERT INTO sealed_generations (agent_id, purpose, generation) VALUES ($1, $2, $3) \
             ON CONFLICT (agent_id, purpose) DO UPDATE SET generation = excluded.generation \
             WHERE sealed_generations.generation < excluded.generation",
        )
        .bind(agent.to_string())
        .bind(purpose.to_owned())
        .bind(to)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(())
    }

    async fn numbering(&self, agent: AgentId) -> Result<Numbering, ValueStoreError> {
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
            .ok_or_else(|| ValueStoreError::Unavailable("the access counter row is missing".into()))
    }

    async fn restart_numbering(&self, agent: AgentId) -> Result<Numbering, ValueStoreError> {
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

    async fn append_records(&self, agent: AgentId, records: &[ServedRead]) -> Result<u64, ValueStoreError> {
        let count =
            i64::try_from(records.len()).map_err(|_| ValueStoreError::Invalid("batch too large".into()))?;
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
                        .map_err(|_| ValueStoreError::Unavailable("invalid sequence number".into()))
                }
                // No counter row yet for this Agent: start its numbering.
                None if attempt == 0 => {
                    self.numbering(agent).await?;
                }
                None => break,
            }
        }
        Err(ValueStoreError::Unavailable("the insert of access records returned nothing".into()))
    }

    fn max_batch(&self) -> usize {
        RECORDS_PER_INSERT
    }

    async fn records_after(
        &self,
        agent: AgentId,
        epoch: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<RecordedAccess>, ValueStoreError> {
        let after =
            i64::try_from(after).map_err(|_| ValueStoreError::Invalid("sequence number too large".into()))?;
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
