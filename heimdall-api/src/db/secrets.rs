//! Secret metadata, versions and environment assignments.

use std::collections::BTreeMap;

use async_trait::async_trait;
use heimdall_core::ids::{CatalogId, OrgId, SecretId};
use heimdall_core::ports::{NewEvent, SecretStore, StoreError, StoreResult};
use heimdall_core::secrets::{Assignment, Secret, SecretVersion};
use sqlx::{Any, FromRow, Transaction};

use super::store::{db_err, from_micros, insert_event, parse_id, to_micros, unique_as, SqlStore};

const SECRET_COLUMNS: &str =
    "id, org_id, name, secret_type, description, tags, personal_owner, created_at, created_by, updated_at";

#[derive(FromRow)]
struct SecretRow {
    id: String,
    org_id: String,
    name: String,
    secret_type: String,
    description: String,
    tags: String,
    personal_owner: Option<String>,
    created_at: i64,
    created_by: String,
    updated_at: i64,
}

impl SecretRow {
    fn into_domain(self, components: Vec<CatalogId>) -> StoreResult<Secret> {
        let tags: BTreeMap<String, String> =
            serde_json::from_str(&self.tags).map_err(|e| StoreError::Backend(format!("stored tags: {e}")))?;
        Ok(Secret {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            name: self.name,
            secret_type: self.secret_type,
            description: self.description,
            tags,
            components,
            personal_owner: self.personal_owner,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
            updated_at: from_micros(self.updated_at),
        })
    }
}

fn tags_json(secret: &Secret) -> StoreResult<String> {
    serde_json::to_string(&secret.tags).map_err(|e| StoreError::Backend(e.to_string()))
}

async fn set_components(tx: &mut Transaction<'_, Any>, secret: &Secret) -> StoreResult<()> {
    sqlx::query("DELETE FROM secret_components WHERE secret_id = $1")
        .bind(secret.id.to_string())
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    for component in &secret.components {
        sqlx::query("INSERT INTO secret_components (secret_id, component_id) VALUES ($1, $2)")
            .bind(secret.id.to_string())
            .bind(component.to_string())
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

impl SqlStore {
    async fn components_of(&self, secret: &str) -> StoreResult<Vec<CatalogId>> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT component_id FROM secret_components WHERE secret_id = $1 ORDER BY component_id",
        )
        .bind(secret.to_owned())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(|(id,)| parse_id(id)).collect()
    }

    async fn hydrate(&self, row: SecretRow) -> StoreResult<Secret> {
        let components = self.components_of(&row.id).await?;
        row.into_domain(components)
    }
}

#[async_trait]
impl SecretStore for SqlStore {
    async fn create_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(&format!(
            "INSERT INTO secrets ({SECRET_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        ))
        .bind(secret.id.to_string())
        .bind(secret.org_id.to_string())
        .bind(secret.name.clone())
        .bind(secret.secret_type.clone())
        .bind(secret.description.clone())
        .bind(tags_json(secret)?)
        .bind(secret.personal_owner.clone())
        .bind(to_micros(secret.created_at))
        .bind(secret.created_by.clone())
        .bind(to_micros(secret.updated_at))
        .execute(&mut *tx)
        .await
        .map_err(unique_as("secret"))?;
        set_components(&mut tx, secret).await?;
        insert_event(&mut tx, secret.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn list_secrets(&self, org: OrgId) -> StoreResult<Vec<Secret>> {
        let sql = format!("SELECT {SECRET_COLUMNS} FROM secrets WHERE org_id = $1 ORDER BY name");
        let rows = sqlx::query_as::<_, SecretRow>(&sql)
            .bind(org.to_string())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push(self.hydrate(row).await?);
        }
        Ok(out)
    }

    async fn get_secret(&self, org: OrgId, id: SecretId) -> StoreResult<Secret> {
        let sql = format!("SELECT {SECRET_COLUMNS} FROM secrets WHERE org_id = $1 AND id = $2");
        let row = sqlx::query_as::<_, SecretRow>(&sql)
            .bind(org.to_string())
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound("secret"))?;
        self.hydrate(row).await
    }

    async fn find_secret_by_name(&self, org: OrgId, name: &str) -> StoreResult<Option<Secret>> {
        let sql = format!("SELECT {SECRET_COLUMNS} FROM secrets WHERE org_id = $1 AND name = $2");
        let row = sqlx::query_as::<_, SecretRow>(&sql)
            .bind(org.to_string())
            .bind(name.to_owned())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        match row {
            Some(row) => Ok(Some(self.hydrate(row).await?)),
            None => Ok(None),
        }
    }

    async fn update_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let updated = sqlx::query(
            "UPDATE secrets SET secret_type = $1, description = $2, tags = $3, updated_at = $4 WHERE org_id = $5 AND id = $6",
        )
        .bind(secret.secret_type.clone())
        .bind(secret.description.clone())
        .bind(tags_json(secret)?)
        .bind(to_micros(secret.updated_at))
        .bind(secret.org_id.to_string())
        .bind(secret.id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound("secret"));
        }
        set_components(&mut tx, secret).await?;
        insert_event(&mut tx, secret.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn list_versions(&self, org: OrgId, secret: SecretId) -> StoreResult<Vec<SecretVersion>> {
        let rows: Vec<(String, String, i64, i64, String, Option<i64>)> = sqlx::query_as(
            "SELECT v.secret_id, v.environment_id, v.version, v.created_at, v.created_by, v.deactivated_at
             FROM secret_versions v JOIN secrets s ON s.id = v.secret_id
             WHERE s.org_id = $1 AND v.secret_id = $2 ORDER BY v.environment_id, v.version",
        )
        .bind(org.to_string())
        .bind(secret.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter()
            .map(|(secret_id, env, version, created_at, created_by, deactivated_at)| {
                Ok(SecretVersion {
                    secret_id: parse_id(&secret_id)?,
                    environment_id: parse_id(&env)?,
                    version,
                    created_at: from_micros(created_at),
                    created_by,
                    deactivated_at: deactivated_at.map(from_micros),
                })
            })
            .collect()
    }

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
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn list_assignments(&self, org: OrgId, environment: CatalogId) -> StoreResult<Vec<Assignment>> {
        let rows: Vec<(String, String, i64, String)> = sqlx::query_as(
            "SELECT environment_id, agent_id, assigned_at, assigned_by FROM environment_agents
             WHERE org_id = $1 AND environment_id = $2 ORDER BY assigned_at, agent_id",
        )
        .bind(org.to_string())
        .bind(environment.to_string())
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
