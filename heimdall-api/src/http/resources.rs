//! Resources: request, change, approve or refuse, retry, delete.
//!
//! Every refusal happens before anything is stored or queued: input is
//! validated against the schema in full, the cloud account must resolve,
//! and only then does one transaction write the Resource, its revision, the
//! job (if any) and the audit event.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use heimdall_core::accounts::resolve_account;
use heimdall_core::approval::{self, PendingRequest, Verdict};
use heimdall_core::authz::{resource_target, Action, CatalogTree, Target};
use heimdall_core::domain::{CatalogEntry, CatalogKind};
use heimdall_core::ids::{JobId, ResourceId};
use heimdall_core::infra::{
    state_key, AccountRef, Job, JobOperation, JobRequest, JobStatus, Resource, ResourceSchema,
    ResourceStatus, Revision, RevisionState,
};
use heimdall_core::input::{effective_input, revision_hash, InputSchema};
use heimdall_core::names::{validate_name, validate_text};
use heimdall_core::ports::{ResourceChange, ResourceFilter, RevisionDecision};
use heimdall_core::queue::MAX_ATTEMPTS;
use heimdall_core::wire::{ChangeResource, CreateResource, Decide, ResourceDetail};
use heimdall_core::{ApiError, ErrorCode};
use serde::Deserialize;
use time::OffsetDateTime;
use uuid::Uuid;

use super::accounts::validate_region;
use super::catalog::resolve as resolve_catalog;
use super::error::HttpResult;
use super::extract::{Caller, JsonBody, NoBody, QueryParams};
use super::schemas::resolve as resolve_schema;
use super::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/resources", get(list).post(create))
        .route("/v1/resources/{key}", get(show).patch(change).delete(delete))
        .route("/v1/resources/{key}/approve", post(approve))
        .route("/v1/resources/{key}/refuse", post(refuse))
        .route("/v1/resources/{key}/retry", post(retry))
}

/// Where a Resource sits: its component's system and domain, and its
/// environment. Used for authorization and account resolution.
struct Placement {
    component: CatalogEntry,
    system: CatalogEntry,
    domain: CatalogEntry,
    environment: CatalogEntry,
}

impl Placement {
    async fn of(
        state: &AppState,
        caller: &Caller,
        component: CatalogEntry,
        environment: CatalogEntry,
    ) -> Result<Self, ApiError> {
        let org = caller.org.id;
        let system_id = component
            .parent_id
            .ok_or_else(|| ApiError::new(ErrorCode::Internal, "component without system"))?;
        let system = state.store.get_catalog_entry(org, system_id).await?;
        let domain_id =
            system.parent_id.ok_or_else(|| ApiError::new(ErrorCode::Internal, "system without domain"))?;
        let domain = state.store.get_catalog_entry(org, domain_id).await?;
        Ok(Self { component, system, domain, environment })
    }

    async fn of_resource(state: &AppState, caller: &Caller, resource: &Resource) -> Result<Self, ApiError> {
        let org = caller.org.id;
        let component = state.store.get_catalog_entry(org, resource.component_id).await?;
        let environment = state.store.get_catalog_entry(org, resource.environment_id).await?;
        Self::of(state, caller, component, environment).await
    }

    fn target(&self, resource: Option<ResourceId>) -> Target {
        let tree = CatalogTree::new(
            [&self.component, &self.system, &self.domain].map(|e| (e.id, e.kind, e.parent_id)),
        );
        resource_target(resource, self.component.id, &tree)
    }

    async fn authorize(
        &self,
        state: &AppState,
        caller: &Caller,
        action: Action,
        resource: Option<ResourceId>,
    ) -> Result<(), ApiError> {
        state.authorize(caller, action, &self.target(resource), Some(&self.environment.name)).await
    }
}

/// A Resource by id, or by name among those not deleted.
pub(crate) async fn resolve(state: &AppState, caller: &Caller, key: &str) -> Result<Resource, ApiError> {
    if let Ok(id) = key.parse::<ResourceId>() {
        return Ok(state.store.get_resource(caller.org.id, id).await?);
    }
    let mut found: Vec<Resource> = state
        .store
        .find_resources_by_name(caller.org.id, key)
        .await?
        .into_iter()
        .filter(|r| r.status != ResourceStatus::Deleted)
        .collect();
    match found.len() {
        0 => Err(ApiError::not_found("resource")),
        1 => Ok(found.remove(0)),
        n => Err(ApiError::invalid_input(format!("{n} resources have that name; use the id"))),
    }
}

/// Validates the effective input against the schema; the error names
/// fields and rules only.
fn validated_input(
    schema: &ResourceSchema,
    environment: &str,
    input: &serde_json::Value,
) -> Result<serde_json::Value, ApiError> {
    let effective = effective_input(&schema.defaults, environment, input);
    InputSchema::compile(&schema.input_schema)?.validate(&effective)?;
    Ok(effective)
}

/// What a job is for: a revision of a Resource under its schema.
struct JobSubject<'a> {
    resource: &'a Resource,
    schema: &'a ResourceSchema,
    revision: &'a Revision,
}

/// The apply (or destroy) job for a revision, with the account resolved now.
async fn build_job(
    state: &AppState,
    caller: &Caller,
    placement: &Placement,
    subject: JobSubject<'_>,
    operation: JobOperation,
    now: OffsetDateTime,
) -> Result<Job, ApiError> {
    let JobSubject { resource, schema, revision } = subject;
    let links = state.store.list_links(caller.org.id).await?;
    let account_id =
        resolve_account(&links, placement.system.id, placement.domain.id, placement.environment.id)
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::NoCloudAccount,
                    format!(
                "no cloud account is linked for environment {} to system {}, domain {} or the organization",
                placement.environment.name, placement.system.name, placement.domain.name
            ),
                )
            })?;
    let account = state.store.get_account(caller.org.id, account_id).await?;
    let region = revision.region.clone().unwrap_or_else(|| account.region.clone());
    Ok(Job {
        id: JobId::from_uuid(Uuid::new_v4()),
        org_id: caller.org.id,
        resource_id: resource.id,
        operation,
        status: JobStatus::Queued,
        attempts: 0,
        max_attempts: MAX_ATTEMPTS,
        reason: None,
        request: JobRequest {
            resource_id: resource.id,
            resource_name: resource.name.clone(),
            revision: revision.number,
            operation,
            effective_input: revision.effective_input.clone(),
            module: schema.module.clone(),
            account: AccountRef {
                id: account.id,
                provider: account.provider,
                region: account.region.clone(),
                state_bucket: account.state_bucket.clone(),
                state_endpoint: account.state_endpoint.clone(),
                auth: account.auth.clone(),
            },
            region,
            state_key: state_key(resource.id),
        },
        queued_at: now,
        started_at: None,
        finished_at: None,
        lease_expires_at: None,
        agent: None,
        state_lock_id: None,
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    component: Option<String>,
    environment: Option<String>,
    status: Option<String>,
}

impl heimdall_core::body::Query for ListQuery {}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<ListQuery>,
) -> HttpResult<Json<Vec<Resource>>> {
    let decider = state.decider(&caller).await?;
    decider.require(Action::ResourceRead, &Target::organization(caller.org.id), None)?;
    let mut filter = ResourceFilter::default();
    if let Some(c) = query.component {
        filter.component = Some(resolve_catalog(&state, &caller, CatalogKind::Component, &c).await?.id);
    }
    if let Some(e) = query.environment {
        filter.environment = Some(resolve_catalog(&state, &caller, CatalogKind::Environment, &e).await?.id);
    }
    if let Some(s) = query.status {
        filter.status = Some(s.parse().map_err(|e: String| ApiError::invalid_input(format!("status {e}")))?);
    }
    let mut resources = state.store.list_resources(caller.org.id, &filter).await?;
    // Each Resource is decided in its own environment and place: a
    // `forbid` scoped to prod or to a Domain hides what it forbids.
    let (tree, environments) = placements(&state, &caller).await?;
    resources.retain(|r| {
        let env = environments.iter().find(|(id, _)| *id == r.environment_id).map_or("", |(_, n)| n.as_str());
        decider
            .decide(Action::ResourceRead, &resource_target(Some(r.id), r.component_id, &tree), Some(env))
            .is_allowed()
    });
    Ok(Json(resources))
}

/// The catalog and the environments' names, for deciding many Resources.
pub(crate) async fn placements(
    state: &AppState,
    caller: &Caller,
) -> Result<(CatalogTree, Vec<(heimdall_core::ids::CatalogId, String)>), ApiError> {
    let tree = super::catalog::tree(state, caller.org.id).await?;
    let environments = state.store.list_catalog(caller.org.id, CatalogKind::Environment, None).await?;
    Ok((tree, environments.into_iter().map(|e| (e.id, e.name)).collect()))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<ResourceDetail>> {
    let resource = resolve(&state, &caller, &key).await?;
    let placement = Placement::of_resource(&state, &caller, &resource).await?;
    placement.authorize(&state, &caller, Action::ResourceRead, Some(resource.id)).await?;
    let revisions = state.store.list_revisions(caller.org.id, resource.id).await?;
    Ok(Json(ResourceDetail { resource, revisions }))
}

fn check_region(region: Option<&String>) -> Result<(), ApiError> {
    region.map(|r| validate_region(r)).transpose().map(|_| ())
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateResource>,
) -> HttpResult<(StatusCode, Json<Resource>)> {
    validate_name("name", &body.name)?;
    check_region(body.region.as_ref())?;
    let component = resolve_catalog(&state, &caller, CatalogKind::Component, &body.component).await?;
    let environment = resolve_catalog(&state, &caller, CatalogKind::Environment, &body.environment).await?;
    let schema = resolve_schema(&state, &caller, &body.schema).await?;
    let placement = Placement::of(&state, &caller, component, environment).await?;
    placement.authorize(&state, &caller, Action::ResourceWrite, None).await?;

    let effective = validated_input(&schema, &placement.environment.name, &body.input)?;
    let now = state.clock.now();
    let resource = Resource {
        id: ResourceId::from_uuid(Uuid::new_v4()),
        org_id: caller.org.id,
        name: body.name,
        component_id: placement.component.id,
        environment_id: placement.environment.id,
        schema_id: schema.id,
        region: body.region.clone(),
        status: if schema.requires_approval {
            ResourceStatus::PendingApproval
        } else {
            ResourceStatus::Queued
        },
        revision: 1,
        reason: None,
        outputs: serde_json::json!({}),
        created_at: now,
        created_by: caller.member.email.clone(),
        updated_at: now,
    };
    let revision =
        requested_revision(&resource, 1, body.input, effective, body.region, &schema, &caller, now);
    // The account must resolve even when the request waits for approval:
    // refuse now rather than after someone approved it.
    let job = build_job(
        &state,
        &caller,
        &placement,
        JobSubject { resource: &resource, schema: &schema, revision: &revision },
        JobOperation::Apply,
        now,
    )
    .await?;
    let job = (!schema.requires_approval).then_some(job);
    let event = state.event(
        &caller,
        "resource.created",
        format!("resource:{}", resource.id),
        serde_json::json!({ "name": resource.name, "revision": 1, "hash": revision.hash, "status": resource.status }),
    );
    state.store.create_resource(&resource, &revision, job.as_ref(), event).await?;
    if job.is_some() {
        state.jobs_queued.notify_waiters();
    }
    Ok((StatusCode::CREATED, Json(resource)))
}

/// A new revision as requested, before anyone decided on it.
#[allow(clippy::too_many_arguments)] // one call site per kind of request; a struct would only rename them
fn requested_revision(
    resource: &Resource,
    number: i64,
    input: serde_json::Value,
    effective_input: serde_json::Value,
    region: Option<String>,
    schema: &ResourceSchema,
    caller: &Caller,
    now: OffsetDateTime,
) -> Revision {
    Revision {
        resource_id: resource.id,
        number,
        hash: revision_hash(&effective_input, region.as_deref()),
        input,
        effective_input,
        region,
        state: approval::initial_state(schema.requires_approval),
        requested_by: caller.member.email.clone(),
        requested_at: now,
        decided_by: None,
        decided_at: None,
        decision_reason: None,
    }
}

fn refuse_if_gone(resource: &Resource) -> Result<(), ApiError> {
    if matches!(resource.status, ResourceStatus::Deleting | ResourceStatus::Deleted) {
        return Err(ApiError::new(ErrorCode::Conflict, format!("the Resource is {}", resource.status)));
    }
    Ok(())
}

async fn change(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<ChangeResource>,
) -> HttpResult<Json<Resource>> {
    check_region(body.region.as_ref())?;
    let resource = resolve(&state, &caller, &key).await?;
    let placement = Placement::of_resource(&state, &caller, &resource).await?;
    placement.authorize(&state, &caller, Action::ResourceWrite, Some(resource.id)).await?;
    refuse_if_gone(&resource)?;
    let schema = state.store.get_schema(caller.org.id, resource.schema_id).await?;
    let effective = validated_input(&schema, &placement.environment.name, &body.input)?;
    let now = state.clock.now();
    let region = body.region.or_else(|| resource.region.clone());
    let revision = requested_revision(
        &resource,
        resource.revision + 1,
        body.input,
        effective,
        region,
        &schema,
        &caller,
        now,
    );
    let job = build_job(
        &state,
        &caller,
        &placement,
        JobSubject { resource: &resource, schema: &schema, revision: &revision },
        JobOperation::Apply,
        now,
    )
    .await?;
    let (job, status) = if schema.requires_approval {
        (None, ResourceStatus::PendingApproval)
    } else {
        (Some(job), ResourceStatus::Queued)
    };
    let event = state.event(
        &caller,
        "resource.changed",
        format!("resource:{}", resource.id),
        serde_json::json!({ "revision": revision.number, "hash": revision.hash, "status": status }),
    );
    let change =
        ResourceChange { resource: resource.id, expected_revision: resource.revision, revision, job, status };
    let changed = state.store.change_resource(caller.org.id, &change, event).await?;
    state.jobs_queued.notify_waiters();
    Ok(Json(changed))
}

/// The revision waiting for a decision, if any.
fn pending_of(revisions: &[Revision]) -> Option<PendingRequest> {
    revisions.iter().rev().find(|r| r.state == RevisionState::PendingApproval).map(|r| PendingRequest {
        revision: r.number,
        requested_by: r.requested_by.clone(),
        requested_at: r.requested_at,
    })
}

async fn decide(
    state: AppState,
    caller: Caller,
    key: String,
    body: Decide,
    verdict: Verdict,
) -> HttpResult<Json<Resource>> {
    if let Some(reason) = &body.reason {
        validate_text("reason", reason, 1000)?;
    }
    let resource = resolve(&state, &caller, &key).await?;
    let placement = Placement::of_resource(&state, &caller, &resource).await?;
    placement.authorize(&state, &caller, Action::ResourceApprove, Some(resource.id)).await?;
    let revisions = state.store.list_revisions(caller.org.id, resource.id).await?;
    let pending = pending_of(&revisions);
    let now = state.clock.now();
    let next_state = approval::decide(pending.as_ref(), &caller.member.email, body.revision, verdict, now)?;
    let (job, status) = match verdict {
        Verdict::Approve => {
            let schema = state.store.get_schema(caller.org.id, resource.schema_id).await?;
            let revision = revisions
                .iter()
                .find(|r| r.number == body.revision)
                .ok_or_else(|| ApiError::not_found("revision"))?;
            let job = build_job(
                &state,
                &caller,
                &placement,
                JobSubject { resource: &resource, schema: &schema, revision },
                JobOperation::Apply,
                now,
            )
            .await?;
            (Some(job), ResourceStatus::Queued)
        }
        Verdict::Refuse => (None, status_after_refusal(&state, &caller, &resource).await?),
    };
    let action = match verdict {
        Verdict::Approve => "resource.approved",
        Verdict::Refuse => "resource.refused",
    };
    let event = state.event(
        &caller,
        action,
        format!("resource:{}", resource.id),
        serde_json::json!({ "revision": body.revision, "reason": body.reason }),
    );
    let decision = RevisionDecision {
        resource: resource.id,
        revision: body.revision,
        state: next_state,
        decided_by: caller.member.email.clone(),
        decided_at: now,
        reason: body.reason,
        job,
        status,
    };
    let decided = state.store.decide_revision(caller.org.id, &decision, event).await?;
    state.jobs_queued.notify_waiters();
    Ok(Json(decided))
}

/// A refused change leaves the Resource as its last finished job left it;
/// a refused create leaves it `refused`.
async fn status_after_refusal(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
) -> Result<ResourceStatus, ApiError> {
    let jobs = state.store.list_jobs(caller.org.id, Some(resource.id)).await?;
    let last = jobs.iter().rev().find(|j| matches!(j.status, JobStatus::Completed | JobStatus::Failed));
    Ok(match last.map(|j| (j.operation, j.status)) {
        Some((_, JobStatus::Failed)) => ResourceStatus::Failed,
        Some((JobOperation::Destroy, _)) => ResourceStatus::Deleted,
        Some(_) => ResourceStatus::Provisioned,
        None => ResourceStatus::Refused,
    })
}

async fn approve(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<Decide>,
) -> HttpResult<Json<Resource>> {
    decide(state, caller, key, body, Verdict::Approve).await
}

async fn refuse(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<Decide>,
) -> HttpResult<Json<Resource>> {
    decide(state, caller, key, body, Verdict::Refuse).await
}

async fn retry(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    _: NoBody,
) -> HttpResult<(StatusCode, Json<Resource>)> {
    let resource = resolve(&state, &caller, &key).await?;
    let placement = Placement::of_resource(&state, &caller, &resource).await?;
    placement.authorize(&state, &caller, Action::ResourceWrite, Some(resource.id)).await?;
    if resource.status != ResourceStatus::Failed {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("only a failed Resource can be retried; this one is {}", resource.status),
        )
        .into());
    }
    let jobs = state.store.list_jobs(caller.org.id, Some(resource.id)).await?;
    let operation = jobs.last().map_or(JobOperation::Apply, |j| j.operation);
    let schema = state.store.get_schema(caller.org.id, resource.schema_id).await?;
    let revisions = state.store.list_revisions(caller.org.id, resource.id).await?;
    let revision = revisions
        .iter()
        .rev()
        .find(|r| matches!(r.state, RevisionState::Approved | RevisionState::NotRequired))
        .ok_or_else(|| ApiError::new(ErrorCode::Conflict, "no approved revision to retry"))?;
    let now = state.clock.now();
    let job = build_job(
        &state,
        &caller,
        &placement,
        JobSubject { resource: &resource, schema: &schema, revision },
        operation,
        now,
    )
    .await?;
    let status =
        if operation == JobOperation::Destroy { ResourceStatus::Deleting } else { ResourceStatus::Queued };
    let event = state.event(
        &caller,
        "resource.retried",
        format!("resource:{}", resource.id),
        serde_json::json!({ "operation": operation, "revision": revision.number }),
    );
    let queued = state.store.queue_job(caller.org.id, &job, status, event).await?;
    state.jobs_queued.notify_waiters();
    Ok((StatusCode::ACCEPTED, Json(queued)))
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<(StatusCode, Json<Resource>)> {
    let resource = resolve(&state, &caller, &key).await?;
    let placement = Placement::of_resource(&state, &caller, &resource).await?;
    placement.authorize(&state, &caller, Action::ResourceDelete, Some(resource.id)).await?;
    if matches!(resource.status, ResourceStatus::Deleting | ResourceStatus::Deleted) {
        return Ok((StatusCode::OK, Json(resource)));
    }
    let jobs = state.store.list_jobs(caller.org.id, Some(resource.id)).await?;
    let ever_ran = jobs.iter().any(|j| j.attempts > 0);
    let event = state.event(
        &caller,
        "resource.deleted",
        format!("resource:{}", resource.id),
        serde_json::json!({ "name": resource.name }),
    );
    if !ever_ran {
        // Nothing was ever applied: there is nothing to destroy.
        return Ok((
            StatusCode::OK,
            Json(state.store.mark_deleted(caller.org.id, resource.id, event).await?),
        ));
    }
    let schema = state.store.get_schema(caller.org.id, resource.schema_id).await?;
    let revisions = state.store.list_revisions(caller.org.id, resource.id).await?;
    let revision = revisions
        .iter()
        .rev()
        .find(|r| matches!(r.state, RevisionState::Approved | RevisionState::NotRequired))
        .ok_or_else(|| ApiError::new(ErrorCode::Internal, "a Resource that ran has no approved revision"))?;
    let now = state.clock.now();
    let job = build_job(
        &state,
        &caller,
        &placement,
        JobSubject { resource: &resource, schema: &schema, revision },
        JobOperation::Destroy,
        now,
    )
    .await?;
    let queued = state.store.queue_job(caller.org.id, &job, ResourceStatus::Deleting, event).await?;
    state.jobs_queued.notify_waiters();
    Ok((StatusCode::ACCEPTED, Json(queued)))
}
