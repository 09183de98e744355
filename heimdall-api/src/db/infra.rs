//! Infrastructure Manager storage and the job queue, shared SQL.

use std::collections::BTreeMap;

use async_trait::async_trait;
use heimdall_core::ids::{CloudAccountId, JobId, LeaseId, OrgId, ResourceId, SchemaId};
use heimdall_core::infra::{
    AccountAuth, AccountLink, CloudAccount, Job, JobOperation, JobRequest, JobStatus, LinkScope, ModuleRef,
    Resource, ResourceSchema, ResourceStatus, Revision, RevisionState,
};
use heimdall_core::ports::{
    InfraStore, JobOutcome, JobQueue, NewEvent, ResourceChange, ResourceFilter, RevisionDecision, StoreError,
    StoreResult,
};
use heimdall_core::queue::{self, ReapDecision};
use sqlx::{Any, FromRow, Transaction};
use time::OffsetDateTime;

use super::store::{db_err, from_micros, insert_event, parse_id, to_micros, unique_as, SqlStore};
use super::{claim_sql, expired_sql};

fn json_text(value: &impl serde::Serialize) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("cannot encode JSON: {e}")))
}

fn parse_json<T: serde::de::DeserializeOwned>(text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Backend(format!("stored JSON does not decode: {e}")))
}

fn parse_enum<T: std::str::FromStr<Err = String>>(text: &str) -> StoreResult<T> {
    text.parse().map_err(StoreError::Backend)
}

// ---- rows --------------------------------------------------------------------

const SCHEMA_COLUMNS: &str = "id, org_id, type_name, version, input_schema, defaults, module_source, module_version, requires_approval, created_at, created_by";

#[derive(FromRow)]
struct SchemaRow {
    id: String,
    org_id: String,
    type_name: String,
    version: i64,
    input_schema: String,
    defaults: String,
    module_source: Option<String>,
    module_version: Option<String>,
    requires_approval: i64,
    created_at: i64,
    created_by: String,
}

impl SchemaRow {
    fn into_domain(self) -> StoreResult<ResourceSchema> {
        let defaults: BTreeMap<String, serde_json::Value> = parse_json(&self.defaults)?;
        Ok(ResourceSchema {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            type_name: self.type_name,
            version: self.version,
            input_schema: parse_json(&self.input_schema)?,
            defaults,
            module: match (self.module_source, self.module_version) {
                (Some(source), Some(version)) => Some(ModuleRef { source, version }),
                _ => None,
            },
            requires_approval: self.requires_approval != 0,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
        })
    }
}

const ACCOUNT_COLUMNS: &str =
    "id, org_id, name, provider, region, state_bucket, state_endpoint, auth, created_at, created_by";

#[derive(FromRow)]
struct AccountRow {
    id: String,
    org_id: String,
    name: String,
    provider: String,
    region: String,
    state_bucket: String,
    state_endpoint: Option<String>,
    auth: String,
    created_at: i64,
    created_by: String,
}

impl AccountRow {
    fn into_domain(self) -> StoreResult<CloudAccount> {
        let auth: AccountAuth = parse_json(&self.auth)?;
        Ok(CloudAccount {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            name: self.name,
            provider: parse_enum(&self.provider)?,
            region: self.region,
            state_bucket: self.state_bucket,
            state_endpoint: self.state_endpoint,
            auth,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
        })
    }
}

#[derive(FromRow)]
struct LinkRow {
    account_id: String,
    scope: String,
    scope_id: String,
    environment_id: String,
    created_at: i64,
    created_by: String,
}

impl LinkRow {
    fn into_domain(self) -> StoreResult<AccountLink> {
        let scope: LinkScope = parse_enum(&self.scope)?;
        Ok(AccountLink {
            account_id: parse_id(&self.account_id)?,
            scope,
            scope_id: if scope == LinkScope::Organization { None } else { Some(parse_id(&self.scope_id)?) },
            environment_id: parse_id(&self.environment_id)?,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
        })
    }
}

const RESOURCE_COLUMNS: &str = "id, org_id, name, component_id, environment_id, schema_id, region, status, revision, reason, outputs, created_at, created_by, updated_at";

#[derive(FromRow)]
struct ResourceRow {
    id: String,
    org_id: String,
    name: String,
    component_id: String,
    environment_id: String,
    schema_id: String,
    region: Option<String>,
    status: String,
    revision: i64,
    reason: Option<String>,
    outputs: String,
    created_at: i64,
    created_by: String,
    updated_at: i64,
}

impl ResourceRow {
    fn into_domain(self) -> StoreResult<Resource> {
        Ok(Resource {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            name: self.name,
            component_id: parse_id(&self.component_id)?,
            environment_id: parse_id(&self.environment_id)?,
            schema_id: parse_id(&self.schema_id)?,
            region: self.region,
            status: parse_enum(&self.status)?,
            revision: self.revision,
            reason: self.reason,
            outputs: parse_json(&self.outputs)?,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
            updated_at: from_micros(self.updated_at),
        })
    }
}

const REVISION_COLUMNS: &str = "resource_id, number, hash, input, effective_input, region, state, requested_by, requested_at, decided_by, decided_at, decision_reason";

#[derive(FromRow)]
struct RevisionRow {
    resource_id: String,
    number: i64,
    hash: String,
    input: String,
    effective_input: String,
    region: Option<String>,
    state: String,
    requested_by: String,
    requested_at: i64,
    decided_by: Option<String>,
    decided_at: Option<i64>,
    decision_reason: Option<String>,
}

impl RevisionRow {
    fn into_domain(self) -> StoreResult<Revision> {
        Ok(Revision {
            resource_id: parse_id(&self.resource_id)?,
            number: self.number,
            hash: self.hash,
            input: parse_json(&self.input)?,
            effective_input: parse_json(&self.effective_input)?,
            region: self.region,
            state: parse_enum(&self.state)?,
            requested_by: self.requested_by,
            requested_at: from_micros(self.requested_at),
            decided_by: self.decided_by,
            decided_at: self.decided_at.map(from_micros),
            decision_reason: self.decision_reason,
        })
    }
}

const JOB_COLUMNS: &str = "id, org_id, resource_id, operation, status, attempts, max_attempts, reason, request, queued_at, started_at, finished_at, lease_expires_at, agent, state_lock_id";

#[derive(FromRow)]
struct JobRow {
    id: String,
    org_id: String,
    resource_id: String,
    operation: String,
    status: String,
    attempts: i64,
    max_attempts: i64,
    reason: Option<String>,
    request: String,
    queued_at: i64,
    started_at: Option<i64>,
    finished_at: Option<i64>,
    lease_expires_at: Option<i64>,
    agent: Option<String>,
    state_lock_id: Option<String>,
}

impl JobRow {
    fn into_domain(self) -> StoreResult<Job> {
        let request: JobRequest = parse_json(&self.request)?;
        Ok(Job {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            resource_id: parse_id(&self.resource_id)?,
            operation: parse_enum(&self.operation)?,
            status: parse_enum(&self.status)?,
            attempts: self.attempts,
            max_attempts: self.max_attempts,
            reason: self.reason,
            request,
            queued_at: from_micros(self.queued_at),
            started_at: self.started_at.map(from_micros),
            finished_at: self.finished_at.map(from_micros),
            lease_expires_at: self.lease_expires_at.map(from_micros),
            agent: self.agent,
            state_lock_id: self.state_lock_id,
        })
    }
}

// ---- helpers inside transactions -----------------------------------------------

async fn fetch_resource(tx: &mut Transaction<'_, Any>, org: OrgId, id: ResourceId) -> StoreResult<Resource> {
    let sql = format!("SELECT {RESOURCE_COLUMNS} FROM resources WHERE org_id = $1 AND id = $2");
    sqlx::query_as::<_, ResourceRow>(&sql)
        .bind(org.to_string())
        .bind(id.to_string())
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound("resource"))?
        .into_domain()
}

async fn fetch_job(tx: &mut Transaction<'_, Any>, id: JobId) -> StoreResult<Job> {
    let sql = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1");
    sqlx::query_as::<_, JobRow>(&sql)
        .bind(id.to_string())
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound("job"))?
        .into_domain()
}

async fn insert_revision(tx: &mut Transaction<'_, Any>, rev: &Revision) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO resource_revisions (resource_id, number, hash, input, effective_input, region, state, requested_by, requested_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(rev.resource_id.to_string())
    .bind(rev.number)
    .bind(rev.hash.clone())
    .bind(json_text(&rev.input)?)
    .bind(json_text(&rev.effective_input)?)
    .bind(rev.region.clone())
    .bind(rev.state.as_str())
    .bind(rev.requested_by.clone())
    .bind(to_micros(rev.requested_at))
    .execute(&mut **tx)
    .await
    .map_err(unique_as("revision"))?;
    Ok(())
}

async fn insert_job(tx: &mut Transaction<'_, Any>, job: &Job) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO jobs (id, org_id, resource_id, operation, status, attempts, max_attempts, request, queued_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(job.id.to_string())
    .bind(job.org_id.to_string())
    .bind(job.resource_id.to_string())
    .bind(job.operation.as_str())
    .bind(job.status.as_str())
    .bind(job.attempts)
    .bind(job.max_attempts)
    .bind(json_text(&job.request)?)
    .bind(to_micros(job.queued_at))
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    sqlx::query("INSERT INTO job_logs (job_id, content, bytes, truncated) VALUES ($1, '', 0, 0)")
        .bind(job.id.to_string())
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
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

async fn set_resource_status(
    tx: &mut Transaction<'_, Any>,
    resource: ResourceId,
    status: ResourceStatus,
    reason: Option<&str>,
    at: OffsetDateTime,
) -> StoreResult<()> {
    sqlx::query("UPDATE resources SET status = $1, reason = $2, updated_at = $3 WHERE id = $4")
        .bind(status.as_str())
        .bind(reason.map(str::to_owned))
        .bind(to_micros(at))
        .bind(resource.to_string())
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// After a job ends, the Resource follows it, unless another job of the
/// Resource is already queued (a change or a delete overtook it), in which
/// case the Resource shows that job's state.
async fn settle_resource_status(
    tx: &mut Transaction<'_, Any>,
    resource: ResourceId,
    status: ResourceStatus,
    reason: Option<&str>,
    at: OffsetDateTime,
) -> StoreResult<()> {
    // What the Resource is waiting on, most pressing first: a running job,
    // then a queued one, then a change pending approval.
    let next: Option<(String, String)> = sqlx::query_as(
        "SELECT operation, status FROM jobs WHERE resource_id = $1 AND status IN ('running', 'queued')
         ORDER BY CASE status WHEN 'running' THEN 0 ELSE 1 END, queued_at, id LIMIT 1",
    )
    .bind(resource.to_string())
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?;
    if let Some((op, job_status)) = next {
        let op: JobOperation = parse_enum(&op)?;
        let job_status: JobStatus = parse_enum(&job_status)?;
        let waiting = queue::resource_status_for(op, job_status).unwrap_or(status);
        return set_resource_status(tx, resource, waiting, None, at).await;
    }
    let pending: Option<(i64,)> = sqlx::query_as(
        "SELECT number FROM resource_revisions WHERE resource_id = $1 AND state = 'pending_approval' LIMIT 1",
    )
    .bind(resource.to_string())
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?;
    if pending.is_some() && status != ResourceStatus::Deleted {
        return set_resource_status(tx, resource, ResourceStatus::PendingApproval, reason, at).await;
    }
    set_resource_status(tx, resource, status, reason, at).await
}

/// A job held under `lease` that is still running and not expired at `now`.
async fn leased_job(
    tx: &mut Transaction<'_, Any>,
    job: JobId,
    lease: LeaseId,
    now: OffsetDateTime,
) -> StoreResult<Job> {
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT id FROM jobs WHERE id = $1 AND lease_id = $2 AND status = 'running' AND lease_expires_at >= $3",
    )
    .bind(job.to_string())
    .bind(lease.to_string())
    .bind(to_micros(now))
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?;
    if row.is_none() {
        return Err(StoreError::Fenced);
    }
    fetch_job(tx, job).await
}

#[async_trait]
impl InfraStore for SqlStore {
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
        sqlx::query(&format!("INSERT INTO resource_schemas ({SCHEMA_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"))
            .bind(stored.id.to_string())
            .bind(stored.org_id.to_string())
            .bind(stored.type_name.clone())
            .bind(stored.version)
            .bind(json_text(&stored.input_schema)?)
            .bind(json_text(&stored.defaults)?)
            .bind(stored.module.as_ref().map(|m| m.source.clone()))
            .bind(stored.module.as_ref().map(|m| m.version.clone()))
            .bind(i64::from(stored.requires_approval))
            .bind(to_micros(stored.created_at))
            .bind(stored.created_by.clone())
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
            "SELECT {SCHEMA_COLUMNS} FROM resource_schemas WHERE org_id = $1 ORDER BY type_name, version"
        );
        sqlx::query_as::<_, SchemaRow>(&sql)
            .bind(org.to_string())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(SchemaRow::into_domain)
            .collect()
    }

    async fn get_schema(&self, org: OrgId, id: SchemaId) -> StoreResult<ResourceSchema> {
        let sql = format!("SELECT {SCHEMA_COLUMNS} FROM resource_schemas WHERE org_id = $1 AND id = $2");
        sqlx::query_as::<_, SchemaRow>(&sql)
            .bind(org.to_string())
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound("schema"))?
            .into_domain()
    }

    async fn create_account(&self, account: &CloudAccount, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(&format!(
            "INSERT INTO cloud_accounts ({ACCOUNT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
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

    async fn create_resource(
        &self,
        resource: &Resource,
        revision: &Revision,
        job: Option<&Job>,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(&format!(
            "INSERT INTO resources ({RESOURCE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
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
        .execute(&mut *tx)
        .await
        .map_err(unique_as("resource"))?;
        insert_revision(&mut tx, revision).await?;
        if let Some(job) = job {
            insert_job(&mut tx, job).await?;
        }
        insert_event(&mut tx, resource.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

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
        let sql = format!(
            "SELECT {RESOURCE_COLUMNS} FROM resources WHERE org_id = $1
               AND ($2 = '' OR component_id = $2) AND ($3 = '' OR environment_id = $3) AND ($4 = '' OR status = $4)
             ORDER BY created_at, id"
        );
        sqlx::query_as::<_, ResourceRow>(&sql)
            .bind(org.to_string())
            .bind(filter.component.map(|c| c.to_string()).unwrap_or_default())
            .bind(filter.environment.map(|c| c.to_string()).unwrap_or_default())
            .bind(filter.status.map(|s| s.as_str().to_owned()).unwrap_or_default())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(ResourceRow::into_domain)
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

    async fn change_resource(
        &self,
        org: OrgId,
        change: &ResourceChange,
        event: NewEvent,
    ) -> StoreResult<Resource> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let current = fetch_resource(&mut tx, org, change.resource).await?;
        if current.revision != change.expected_revision {
            return Err(StoreError::StaleRevision(format!(
                "the Resource changed meanwhile: revision {} is current, not {}",
                current.revision, change.expected_revision
            )));
        }
        let at = change.revision.requested_at;
        supersede_pending(&mut tx, change.resource, RevisionState::Superseded).await?;
        // A change that waits for approval leaves an approved apply queued:
        // it is still what was approved, until the change is.
        if change.job.is_some() {
            cancel_queued_applies(
                &mut tx,
                change.resource,
                at,
                &format!("superseded by revision {}", change.revision.number),
            )
            .await?;
        }
        insert_revision(&mut tx, &change.revision).await?;
        sqlx::query("UPDATE resources SET revision = $1, region = $2, status = $3, reason = NULL, updated_at = $4 WHERE id = $5")
            .bind(change.revision.number)
            .bind(change.revision.region.clone())
            .bind(change.status.as_str())
            .bind(to_micros(at))
            .bind(change.resource.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        if let Some(job) = &change.job {
            insert_job(&mut tx, job).await?;
        }
        insert_event(&mut tx, org, event).await?;
        let resource = fetch_resource(&mut tx, org, change.resource).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(resource)
    }

    async fn decide_revision(
        &self,
        org: OrgId,
        d: &RevisionDecision,
        event: NewEvent,
    ) -> StoreResult<Resource> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        fetch_resource(&mut tx, org, d.resource).await?;
        let updated = sqlx::query(
            "UPDATE resource_revisions SET state = $1, decided_by = $2, decided_at = $3, decision_reason = $4
             WHERE resource_id = $5 AND number = $6 AND state = 'pending_approval'",
        )
        .bind(d.state.as_str())
        .bind(d.decided_by.clone())
        .bind(to_micros(d.decided_at))
        .bind(d.reason.clone())
        .bind(d.resource.to_string())
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
        match &d.job {
            Some(job) => {
                // The newest approved revision wins over an older one still queued.
                let why = format!("superseded by revision {}", d.revision);
                cancel_queued_applies(&mut tx, d.resource, d.decided_at, &why).await?;
                insert_job(&mut tx, job).await?;
                set_resource_status(&mut tx, d.resource, d.status, None, d.decided_at).await?;
            }
            // Refused: the Resource goes back to what its jobs say.
            None => settle_resource_status(&mut tx, d.resource, d.status, None, d.decided_at).await?,
        }
        insert_event(&mut tx, org, event).await?;
        let resource = fetch_resource(&mut tx, org, d.resource).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(resource)
    }

    async fn queue_job(
        &self,
        org: OrgId,
        job: &Job,
        status: ResourceStatus,
        event: NewEvent,
    ) -> StoreResult<Resource> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        fetch_resource(&mut tx, org, job.resource_id).await?;
        if job.operation == JobOperation::Destroy {
            cancel_queued_applies(&mut tx, job.resource_id, job.queued_at, "cancelled by delete").await?;
            supersede_pending(&mut tx, job.resource_id, RevisionState::Superseded).await?;
        }
        insert_job(&mut tx, job).await?;
        set_resource_status(&mut tx, job.resource_id, status, None, job.queued_at).await?;
        insert_event(&mut tx, org, event).await?;
        let resource = fetch_resource(&mut tx, org, job.resource_id).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(resource)
    }

    async fn mark_deleted(&self, org: OrgId, resource: ResourceId, event: NewEvent) -> StoreResult<Resource> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        fetch_resource(&mut tx, org, resource).await?;
        let at = event.at;
        cancel_queued_applies(&mut tx, resource, at, "cancelled by delete").await?;
        supersede_pending(&mut tx, resource, RevisionState::Superseded).await?;
        set_resource_status(&mut tx, resource, ResourceStatus::Deleted, None, at).await?;
        insert_event(&mut tx, org, event).await?;
        let resource = fetch_resource(&mut tx, org, resource).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(resource)
    }

    async fn list_jobs(&self, org: OrgId, resource: Option<ResourceId>) -> StoreResult<Vec<Job>> {
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE org_id = $1 AND ($2 = '' OR resource_id = $2) ORDER BY queued_at, id"
        );
        sqlx::query_as::<_, JobRow>(&sql)
            .bind(org.to_string())
            .bind(resource.map(|r| r.to_string()).unwrap_or_default())
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

#[async_trait]
impl JobQueue for SqlStore {
    async fn claim(
        &self,
        org: OrgId,
        agent: &str,
        lease: LeaseId,
        now: OffsetDateTime,
    ) -> StoreResult<Option<Job>> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let claimed: Option<(String,)> = match sqlx::query_as(claim_sql(self.backend))
            .bind(org.to_string())
            .bind(lease.to_string())
            .bind(to_micros(queue::lease_until(now)))
            .bind(agent.to_owned())
            .bind(to_micros(now))
            .fetch_optional(&mut *tx)
            .await
        {
            Ok(row) => row,
            // Another claimer started a job of the same Resource first.
            Err(e) if super::store::is_unique_violation(&e) => return Ok(None),
            Err(e) => return Err(db_err(e)),
        };
        let Some((id,)) = claimed else {
            return Ok(None);
        };
        let job = fetch_job(&mut tx, parse_id(&id)?).await?;
        if let Some(status) = queue::resource_status_for(job.operation, JobStatus::Running) {
            set_resource_status(&mut tx, job.resource_id, status, None, now).await?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(Some(job))
    }

    async fn heartbeat(
        &self,
        job: JobId,
        lease: LeaseId,
        state_lock_id: Option<&str>,
        now: OffsetDateTime,
    ) -> StoreResult<OffsetDateTime> {
        let until = queue::lease_until(now);
        let updated = sqlx::query(
            "UPDATE jobs SET lease_expires_at = $1, state_lock_id = COALESCE($5, state_lock_id)
             WHERE id = $2 AND lease_id = $3 AND status = 'running' AND lease_expires_at >= $4",
        )
        .bind(to_micros(until))
        .bind(job.to_string())
        .bind(lease.to_string())
        .bind(to_micros(now))
        .bind(state_lock_id.map(str::to_owned))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        if updated.rows_affected() == 1 {
            Ok(until)
        } else {
            Err(StoreError::Fenced)
        }
    }

    async fn append_log(&self, job: JobId, lease: LeaseId, chunk: &str) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let row: Option<(i64, i64)> = sqlx::query_as(
            "SELECT l.bytes, l.truncated FROM job_logs l JOIN jobs j ON j.id = l.job_id
             WHERE j.id = $1 AND j.lease_id = $2 AND j.status = 'running'",
        )
        .bind(job.to_string())
        .bind(lease.to_string())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let (bytes, truncated) = row.ok_or(StoreError::Fenced)?;
        let (taken, now_truncated) =
            queue::log_append(usize::try_from(bytes).unwrap_or(usize::MAX), truncated != 0, chunk);
        if taken.is_empty() && !now_truncated {
            return tx.commit().await.map_err(db_err);
        }
        let mut text = taken.to_owned();
        if now_truncated {
            text.push_str(queue::TRUNCATION_MARKER);
        }
        sqlx::query("UPDATE job_logs SET content = content || $1, bytes = bytes + $2, truncated = $3 WHERE job_id = $4")
            .bind(text)
            .bind(i64::try_from(taken.len()).unwrap_or(i64::MAX))
            .bind(i64::from(now_truncated || truncated != 0))
            .bind(job.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)
    }

    async fn finish(
        &self,
        job: JobId,
        lease: LeaseId,
        outcome: JobOutcome,
        now: OffsetDateTime,
    ) -> StoreResult<Job> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let held = leased_job(&mut tx, job, lease, now).await?;
        let (status, reason, outputs) = match outcome {
            JobOutcome::Completed { outputs } => (JobStatus::Completed, None, Some(outputs)),
            JobOutcome::Failed { reason, retryable } => {
                (queue::after_failure(held.attempts, held.max_attempts, retryable), Some(reason), None)
            }
        };
        let finished = (status != JobStatus::Queued).then_some(to_micros(now));
        sqlx::query(
            "UPDATE jobs SET status = $1, reason = $2, finished_at = $3, lease_id = NULL, lease_expires_at = NULL WHERE id = $4",
        )
        .bind(status.as_str())
        .bind(reason.clone())
        .bind(finished)
        .bind(job.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if let Some(resource_status) = queue::resource_status_for(held.operation, status) {
            settle_resource_status(&mut tx, held.resource_id, resource_status, reason.as_deref(), now)
                .await?;
        }
        if let (Some(outputs), JobOperation::Apply | JobOperation::Import) = (outputs, held.operation) {
            sqlx::query("UPDATE resources SET outputs = $1 WHERE id = $2")
                .bind(json_text(&outputs)?)
                .bind(held.resource_id.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        let job = fetch_job(&mut tx, job).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(job)
    }

    async fn reap(&self, now: OffsetDateTime) -> StoreResult<Vec<(JobId, ReapDecision)>> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let expired: Vec<(String,)> = sqlx::query_as(expired_sql(self.backend))
            .bind(to_micros(now))
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
        let mut decisions = Vec::with_capacity(expired.len());
        for (id,) in expired {
            let job = fetch_job(&mut tx, parse_id(&id)?).await?;
            let expired_at = job.lease_expires_at.unwrap_or(now);
            let decision = queue::reap_decision(job.attempts, job.max_attempts, expired_at);
            let (status, reason) = match &decision {
                ReapDecision::Requeue => (JobStatus::Queued, None),
                ReapDecision::Fail(reason) => (JobStatus::Failed, Some(reason.clone())),
            };
            sqlx::query(
                "UPDATE jobs SET status = $1, reason = $2, finished_at = $3, lease_id = NULL, lease_expires_at = NULL WHERE id = $4",
            )
            .bind(status.as_str())
            .bind(reason.clone())
            .bind((status == JobStatus::Failed).then_some(to_micros(now)))
            .bind(id.clone())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            if let Some(resource_status) = queue::resource_status_for(job.operation, status) {
                settle_resource_status(&mut tx, job.resource_id, resource_status, reason.as_deref(), now)
                    .await?;
            }
            decisions.push((job.id, decision));
        }
        tx.commit().await.map_err(db_err)?;
        Ok(decisions)
    }
}
