//! What each Agent reported holding, and deleting a secret: it goes
//! `deleting` and becomes `deleted` in the transaction of the sync (or the
//! `agent forget`) after which no Agent's inventory lists it.

use heimdall_core::audit::AuditAction;
use std::collections::HashMap;

use async_trait::async_trait;
use heimdall_core::deletion::{is_done, Hearer, Lifecycle};
use heimdall_core::ids::{AgentId, CatalogId, EventId, OrgId, SecretId};
use heimdall_core::infra::Agent;
use heimdall_core::ports::{
    DeletionStore, EnvironmentDeletion, Holding, HoldingStore, InventoryStore, NewEvent, Reported,
    ReportedAt, StoreError, StoreResult,
};
use sqlx::{Any, FromRow, Transaction};
use time::OffsetDateTime;
use uuid::Uuid;

use super::events::insert_event;
use super::sql::{
    db_err, from_micros, parse_id, to_micros, values_list, values_list_after, SqlStore, ROWS_PER_INSERT,
};

#[derive(FromRow)]
struct HoldingRow {
    agent_id: String,
    agent: String,
    secret: String,
    environment: String,
    version: i64,
    deactivated: i64,
    reported_at: i64,
    held_since: i64,
    revoked_at: Option<i64>,
    last_seen_at: Option<i64>,
}

impl HoldingRow {
    fn into_domain(self) -> StoreResult<Holding> {
        Ok(Holding {
            agent_id: parse_id(&self.agent_id)?,
            agent: self.agent,
            secret: self.secret,
            environment: self.environment,
            version: self.version,
            deactivated: self.deactivated != 0,
            reported_at: from_micros(self.reported_at),
            held_since: Some(from_micros(self.held_since)),
            agent_revoked: self.revoked_at.is_some(),
            agent_last_seen_at: self.last_seen_at.map(from_micros),
        })
    }
}

/// The environment's name where it is known, else the id the Agent sent.
const HOLDINGS: &str = "SELECT i.agent_id, a.name AS agent, i.secret_name AS secret, \
     COALESCE(e.name, i.environment_id) AS environment, i.version, i.deactivated, \
     COALESCE(a.inventory_reported_at, i.reported_at) AS reported_at, i.reported_at AS held_since, \
     a.revoked_at, a.last_seen_at \
     FROM agent_inventory i JOIN agents a ON a.id = i.agent_id \
     LEFT JOIN catalog_entries e ON e.id = i.environment_id";

/// Who may hold a copy of what, in `org`, as the store says now: what
/// [`heimdall_core::deletion::is_done`] decides with.
struct Copies {
    /// Each Agent not revoked: its id and how far it applied the API's answers.
    agents: Vec<(String, Option<OffsetDateTime>)>,
    /// (environment id, Agent id) of each assignment.
    assigned: Vec<(String, String)>,
    /// (Agent id, secret name, environment id) of each inventory row.
    held: Vec<(String, String, String)>,
}

impl Copies {
    async fn load(tx: &mut Transaction<'_, Any>, org: OrgId) -> StoreResult<Self> {
        let agents: Vec<(String, Option<i64>)> =
            sqlx::query_as("SELECT id, applied_through FROM agents WHERE org_id = $1 AND revoked_at IS NULL")
                .bind(org.to_string())
                .fetch_all(&mut **tx)
                .await
                .map_err(db_err)?;
        let assigned: Vec<(String, String)> =
            sqlx::query_as("SELECT environment_id, agent_id FROM environment_agents WHERE org_id = $1")
                .bind(org.to_string())
                .fetch_all(&mut **tx)
                .await
                .map_err(db_err)?;
        let held: Vec<(String, String, String)> = sqlx::query_as(
            "SELECT agent_id, secret_name, environment_id FROM agent_inventory WHERE org_id = $1",
        )
        .bind(org.to_string())
        .fetch_all(&mut **tx)
        .await
        .map_err(db_err)?;
        let agents = agents.into_iter().map(|(id, at)| (id, at.map(from_micros))).collect();
        Ok(Self { agents, assigned, held })
    }

    /// The Agents that must hear of deleting `secret` (in `environment`,
    /// or in every one): those that hold the environment, and those whose
    /// inventory lists it there.
    fn hearers(&self, secret: &str, environment: Option<&str>) -> Vec<Hearer> {
        let in_place = |env: &str| environment.is_none_or(|e| e == env);
        let holds = |agent: &str| self.held.iter().any(|(a, s, e)| a == agent && s == secret && in_place(e));
        let assigned = |agent: &str| self.assigned.iter().any(|(e, a)| a == agent && in_place(e));
        let mut hearers: Vec<Hearer> = self
            .agents
            .iter()
            .filter(|(agent, _)| assigned(agent) || holds(agent))
            .map(|(agent, applied_through)| Hearer {
                applied_through: *applied_through,
                still_holds: holds(agent),
            })
            .collect();
        // A revoked Agent that still holds it never hears: never done
        // (`agent forget` says its store is gone).
        let revoked_holder = self
            .held
            .iter()
            .any(|(a, s, e)| s == secret && in_place(e) && !self.agents.iter().any(|(id, _)| id == a));
        if revoked_holder {
            hearers.push(Hearer { applied_through: None, still_holds: true });
        }
        hearers
    }
}

/// Starts deleting an active secret: it goes `deleting` at `at`; whether
/// it was active.
pub(super) async fn mark_deleting(
    tx: &mut Transaction<'_, Any>,
    org: OrgId,
    secret: SecretId,
    at: OffsetDateTime,
) -> StoreResult<bool> {
    let changed = sqlx::query(
        "UPDATE secrets SET lifecycle = 'deleting', updated_at = $1, deletion_started_at = $1 \
         WHERE org_id = $2 AND id = $3 AND lifecycle = 'active'",
    )
    .bind(to_micros(at))
    .bind(org.to_string())
    .bind(secret.to_string())
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(changed.rows_affected() == 1)
}

/// Every deletion in `org` now done (`heimdall_core::deletion::is_done`)
/// becomes `deleted`, each with its `secret.deleted` event.
pub(super) async fn complete_deletions(
    tx: &mut Transaction<'_, Any>,
    org: OrgId,
    actor: &str,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let whole: Vec<(String, String, Option<i64>)> = sqlx::query_as(
        "SELECT id, name, deletion_started_at FROM secrets WHERE org_id = $1 AND lifecycle = 'deleting'",
    )
    .bind(org.to_string())
    .fetch_all(&mut **tx)
    .await
    .map_err(db_err)?;
    let in_environments: Vec<(String, String, String, String, i64)> = sqlx::query_as(
        "SELECT s.id, s.name, d.environment_id, e.name, d.started_at FROM secret_environment_deletions d \
         JOIN secrets s ON s.id = d.secret_id JOIN catalog_entries e ON e.id = d.environment_id \
         WHERE s.org_id = $1 AND d.lifecycle = 'deleting'",
    )
    .bind(org.to_string())
    .fetch_all(&mut **tx)
    .await
    .map_err(db_err)?;
    if whole.is_empty() && in_environments.is_empty() {
        return Ok(());
    }
    let copies = Copies::load(tx, org).await?;
    for (id, name, environment_id, environment, started) in in_environments {
        if !is_done(from_micros(started), &copies.hearers(&name, Some(&environment_id))) {
            continue;
        }
        // Only from `deleting`: two Agents' syncs may both find it done,
        // and the second (after the first commits) changes nothing.
        let done = sqlx::query(
            "UPDATE secret_environment_deletions SET lifecycle = 'deleted', deleted_at = $1 \
             WHERE secret_id = $2 AND environment_id = $3 AND lifecycle = 'deleting'",
        )
        .bind(to_micros(now))
        .bind(id.clone())
        .bind(environment_id)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
        if done.rows_affected() == 0 {
            continue;
        }
        let detail = serde_json::json!({ "name": name, "environment": environment });
        insert_event(tx, org, deleted_event(&id, detail, actor, now)).await?;
    }
    for (id, name, started) in whole {
        let started = from_micros(started.unwrap_or(0));
        if !is_done(started, &copies.hearers(&name, None)) {
            continue;
        }
        let done = sqlx::query(
            "UPDATE secrets SET lifecycle = 'deleted', deleted_at = $1 WHERE id = $2 AND lifecycle = 'deleting'",
        )
        .bind(to_micros(now))
        .bind(id.clone())
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
        if done.rows_affected() == 0 {
            continue;
        }
        // No copy is left anywhere: nothing of it keeps its Components
        // (they can be deleted now), in the same transaction.
        sqlx::query("DELETE FROM secret_components WHERE secret_id = $1")
            .bind(id.clone())
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
        let detail = serde_json::json!({ "name": name });
        insert_event(tx, org, deleted_event(&id, detail, actor, now)).await?;
    }
    Ok(())
}

/// `secret.deleted`: no Agent holds a copy any more (there, with an environment in `detail`).
fn deleted_event(secret_id: &str, detail: serde_json::Value, actor: &str, now: OffsetDateTime) -> NewEvent {
    NewEvent {
        id: EventId::from_uuid(Uuid::new_v4()),
        at: now,
        actor: actor.to_owned(),
        action: AuditAction::SecretDeleted,
        target: format!("secret:{secret_id}"),
        detail,
    }
}

#[async_trait]
impl HoldingStore for SqlStore {
    async fn holdings_of_secret(&self, org: OrgId, secret: &str) -> StoreResult<Vec<Holding>> {
        let rows: Vec<HoldingRow> = sqlx::query_as(&format!(
            "{HOLDINGS} WHERE i.org_id = $1 AND i.secret_name = $2 ORDER BY a.name, environment, i.version"
        ))
        .bind(org.to_string())
        .bind(secret.to_owned())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter().map(HoldingRow::into_domain).collect()
    }

    async fn holdings_of_agent(&self, org: OrgId, agent: AgentId) -> StoreResult<Vec<Holding>> {
        let rows: Vec<HoldingRow> = sqlx::query_as(&format!(
            "{HOLDINGS} WHERE i.org_id = $1 AND i.agent_id = $2 ORDER BY i.secret_name, environment, i.version"
        ))
        .bind(org.to_string())
        .bind(agent.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter().map(HoldingRow::into_domain).collect()
    }

    async fn holdings_of_org(&self, org: OrgId) -> StoreResult<Vec<Holding>> {
        let rows: Vec<HoldingRow> = sqlx::query_as(&format!(
            "{HOLDINGS} WHERE i.org_id = $1 ORDER BY i.secret_name, environment, i.version"
        ))
        .bind(org.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter().map(HoldingRow::into_domain).collect()
    }
}

#[async_trait]
impl DeletionStore for SqlStore {
    async fn start_deletion(&self, org: OrgId, secret: SecretId, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let (actor, at) = (event.actor.clone(), event.at);
        if !mark_deleting(&mut tx, org, secret, at).await? {
            return Err(StoreError::Conflict("the secret is already being deleted".into()));
        }
        insert_event(&mut tx, org, event).await?;
        complete_deletions(&mut tx, org, &actor, at).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn start_environment_deletion(
        &self,
        org: OrgId,
        secret: SecretId,
        environment: CatalogId,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let (actor, at) = (event.actor.clone(), event.at);
        let held: Option<(String,)> = sqlx::query_as(
            "SELECT lifecycle FROM secret_environment_deletions WHERE secret_id = $1 AND environment_id = $2",
        )
        .bind(secret.to_string())
        .bind(environment.to_string())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        if let Some((lifecycle,)) = held {
            return Err(StoreError::Conflict(format!(
                "the secret is already {lifecycle} in that environment"
            )));
        }
        sqlx::query(
            "INSERT INTO secret_environment_deletions (secret_id, environment_id, lifecycle, started_at, \
             through_version) VALUES ($1, $2, 'deleting', $3, (SELECT MAX(version) FROM secret_versions \
             WHERE secret_id = $1 AND environment_id = $2))",
        )
        .bind(secret.to_string())
        .bind(environment.to_string())
        .bind(to_micros(at))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        insert_event(&mut tx, org, event).await?;
        complete_deletions(&mut tx, org, &actor, at).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn forget_agent(&self, org: OrgId, agent: AgentId, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let (actor, at) = (event.actor.clone(), event.at);
        sqlx::query("DELETE FROM agent_inventory WHERE org_id = $1 AND agent_id = $2")
            .bind(org.to_string())
            .bind(agent.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        insert_event(&mut tx, org, event).await?;
        complete_deletions(&mut tx, org, &actor, at).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn deleted_secret_names(&self, org: OrgId) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT name FROM secrets WHERE org_id = $1 AND lifecycle <> 'active' ORDER BY name",
        )
        .bind(org.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(rows.into_iter().map(|(name,)| name).collect())
    }

    async fn environment_deletions(&self, org: OrgId) -> StoreResult<Vec<EnvironmentDeletion>> {
        type Row = (String, String, String, String, i64, Option<i64>, Option<i64>);
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT s.name, d.environment_id, e.name, d.lifecycle, d.started_at, d.deleted_at, d.through_version \
             FROM secret_environment_deletions d JOIN secrets s ON s.id = d.secret_id \
             JOIN catalog_entries e ON e.id = d.environment_id WHERE s.org_id = $1 ORDER BY s.name, e.name",
        )
        .bind(org.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter()
            .map(|(secret, environment_id, environment, status, started, deleted, through_version)| {
                Ok(EnvironmentDeletion {
                    secret,
                    environment_id: parse_id(&environment_id)?,
                    environment,
                    status: Lifecycle::parse(&status)
                        .ok_or_else(|| StoreError::Backend(format!("unknown stored lifecycle {status:?}")))?,
                    started_at: from_micros(started),
                    deleted_at: deleted.map(from_micros),
                    through_version,
                })
            })
            .collect()
    }
}

#[async_trait]
impl InventoryStore for SqlStore {
    async fn store_inventory(
        &self,
        org: OrgId,
        agent: &Agent,
        items: &[Reported],
        at: ReportedAt,
    ) -> StoreResult<()> {
        let now = at.now;
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let agent_id = agent.id.to_string();
        // When the Agent last reported, once for all its rows, and how far
        // it had applied the API's answers then. First: the row lock
        // (PostgreSQL) makes two syncs of one Agent write their
        // inventories one after the other, each diffing against the last.
        sqlx::query("UPDATE agents SET inventory_reported_at = $1, applied_through = $2 WHERE id = $3")
            .bind(to_micros(now))
            .bind(at.applied_through.map(to_micros))
            .bind(agent_id.clone())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        // The report replaces what the Agent held, but only the rows that
        // changed are written: an Agent holding 10,000 values reports them
        // all on every sync, and rewriting them all was most of its cost.
        type Place = (String, String, i64);
        let held: HashMap<Place, i64> = sqlx::query_as::<_, (String, String, i64, i64)>(
            "SELECT secret_name, environment_id, version, deactivated FROM agent_inventory WHERE agent_id = $1",
        )
        .bind(agent_id.clone())
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?
        .into_iter()
        .map(|(secret, environment, version, deactivated)| ((secret, environment, version), deactivated))
        .collect();
        let mut reported: HashMap<Place, i64> = HashMap::with_capacity(items.len());
        for item in items {
            // A place reported twice: its first report counts.
            reported
                .entry((item.secret.clone(), item.environment.clone(), item.version))
                .or_insert_with(|| i64::from(item.deactivated));
        }
        let gone: Vec<&Place> = held
            .iter()
            .filter(|(place, d)| reported.get(*place) != Some(*d))
            .map(|(place, _)| place)
            .collect();
        let added: Vec<(&Place, i64)> =
            reported.iter().filter(|(place, d)| held.get(*place) != Some(*d)).map(|(p, d)| (p, *d)).collect();
        // Many rows a statement, not one round trip each.
        for chunk in gone.chunks(ROWS_PER_INSERT) {
            let sql = format!(
                "DELETE FROM agent_inventory WHERE agent_id = $1 AND (secret_name, environment_id, version) IN (VALUES {})",
                values_list_after(1, chunk.len(), 3)
            );
            let mut query = sqlx::query(&sql).bind(agent_id.clone());
            for (secret, environment, version) in chunk {
                query = query.bind(secret.clone()).bind(environment.clone()).bind(*version);
            }
            query.execute(&mut *tx).await.map_err(db_err)?;
        }
        for chunk in added.chunks(ROWS_PER_INSERT) {
            let sql = format!(
                "INSERT INTO agent_inventory (agent_id, org_id, secret_name, environment_id, version, deactivated, reported_at) \
                 VALUES {}",
                values_list(chunk.len(), 7)
            );
            let mut query = sqlx::query(&sql);
            for ((secret, environment, version), deactivated) in chunk {
                query = query
                    .bind(agent_id.clone())
                    .bind(org.to_string())
                    .bind(secret.clone())
                    .bind(environment.clone())
                    .bind(*version)
                    .bind(*deactivated)
                    .bind(to_micros(now));
            }
            query.execute(&mut *tx).await.map_err(db_err)?;
        }
        complete_deletions(&mut tx, org, &format!("agent:{}", agent.name), now).await?;
        // A released environment it holds nothing of any more is done with.
        sqlx::query(
            "DELETE FROM agent_releases WHERE agent_id = $1 AND NOT EXISTS \
             (SELECT 1 FROM agent_inventory i WHERE i.agent_id = agent_releases.agent_id \
              AND i.environment_id = agent_releases.environment_id)",
        )
        .bind(agent.id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        tx.commit().await.map_err(db_err)
    }

    async fn released_environments(&self, org: OrgId, agent: AgentId) -> StoreResult<Vec<CatalogId>> {
        let rows: Vec<(String,)> =
            sqlx::query_as("SELECT environment_id FROM agent_releases WHERE org_id = $1 AND agent_id = $2")
                .bind(org.to_string())
                .bind(agent.to_string())
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
        rows.into_iter().map(|(id,)| parse_id(&id)).collect()
    }
}
