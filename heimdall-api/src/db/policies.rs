//! The organization's Cedar policies and their history. Every write bumps
//! the organization's policy version in its own transaction (what the
//! compiled-policy cache and Agents' syncs key on).

use heimdall_core::domain::{Policy, PolicyVersion};
use heimdall_core::ids::{OrgId, PolicyId};
use heimdall_core::policies::PolicyWrite;
use heimdall_core::ports::{NewEvent, StoreError, StoreResult};
use sqlx::{Any, AnyPool, FromRow, Transaction};

use super::events::insert_event;
use super::sql::{db_err, from_micros, parse_id, to_micros, unique_as};

const POLICY_COLUMNS: &str =
    "id, org_id, name, description, body, version, created_at, created_by, updated_at, updated_by";

#[derive(FromRow)]
struct PolicyRow {
    id: String,
    org_id: String,
    name: String,
    description: String,
    body: String,
    version: i64,
    created_at: i64,
    created_by: String,
    updated_at: Option<i64>,
    updated_by: Option<String>,
}

impl PolicyRow {
    fn into_domain(self) -> StoreResult<Policy> {
        Ok(Policy {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            name: self.name,
            description: self.description,
            text: self.body,
            version: self.version,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
            updated_at: self.updated_at.map(from_micros),
            updated_by: self.updated_by,
        })
    }
}

/// The version `policy` is now, as its history keeps it.
async fn insert_history(tx: &mut Transaction<'_, Any>, policy: &Policy) -> StoreResult<()> {
    let written_at = policy.updated_at.unwrap_or(policy.created_at);
    let written_by = policy.updated_by.clone().unwrap_or_else(|| policy.created_by.clone());
    sqlx::query(
        "INSERT INTO policy_history (policy_id, org_id, version, name, description, body, written_at, written_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(policy.id.to_string())
    .bind(policy.org_id.to_string())
    .bind(policy.version)
    .bind(policy.name.clone())
    .bind(policy.description.clone())
    .bind(policy.text.clone())
    .bind(to_micros(written_at))
    .bind(written_by)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

pub(super) async fn create(pool: &AnyPool, policy: &Policy, event: NewEvent) -> StoreResult<()> {
    let mut tx = pool.begin().await.map_err(db_err)?;
    sqlx::query(
        "INSERT INTO policies (id, org_id, name, description, body, version, created_at, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(policy.id.to_string())
    .bind(policy.org_id.to_string())
    .bind(policy.name.clone())
    .bind(policy.description.clone())
    .bind(policy.text.clone())
    .bind(policy.version)
    .bind(to_micros(policy.created_at))
    .bind(policy.created_by.clone())
    .execute(&mut *tx)
    .await
    .map_err(unique_as("policy"))?;
    insert_history(&mut tx, policy).await?;
    bump_policy_version(&mut tx, policy.org_id).await?;
    insert_event(&mut tx, policy.org_id, event).await?;
    tx.commit().await.map_err(db_err)
}

pub(super) async fn list(pool: &AnyPool, org: OrgId) -> StoreResult<Vec<Policy>> {
    let sql = format!("SELECT {POLICY_COLUMNS} FROM policies WHERE org_id = $1 ORDER BY name, id");
    sqlx::query_as::<_, PolicyRow>(&sql)
        .bind(org.to_string())
        .fetch_all(pool)
        .await
        .map_err(db_err)?
        .into_iter()
        .map(PolicyRow::into_domain)
        .collect()
}

pub(super) async fn get(pool: &AnyPool, org: OrgId, id: PolicyId) -> StoreResult<Policy> {
    let sql = format!("SELECT {POLICY_COLUMNS} FROM policies WHERE org_id = $1 AND id = $2");
    sqlx::query_as::<_, PolicyRow>(&sql)
        .bind(org.to_string())
        .bind(id.to_string())
        .fetch_optional(pool)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound("policy"))?
        .into_domain()
}

/// The row is replaced only if it is still at the version the change was
/// decided on: a concurrent change makes this one `StaleRevision`.
pub(super) async fn update(pool: &AnyPool, write: &PolicyWrite, event: NewEvent) -> StoreResult<()> {
    let policy = &write.policy;
    let mut tx = pool.begin().await.map_err(db_err)?;
    let updated = sqlx::query(
        "UPDATE policies SET description = $1, body = $2, version = $3, updated_at = $4, updated_by = $5
         WHERE org_id = $6 AND id = $7 AND version = $8",
    )
    .bind(policy.description.clone())
    .bind(policy.text.clone())
    .bind(policy.version)
    .bind(policy.updated_at.map(to_micros))
    .bind(policy.updated_by.clone())
    .bind(policy.org_id.to_string())
    .bind(policy.id.to_string())
    .bind(write.previous_version)
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    if updated.rows_affected() == 0 {
        return Err(StoreError::StaleRevision(format!(
            "policy {} changed since version {}: read it again",
            policy.name, write.previous_version
        )));
    }
    insert_history(&mut tx, policy).await?;
    bump_policy_version(&mut tx, policy.org_id).await?;
    insert_event(&mut tx, policy.org_id, event).await?;
    tx.commit().await.map_err(db_err)
}

pub(super) async fn delete(pool: &AnyPool, org: OrgId, id: PolicyId, event: NewEvent) -> StoreResult<()> {
    let mut tx = pool.begin().await.map_err(db_err)?;
    let deleted = sqlx::query("DELETE FROM policies WHERE org_id = $1 AND id = $2")
        .bind(org.to_string())
        .bind(id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    if deleted.rows_affected() == 0 {
        return Err(StoreError::NotFound("policy"));
    }
    bump_policy_version(&mut tx, org).await?;
    insert_event(&mut tx, org, event).await?;
    tx.commit().await.map_err(db_err)
}

/// A policy's versions, newest first; `NotFound` once it is deleted (its
/// history stays in the database, as the audit feed does).
pub(super) async fn versions(pool: &AnyPool, org: OrgId, id: PolicyId) -> StoreResult<Vec<PolicyVersion>> {
    get(pool, org, id).await?;
    let rows: Vec<(i64, String, String, String, i64, String)> = sqlx::query_as(
        "SELECT version, name, description, body, written_at, written_by FROM policy_history
         WHERE org_id = $1 AND policy_id = $2 ORDER BY version DESC",
    )
    .bind(org.to_string())
    .bind(id.to_string())
    .fetch_all(pool)
    .await
    .map_err(db_err)?;
    Ok(rows
        .into_iter()
        .map(|(version, name, description, text, written_at, written_by)| PolicyVersion {
            version,
            name,
            description,
            text,
            written_at: from_micros(written_at),
            written_by,
        })
        .collect())
}

/// Moves the organization's policy version, inside the change's transaction.
pub(super) async fn bump_policy_version(tx: &mut Transaction<'_, Any>, org: OrgId) -> StoreResult<()> {
    sqlx::query("UPDATE organizations SET policy_version = policy_version + 1 WHERE id = $1")
        .bind(org.to_string())
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    Ok(())
}
