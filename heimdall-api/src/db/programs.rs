//! What owners let each Agent's programs do, and the program tokens Agents
//! registered (`heimdall_core::program` decides with both).

use async_trait::async_trait;
use heimdall_core::audit::AuditAction;
use heimdall_core::ids::{AgentId, CatalogId, EventId, OrgId};
use heimdall_core::ports::{NewEvent, ProgramAllowanceStore, ProgramStore, StoreError, StoreResult};
use heimdall_core::program::{ProgramAllowance, RegisteredToken, Verb};
use sqlx::FromRow;
use time::OffsetDateTime;
use uuid::Uuid;

use super::events::insert_event;
use super::sql::{db_err, from_micros, parse_id, to_micros, unique_as, SqlStore};

fn verbs_text(verbs: &[Verb]) -> StoreResult<String> {
    serde_json::to_string(verbs).map_err(|e| StoreError::Backend(e.to_string()))
}

fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Backend(format!("a stored program row: {e}")))
}

#[derive(FromRow)]
struct AllowanceRow {
    agent_id: String,
    environment_id: String,
    environment: String,
    secret_glob: String,
    verbs: String,
    created_at: i64,
    created_by: String,
}

impl AllowanceRow {
    fn into_domain(self) -> StoreResult<ProgramAllowance> {
        Ok(ProgramAllowance {
            agent_id: parse_id(&self.agent_id)?,
            environment_id: parse_id(&self.environment_id)?,
            environment: self.environment,
            secret: self.secret_glob,
            verbs: from_json(&self.verbs)?,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
        })
    }
}

#[derive(FromRow)]
struct TokenRow {
    agent_id: String,
    id: String,
    name: String,
    environment_id: String,
    environment: String,
    secrets: String,
    verbs: String,
    created_at: i64,
    expires_at: Option<i64>,
    revoked_at: Option<i64>,
}

impl TokenRow {
    fn into_domain(self) -> StoreResult<RegisteredToken> {
        Ok(RegisteredToken {
            id: self.id,
            agent_id: parse_id(&self.agent_id)?,
            name: self.name,
            environment_id: parse_id(&self.environment_id)?,
            environment: self.environment,
            secrets: from_json(&self.secrets)?,
            verbs: from_json(&self.verbs)?,
            created_at: from_micros(self.created_at),
            expires_at: self.expires_at.map(from_micros),
            revoked_at: self.revoked_at.map(from_micros),
        })
    }
}

#[async_trait]
impl ProgramAllowanceStore for SqlStore {
    async fn set_program_allowance(
        &self,
        org: OrgId,
        allowance: &ProgramAllowance,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO program_allowances (org_id, agent_id, environment_id, secret_glob, verbs, created_at, created_by) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (agent_id, environment_id, secret_glob) \
             DO UPDATE SET verbs = excluded.verbs, created_at = excluded.created_at, created_by = excluded.created_by",
        )
        .bind(org.to_string())
        .bind(allowance.agent_id.to_string())
        .bind(allowance.environment_id.to_string())
        .bind(allowance.secret.clone())
        .bind(verbs_text(&allowance.verbs)?)
        .bind(to_micros(allowance.created_at))
        .bind(allowance.created_by.clone())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn remove_program_allowance(
        &self,
        org: OrgId,
        agent: AgentId,
        environment: CatalogId,
        secret: &str,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let removed = sqlx::query(
            "DELETE FROM program_allowances WHERE org_id = $1 AND agent_id = $2 AND environment_id = $3 \
             AND secret_glob = $4",
        )
        .bind(org.to_string())
        .bind(agent.to_string())
        .bind(environment.to_string())
        .bind(secret.to_owned())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if removed.rows_affected() == 0 {
            return Err(StoreError::NotFound("program allowance"));
        }
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn program_allowances(&self, org: OrgId, agent: AgentId) -> StoreResult<Vec<ProgramAllowance>> {
        let rows: Vec<AllowanceRow> = sqlx::query_as(
            "SELECT p.agent_id, p.environment_id, COALESCE(e.name, p.environment_id) AS environment, \
             p.secret_glob, p.verbs, p.created_at, p.created_by FROM program_allowances p \
             LEFT JOIN catalog_entries e ON e.id = p.environment_id \
             WHERE p.org_id = $1 AND p.agent_id = $2 ORDER BY environment, p.secret_glob",
        )
        .bind(org.to_string())
        .bind(agent.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter().map(AllowanceRow::into_domain).collect()
    }

    async fn program_tokens(&self, org: OrgId, agent: AgentId) -> StoreResult<Vec<RegisteredToken>> {
        let rows: Vec<TokenRow> = sqlx::query_as(
            "SELECT t.agent_id, t.id, t.name, t.environment_id, COALESCE(e.name, t.environment_id) AS environment, \
             t.secrets, t.verbs, t.created_at, t.expires_at, t.revoked_at FROM program_tokens t \
             LEFT JOIN catalog_entries e ON e.id = t.environment_id \
             WHERE t.org_id = $1 AND t.agent_id = $2 ORDER BY t.created_at, t.id",
        )
        .bind(org.to_string())
        .bind(agent.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter().map(TokenRow::into_domain).collect()
    }
}

#[async_trait]
impl ProgramStore for SqlStore {
    async fn register_program_token(
        &self,
        org: OrgId,
        token: &RegisteredToken,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO program_tokens (org_id, agent_id, id, name, environment_id, secrets, verbs, \
             created_at, expires_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL)",
        )
        .bind(org.to_string())
        .bind(token.agent_id.to_string())
        .bind(token.id.clone())
        .bind(token.name.clone())
        .bind(token.environment_id.to_string())
        .bind(serde_json::to_string(&token.secrets).map_err(|e| StoreError::Backend(e.to_string()))?)
        .bind(verbs_text(&token.verbs)?)
        .bind(to_micros(token.created_at))
        .bind(token.expires_at.map(to_micros))
        .execute(&mut *tx)
        .await
        .map_err(unique_as("program token"))?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn revoke_program_tokens(
        &self,
        org: OrgId,
        agent: AgentId,
        ids: &[String],
        at: OffsetDateTime,
        actor: &str,
    ) -> StoreResult<Vec<String>> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let mut revoked = Vec::new();
        for id in ids {
            let done = sqlx::query(
                "UPDATE program_tokens SET revoked_at = $1 \
                 WHERE org_id = $2 AND agent_id = $3 AND id = $4 AND revoked_at IS NULL",
            )
            .bind(to_micros(at))
            .bind(org.to_string())
            .bind(agent.to_string())
            .bind(id.clone())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            if done.rows_affected() == 1 {
                let event = NewEvent {
                    id: EventId::from_uuid(Uuid::new_v4()),
                    at,
                    actor: actor.to_owned(),
                    action: AuditAction::ProgramTokenRevoked,
                    target: format!("agent:{agent}"),
                    detail: serde_json::json!({ "agent": agent, "token_id": id }),
                };
                insert_event(&mut tx, org, event).await?;
                revoked.push(id.clone());
            }
        }
        tx.commit().await.map_err(db_err)?;
        Ok(revoked)
    }
}
