//! Agents and their one-time registration tokens.

use async_trait::async_trait;
use heimdall_core::ids::{AgentId, OrgId};
use heimdall_core::infra::Agent;
use heimdall_core::ports::{
    AgentRecordStore, AgentStore, EnrollmentStore, NewEvent, NewRegistration, StoreError, StoreResult,
};
use heimdall_core::token::TokenHash;
use sqlx::FromRow;
use time::OffsetDateTime;

use super::events::insert_event;
use super::sql::{db_err, from_micros, parse_id, to_micros, unique_as, SqlStore};

const AGENT_COLUMNS: &str =
    "id, org_id, name, cert_sha256, created_at, created_by, revoked_at, last_seen_at, local_url";

#[derive(FromRow)]
struct AgentRow {
    id: String,
    org_id: String,
    name: String,
    cert_sha256: String,
    created_at: i64,
    created_by: String,
    revoked_at: Option<i64>,
    last_seen_at: Option<i64>,
    local_url: Option<String>,
}

impl AgentRow {
    fn into_domain(self) -> StoreResult<Agent> {
        Ok(Agent {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            name: self.name,
            cert_sha256: super::sql::parse_sha256(&self.cert_sha256)?,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
            revoked_at: self.revoked_at.map(from_micros),
            last_seen_at: self.last_seen_at.map(from_micros),
            local_url: self.local_url,
        })
    }
}

#[async_trait]
impl AgentRecordStore for SqlStore {
    async fn create_registration(&self, r: &NewRegistration, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO agent_registrations (id, org_id, name, token_hash, created_by, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(r.id.to_string())
        .bind(r.org_id.to_string())
        .bind(r.name.clone())
        .bind(r.hash.as_str().to_owned())
        .bind(r.created_by.clone())
        .bind(to_micros(r.created_at))
        .bind(to_micros(r.expires_at))
        .execute(&mut *tx)
        .await
        .map_err(unique_as("registration"))?;
        insert_event(&mut tx, r.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn list_agents(&self, org: OrgId) -> StoreResult<Vec<Agent>> {
        let sql = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE org_id = $1 ORDER BY name, created_at");
        sqlx::query_as::<_, AgentRow>(&sql)
            .bind(org.to_string())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(AgentRow::into_domain)
            .collect()
    }

    async fn revoke_agent(&self, org: OrgId, id: AgentId, event: NewEvent) -> StoreResult<Agent> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let at = to_micros(event.at);
        let updated = sqlx::query(
            "UPDATE agents SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 AND org_id = $3",
        )
        .bind(at)
        .bind(id.to_string())
        .bind(org.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound("agent"));
        }
        insert_event(&mut tx, org, event).await?;
        let sql = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE id = $1");
        let agent = sqlx::query_as::<_, AgentRow>(&sql)
            .bind(id.to_string())
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?
            .into_domain()?;
        tx.commit().await.map_err(db_err)?;
        Ok(agent)
    }

    async fn approve_agent_name(
        &self,
        org: OrgId,
        agent: AgentId,
        name: &heimdall_core::server_names::ApprovedName,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO agent_names (org_id, agent_id, name, approved_at, approved_by) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (agent_id, name) DO NOTHING",
        )
        .bind(org.to_string())
        .bind(agent.to_string())
        .bind(name.name.clone())
        .bind(to_micros(name.approved_at))
        .bind(name.approved_by.clone())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn remove_agent_name(
        &self,
        org: OrgId,
        agent: AgentId,
        name: &str,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let removed =
            sqlx::query("DELETE FROM agent_names WHERE org_id = $1 AND agent_id = $2 AND name = $3")
                .bind(org.to_string())
                .bind(agent.to_string())
                .bind(name.to_owned())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        if removed.rows_affected() == 0 {
            return Err(StoreError::NotFound("approved name"));
        }
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn agent_names(
        &self,
        org: OrgId,
        agent: AgentId,
    ) -> StoreResult<Vec<heimdall_core::server_names::ApprovedName>> {
        let rows: Vec<(String, i64, String)> = sqlx::query_as(
            "SELECT name, approved_at, approved_by FROM agent_names WHERE org_id = $1 AND agent_id = $2 ORDER BY name",
        )
        .bind(org.to_string())
        .bind(agent.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(rows
            .into_iter()
            .map(|(name, at, by)| heimdall_core::server_names::ApprovedName {
                name,
                approved_at: from_micros(at),
                approved_by: by,
            })
            .collect())
    }
}

#[async_trait]
impl AgentStore for SqlStore {
    async fn get_agent(&self, id: AgentId) -> StoreResult<Agent> {
        let sql = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE id = $1");
        sqlx::query_as::<_, AgentRow>(&sql)
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound("agent"))?
            .into_domain()
    }

    async fn set_agent_local_url(&self, id: AgentId, url: Option<&str>) -> StoreResult<()> {
        sqlx::query("UPDATE agents SET local_url = $1 WHERE id = $2")
            .bind(url)
            .bind(id.to_string())
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn touch_agent(&self, id: AgentId, now: OffsetDateTime) -> StoreResult<()> {
        sqlx::query("UPDATE agents SET last_seen_at = $1 WHERE id = $2")
            .bind(to_micros(now))
            .bind(id.to_string())
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }
}

#[async_trait]
impl EnrollmentStore for SqlStore {
    async fn enroll_agent(
        &self,
        hash: &TokenHash,
        agent: &Agent,
        now: OffsetDateTime,
        event: NewEvent,
    ) -> StoreResult<Agent> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Marking the token used in the same statement that checks it makes
        // a token good for exactly one enrollment, even under a race.
        let used: Option<(String, String, String)> = sqlx::query_as(
            "UPDATE agent_registrations SET used_at = $1
             WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1
             RETURNING org_id, name, created_by",
        )
        .bind(to_micros(now))
        .bind(hash.as_str().to_owned())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let Some((org_id, name, created_by)) = used else {
            return Err(StoreError::NotFound("registration token (unknown, used or expired)"));
        };
        let mut agent = agent.clone();
        agent.org_id = parse_id(&org_id)?;
        agent.name = name;
        // The Agent was let in by whoever made its registration token.
        agent.created_by = created_by;
        sqlx::query(&format!(
            "INSERT INTO agents ({AGENT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL, NULL)"
        ))
        .bind(agent.id.to_string())
        .bind(agent.org_id.to_string())
        .bind(agent.name.clone())
        .bind(agent.cert_sha256.as_str())
        .bind(to_micros(agent.created_at))
        .bind(agent.created_by.clone())
        .execute(&mut *tx)
        .await
        .map_err(unique_as("agent"))?;
        let mut event = event;
        event.target = format!("agent:{}", agent.id);
        event.detail = serde_json::json!({ "name": agent.name });
        insert_event(&mut tx, agent.org_id, event).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(agent)
    }
}
