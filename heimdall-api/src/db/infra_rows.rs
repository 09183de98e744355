//! Rows of the Infrastructure Manager's tables, and the statements that
//! both the Resource store and the job queue run inside their transactions.

use std::collections::BTreeMap;

use heimdall_core::ids::{JobId, OrgId, ResourceId};
use heimdall_core::infra::{
    AccountAuth, AccountLink, CloudAccount, Job, JobOperation, JobRequest, JobStatus, LinkScope, ModuleRef,
    Resource, ResourceSchema, ResourceStatus, Revision,
};
use heimdall_core::ports::{StoreError, StoreResult};
use heimdall_core::resources;
use sqlx::{Any, FromRow, Transaction};
use time::OffsetDateTime;

use super::sql::{db_err, from_micros, parse_id, to_micros, unique_as};

pub(super) fn json_text(value: &impl serde::Serialize) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("cannot encode JSON: {e}")))
}

pub(super) fn parse_json<T: serde::de::DeserializeOwned>(text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Backend(format!("stored JSON does not decode: {e}")))
}

pub(super) fn parse_enum<T: std::str::FromStr<Err = String>>(text: &str) -> StoreResult<T> {
    text.parse().map_err(StoreError::Backend)
}

// ---- rows --------------------------------------------------------------------

pub(super) const SCHEMA_COLUMNS: &str = "id, org_id, type_name, version, input_schema, defaults, module_source, module_version, requires_approval, created_at, created_by, drift_check_every_seconds";
/// What a schema's life adds to [`SCHEMA_COLUMNS`] when it is read.
pub(super) const SCHEMA_READ_COLUMNS: &str = "id, org_id, type_name, version, input_schema, defaults, module_source, module_version, requires_approval, created_at, created_by, drift_check_every_seconds, deprecated_at, deprecated_by, deleted_at";

#[derive(FromRow)]
pub(super) struct SchemaRow {
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
    drift_check_every_seconds: Option<i64>,
    deprecated_at: Option<i64>,
    deprecated_by: Option<String>,
    deleted_at: Option<i64>,
}

impl SchemaRow {
    /// `names`: each environment's name by id. Defaults are stored under
    /// the environment's id and read under its name as it is now; those of
    /// an environment since deleted are left out (nothing can be placed
    /// there).
    pub(super) fn into_domain(self, names: &BTreeMap<String, String>) -> StoreResult<ResourceSchema> {
        let stored: BTreeMap<String, serde_json::Value> = parse_json(&self.defaults)?;
        let defaults = stored
            .into_iter()
            .filter_map(|(id, value)| names.get(&id).map(|name| (name.clone(), value)))
            .collect();
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
            drift_check_every_seconds: self.drift_check_every_seconds,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
            deprecated_at: self.deprecated_at.map(from_micros),
            deprecated_by: self.deprecated_by,
            deleted_at: self.deleted_at.map(from_micros),
        })
    }
}

pub(super) const ACCOUNT_COLUMNS: &str =
    "id, org_id, name, provider, region, state_bucket, state_endpoint, auth, created_at, created_by, state_backend, state_storage_account, drift_check_every_seconds";

#[derive(FromRow)]
pub(super) struct AccountRow {
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
    state_backend: String,
    state_storage_account: Option<String>,
    drift_check_every_seconds: Option<i64>,
}

impl AccountRow {
    pub(super) fn into_domain(self) -> StoreResult<CloudAccount> {
        let auth: AccountAuth = parse_json(&self.auth)?;
        Ok(CloudAccount {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            name: self.name,
            provider: parse_enum(&self.provider)?,
            region: self.region,
            state_bucket: self.state_bucket,
            state_endpoint: self.state_endpoint,
            state_backend: parse_enum(&self.state_backend)?,
            state_storage_account: self.state_storage_account,
            auth,
            drift_check_every_seconds: self.drift_check_every_seconds,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
        })
    }
}

#[derive(FromRow)]
pub(super) struct LinkRow {
    account_id: String,
    scope: String,
    scope_id: String,
    environment_id: String,
    created_at: i64,
    created_by: String,
}

impl LinkRow {
    pub(super) fn into_domain(self) -> StoreResult<AccountLink> {
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

pub(super) const RESOURCE_COLUMNS: &str = "id, org_id, name, component_id, environment_id, schema_id, region, status, revision, reason, outputs, created_at, created_by, updated_at, drifted_at";

#[derive(FromRow)]
pub(super) struct ResourceRow {
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
    drifted_at: Option<i64>,
}

impl ResourceRow {
    pub(super) fn into_domain(self) -> StoreResult<Resource> {
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
            drifted_at: self.drifted_at.map(from_micros),
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
            updated_at: from_micros(self.updated_at),
        })
    }
}

pub(super) const REVISION_COLUMNS: &str = "resource_id, number, hash, input, effective_input, region, state, requested_by, requested_at, decided_by, decided_at, decision_reason, imports, plan, schema_id, schema_version";

#[derive(FromRow)]
pub(super) struct RevisionRow {
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
    imports: Option<String>,
    plan: Option<String>,
    schema_id: String,
    schema_version: i64,
}

impl RevisionRow {
    pub(super) fn into_domain(self) -> StoreResult<Revision> {
        Ok(Revision {
            resource_id: parse_id(&self.resource_id)?,
            number: self.number,
            schema_id: parse_id(&self.schema_id)?,
            schema_version: self.schema_version,
            hash: self.hash,
            input: parse_json(&self.input)?,
            effective_input: parse_json(&self.effective_input)?,
            region: self.region,
            imports: self.imports.as_deref().map(parse_json).transpose()?.unwrap_or_default(),
            plan: self.plan.as_deref().map(parse_json).transpose()?,
            state: parse_enum(&self.state)?,
            requested_by: self.requested_by,
            requested_at: from_micros(self.requested_at),
            decided_by: self.decided_by,
            decided_at: self.decided_at.map(from_micros),
            decision_reason: self.decision_reason,
        })
    }
}

pub(super) const JOB_COLUMNS: &str = "id, org_id, resource_id, operation, status, attempts, max_attempts, reason, request, queued_at, started_at, finished_at, lease_expires_at, agent, state_lock_id";

#[derive(FromRow)]
pub(super) struct JobRow {
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
    pub(super) fn into_domain(self) -> StoreResult<Job> {
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

pub(super) async fn fetch_resource(
    tx: &mut Transaction<'_, Any>,
    org: OrgId,
    id: ResourceId,
) -> StoreResult<Resource> {
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

pub(super) async fn fetch_job(tx: &mut Transaction<'_, Any>, id: JobId) -> StoreResult<Job> {
    let sql = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1");
    sqlx::query_as::<_, JobRow>(&sql)
        .bind(id.to_string())
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound("job"))?
        .into_domain()
}

pub(super) async fn insert_revision(tx: &mut Transaction<'_, Any>, rev: &Revision) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO resource_revisions (resource_id, number, hash, input, effective_input, region, state, requested_by, requested_at, imports, schema_id, schema_version)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
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
    .bind(if rev.imports.is_empty() { None } else { Some(json_text(&rev.imports)?) })
    .bind(rev.schema_id.to_string())
    .bind(rev.schema_version)
    .execute(&mut **tx)
    .await
    .map_err(unique_as("revision"))?;
    Ok(())
}

pub(super) async fn insert_job(tx: &mut Transaction<'_, Any>, job: &Job) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO jobs (id, org_id, resource_id, operation, status, attempts, max_attempts, request, queued_at, account_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
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
    .bind(job.request.account.id.to_string())
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

pub(super) async fn set_resource_status(
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

/// Moves a Resource to where `resources::settle` says it stands, given
/// `fallback` and what it still waits on, read in the same transaction.
pub(super) async fn settle_resource_status(
    tx: &mut Transaction<'_, Any>,
    resource: ResourceId,
    fallback: ResourceStatus,
    reason: Option<&str>,
    at: OffsetDateTime,
) -> StoreResult<()> {
    // A running job, else the oldest queued one.
    let next: Option<(String, String)> = sqlx::query_as(
        "SELECT operation, status FROM jobs WHERE resource_id = $1 AND status IN ('running', 'queued')
         ORDER BY CASE status WHEN 'running' THEN 0 ELSE 1 END, queued_at, id LIMIT 1",
    )
    .bind(resource.to_string())
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?;
    let waiting_on = match next {
        Some((op, status)) => Some((parse_enum::<JobOperation>(&op)?, parse_enum::<JobStatus>(&status)?)),
        None => None,
    };
    let pending: Option<(i64,)> = sqlx::query_as(
        "SELECT number FROM resource_revisions WHERE resource_id = $1 AND state = 'pending_approval' LIMIT 1",
    )
    .bind(resource.to_string())
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?;
    // The reason explains how the last job ended; one still to run has none.
    let reason = if waiting_on.is_some() { None } else { reason };
    let status = resources::settle(fallback, waiting_on, pending.is_some());
    set_resource_status(tx, resource, status, reason, at).await
}
