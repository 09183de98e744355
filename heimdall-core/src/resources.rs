//! The Resource lifecycle as planners: each request (create, change,
//! upgrade, approve, refuse, retry, delete, abandon) is a pure function over the loaded
//! Resource, its revisions and jobs, returning a [`ResourcePlan`] that the
//! store applies in one transaction, or the error that refuses it before
//! anything is written. [`settle`] decides where a Resource stands after a
//! job ends; the store calls it inside the transaction that ends the job.
//!
//! ```text
//!  create ─▶ pending_approval (plan job) ─approve the plan─▶ queued ─claim─▶ applying ─▶ provisioned
//!     │            └─refuse─▶ refused (or back to what the last job left)   └─▶ failed ─retry─▶ queued
//!     └─(no approval needed)─▶ queued
//!  delete ─▶ deleting ─▶ deleted          (deleted at once if nothing ever ran)
//! ```
//!
//! Each revision names the schema version it was requested on, and every
//! job of a revision runs that version's module under its rules: the
//! planners take the schema versions the Resource's revisions name
//! ([`schema_of`]), never "the Resource's schema".
//!
//! Time, the actor, the resolved account and fresh ids are arguments, so a
//! test drives every transition with a fake clock.

use serde_json::{json, Value};
use time::OffsetDateTime;

use crate::approval::{self, PendingRequest, Verdict};
use crate::audit::AuditAction;
use crate::error::{ApiError, ErrorCode};
use crate::ids::{CatalogId, JobId, OrgId, ResourceId};
use crate::infra::{
    state_key, AccountRef, CloudAccount, Job, JobOperation, JobRequest, JobStatus, Resource, ResourceSchema,
    ResourceStatus, Revision, RevisionState,
};
use crate::input::{effective_input, revision_hash, secret_references, InputSchema};
use crate::names::{validate_name, validate_region, validate_text};
use crate::queue::{self, MAX_ATTEMPTS};
use crate::runner::check_input_keys;

/// Where a Resource sits, by name: the environment picks the schema's
/// defaults, and all three name the place when no account is linked.
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    pub environment: &'a str,
    pub system: &'a str,
    pub domain: &'a str,
}

/// Who asks, when, where, and what the adapter resolved for the plan.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// Recorded as `requested_by` / `decided_by`.
    pub actor: &'a str,
    /// The member a queued job acts for: the secrets it uses (a static
    /// credential, secret inputs) are decided as her reads
    /// (`on_behalf::may_use`), by the API now and by the Agent at the run.
    /// `None` for the drift schedule with no earlier job to take it from.
    pub requester: Option<&'a crate::on_behalf::OnBehalfOf>,
    pub now: OffsetDateTime,
    pub place: Place<'a>,
    /// The account the placement resolves to (`accounts::resolve_account`);
    /// `None` when nothing is linked. Plans that queue a job refuse
    /// `NO_CLOUD_ACCOUNT` without one.
    pub account: Option<&'a CloudAccount>,
    /// The id a job queued by this plan gets.
    pub job_id: JobId,
}

/// A new Resource as requested.
#[derive(Clone, Debug)]
pub struct NewResource<'a> {
    pub id: ResourceId,
    pub org_id: OrgId,
    pub name: String,
    pub component_id: CatalogId,
    pub environment_id: CatalogId,
    pub schema: &'a ResourceSchema,
    pub input: Value,
    pub region: Option<String>,
    /// Objects created outside Heimdall that its first apply imports
    /// (`heimdall resource import`); empty for a plain create.
    pub imports: Vec<crate::infra::ImportTarget>,
}

/// A requested change: new input, and a region if it moves.
#[derive(Clone, Debug)]
pub struct Change {
    pub input: Value,
    pub region: Option<String>,
}

/// A requested move to another version of the Resource's schema type.
#[derive(Clone, Copy, Debug)]
pub struct Upgrade<'a> {
    /// The version to move to.
    pub to: &'a ResourceSchema,
    /// The input under that version; `None` keeps the current revision's
    /// (its requested input: the new version's defaults apply).
    pub input: Option<&'a Value>,
    /// Consent to move to an older version, whose module may not read
    /// the state a newer one wrote.
    pub allow_downgrade: bool,
}

/// A decision on the pending revision, naming the revision (and, to
/// approve, the plan) the approver read.
#[derive(Clone, Debug)]
pub struct DecisionRequest {
    pub revision: i64,
    /// The plan's SHA-256 (or its first 12 hex digits or more): an
    /// approval names the plan it approves (`plan::check_named`).
    pub plan: Option<String>,
    pub reason: Option<String>,
}

/// A decision the store records on a pending revision; refused with
/// `STALE_REVISION` if it is no longer pending when the plan is applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub revision: i64,
    pub state: RevisionState,
    pub decided_by: String,
    pub decided_at: OffsetDateTime,
    pub reason: Option<String>,
}

/// How the Resource's status moves when the plan is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusUpdate {
    /// Exactly this status.
    Set(ResourceStatus),
    /// This status unless the Resource waits on something else: the store
    /// reads its running or queued job and pending revision in the same
    /// transaction and calls [`settle`].
    Settle(ResourceStatus),
}

/// The audit event a plan writes with it; the adapter adds id and actor.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedEvent {
    pub action: AuditAction,
    pub detail: Value,
}

/// Everything one request changes, applied all or nothing, in this order:
/// insert `create` (or check `expected_revision`), record `decision`,
/// supersede pending revisions, cancel queued applies, insert `revision`,
/// insert `job`, move the status, write the event.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourcePlan {
    pub resource: ResourceId,
    /// A Resource to insert (create only).
    pub create: Option<Resource>,
    /// Refuse with `STALE_REVISION` unless the Resource is still at this
    /// revision: another change landed since the caller read it.
    pub expected_revision: Option<i64>,
    pub decision: Option<Decision>,
    /// Mark every revision still pending approval `superseded`.
    pub supersede_pending: bool,
    /// Cancel this Resource's applies no Agent has claimed yet, with this reason.
    pub cancel_queued_applies: Option<String>,
    /// A new revision, which becomes the Resource's current one (and its region).
    pub revision: Option<Revision>,
    pub job: Option<Job>,
    pub status: StatusUpdate,
    pub at: OffsetDateTime,
    pub event: PlannedEvent,
}

impl ResourcePlan {
    fn new(resource: ResourceId, status: StatusUpdate, at: OffsetDateTime, event: PlannedEvent) -> Self {
        Self {
            resource,
            create: None,
            expected_revision: None,
            decision: None,
            supersede_pending: false,
            cancel_queued_applies: None,
            revision: None,
            job: None,
            status,
            at,
            event,
        }
    }
}

impl ResourcePlan {
    /// The plan's event, about its Resource.
    pub fn event_plan(&self) -> crate::audit::EventPlan {
        crate::audit::EventPlan {
            action: self.event.action,
            target: format!("resource:{}", self.resource),
            detail: self.event.detail.clone(),
        }
    }
}

fn event(action: AuditAction, detail: Value) -> PlannedEvent {
    PlannedEvent { action, detail }
}

/// Requests a new Resource: validated in full against its schema, and
/// refused unless an account resolves, even when it will wait for
/// approval (better now than after someone approved it).
pub fn create(new: NewResource<'_>, ctx: &Context<'_>) -> Result<ResourcePlan, ApiError> {
    validate_name("name", &new.name)?;
    crate::schemas::check_requestable(new.schema)?;
    check_region(new.region.as_deref())?;
    let schema = new.schema;
    let effective = validated_input(schema, ctx.place.environment, &new.input)?;
    let status = waiting_status(schema);
    let resource = Resource {
        id: new.id,
        org_id: new.org_id,
        name: new.name,
        component_id: new.component_id,
        environment_id: new.environment_id,
        schema_id: schema.id,
        region: new.region.clone(),
        status,
        revision: 1,
        reason: None,
        outputs: json!({}),
        drifted_at: None,
        created_at: ctx.now,
        created_by: ctx.actor.to_owned(),
        updated_at: ctx.now,
    };
    crate::import::check_targets(&new.imports)?;
    let mut revision = requested_revision(&resource, 1, new.input, effective, new.region, schema, ctx);
    revision.imports = new.imports;
    let job = job_for(&resource, schema, &revision, JobOperation::Apply, ctx)?;
    let action = if revision.imports.is_empty() {
        AuditAction::ResourceCreated
    } else {
        AuditAction::ResourceImportRequested
    };
    let mut detail =
        json!({ "name": resource.name, "revision": 1, "hash": revision.hash, "status": resource.status });
    if !revision.imports.is_empty() {
        detail["imports"] = json!(revision.imports);
    }
    let mut plan = ResourcePlan::new(resource.id, StatusUpdate::Set(status), ctx.now, event(action, detail));
    plan.job = Some(if schema.requires_approval { planned(job) } else { job });
    plan.revision = Some(revision);
    plan.create = Some(resource);
    Ok(plan)
}

/// A new revision of a Resource that is not being deleted, on the schema
/// version of its current revision ([`current_revision`]). It supersedes
/// any pending revision; if it needs no approval it also cancels the
/// applies still queued and queues its own. A change that waits for
/// approval leaves an approved apply queued: that is still what was
/// approved, until the change is.
pub fn change(
    resource: &Resource,
    revisions: &[Revision],
    schemas: &[ResourceSchema],
    change: Change,
    ctx: &Context<'_>,
) -> Result<ResourcePlan, ApiError> {
    refuse_if_gone(resource)?;
    let schema = schema_of(schemas, current_revision(revisions)?)?;
    new_revision(resource, schema, change, ctx, AuditAction::ResourceChanged, json!({}))
}

/// A new revision on another version of the Resource's schema type: the
/// module moves under the existing state (Terraform plans an update, not
/// a recreate, wherever the module allows). The input is validated in
/// full against the new version. Refused (`CONFLICT`) to a deprecated
/// version, to the version it is on, and to an older one without
/// `allow_downgrade`; `INVALID_INPUT` for another type. Otherwise as
/// [`change`]: approval follows the new version's rule.
pub fn upgrade(
    resource: &Resource,
    revisions: &[Revision],
    schemas: &[ResourceSchema],
    upgrade: Upgrade<'_>,
    ctx: &Context<'_>,
) -> Result<ResourcePlan, ApiError> {
    refuse_if_gone(resource)?;
    let current = current_revision(revisions)?;
    let from = schema_of(schemas, current)?;
    let to = upgrade.to;
    check_upgrade(from, to, upgrade.allow_downgrade)?;
    let input = upgrade.input.cloned().unwrap_or_else(|| current.input.clone());
    let detail = json!({ "from_version": from.version, "to_version": to.version, "schema": to.id });
    new_revision(resource, to, Change { input, region: None }, ctx, AuditAction::ResourceUpgraded, detail)
}

/// Whether a Resource on `from` may move to `to` (see [`upgrade`]).
pub fn check_upgrade(
    from: &ResourceSchema,
    to: &ResourceSchema,
    allow_downgrade: bool,
) -> Result<(), ApiError> {
    if to.type_name != from.type_name {
        return Err(ApiError::invalid_input(format!(
            "the Resource is a {}; schema {} is a {}: a Resource moves between versions of its own type only",
            from.type_name, to.id, to.type_name
        )));
    }
    if to.deleted_at.is_some() {
        return Err(ApiError::not_found("schema"));
    }
    crate::schemas::check_requestable(to)?;
    if to.version == from.version {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "the Resource is on {} version {} already: `resource update` changes its input",
                to.type_name, to.version
            ),
        ));
    }
    if to.version < from.version && !allow_downgrade {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "version {} is older than version {} the Resource is on, and an older module may not read the state a newer one wrote: pass --allow-downgrade to move anyway",
                to.version, from.version
            ),
        ));
    }
    Ok(())
}

/// The plan of a new revision on `schema` (a change or an upgrade).
fn new_revision(
    resource: &Resource,
    schema: &ResourceSchema,
    change: Change,
    ctx: &Context<'_>,
    action: AuditAction,
    mut detail: Value,
) -> Result<ResourcePlan, ApiError> {
    check_region(change.region.as_deref())?;
    let effective = validated_input(schema, ctx.place.environment, &change.input)?;
    let number = resource.revision + 1;
    let region = change.region.or_else(|| resource.region.clone());
    let revision = requested_revision(resource, number, change.input, effective, region, schema, ctx);
    let job = job_for(resource, schema, &revision, JobOperation::Apply, ctx)?;
    let status = waiting_status(schema);
    detail["revision"] = json!(number);
    detail["hash"] = json!(revision.hash);
    detail["status"] = json!(status);
    let mut plan = ResourcePlan::new(resource.id, StatusUpdate::Set(status), ctx.now, event(action, detail));
    plan.expected_revision = Some(resource.revision);
    plan.supersede_pending = true;
    if schema.requires_approval {
        plan.job = Some(planned(job));
    } else {
        plan.cancel_queued_applies = Some(superseded_by(number));
        plan.job = Some(job);
    }
    plan.revision = Some(revision);
    Ok(plan)
}

/// `job` as the plan job of a revision that waits for approval: it saves
/// the plan the approver reads (`crate::plan`), and applies nothing.
fn planned(mut job: Job) -> Job {
    job.operation = JobOperation::Plan;
    job.request.operation = JobOperation::Plan;
    job.request.plan_key = Some(crate::plan::plan_key(job.resource_id));
    job
}

/// Approves the pending revision (`approval::decide` checks who and which;
/// `plan::check_named` that the approver names the revision's plan) and
/// queues the apply of exactly that plan, cancelling older applies still
/// queued: the newest approved revision wins.
pub fn approve(
    resource: &Resource,
    schemas: &[ResourceSchema],
    revisions: &[Revision],
    request: DecisionRequest,
    ctx: &Context<'_>,
) -> Result<ResourcePlan, ApiError> {
    let decision = decision(revisions, &request, Verdict::Approve, ctx)?;
    let revision = numbered(revisions, request.revision)?;
    let schema = schema_of(schemas, revision)?;
    let mut job = job_for(resource, schema, revision, JobOperation::Apply, ctx)?;
    let mut detail = json!({ "revision": request.revision, "reason": request.reason });
    if schema.requires_approval {
        let approved =
            crate::plan::check_named(revision.number, revision.plan.as_ref(), request.plan.as_deref())?;
        job.request.plan_key = Some(crate::plan::plan_key(resource.id));
        job.request.plan_sha256 = Some(approved.sha256.clone());
        detail["plan"] = json!(approved.sha256);
    }
    let mut plan = ResourcePlan::new(
        resource.id,
        StatusUpdate::Set(ResourceStatus::Queued),
        ctx.now,
        event(AuditAction::ResourceApproved, detail),
    );
    plan.cancel_queued_applies = Some(superseded_by(request.revision));
    plan.job = Some(job);
    plan.decision = Some(decision);
    Ok(plan)
}

/// Refuses the pending revision. A refused change leaves the Resource as
/// its last finished job left it; a refused create leaves it `refused`.
pub fn refuse(
    resource: &Resource,
    revisions: &[Revision],
    jobs: &[Job],
    request: DecisionRequest,
    ctx: &Context<'_>,
) -> Result<ResourcePlan, ApiError> {
    let decision = decision(revisions, &request, Verdict::Refuse, ctx)?;
    let detail = json!({ "revision": request.revision, "reason": request.reason });
    let mut plan = ResourcePlan::new(
        resource.id,
        StatusUpdate::Settle(status_after_refusal(jobs)),
        ctx.now,
        event(AuditAction::ResourceRefused, detail),
    );
    plan.decision = Some(decision);
    Ok(plan)
}

/// Queues the failed operation again, for the newest approved revision.
pub fn retry(
    resource: &Resource,
    schemas: &[ResourceSchema],
    revisions: &[Revision],
    jobs: &[Job],
    ctx: &Context<'_>,
) -> Result<ResourcePlan, ApiError> {
    // A drift check is no Resource operation to repeat.
    let last = jobs.iter().rev().find(|j| j.operation != JobOperation::DriftCheck);
    if let Some(failed_plan) =
        last.filter(|j| j.operation == JobOperation::Plan && j.status == JobStatus::Failed)
    {
        return replan_pending(resource, schemas, revisions, failed_plan, ctx);
    }
    if resource.status != ResourceStatus::Failed {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("only a failed Resource can be retried; this one is {}", resource.status),
        ));
    }
    let operation = last.map_or(JobOperation::Apply, |j| j.operation);
    let revision = last_approved(revisions)
        .ok_or_else(|| ApiError::new(ErrorCode::Conflict, "no approved revision to retry"))?;
    let job = job_for(resource, schema_of(schemas, revision)?, revision, operation, ctx)?;
    let status = match operation {
        JobOperation::Destroy => ResourceStatus::Deleting,
        JobOperation::Apply | JobOperation::Import | JobOperation::DriftCheck | JobOperation::Plan => {
            ResourceStatus::Queued
        }
    };
    let detail = json!({ "operation": operation, "revision": revision.number });
    let mut plan = ResourcePlan::new(
        resource.id,
        StatusUpdate::Set(status),
        ctx.now,
        event(AuditAction::ResourceRetried, detail),
    );
    if operation == JobOperation::Destroy {
        cancel_for_delete(&mut plan);
    }
    plan.job = Some(job);
    Ok(plan)
}

/// Plans the revision waiting for approval again, after its plan job failed.
fn replan_pending(
    resource: &Resource,
    schemas: &[ResourceSchema],
    revisions: &[Revision],
    failed: &Job,
    ctx: &Context<'_>,
) -> Result<ResourcePlan, ApiError> {
    let pending = revisions
        .iter()
        .rev()
        .find(|r| r.state == RevisionState::PendingApproval && r.number == failed.request.revision)
        .ok_or_else(|| {
            ApiError::new(ErrorCode::Conflict, "the revision that plan was for no longer waits for approval")
        })?;
    let job = planned(job_for(resource, schema_of(schemas, pending)?, pending, JobOperation::Apply, ctx)?);
    let detail = json!({ "operation": JobOperation::Plan, "revision": pending.number });
    let mut plan = ResourcePlan::new(
        resource.id,
        StatusUpdate::Set(ResourceStatus::PendingApproval),
        ctx.now,
        event(AuditAction::ResourceRetried, detail),
    );
    plan.job = Some(job);
    Ok(plan)
}

/// Deletes a Resource: queues a destroy if anything was ever applied,
/// else marks it deleted at once. Either way queued applies are cancelled
/// and pending revisions superseded. `None`: it is already deleting or
/// deleted, and there is nothing to do.
pub fn delete(
    resource: &Resource,
    schemas: &[ResourceSchema],
    revisions: &[Revision],
    jobs: &[Job],
    ctx: &Context<'_>,
) -> Result<Option<ResourcePlan>, ApiError> {
    if is_gone(resource) {
        return Ok(None);
    }
    let detail = json!({ "name": resource.name });
    let ever_ran = jobs.iter().any(|j| j.attempts > 0);
    if !ever_ran {
        // Nothing was ever applied: there is nothing to destroy.
        let mut plan = ResourcePlan::new(
            resource.id,
            StatusUpdate::Set(ResourceStatus::Deleted),
            ctx.now,
            event(AuditAction::ResourceDeleted, detail),
        );
        cancel_for_delete(&mut plan);
        return Ok(Some(plan));
    }
    let revision = last_approved(revisions)
        .ok_or_else(|| ApiError::new(ErrorCode::Internal, "a Resource that ran has no approved revision"))?;
    let job = job_for(resource, schema_of(schemas, revision)?, revision, JobOperation::Destroy, ctx)?;
    let mut plan = ResourcePlan::new(
        resource.id,
        StatusUpdate::Set(ResourceStatus::Deleting),
        ctx.now,
        event(AuditAction::ResourceDeleted, detail),
    );
    cancel_for_delete(&mut plan);
    plan.job = Some(job);
    Ok(Some(plan))
}

/// Stops managing a Resource without destroying anything: its queued
/// applies are cancelled and pending revisions superseded, no job is
/// queued, and it stays listed as `abandoned` with its history. Its state
/// stays in the account's store; `resource import` (a new Resource) or
/// `terraform export` takes it up again. Refused while a job runs on it:
/// that job's end would decide its status again.
pub fn abandon(resource: &Resource, jobs: &[Job], ctx: &Context<'_>) -> Result<ResourcePlan, ApiError> {
    refuse_if_gone(resource)?;
    if let Some(running) = jobs.iter().find(|j| j.status == JobStatus::Running) {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "job {} ({}) is running on this Resource: abandon it once it ends",
                running.id, running.operation
            ),
        ));
    }
    let detail = json!({ "name": resource.name, "revision": resource.revision });
    let mut plan = ResourcePlan::new(
        resource.id,
        StatusUpdate::Set(ResourceStatus::Abandoned),
        ctx.now,
        event(AuditAction::ResourceAbandoned, detail),
    );
    plan.cancel_queued_applies = Some("cancelled: the Resource was abandoned".to_owned());
    plan.supersede_pending = true;
    Ok(plan)
}

/// Where a Resource stands once `fallback` (what its last job or decision
/// says) meets what it still waits on: a running job, else the oldest
/// queued one (`waiting_on`), shows that job's state; else a revision
/// pending approval shows `pending_approval`, unless the Resource is gone.
pub fn settle(
    fallback: ResourceStatus,
    waiting_on: Option<(JobOperation, JobStatus)>,
    pending_approval: bool,
) -> ResourceStatus {
    if let Some(status) =
        waiting_on.and_then(|(operation, status)| queue::resource_status_for(operation, status))
    {
        return status;
    }
    if pending_approval && fallback != ResourceStatus::Deleted {
        return ResourceStatus::PendingApproval;
    }
    fallback
}

/// Queues a drift check: a plan of the applied revision against what
/// exists, never applied (`drift::check_allowed` says when). The status
/// stays; the result marks the Resource (`drift::after`).
pub fn drift_check(
    resource: &Resource,
    schemas: &[ResourceSchema],
    revisions: &[Revision],
    jobs: &[Job],
    ctx: &Context<'_>,
) -> Result<ResourcePlan, ApiError> {
    crate::drift::check_allowed(resource, jobs)?;
    let revision = numbered(revisions, resource.revision)?;
    let job = job_for(resource, schema_of(schemas, revision)?, revision, JobOperation::DriftCheck, ctx)?;
    let detail = json!({ "revision": revision.number, "job": job.id });
    let mut plan = ResourcePlan::new(
        resource.id,
        StatusUpdate::Set(resource.status),
        ctx.now,
        event(AuditAction::ResourceDriftCheckRequested, detail),
    );
    plan.job = Some(job);
    Ok(plan)
}

/// The job that applies (or destroys) `revision`, with everything the
/// Agent needs frozen now. Applying a revision that names objects to
/// import is an `import` job. Refused `NO_CLOUD_ACCOUNT` when none resolved.
pub fn job_for(
    resource: &Resource,
    schema: &ResourceSchema,
    revision: &Revision,
    operation: JobOperation,
    ctx: &Context<'_>,
) -> Result<Job, ApiError> {
    let Some(account) = ctx.account else {
        let Place { environment, system, domain } = ctx.place;
        return Err(ApiError::new(
            ErrorCode::NoCloudAccount,
            format!(
                "no cloud account is linked for environment {environment} to system {system}, domain {domain} or the organization"
            ),
        ));
    };
    let operation = match operation {
        JobOperation::Apply | JobOperation::Import if !revision.imports.is_empty() => JobOperation::Import,
        JobOperation::Import => JobOperation::Apply,
        other => other,
    };
    Ok(Job {
        id: ctx.job_id,
        org_id: resource.org_id,
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
            schema_type: Some(schema.type_name.clone()),
            account: AccountRef {
                id: account.id,
                provider: account.provider,
                region: account.region.clone(),
                state_bucket: account.state_bucket.clone(),
                state_endpoint: account.state_endpoint.clone(),
                state_backend: account.state_backend,
                state_storage_account: account.state_storage_account.clone(),
                auth: account.auth.clone(),
            },
            environment_id: Some(resource.environment_id),
            environment: Some(ctx.place.environment.to_owned()),
            secret_inputs: secret_references(&schema.input_schema, &revision.effective_input)?,
            imports: if operation == JobOperation::Import { revision.imports.clone() } else { Vec::new() },
            region: revision.region.clone().unwrap_or_else(|| account.region.clone()),
            state_key: state_key(resource.id),
            plan_key: None,
            plan_sha256: None,
            requested_by: ctx.requester.cloned(),
        },
        queued_at: ctx.now,
        started_at: None,
        finished_at: None,
        lease_expires_at: None,
        agent: None,
        state_lock_id: None,
    })
}

/// The revision a change builds on: the newest approved one (what is
/// applied, or queued to be), else the newest (a create awaiting
/// approval). A pending upgrade is not it: a change supersedes it.
pub fn current_revision(revisions: &[Revision]) -> Result<&Revision, ApiError> {
    last_approved(revisions)
        .or_else(|| revisions.last())
        .ok_or_else(|| ApiError::new(ErrorCode::Internal, "a Resource without revisions"))
}

/// The schema version `revision` was requested on, among those the
/// adapter loaded for the Resource's revisions.
pub fn schema_of<'s>(
    schemas: &'s [ResourceSchema],
    revision: &Revision,
) -> Result<&'s ResourceSchema, ApiError> {
    schemas.iter().find(|s| s.id == revision.schema_id).ok_or_else(|| {
        ApiError::new(
            ErrorCode::Internal,
            format!("the schema of revision {} was not loaded", revision.number),
        )
    })
}

/// Revision `number` of the Resource, else `NOT_FOUND`.
fn numbered(revisions: &[Revision], number: i64) -> Result<&Revision, ApiError> {
    revisions.iter().find(|r| r.number == number).ok_or_else(|| ApiError::not_found("revision"))
}

fn check_region(region: Option<&str>) -> Result<(), ApiError> {
    region.map_or(Ok(()), validate_region)
}

/// Outdated: still managed, on a version older than the one its type
/// name means now (`resource list --outdated`; `resource upgrade` moves
/// it). `schemas` are the organization's versions not deleted.
pub fn is_outdated(resource: &Resource, schemas: &[ResourceSchema]) -> bool {
    !is_gone(resource)
        && schemas
            .iter()
            .find(|s| s.id == resource.schema_id)
            .is_some_and(|on| crate::schemas::newer_version(schemas, on).is_some())
}

fn is_gone(resource: &Resource) -> bool {
    matches!(resource.status, ResourceStatus::Deleting | ResourceStatus::Deleted | ResourceStatus::Abandoned)
}

fn refuse_if_gone(resource: &Resource) -> Result<(), ApiError> {
    if is_gone(resource) {
        return Err(ApiError::new(ErrorCode::Conflict, format!("the Resource is {}", resource.status)));
    }
    Ok(())
}

/// What a new request waits for: approval, or an Agent.
fn waiting_status(schema: &ResourceSchema) -> ResourceStatus {
    if schema.requires_approval {
        ResourceStatus::PendingApproval
    } else {
        ResourceStatus::Queued
    }
}

fn superseded_by(revision: i64) -> String {
    format!("superseded by revision {revision}")
}

fn cancel_for_delete(plan: &mut ResourcePlan) {
    plan.cancel_queued_applies = Some("cancelled by delete".to_owned());
    plan.supersede_pending = true;
}

/// The effective input (defaults for the environment, overlaid by the
/// input), validated against the schema in full; errors name fields and
/// rules only, never values. Each key must also be a module argument the
/// Agent will pass (`runner::check_input_keys`).
fn validated_input(schema: &ResourceSchema, environment: &str, input: &Value) -> Result<Value, ApiError> {
    let effective = effective_input(&schema.defaults, environment, input);
    InputSchema::compile(&schema.input_schema)?.validate(&effective)?;
    check_input_keys(&effective)?;
    Ok(effective)
}

/// A new revision as requested, before anyone decided on it.
fn requested_revision(
    resource: &Resource,
    number: i64,
    input: Value,
    effective_input: Value,
    region: Option<String>,
    schema: &ResourceSchema,
    ctx: &Context<'_>,
) -> Revision {
    Revision {
        resource_id: resource.id,
        number,
        schema_id: schema.id,
        schema_version: schema.version,
        hash: revision_hash(&effective_input, region.as_deref()),
        input,
        effective_input,
        region,
        imports: Vec::new(),
        plan: None,
        state: approval::initial_state(schema.requires_approval),
        requested_by: ctx.actor.to_owned(),
        requested_at: ctx.now,
        decided_by: None,
        decided_at: None,
        decision_reason: None,
    }
}

fn decision(
    revisions: &[Revision],
    request: &DecisionRequest,
    verdict: Verdict,
    ctx: &Context<'_>,
) -> Result<Decision, ApiError> {
    if let Some(reason) = &request.reason {
        validate_text("reason", reason, 1000)?;
    }
    let pending = pending_of(revisions);
    let state = approval::decide(pending.as_ref(), ctx.actor, request.revision, verdict, ctx.now)?;
    Ok(Decision {
        revision: request.revision,
        state,
        decided_by: ctx.actor.to_owned(),
        decided_at: ctx.now,
        reason: request.reason.clone(),
    })
}

/// The revision waiting for a decision, if any.
fn pending_of(revisions: &[Revision]) -> Option<PendingRequest> {
    revisions.iter().rev().find(|r| r.state == RevisionState::PendingApproval).map(|r| PendingRequest {
        revision: r.number,
        requested_by: r.requested_by.clone(),
        requested_at: r.requested_at,
    })
}

fn last_approved(revisions: &[Revision]) -> Option<&Revision> {
    revisions.iter().rev().find(|r| matches!(r.state, RevisionState::Approved | RevisionState::NotRequired))
}

fn status_after_refusal(jobs: &[Job]) -> ResourceStatus {
    // A plan changed nothing that exists.
    let last = jobs.iter().rev().find(|j| {
        j.operation != JobOperation::Plan && matches!(j.status, JobStatus::Completed | JobStatus::Failed)
    });
    match last.map(|j| (j.operation, j.status)) {
        Some((_, JobStatus::Failed)) => ResourceStatus::Failed,
        Some((JobOperation::Destroy, _)) => ResourceStatus::Deleted,
        Some(_) => ResourceStatus::Provisioned,
        None => ResourceStatus::Refused,
    }
}

#[cfg(test)]
mod tests;

pub mod jobs;
pub mod service;

/// Where the next page of `resource list` starts: after this Resource, in
/// the list's order (created, then id).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceCursor {
    /// Microseconds since the epoch.
    pub created_at: i64,
    pub id: crate::ids::ResourceId,
}

impl ResourceCursor {
    pub fn after(resource: &crate::infra::Resource) -> Self {
        let micros = resource.created_at.unix_timestamp_nanos() / 1000;
        Self { created_at: i64::try_from(micros).unwrap_or(i64::MAX), id: resource.id }
    }
}
