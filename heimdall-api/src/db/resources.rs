//! Schemas, cloud accounts and Resources: reads, and the one write that
//! applies a `heimdall_core::resources` plan in a transaction.

use std::collections::BTreeMap;

use async_trait::async_trait;
use heimdall_core::ids::{CatalogId, CloudAccountId, JobId, OrgId, ResourceId, SchemaId};
use heimdall_core::infra::{
    AccountLink, CloudAccount, Job, Resource, ResourceSchema, Revision, RevisionState,
};
use heimdall_core::ports::{
    AccountStore, DriftCandidate, InfraStore, NewEvent, ResourceFilter, ResourceRecordStore, SchemaStore,
    StoreError, StoreResult,
};
use heimdall_core::resources::{ResourcePlan, StatusUpdate};
use sqlx::{Any, Transaction};
use time::OffsetDateTime;

use super::events::insert_event;
use super::infra_rows::*;
use super::sql::{db_err, from_micros, parse_id, to_micros, unique_as, SqlStore};

async fn insert_resource(tx: &mut Transaction<'_, Any>, resource: &Resource) -> StoreResult<()> {
    sqlx::query(&format!(
        "INSERT INTO resources ({RESOURCE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
    ))
    .bind(resource.id.to_string())
    .bind(resource.org_id.to_string())
    .bind(resource.name.clone())
    .bind(resource.component_id.to_string())
    .bind(resource.environment_id.to_string())
    .bind(resource.schema_id.to_string())
    .bind(resource.region.clone())
    .bind(resource.status.as_str())
    .bind(resource.revision)
    .bind(resource.reason.clone())
    .bind(json_text(&resource.outputs)?)
    .bind(to_micros(resource.created_at))
    .bind(resource.created_by.clone())
    .bind(to_micros(resource.updated_at))
    .bind(resource.drifted_at.map(to_micros))
    .execute(&mut **tx)
    .await
    .map_err(unique_as("resource"))?;
    Ok(())
}

/// Cancels applies of a Resource that no Agent has claimed yet.
async fn cancel_queued_applies(
    tx: &mut Transaction<'_, Any>,
    resource: ResourceId,
    at: OffsetDateTime,
    why: &str,
) -> StoreResult<()> {
    sqlx::query(
        "UPDATE jobs SET status = 'cancelled', reason = $1, finished_at = $2
         WHERE resource_id = $3 AND status = 'queued' AND operation IN ('apply', 'import')",
    )
    .bind(why.to_owned())
    .bind(to_micros(at))
    .bind(resource.to_string())
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

async fn supersede_pending(
    tx: &mut Transaction<'_, Any>,
    resource: ResourceId,
    state: RevisionState,
) -> StoreResult<()> {
    // Their plans are no longer to be read: plan jobs not yet claimed go.
    sqlx::query(
        "UPDATE jobs SET status = 'cancelled', reason = 'its revision was superseded'
         WHERE resource_id = $1 AND status = 'queued' AND operation = 'plan'",
    )
    .bind(resource.to_string())
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    sqlx::query(
        "UPDATE resource_revisions SET state = $1 WHERE resource_id = $2 AND state = 'pending_approval'",
    )
    .bind(state.as_str())
    .bind(resource.to_string())
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// A schema's defaults are kept under each environment's id, so that a
/// rename keeps them (`ResourceSchema::defaults` names environments as
/// they are called at the read): the names given, resolved in the
/// transaction that stores them.
async fn defaults_by_id(
    tx: &mut Transaction<'_, Any>,
    org: OrgId,
    by_name: &BTreeMap<String, serde_json::Value>,
) -> StoreResult<BTreeMap<String, serde_json::Value>> {
    let mut by_id = BTreeMap::new();
    for (name, value) in by_name {
        let (id,): (String,) = sqlx::query_as(
            "SELECT id FROM catalog_entries WHERE org_id = $1 AND kind = 'environment' AND name = $2",
        )
        .bind(org.to_string())
        .bind(name.clone())
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound("environment"))?;
        by_id.insert(id, value.clone());
    }
    Ok(by_id)
}

/// Each environment's name by its id, as they are now.
async fn environment_names(pool: &sqlx::Pool<Any>, org: OrgId) -> StoreResult<BTreeMap<String, String>> {
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT id, name FROM catalog_entries WHERE org_id = $1 AND kind = 'environment'")
            .bind(org.to_string())
            .fetch_all(pool)
            .await
            .map_err(db_err)?;
    Ok(rows.into_iter().collect())
}

#[async_trait]
impl SchemaStore for SqlStore {
    async fn create_schema(&self, schema: &ResourceSchema, event: NewEvent) -> StoreResult<ResourceSchema> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let (newest,): (Option<i64>,) =
            sqlx::query_as("SELECT MAX(version) FROM resource_schemas WHERE org_id = $1 AND type_name = $2")
                .bind(schema.org_id.to_string())
                .bind(schema.type_name.clone())
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
        let mut stored = schema.clone();
        stored.version = newest.unwrap_or(0) + 1;
        let by_id = defaults_by_id(&mut tx, schema.org_id, &stored.defaults).await?;
        sqlx::query(&format!("INSERT INTO resource_schemas ({SCHEMA_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"))
            .bind(stored.id.to_string())
            .bind(stored.org_id.to_string())
            .bind(stored.type_name.clone())
            .bind(stored.version)
            .bind(json_text(&stored.input_schema)?)
            .bind(json_text(&by_id)?)
            .bind(stored.module.as_ref().map(|m| m.source.clone()))
            .bind(stored.module.as_ref().map(|m| m.version.clone()))
            .bind(i64::from(stored.requires_approval))
            .bind(to_micros(stored.created_at))
            .bind(stored.created_by.clone())
            .bind(stored.drift_check_every_seconds)
            .execute(&mut *tx)
            .await
            .map_err(unique_as("schema version"))?;
        let mut event = event;
        event.detail["version"] = stored.version.into();
        insert_event(&mut tx, stored.org_id, event).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(stored)
    }

    async fn list_schemas(&self, org: OrgId) -> StoreResult<Vec<ResourceSchema>> {
        let sql = format!(
            "SELECT {SCHEMA_READ_COLUMNS} FROM resource_schemas WHERE org_id = $1 AND deleted_at IS NULL
             ORDER BY type_name, version"
        );
        let rows = sqlx::query_as::<_, SchemaRow>(&sql)
            .bind(org.to_string())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        let names = environment_names(&self.pool, org).await?;
        rows.into_iter().map(|row| row.into_domain(&names)).collect()
    }

    async fn get_schema(&self, org: OrgId, id: SchemaId) -> StoreResult<ResourceSchema> {
        let sql = format!("SELECT {SCHEMA_READ_COLUMNS} FROM resource_schemas WHERE org_id = $1 AND id = $2");
        let row = sqlx::query_as::<_, SchemaRow>(&sql)
            .bind(org.to_string())
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound("schema"))?;
        row.into_domain(&environment_names(&self.pool, org).await?)
    }

    async fn set_schema_deprecation(
        &self,
        org: OrgId,
        id: SchemaId,
        deprecation: Option<(OffsetDateTime, String)>,
        event: NewEvent,
    ) -> StoreResult<ResourceSchema> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let (at, by) = deprecation.map_or((None, None), |(at, by)| (Some(to_micros(at)), Some(by)));
        let updated = sqlx::query(
            "UPDATE resource_schemas SET deprecated_at = $1, deprecated_by = $2
             WHERE org_id = $3 AND id = $4 AND deleted_at IS NULL",
        )
        .bind(at)
        .bind(by)
        .bind(org.to_string())
        .bind(id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound("schema"));
        }
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)?;
        self.get_schema(org, id).await
    }

    async fn delete_schema(
        &self,
        schema: &ResourceSchema,
        at: OffsetDateTime,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // In use by a Resource whose newest revision, or the newest approved
        // one (what a retry or a destroy runs), is on this version.
        let (using,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM resources r WHERE r.org_id = $1 AND r.status NOT IN ('deleted', 'abandoned')
               AND EXISTS (SELECT 1 FROM resource_revisions v WHERE v.resource_id = r.id AND v.schema_id = $2
                 AND (v.number = r.revision OR v.number = (SELECT MAX(a.number) FROM resource_revisions a
                      WHERE a.resource_id = r.id AND a.state IN ('approved', 'not_required'))))",
        )
        .bind(schema.org_id.to_string())
        .bind(schema.id.to_string())
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
        heimdall_core::schemas::check_delete(schema, u64::try_from(using).unwrap_or(0))
            .map_err(StoreError::Refused)?;
        let deleted = sqlx::query(
            "UPDATE resource_schemas SET deleted_at = $1 WHERE org_id = $2 AND id = $3 AND deleted_at IS NULL",
        )
        .bind(to_micros(at))
        .bind(schema.org_id.to_string())
        .bind(schema.id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound("schema"));
        }
        insert_event(&mut tx, schema.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }
}

#[async_trait]
impl AccountStore for SqlStore {
    async fn create_account(&self, account: &CloudAccount, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(&format!(
            "INSERT INTO cloud_accounts ({ACCOUNT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
        ))
        .bind(account.id.to_string())
        .bind(account.org_id.to_string())
        .bind(account.name.clone())
        .bind(account.provider.as_str())
        .bind(account.region.clone())
        .bind(account.state_bucket.clone())
        .bind(account.state_endpoint.clone())
        .bind(json_text(&account.auth)?)
        .bind(to_micros(account.created_at))
        .bind(account.created_by.clone())
        .bind(account.state_backend.as_str())
        .bind(account.state_storage_account.clone())
        .bind(account.drift_check_every_seconds)
        .execute(&mut *tx)
        .await
        .map_err(unique_as("cloud account"))?;
        insert_event(&mut tx, account.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn list_accounts(&self, org: OrgId) -> StoreResult<Vec<CloudAccount>> {
        let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM cloud_accounts WHERE org_id = $1 ORDER BY name");
        sqlx::query_as::<_, AccountRow>(&sql)
            .bind(org.to_string())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(AccountRow::into_domain)
            .collect()
    }

    async fn get_account(&self, org: OrgId, id: CloudAccountId) -> StoreResult<CloudAccount> {
        let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM cloud_accounts WHERE org_id = $1 AND id = $2");
        sqlx::query_as::<_, AccountRow>(&sql)
            .bind(org.to_string())
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound("cloud account"))?
            .into_domain()
    }

    async fn find_account_by_name(&self, org: OrgId, name: &str) -> StoreResult<Option<CloudAccount>> {
        let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM cloud_accounts WHERE org_id = $1 AND name = $2");
        sqlx::query_as::<_, AccountRow>(&sql)
            .bind(org.to_string())
            .bind(name.to_owned())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .map(AccountRow::into_domain)
            .transpose()
    }

    async fn link_account(&self, org: OrgId, link: &AccountLink, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let scope_id = link.scope_id.map_or_else(|| org.to_string(), |id| id.to_string());
        super::accounts::check_replaced_link(&mut tx, org, link, &scope_id).await?;
        sqlx::query(
            "INSERT INTO cloud_account_links (org_id, account_id, scope, scope_id, environment_id, created_at, created_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (org_id, scope, scope_id, environment_id)
             DO UPDATE SET account_id = excluded.account_id, created_at = excluded.created_at, created_by = excluded.created_by",
        )
        .bind(org.to_string())
        .bind(link.account_id.to_string())
        .bind(link.scope.as_str())
        .bind(scope_id)
        .bind(link.environment_id.to_string())
        .bind(to_micros(link.created_at))
        .bind(link.created_by.clone())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn update_account(
        &self,
        change: &heimdall_core::accounts::AccountChange,
        event: NewEvent,
    ) -> StoreResult<()> {
        super::accounts::update(&self.pool, change, event).await
    }

    async fn unlink_account(
        &self,
        account: &CloudAccount,
        scope: heimdall_core::infra::LinkScope,
        scope_id: Option<CatalogId>,
        environment: CatalogId,
        event: NewEvent,
    ) -> StoreResult<()> {
        super::accounts::unlink(&self.pool, account, scope, scope_id, environment, event).await
    }

    async fn delete_account(&self, account: &CloudAccount, event: NewEvent) -> StoreResult<()> {
        super::accounts::delete(&self.pool, account, event).await
    }

    async fn list_links(&self, org: OrgId) -> StoreResult<Vec<AccountLink>> {
        sqlx::query_as::<_, LinkRow>(
            "SELECT account_id, scope, scope_id, environment_id, created_at, created_by FROM cloud_account_links
             WHERE org_id = $1 ORDER BY scope, scope_id, environment_id",
        )
        .bind(org.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?
        .into_iter()
        .map(LinkRow::into_domain)
        .collect()
    }
}

#[async_trait]
impl ResourceRecordStore for SqlStore {
    async fn get_resource(&self, org: OrgId, id: ResourceId) -> StoreResult<Resource> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let resource = fetch_resource(&mut tx, org, id).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(resource)
    }

    async fn find_resources_by_name(&self, org: OrgId, name: &str) -> StoreResult<Vec<Resource>> {
        let sql = format!("SELECT {RESOURCE_COLUMNS} FROM resources WHERE org_id = $1 AND name = $2 ORDER BY created_at, id");
        sqlx::query_as::<_, ResourceRow>(&sql)
            .bind(org.to_string())
            .bind(name.to_owned())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(ResourceRow::into_domain)
            .collect()
    }

    async fn list_resources(&self, org: OrgId, filter: &ResourceFilter) -> StoreResult<Vec<Resource>> {
        // Empty strings mean "any": one statement for every filter combination.
        // After the cursor: created later, or at the same time with a greater
        // id, as one row comparison, so that the index range starts there
        // (an `OR` made every page scan from the first Resource). No cursor
        // is a place before every row.
        let sql = format!(
            "SELECT {RESOURCE_COLUMNS} FROM resources WHERE org_id = $1
               AND ($2 = '' OR component_id = $2) AND ($3 = '' OR environment_id = $3) AND ($4 = '' OR status = $4)
               AND (created_at, id) > ($6, $5)
             ORDER BY created_at, id LIMIT $7"
        );
        let (after_id, after_at) =
            filter.after.as_ref().map_or((String::new(), i64::MIN), |c| (c.id.to_string(), c.created_at));
        sqlx::query_as::<_, ResourceRow>(&sql)
            .bind(org.to_string())
            .bind(filter.component.map(|c| c.to_string()).unwrap_or_default())
            .bind(filter.environment.map(|c| c.to_string()).unwrap_or_default())
            .bind(filter.status.map(|s| s.as_str().to_owned()).unwrap_or_default())
            .bind(after_id)
            .bind(after_at)
            .bind(filter.limit.map_or(i64::MAX, i64::from))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(ResourceRow::into_domain)
            .collect()
    }

    async fn resources_by_ids(&self, org: OrgId, ids: &[ResourceId]) -> StoreResult<Vec<Resource>> {
        let mut ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut found = Vec::with_capacity(ids.len());
        // A bounded number of placeholders per statement (SQLite's limit
        // is 32,766; PostgreSQL's 65,535).
        for chunk in ids.chunks(1000) {
            let marks: Vec<String> = (2..chunk.len() + 2).map(|i| format!("${i}")).collect();
            let sql = format!(
                "SELECT {RESOURCE_COLUMNS} FROM resources WHERE org_id = $1 AND id IN ({})",
                marks.join(", ")
            );
            let mut query = sqlx::query_as::<_, ResourceRow>(&sql).bind(org.to_string());
            for id in chunk {
                query = query.bind(id.clone());
            }
            for row in query.fetch_all(&self.pool).await.map_err(db_err)? {
                found.push(row.into_domain()?);
            }
        }
        Ok(found)
    }
}

#[async_trait]
impl InfraStore for SqlStore {
    async fn apply_resource_plan(
        &self,
        org: OrgId,
        plan: &ResourcePlan,
        event: NewEvent,
    ) -> StoreResult<Resource> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        match &plan.create {
            Some(resource) => insert_resource(&mut tx, resource).await?,
            None => {
                let current = fetch_resource(&mut tx, org, plan.resource).await?;
                if let Some(expected) = plan.expected_revision.filter(|e| *e != current.revision) {
                    return Err(StoreError::StaleRevision(format!(
                        "the Resource changed meanwhile: revision {} is current, not {expected}",
                        current.revision
                    )));
                }
            }
        }
        if let Some(d) = &plan.decision {
            let updated = sqlx::query(
                "UPDATE resource_revisions SET state = $1, decided_by = $2, decided_at = $3, decision_reason = $4
                 WHERE resource_id = $5 AND number = $6 AND state = 'pending_approval'",
            )
            .bind(d.state.as_str())
            .bind(d.decided_by.clone())
            .bind(to_micros(d.decided_at))
            .bind(d.reason.clone())
            .bind(plan.resource.to_string())
            .bind(d.revision)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            if updated.rows_affected() != 1 {
                return Err(StoreError::StaleRevision(format!(
                    "revision {} is no longer pending approval",
                    d.revision
                )));
            }
        }
        if plan.supersede_pending {
            supersede_pending(&mut tx, plan.resource, RevisionState::Superseded).await?;
        }
        if let Some(why) = &plan.cancel_queued_applies {
            cancel_queued_applies(&mut tx, plan.resource, plan.at, why).await?;
        }
        if let Some(revision) = &plan.revision {
            insert_revision(&mut tx, revision).await?;
            sqlx::query("UPDATE resources SET revision = $1, region = $2, schema_id = $3 WHERE id = $4")
                .bind(revision.number)
                .bind(revision.region.clone())
                .bind(revision.schema_id.to_string())
                .bind(plan.resource.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        if let Some(job) = &plan.job {
            insert_job(&mut tx, job).await?;
        }
        match plan.status {
            StatusUpdate::Set(status) => {
                set_resource_status(&mut tx, plan.resource, status, None, plan.at).await?
            }
            StatusUpdate::Settle(status) => {
                settle_resource_status(&mut tx, plan.resource, status, None, plan.at).await?
            }
        }
        insert_event(&mut tx, org, event).await?;
        let resource = fetch_resource(&mut tx, org, plan.resource).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(resource)
    }

    async fn list_drift_candidates(&self) -> StoreResult<Vec<DriftCandidate>> {
        let rows: Vec<(String, String, Option<i64>, Option<i64>)> = sqlx::query_as(
            "SELECT r.org_id, r.id, s.drift_check_every_seconds,
                    (SELECT MAX(COALESCE(j.finished_at, j.queued_at)) FROM jobs j
                      WHERE j.resource_id = r.id AND j.status <> 'cancelled'
                        AND j.operation IN ('drift_check', 'apply', 'import'))
               FROM resources r JOIN resource_schemas s ON s.id = r.schema_id
              WHERE r.status = 'provisioned'
                AND (s.drift_check_every_seconds IS NOT NULL
                     OR EXISTS (SELECT 1 FROM cloud_accounts a
                                 WHERE a.org_id = r.org_id AND a.drift_check_every_seconds IS NOT NULL))",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter()
            .map(|(org, resource, schema_every_seconds, last)| {
                Ok(DriftCandidate {
                    org: parse_id(&org)?,
                    resource: parse_id(&resource)?,
                    schema_every_seconds,
                    last: last.map(from_micros),
                })
            })
            .collect()
    }

    async fn list_revisions(&self, org: OrgId, resource: ResourceId) -> StoreResult<Vec<Revision>> {
        let sql = format!(
            "SELECT {REVISION_COLUMNS} FROM resource_revisions WHERE resource_id = $1
               AND resource_id IN (SELECT id FROM resources WHERE org_id = $2) ORDER BY number"
        );
        sqlx::query_as::<_, RevisionRow>(&sql)
            .bind(resource.to_string())
            .bind(org.to_string())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(RevisionRow::into_domain)
            .collect()
    }

    async fn list_jobs_page(
        &self,
        org: OrgId,
        resource: Option<ResourceId>,
        component: Option<CatalogId>,
        order: heimdall_core::queue::JobOrder,
        after: Option<&heimdall_core::queue::JobCursor>,
        limit: u32,
    ) -> StoreResult<Vec<Job>> {
        use heimdall_core::queue::JobOrder;
        // After the cursor, in the list's order: queued later (earlier,
        // newest first), or at the same time with a greater (smaller) id,
        // as one row comparison, so the index range starts there, as for
        // Resources. No cursor is a place before every row.
        let (beyond, direction, start) = match order {
            JobOrder::Oldest => (">", "ASC", i64::MIN),
            JobOrder::Newest => ("<", "DESC", i64::MAX),
        };
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE org_id = $1 AND ($2 = '' OR resource_id = $2)
               AND ($6 = '' OR resource_id IN (SELECT id FROM resources WHERE org_id = $1 AND component_id = $6))
               AND (queued_at, id) {beyond} ($4, $3)
             ORDER BY queued_at {direction}, id {direction} LIMIT $5"
        );
        let (after_id, after_at) = after.map_or((String::new(), start), |c| (c.id.to_string(), c.queued_at));
        sqlx::query_as::<_, JobRow>(&sql)
            .bind(org.to_string())
            .bind(resource.map(|r| r.to_string()).unwrap_or_default())
            .bind(after_id)
            .bind(after_at)
            .bind(i64::from(limit))
            .bind(component.map(|c| c.to_string()).unwrap_or_default())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(JobRow::into_domain)
            .collect()
    }

    async fn get_job(&self, org: OrgId, id: JobId) -> StoreResult<Job> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let job = fetch_job(&mut tx, id).await?;
        tx.commit().await.map_err(db_err)?;
        if job.org_id != org {
            return Err(StoreError::NotFound("job"));
        }
        Ok(job)
    }

    async fn job_log(&self, org: OrgId, id: JobId) -> StoreResult<(String, bool)> {
        let row: Option<(String, i64)> = sqlx::query_as(
            "SELECT l.content, l.truncated FROM job_logs l JOIN jobs j ON j.id = l.job_id WHERE j.org_id = $1 AND j.id = $2",
        )
        .bind(org.to_string())
        .bind(id.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        let (content, truncated) = row.ok_or(StoreError::NotFound("job"))?;
        Ok((content, truncated != 0))
    }
}
