//! Access records reported by Agents on sync, and the access log.

use async_trait::async_trait;
use heimdall_core::access::{ingest, AccessLogPage, EpochState, Report};
use heimdall_core::ids::{EventId, OrgId};
use heimdall_core::infra::Agent;
use heimdall_core::ports::{AccessStore, NewEvent, StoreResult, SyncOutcome, TrailStore};
use heimdall_wire::AccessLogEntry;
use time::OffsetDateTime;
use uuid::Uuid;

use super::events::insert_event;
use super::sql::{db_err, from_micros, parse_id, to_micros, values_list, SqlStore, ROWS_PER_INSERT};

#[async_trait]
impl AccessStore for SqlStore {
    async fn record_access(
        &self,
        org: OrgId,
        agent: &Agent,
        report: Report<'_>,
        environment_names: &[(String, String)],
        now: OffsetDateTime,
    ) -> StoreResult<SyncOutcome> {
        let Report { epoch, after, records } = report;
        let agent_id = agent.id.to_string();
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Locks the Agent's row (PostgreSQL), so concurrent syncs of one
        // Agent plan one after the other. SQLite has one connection: serial.
        sqlx::query("UPDATE agents SET id = id WHERE id = $1")
            .bind(agent_id.clone())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        let epochs: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT epoch, last_seq, first_seen_at FROM agent_access_epochs WHERE agent_id = $1 \
             ORDER BY first_seen_at DESC, epoch",
        )
        .bind(agent_id.clone())
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let state = |(e, last, _): &(String, i64, i64)| EpochState { epoch: e.clone(), last_seq: *last };
        let latest = epochs.first().map(state);
        let this = epochs.iter().find(|(e, _, _)| e == epoch).map(state);
        let held: Vec<(i64, String)> = match (records.iter().map(|r| r.seq).min(), records.iter().map(|r| r.seq).max()) {
            (Some(low), Some(high)) => sqlx::query_as(
                "SELECT seq, digest FROM access_records WHERE agent_id = $1 AND epoch = $2 AND seq >= $3 AND seq <= $4",
            )
            .bind(agent_id.clone())
            .bind(epoch.to_owned())
            .bind(low)
            .bind(high)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?,
            _ => Vec::new(),
        };
        let plan = ingest(latest.as_ref(), this.as_ref(), epoch, after, records, &held);

        if plan.new_epoch {
            sqlx::query(
                "INSERT INTO agent_access_epochs (agent_id, epoch, last_seq, first_seen_at) VALUES ($1, $2, $3, $4)",
            )
            .bind(agent_id.clone())
            .bind(epoch.to_owned())
            .bind(plan.last_seq)
            .bind(to_micros(now))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        } else {
            sqlx::query("UPDATE agent_access_epochs SET last_seq = $1 WHERE agent_id = $2 AND epoch = $3")
                .bind(plan.last_seq)
                .bind(agent_id.clone())
                .bind(epoch.to_owned())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        // Agents key environments by id; the log speaks names.
        let name_of = |env: &str| {
            environment_names
                .iter()
                .find(|(id, _)| id == env)
                .map_or(env, |(_, name)| name.as_str())
                .to_owned()
        };
        // Many rows a statement: a sync of 10,000 reads is 20 round trips, not 10,000.
        for chunk in plan.inserts.chunks(ROWS_PER_INSERT) {
            let sql = format!(
                "INSERT INTO access_records (agent_id, epoch, seq, digest, org_id, accessor, accessed_at, secret_name, environment, version, source, received_at) VALUES {}",
                values_list(chunk.len(), 12)
            );
            let mut query = sqlx::query(&sql);
            for (record, digest) in chunk {
                query = query
                    .bind(agent_id.clone())
                    .bind(epoch.to_owned())
                    .bind(record.seq)
                    .bind(digest.clone())
                    .bind(org.to_string())
                    .bind(record.accessor.clone())
                    .bind(to_micros(record.at))
                    .bind(record.secret.clone())
                    .bind(name_of(&record.environment))
                    .bind(record.version)
                    .bind(record.from.clone())
                    .bind(to_micros(now));
            }
            query.execute(&mut *tx).await.map_err(db_err)?;
        }
        // The environments the secrets' logs have reads in, once each.
        let mut logs: Vec<(&str, String)> =
            plan.inserts.iter().map(|(r, _)| (r.secret.as_str(), name_of(&r.environment))).collect();
        logs.sort();
        logs.dedup();
        for chunk in logs.chunks(ROWS_PER_INSERT) {
            let sql = format!(
                "INSERT INTO access_log_environments (org_id, secret_name, environment) VALUES {} ON CONFLICT DO NOTHING",
                values_list(chunk.len(), 3)
            );
            let mut query = sqlx::query(&sql);
            for (secret, environment) in chunk {
                query = query.bind(org.to_string()).bind((*secret).to_owned()).bind(environment.clone());
            }
            query.execute(&mut *tx).await.map_err(db_err)?;
        }
        // A removed member's reads that arrive now mark what they still reach.
        let reads: Vec<heimdall_core::at_risk::Read> = plan
            .inserts
            .iter()
            .map(|(r, _)| heimdall_core::at_risk::Read {
                accessor: r.accessor.clone(),
                at: r.at,
                secret: r.secret.clone(),
                environment: name_of(&r.environment),
                version: r.version,
            })
            .collect();
        super::at_risk::mark(&mut tx, org, &reads, &format!("agent:{}", agent.name), now).await?;
        for event in &plan.events {
            let event = NewEvent {
                id: EventId::from_uuid(Uuid::new_v4()),
                at: now,
                actor: format!("agent:{}", agent.name),
                action: event.action(),
                target: format!("agent:{}", agent.id),
                detail: event.detail(&agent.name),
            };
            insert_event(&mut tx, org, event).await?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(SyncOutcome {
            stored: plan.inserts.len(),
            duplicates: plan.duplicates,
            events: plan.events,
            received_through: plan.last_seq,
        })
    }
}

#[async_trait]
impl TrailStore for SqlStore {
    async fn access_log_environments(&self, org: OrgId, secret_name: &str) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT environment FROM access_log_environments WHERE org_id = $1 AND secret_name = $2 ORDER BY environment",
        )
        .bind(org.to_string())
        .bind(secret_name.to_owned())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(rows.into_iter().map(|(e,)| e).collect())
    }

    async fn access_log(
        &self,
        org: OrgId,
        secret_name: &str,
        page: &AccessLogPage,
    ) -> StoreResult<Vec<AccessLogEntry>> {
        if page.environments.is_empty() {
            return Ok(Vec::new());
        }
        // Newest first, so the page lies in the newest stretch of reads
        // before the cursor: look at the last minute of them, then sixteen
        // times as far back, until the page is full or the trail's first
        // read is in. Each look is an index range of (org, secret, time),
        // never the whole trail. The stretch starts on a second, so no
        // line (a second's reads) is cut in two.
        let until =
            page.after.as_ref().map_or(i64::MAX, |c| c.second.saturating_add(1).saturating_mul(SECOND));
        // Two index lookups (one `MIN` and one `MAX` together would make
        // SQLite scan).
        let edge = |order: &'static str| {
            let sql = format!(
                "SELECT accessed_at FROM access_records WHERE org_id = $1 AND secret_name = $2 AND accessed_at < $3
                 ORDER BY accessed_at {order} LIMIT 1"
            );
            let (pool, org, secret) = (self.pool.clone(), org.to_string(), secret_name.to_owned());
            async move {
                sqlx::query_as::<_, (i64,)>(&sql)
                    .bind(org)
                    .bind(secret)
                    .bind(until)
                    .fetch_optional(&pool)
                    .await
                    .map_err(db_err)
            }
        };
        let (Some((oldest,)), Some((newest,))) = (edge("ASC").await?, edge("DESC").await?) else {
            return Ok(Vec::new());
        };
        let top = newest.div_euclid(SECOND).saturating_add(1).saturating_mul(SECOND);
        let first = oldest.div_euclid(SECOND).saturating_mul(SECOND);
        let mut stretch = FIRST_STRETCH;
        loop {
            let from = top.saturating_sub(stretch).max(first);
            let entries = self.access_log_between(org, secret_name, page, from, until).await?;
            if entries.len() >= usize::try_from(page.limit).unwrap_or(usize::MAX) || from <= first {
                return Ok(entries);
            }
            stretch = stretch.saturating_mul(16);
        }
    }
}

/// A microsecond count's second.
const SECOND: i64 = 1_000_000;

/// How far back an access log page looks first: a minute of reads.
const FIRST_STRETCH: i64 = 60 * SECOND;

impl SqlStore {
    /// An access log page from the reads made in `[from, until)` only.
    async fn access_log_between(
        &self,
        org: OrgId,
        secret_name: &str,
        page: &AccessLogPage,
        from: i64,
        until: i64,
    ) -> StoreResult<Vec<AccessLogEntry>> {
        // $1 org, $2 secret, $3 and $4 the stretch, then the environments,
        // the namesakes' pairs, the cursor and the limit, numbered in that
        // order.
        let mut n = 4;
        let mut next = || {
            n += 1;
            format!("${n}")
        };
        let environments: Vec<String> = page.environments.iter().map(|_| next()).collect();
        let namesakes: Vec<String> = page
            .namesakes
            .iter()
            .map(|_| format!(" AND NOT (g.environment = {} AND g.version = {})", next(), next()))
            .collect();
        let after = page.after.as_ref().map(|_| {
            let marks: Vec<String> = (0..6).map(|_| next()).collect();
            format!(
                " AND (g.sec, g.accessor, g.environment, g.version, g.agent_id, g.source) < ({})",
                marks.join(", ")
            )
        });
        let limit = next();
        let sql = format!(
            "SELECT g.sec, g.accessor, g.environment, g.version, g.agent_id, g.name, g.source, g.reads FROM (
                 SELECT r.accessed_at / 1000000 AS sec, r.accessor, r.environment, r.version, r.agent_id, a.name,
                        r.source, COUNT(*) AS reads
                 FROM access_records r JOIN agents a ON a.id = r.agent_id
                 WHERE r.org_id = $1 AND r.secret_name = $2 AND r.accessed_at >= $3 AND r.accessed_at < $4
                   AND r.environment IN ({})
                 GROUP BY r.accessed_at / 1000000, r.accessor, r.environment, r.version, r.agent_id, a.name, r.source
             ) g
             WHERE TRUE{}{}
             ORDER BY g.sec DESC, g.accessor DESC, g.environment DESC, g.version DESC, g.agent_id DESC, g.source DESC
             LIMIT {limit}",
            environments.join(", "),
            namesakes.concat(),
            after.unwrap_or_default(),
        );
        let mut query = sqlx::query_as::<_, (i64, String, String, i64, String, String, String, i64)>(&sql)
            .bind(org.to_string())
            .bind(secret_name.to_owned())
            .bind(from)
            .bind(until);
        for environment in &page.environments {
            query = query.bind(environment.clone());
        }
        for (environment, version) in &page.namesakes {
            query = query.bind(environment.clone()).bind(*version);
        }
        if let Some(c) = &page.after {
            query = query
                .bind(c.second)
                .bind(c.accessor.clone())
                .bind(c.environment.clone())
                .bind(c.version)
                .bind(c.agent.to_string())
                .bind(c.from.clone());
        }
        let rows = query.bind(i64::from(page.limit)).fetch_all(&self.pool).await.map_err(db_err)?;
        rows.into_iter()
            .map(|(second, accessor, environment, version, agent, served_by, from, reads)| {
                Ok(AccessLogEntry {
                    accessed_at: from_micros(second.saturating_mul(1_000_000)),
                    accessor,
                    environment,
                    version,
                    served_by,
                    served_by_id: parse_id(&agent)?,
                    from,
                    reads: u64::try_from(reads).unwrap_or(0),
                })
            })
            .collect()
    }
}
