//! Changing and removing cloud accounts. What depends on an account is
//! counted in the transaction that changes it, and decided by
//! `heimdall_core::accounts`: a Resource keeps its state on the account
//! its jobs ran with (`jobs.account_id`) until it is deleted.

use heimdall_core::accounts::{check_delete, check_relink, check_state_move, check_unlink, AccountChange};
use heimdall_core::ids::CatalogId;
use heimdall_core::infra::{CloudAccount, LinkScope};
use heimdall_core::ports::{NewEvent, StoreError, StoreResult};
use sqlx::{Any, AnyPool, Transaction};

use super::events::insert_event;
use super::infra_rows::json_text;
use super::sql::db_err;

/// Resources still managed (not deleted or abandoned) with a job on
/// `account`, in `environment` if named.
pub(super) async fn resources_with_state(
    tx: &mut Transaction<'_, Any>,
    account: &CloudAccount,
    environment: Option<CatalogId>,
) -> StoreResult<u64> {
    resources_on(tx, account.org_id, &account.id.to_string(), environment).await
}

/// [`resources_with_state`] by the account's id.
async fn resources_on(
    tx: &mut Transaction<'_, Any>,
    org: heimdall_core::ids::OrgId,
    account: &str,
    environment: Option<CatalogId>,
) -> StoreResult<u64> {
    let (count,): (i64,) = sqlx::query_as(
        "SELECT COUNT(DISTINCT r.id) FROM resources r JOIN jobs j ON j.resource_id = r.id
         WHERE r.org_id = $1 AND j.account_id = $2 AND r.status NOT IN ('deleted', 'abandoned')
           AND ($3 = '' OR r.environment_id = $3)",
    )
    .bind(org.to_string())
    .bind(account.to_owned())
    .bind(environment.map(|e| e.to_string()).unwrap_or_default())
    .fetch_one(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// Before a link replaces another account's for the same scope and
/// environment: refused while Resources there keep state on that account
/// (`accounts::check_relink`), as their next job would go to another
/// state store.
pub(super) async fn check_replaced_link(
    tx: &mut Transaction<'_, Any>,
    org: heimdall_core::ids::OrgId,
    link: &heimdall_core::infra::AccountLink,
    scope_id: &str,
) -> StoreResult<()> {
    let linked: Option<(String, String)> = sqlx::query_as(
        "SELECT l.account_id, a.name FROM cloud_account_links l JOIN cloud_accounts a ON a.id = l.account_id
         WHERE l.org_id = $1 AND l.scope = $2 AND l.scope_id = $3 AND l.environment_id = $4",
    )
    .bind(org.to_string())
    .bind(link.scope.as_str())
    .bind(scope_id.to_owned())
    .bind(link.environment_id.to_string())
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?;
    let Some((account, name)) = linked.filter(|(id, _)| *id != link.account_id.to_string()) else {
        return Ok(());
    };
    let count = resources_on(tx, org, &account, Some(link.environment_id)).await?;
    check_relink(&name, count).map_err(StoreError::Refused)
}

pub(super) async fn update(pool: &AnyPool, change: &AccountChange, event: NewEvent) -> StoreResult<()> {
    let account = &change.account;
    let mut tx = pool.begin().await.map_err(db_err)?;
    if change.moves_state {
        let count = resources_with_state(&mut tx, account, None).await?;
        check_state_move(&account.name, count).map_err(StoreError::Refused)?;
    }
    let updated = sqlx::query(
        "UPDATE cloud_accounts SET region = $1, state_bucket = $2, state_endpoint = $3, state_storage_account = $4,
                auth = $5, drift_check_every_seconds = $6
         WHERE org_id = $7 AND id = $8",
    )
    .bind(account.region.clone())
    .bind(account.state_bucket.clone())
    .bind(account.state_endpoint.clone())
    .bind(account.state_storage_account.clone())
    .bind(json_text(&account.auth)?)
    .bind(account.drift_check_every_seconds)
    .bind(account.org_id.to_string())
    .bind(account.id.to_string())
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    if updated.rows_affected() == 0 {
        return Err(StoreError::NotFound("cloud account"));
    }
    insert_event(&mut tx, account.org_id, event).await?;
    tx.commit().await.map_err(db_err)
}

pub(super) async fn unlink(
    pool: &AnyPool,
    account: &CloudAccount,
    scope: LinkScope,
    scope_id: Option<CatalogId>,
    environment: CatalogId,
    event: NewEvent,
) -> StoreResult<()> {
    let org = account.org_id;
    let mut tx = pool.begin().await.map_err(db_err)?;
    let count = resources_with_state(&mut tx, account, Some(environment)).await?;
    check_unlink(&account.name, count).map_err(StoreError::Refused)?;
    // An organization-wide link is kept under the organization's id.
    let scope_id = scope_id.map_or_else(|| org.to_string(), |id| id.to_string());
    let deleted = sqlx::query(
        "DELETE FROM cloud_account_links
         WHERE org_id = $1 AND account_id = $2 AND scope = $3 AND scope_id = $4 AND environment_id = $5",
    )
    .bind(org.to_string())
    .bind(account.id.to_string())
    .bind(scope.as_str())
    .bind(scope_id)
    .bind(environment.to_string())
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    if deleted.rows_affected() == 0 {
        return Err(StoreError::NotFound("link of that account"));
    }
    insert_event(&mut tx, org, event).await?;
    tx.commit().await.map_err(db_err)
}

pub(super) async fn delete(pool: &AnyPool, account: &CloudAccount, event: NewEvent) -> StoreResult<()> {
    let org = account.org_id;
    let mut tx = pool.begin().await.map_err(db_err)?;
    let (links,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM cloud_account_links WHERE org_id = $1 AND account_id = $2")
            .bind(org.to_string())
            .bind(account.id.to_string())
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
    let count = resources_with_state(&mut tx, account, None).await?;
    check_delete(&account.name, u64::try_from(links).unwrap_or(0), count).map_err(StoreError::Refused)?;
    let deleted = sqlx::query("DELETE FROM cloud_accounts WHERE org_id = $1 AND id = $2")
        .bind(org.to_string())
        .bind(account.id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    if deleted.rows_affected() == 0 {
        return Err(StoreError::NotFound("cloud account"));
    }
    insert_event(&mut tx, org, event).await?;
    tx.commit().await.map_err(db_err)
}
