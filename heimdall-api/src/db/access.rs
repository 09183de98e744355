//! Access records reported by Agents on sync, and the access log.

use async_trait::async_trait;
use heimdall_core::ids::{EventId, OrgId};
use heimdall_core::infra::Agent;
use heimdall_core::ports::{AccessStore, NewEvent, StoreResult, SyncOutcome, READ_NOT_REPORTED};
use heimdall_core::wire::{AccessLogEntry, AccessRecord};
use time::OffsetDateTime;
use uuid::Uuid;

use super::store::{db_err, from_micros, insert_event, to_micros, SqlStore};

#[async_trait]
impl AccessStore for SqlStore {
    async fn record_access(
        &self,
        org: OrgId,
        agent: &Agent,
        records: &[AccessRecord],
        now: OffsetDateTime,
    ) -> StoreResult<SyncOutcome> {
        let agent_id = agent.id.to_string();
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // The counter row, created once; updating it locks it (PostgreSQL)
        // so concurrent syncs of one Agent are serial. SQLite has one
        // connection: serial already.
        sqlx::query("INSERT INTO agent_access_seq (agent_id, last_seq) VALUES ($1, 0) ON CONFLICT (agent_id) DO NOTHING")
            .bind(agent_id.clone())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        sqlx::query("UPDATE agent_access_seq SET last_seq = last_seq WHERE agent_id = $1")
            .bind(agent_id.clone())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        let (mut last,): (i64,) = sqlx::query_as("SELECT last_seq FROM agent_access_seq WHERE agent_id = $1")
            .bind(agent_id.clone())
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;

        let mut sorted: Vec<&AccessRecord> = records.iter().collect();
        sorted.sort_by_key(|r| r.seq);
        let mut outcome = SyncOutcome::default();
        for record in sorted {
            let inserted = sqlx::query(
                "INSERT INTO access_records (agent_id, seq, org_id, accessor, accessed_at, secret_name, environment, version, source, received_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (agent_id, seq) DO NOTHING",
            )
            .bind(agent_id.clone())
            .bind(record.seq)
            .bind(org.to_string())
            .bind(record.accessor.clone())
            .bind(to_micros(record.at))
            .bind(record.secret.clone())
            .bind(record.environment.clone())
            .bind(record.version)
            .bind(record.from.clone())
            .bind(to_micros(now))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            if inserted.rows_affected() == 0 {
                outcome.duplicates += 1;
                continue;
            }
            outcome.stored += 1;
            if record.seq > last + 1 {
                let (from_seq, to_seq) = (last + 1, record.seq - 1);
                outcome.gaps.push((from_seq, to_seq));
                let event = NewEvent {
                    id: EventId::from_uuid(Uuid::new_v4()),
                    at: now,
                    actor: format!("agent:{}", agent.name),
                    action: READ_NOT_REPORTED.into(),
                    target: format!("agent:{}", agent.id),
                    detail: serde_json::json!({
                        "agent": agent.name,
                        "from_seq": from_seq,
                        "to_seq": to_seq,
                    }),
                };
                insert_event(&mut tx, org, event).await?;
            }
            last = last.max(record.seq);
        }
        sqlx::query("UPDATE agent_access_seq SET last_seq = $1 WHERE agent_id = $2")
            .bind(last)
            .bind(agent_id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        outcome.received_through = last;
        Ok(outcome)
    }

    async fn access_log(
        &self,
        org: OrgId,
        secret_name: &str,
        environment: Option<&str>,
    ) -> StoreResult<Vec<AccessLogEntry>> {
        let filter = if environment.is_some() { " AND r.environment = $3" } else { "" };
        let sql = format!(
            "SELECT r.accessed_at / 1000000 AS sec, r.accessor, r.environment, r.version, a.name, r.source, COUNT(*) AS reads
             FROM access_records r JOIN agents a ON a.id = r.agent_id
             WHERE r.org_id = $1 AND r.secret_name = $2{filter}
             GROUP BY r.accessed_at / 1000000, r.accessor, r.environment, r.version, r.agent_id, a.name, r.source
             ORDER BY sec DESC, r.accessor, r.environment, r.version DESC, a.name, r.source"
        );
        let mut query = sqlx::query_as::<_, (i64, String, String, i64, String, String, i64)>(&sql)
            .bind(org.to_string())
            .bind(secret_name.to_owned());
        if let Some(environment) = environment {
            query = query.bind(environment.to_owned());
        }
        let rows = query.fetch_all(&self.pool).await.map_err(db_err)?;
        Ok(rows
            .into_iter()
            .map(|(second, accessor, environment, version, served_by, from, reads)| AccessLogEntry {
                accessed_at: from_micros(second.saturating_mul(1_000_000)),
                accessor,
                environment,
                version,
                served_by,
                from,
                reads: u64::try_from(reads).unwrap_or(0),
            })
            .collect())
    }
}
