//! Which Agents hold which environments: assignments and releases.

use async_trait::async_trait;
use heimdall_core::ids::{AgentId, CatalogId, OrgId};
use heimdall_core::ports::{AssignmentStore, NewEvent, StoreError, StoreResult};
use heimdall_core::secrets::Assignment;

use super::events::insert_event;
use super::sql::{db_err, from_micros, parse_id, to_micros, unique_as, SqlStore};

#[async_trait]
impl AssignmentStore for SqlStore {
    async fn assign_agent(&self, org: OrgId, a: &Assignment, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO environment_agents (org_id, environment_id, agent_id, assigned_at, assigned_by) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(org.to_string())
        .bind(a.environment_id.to_string())
        .bind(a.agent_id.to_string())
        .bind(to_micros(a.assigned_at))
        .bind(a.assigned_by.clone())
        .execute(&mut *tx)
        .await
        .map_err(unique_as("assignment"))?;
        // Assigned again: what it still holds there is its to keep.
        sqlx::query("DELETE FROM agent_releases WHERE agent_id = $1 AND environment_id = $2")
            .bind(a.agent_id.to_string())
            .bind(a.environment_id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn list_assignments(&self, org: OrgId, environment: CatalogId) -> StoreResult<Vec<Assignment>> {
        self.assignments_in(org, &environment.to_string()).await
    }

    async fn list_all_assignments(&self, org: OrgId) -> StoreResult<Vec<Assignment>> {
        self.assignments_in(org, "").await
    }

    async fn unassign_agent(
        &self,
        org: OrgId,
        environment: CatalogId,
        agent: AgentId,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let removed = sqlx::query(
            "DELETE FROM environment_agents WHERE org_id = $1 AND environment_id = $2 AND agent_id = $3",
        )
        .bind(org.to_string())
        .bind(environment.to_string())
        .bind(agent.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if removed.rows_affected() == 0 {
            return Err(StoreError::NotFound("assignment"));
        }
        sqlx::query(
            "INSERT INTO agent_releases (org_id, agent_id, environment_id, released_at, released_by) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        )
        .bind(org.to_string())
        .bind(agent.to_string())
        .bind(environment.to_string())
        .bind(to_micros(event.at))
        .bind(event.actor.clone())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }
}

impl SqlStore {
    /// The Agents assigned to `environment` (an id), or to every
    /// environment of `org` when it is empty, in one query.
    async fn assignments_in(&self, org: OrgId, environment: &str) -> StoreResult<Vec<Assignment>> {
        let rows: Vec<(String, String, i64, String)> = sqlx::query_as(
            "SELECT environment_id, agent_id, assigned_at, assigned_by FROM environment_agents
             WHERE org_id = $1 AND ($2 = '' OR environment_id = $2) ORDER BY environment_id, assigned_at, agent_id",
        )
        .bind(org.to_string())
        .bind(environment.to_owned())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter()
            .map(|(env, agent, at, by)| {
                Ok(Assignment {
                    environment_id: parse_id(&env)?,
                    agent_id: parse_id(&agent)?,
                    assigned_at: from_micros(at),
                    assigned_by: by,
                })
            })
            .collect()
    }
}
