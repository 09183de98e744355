//! The secrets of an Agent's sync answer, whole or as a delta
//! (`heimdall_core::sync_delta`). The database numbers the changes:
//! triggers (migration 0045) stamp each secret with its organization's
//! next generation whenever its row, its Components or its bound keys
//! change, so no write path can forget to.

use std::collections::HashMap;

use heimdall_core::ids::{CatalogId, OrgId};
use heimdall_core::ports::{SecretChanges, StoreResult, SyncedSecret};
use heimdall_core::Sha256Hex;

use super::sql::{db_err, parse_id, parse_sha256};

/// Every change up to the organization's generation read first is
/// committed and visible: on PostgreSQL the generation's row stays locked
/// until the writer commits, so generations are taken in commit order (on
/// SQLite writers take turns). A change committed while this runs has a
/// greater generation and comes again in the next delta.
pub(super) async fn secret_changes(
    pool: &sqlx::AnyPool,
    org: OrgId,
    known: Option<i64>,
) -> StoreResult<SecretChanges> {
    let org_id = org.to_string();
    let row: Option<(i64, i64)> =
        sqlx::query_as("SELECT generation, floor FROM sync_generations WHERE org_id = $1")
            .bind(org_id.clone())
            .fetch_optional(pool)
            .await
            .map_err(db_err)?;
    let (through, floor) = row.unwrap_or((0, 0));
    let since = heimdall_core::sync_delta::since(known, floor, through);
    // A whole list: every generation (rows from before the triggers have 0).
    let after = since.unwrap_or(-1);
    const CHANGED: &str = "SELECT id FROM secrets WHERE org_id = $1 AND sync_generation > $2";
    let rows: Vec<(String, String, Option<String>, String)> = sqlx::query_as(&format!(
        "SELECT id, COALESCE(deleted_name, name), personal_owner_id, lifecycle FROM secrets \
         WHERE id IN ({CHANGED}) ORDER BY name"
    ))
    .bind(org_id.clone())
    .bind(after)
    .fetch_all(pool)
    .await
    .map_err(db_err)?;
    let mut components: HashMap<String, Vec<CatalogId>> = HashMap::new();
    let rows_c: Vec<(String, String)> = sqlx::query_as(&format!(
        "SELECT secret_id, component_id FROM secret_components WHERE secret_id IN ({CHANGED}) \
         ORDER BY secret_id, component_id"
    ))
    .bind(org_id.clone())
    .bind(after)
    .fetch_all(pool)
    .await
    .map_err(db_err)?;
    for (secret, component) in rows_c {
        components.entry(secret).or_default().push(parse_id(&component)?);
    }
    let mut keys: HashMap<String, Vec<Sha256Hex>> = HashMap::new();
    let rows_k: Vec<(String, String)> = sqlx::query_as(&format!(
        "SELECT secret_id, spki_sha256 FROM personal_secret_keys WHERE secret_id IN ({CHANGED}) \
         ORDER BY secret_id, added_at, spki_sha256"
    ))
    .bind(org_id)
    .bind(after)
    .fetch_all(pool)
    .await
    .map_err(db_err)?;
    for (secret, key) in rows_k {
        keys.entry(secret).or_default().push(parse_sha256(&key)?);
    }
    let mut changes = SecretChanges { through, since, changed: Vec::new(), removed: Vec::new() };
    for (id, name, owner, lifecycle) in rows {
        let deleted = heimdall_core::deletion::Lifecycle::parse(&lifecycle)
            .ok_or_else(|| heimdall_core::ports::StoreError::Backend("unknown stored lifecycle".into()))?
            == heimdall_core::deletion::Lifecycle::Deleted;
        if deleted {
            // Only a delta names what went; a whole list just leaves it out.
            if since.is_some() {
                changes.removed.push(parse_id(&id)?);
            }
            continue;
        }
        let owner_id = owner.as_deref().map(parse_id).transpose()?;
        changes.changed.push(SyncedSecret {
            // Only a personal secret has keys bound to it.
            owner_keys: if owner_id.is_some() { keys.remove(&id).unwrap_or_default() } else { Vec::new() },
            components: components.remove(&id).unwrap_or_default(),
            id: parse_id(&id)?,
            name,
            owner_id,
        });
    }
    Ok(changes)
}

/// An API process starts: every organization's generation moves past
/// anything an Agent could know, which becomes the floor
/// (`heimdall_core::sync_delta::RESTART_STEP`).
pub(super) async fn start_sync_epoch(pool: &sqlx::AnyPool) -> StoreResult<()> {
    sqlx::query("UPDATE sync_generations SET generation = generation + $1, floor = generation + $1")
        .bind(heimdall_core::sync_delta::RESTART_STEP)
        .execute(pool)
        .await
        .map_err(db_err)?;
    Ok(())
}
