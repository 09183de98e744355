//! Resources: request, change, upgrade, approve or refuse, retry, delete.
//!
//! Each handler loads what the request is about, authorizes it, asks the
//! planner in `heimdall_core::resources` what follows, and hands the plan to
//! the store, which applies it in one transaction. The planner refuses bad
//! input, a missing cloud account or a stale revision before anything is
//! written; no handler decides a status.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::accounts::resolve_account;
use heimdall_core::authz::{resource_target, Action, CatalogTree, Target};
use heimdall_core::domain::{CatalogEntry, CatalogKind};
use heimdall_core::ids::{JobId, OrgId, ResourceId};
use heimdall_core::infra::{CloudAccount, JobOperation, JobStatus, Resource, ResourceStatus};
use heimdall_core::ports::ResourceFilter;
use heimdall_core::resources::ResourceCursor;
use heimdall_core::resources::{
    self, Change, Context, DecisionRequest, NewResource, Place, ResourcePlan, Upgrade,
};
use heimdall_core::{ApiError, ErrorCode};
use heimdall_wire::{ChangeResource, CreateResource, Decide, ResourceDetail};
use serde::Deserialize;
use time::OffsetDateTime;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::catalog::resolve as resolve_catalog;
use crate::http::error::HttpResult;
use crate::http::extract::{Caller, JsonBody, NoBody, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;
use heimdall_core::schemas::service::resolve as resolve_schema;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show, change, delete))
        .routes(routes!(approve))
        .routes(routes!(refuse))
        .routes(routes!(retry))
        .routes(routes!(export))
        .routes(routes!(drift_check))
        .routes(routes!(abandon))
        .routes(routes!(upgrade))
}

errors!(ListErrors: NotFound, InvalidInput);
errors!(body CreateErrors: NotFound, AlreadyExists, SchemaViolation, NoCloudAccount, ModuleNotAllowed, NoAgent);
errors!(ShowErrors: NotFound);
errors!(ShowResourceErrors: NotFound, InvalidInput);
errors!(body ChangeErrors: NotFound, SchemaViolation, Conflict, NoCloudAccount);
errors!(body UpgradeErrors: NotFound, InvalidInput, SchemaViolation, Conflict, StaleRevision, NoCloudAccount);
errors!(DeleteErrors: NotFound, Conflict);
errors!(body DecideErrors: NotFound, SelfApproval, StaleRevision, StalePlan, Conflict);
errors!(RetryErrors: NotFound, Conflict);
errors!(DriftErrors: NotFound, Conflict, NoCloudAccount);

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
        Self::in_org(state, caller.org.id, component, environment).await
    }

    async fn in_org(
        state: &AppState,
        org: OrgId,
        component: CatalogEntry,
        environment: CatalogEntry,
    ) -> Result<Self, ApiError> {
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
        Self::of_resource_in(state, caller.org.id, resource).await
    }

    async fn of_resource_in(state: &AppState, org: OrgId, resource: &Resource) -> Result<Self, ApiError> {
        let component = state.store.get_catalog_entry(org, resource.component_id).await?;
        let environment = state.store.get_catalog_entry(org, resource.environment_id).await?;
        Self::in_org(state, org, component, environment).await
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

    /// The account linked for this place, if any (`resolve_account`).
    async fn account(&self, state: &AppState, caller: &Caller) -> Result<Option<CloudAccount>, ApiError> {
        self.account_in(state, caller.org.id).await
    }

    async fn account_in(&self, state: &AppState, org: OrgId) -> Result<Option<CloudAccount>, ApiError> {
        let links = state.store.list_links(org).await?;
        match resolve_account(&links, self.system.id, self.domain.id, self.environment.id) {
            Some(id) => Ok(Some(state.store.get_account(org, id).await?)),
            None => Ok(None),
        }
    }

    /// What a planner needs to know about this request besides the Resource.
    fn context<'a>(
        &'a self,
        caller: &'a Caller,
        account: Option<&'a CloudAccount>,
        now: OffsetDateTime,
    ) -> Context<'a> {
        self.context_as(&caller.member.email, Some(&caller.on_behalf), account, now)
    }

    fn context_as<'a>(
        &'a self,
        actor: &'a str,
        requester: Option<&'a heimdall_core::on_behalf::OnBehalfOf>,
        account: Option<&'a CloudAccount>,
        now: OffsetDateTime,
    ) -> Context<'a> {
        Context {
            actor,
            requester,
            now,
            place: Place {
                environment: &self.environment.name,
                system: &self.system.name,
                domain: &self.domain.name,
            },
            account,
            job_id: JobId::from_uuid(Uuid::new_v4()),
        }
    }
}

/// Every secret the plan's job would use (its account's static
/// credential, its secret inputs) is one the caller may read where the
/// Resource lives: the job acts on her behalf (`on_behalf::may_use`; the
/// Agent decides it again at the run). Refused before anything is stored.
async fn check_values_used(
    state: &AppState,
    caller: &Caller,
    placement: &Placement,
    plan: &ResourcePlan,
) -> Result<(), ApiError> {
    let Some(job) = &plan.job else { return Ok(()) };
    for (secret, what) in job.request.secrets_used() {
        super::secrets::check_use(state, caller, secret, &placement.environment.name)
            .await
            .map_err(|e| ApiError::new(e.code, format!("{}, named as {what}", e.message)))?;
    }
    Ok(())
}

/// The schema versions a Resource's revisions name: what its planners
/// choose from (`resources::schema_of`). Deleted versions too: a revision
/// on one still destroys with its module.
async fn revision_schemas(
    state: &AppState,
    org: OrgId,
    revisions: &[heimdall_core::infra::Revision],
) -> Result<Vec<heimdall_core::infra::ResourceSchema>, ApiError> {
    let mut schemas: Vec<heimdall_core::infra::ResourceSchema> = Vec::new();
    for revision in revisions {
        if !schemas.iter().any(|s| s.id == revision.schema_id) {
            schemas.push(state.store.get_schema(org, revision.schema_id).await?);
        }
    }
    Ok(schemas)
}

/// What a request about one Resource is decided on, loaded the same way
/// for every such handler: the Resource (by id or name), where it is, the
/// caller authorized for `action` there, then its revisions and the schema
/// versions they name. Jobs and the account are loaded by the handlers
/// whose planner takes them.
struct Loaded {
    resource: Resource,
    placement: Placement,
    revisions: Vec<heimdall_core::infra::Revision>,
    schemas: Vec<heimdall_core::infra::ResourceSchema>,
}

impl Loaded {
    async fn for_action(
        state: &AppState,
        caller: &Caller,
        key: &str,
        action: Action,
    ) -> Result<Self, ApiError> {
        let resource = resolve(state, caller, key).await?;
        let placement = Placement::of_resource(state, caller, &resource).await?;
        placement.authorize(state, caller, action, Some(resource.id)).await?;
        let revisions = state.store.list_revisions(caller.org.id, resource.id).await?;
        let schemas = revision_schemas(state, caller.org.id, &revisions).await?;
        Ok(Self { resource, placement, revisions, schemas })
    }

    async fn jobs(
        &self,
        state: &AppState,
        caller: &Caller,
    ) -> Result<Vec<heimdall_core::infra::Job>, ApiError> {
        Ok(state.store.list_jobs(caller.org.id, Some(self.resource.id)).await?)
    }
}

/// Applies a plan in one transaction, with its audit event, and wakes the
/// Agents if it queued a job.
async fn apply(state: &AppState, caller: &Caller, plan: &ResourcePlan) -> Result<Resource, ApiError> {
    apply_as(state, caller.org.id, &caller.member.email, plan).await
}

async fn apply_as(
    state: &AppState,
    org: OrgId,
    actor: &str,
    plan: &ResourcePlan,
) -> Result<Resource, ApiError> {
    let event = state.planned_event(actor, plan.event_plan());
    let resource = state.store.apply_resource_plan(org, plan, event).await?;
    if plan.job.is_some() {
        state.jobs_queued.notify_waiters();
    }
    Ok(resource)
}

/// A Resource by id, or by name among those not deleted: the managed one
/// if there is one (an abandoned Resource's name is free again), else the
/// abandoned one.
pub(crate) async fn resolve(state: &AppState, caller: &Caller, key: &str) -> Result<Resource, ApiError> {
    if let Ok(id) = key.parse::<ResourceId>() {
        return Ok(state.store.get_resource(caller.org.id, id).await?);
    }
    let named: Vec<Resource> = state
        .store
        .find_resources_by_name(caller.org.id, key)
        .await?
        .into_iter()
        .filter(|r| r.status != ResourceStatus::Deleted)
        .collect();
    let managed = |r: &Resource| r.status != ResourceStatus::Abandoned;
    let mut found: Vec<Resource> =
        if named.iter().any(managed) { named.into_iter().filter(managed).collect() } else { named };
    match found.len() {
        0 => Err(ApiError::not_found("resource")),
        1 => Ok(found.remove(0)),
        n => Err(ApiError::invalid_input(format!("{n} resources have that name; use the id"))),
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    component: Option<String>,
    environment: Option<String>,
    status: Option<String>,
    /// Only Resources of this schema type (any version).
    #[serde(rename = "type")]
    type_name: Option<String>,
    /// `true`: only Resources on an older version of their schema type
    /// than the one a new request gets (`resource upgrade` moves them).
    outdated: Option<bool>,
    /// At most this many (default 100, at most 1000).
    limit: Option<u32>,
    /// The `Heimdall-Next-After` of the previous page.
    after: Option<String>,
}

impl heimdall_wire::body::Query for ListQuery {}

#[utoipa::path(
    get,
    path = "/v1/resources",
    tag = "resources",
    operation_id = "list_resources",
    summary = "List the Resources you may read",
    description = "Infrastructure Resources, oldest first, one page at a time, optionally only those of a \
        component, an environment, a status or a schema type, or only those on an older version of their type \
        (`outdated=true`). Each Resource is decided in its own environment and place: a \
        policy's `forbid` scoped to an environment or a domain hides what it forbids.",
    params(ListQuery),
    responses((status = 200, description = "A page of Resources the caller may read, oldest first", body = Vec<heimdall_wire::schemas::Resource>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<ListQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<Resource>>)> {
    let limit = heimdall_wire::page::limit(query.limit)?;
    let after = query.after.as_deref().map(heimdall_wire::page::decode::<ResourceCursor>).transpose()?;
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
    // Each Resource is decided in its own environment and place: a
    // `forbid` scoped to prod or to a Domain hides what it forbids.
    let (tree, environments) = placements(&state, &caller).await?;
    let schemas = match (&query.type_name, query.outdated) {
        (None, None | Some(false)) => Vec::new(),
        _ => state.store.list_schemas(caller.org.id).await?,
    };
    let wanted = |r: &Resource| {
        let of_type = || {
            let schema = schemas.iter().find(|s| s.id == r.schema_id);
            query.type_name.as_ref().is_none_or(|t| schema.is_some_and(|s| s.type_name == *t))
        };
        of_type() && (query.outdated != Some(true) || heimdall_core::resources::is_outdated(r, &schemas))
    };
    let mut decisions = decider.many(Action::ResourceRead);
    let allowed = |r: &Resource| {
        if !wanted(r) {
            return false;
        }
        let env = environments.iter().find(|(id, _)| *id == r.environment_id).map_or("", |(_, n)| n.as_str());
        decisions.decide(&resource_target(Some(r.id), r.component_id, &tree), Some(env)).is_allowed()
    };
    let fetch = |after, n| {
        let (store, filter) =
            (state.store.clone(), ResourceFilter { after, limit: Some(n), ..filter.clone() });
        async move { store.list_resources(caller.org.id, &filter).await }
    };
    let (headers, resources) =
        crate::http::visible_page(limit, after, fetch, allowed, ResourceCursor::after).await?;
    Ok((headers, Json(resources)))
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

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ShowQuery {
    /// Long poll: answer once the Resource's status is no longer this one
    /// (a client following a job passes the status it last saw), or when
    /// `wait_seconds` pass.
    #[param(value_type = Option<heimdall_wire::schemas::ResourceStatus>)]
    changed_from: Option<ResourceStatus>,
    /// How long a long poll may hold the request: 1 to 30 seconds (default 20).
    wait_seconds: Option<u32>,
}

impl heimdall_wire::body::Query for ShowQuery {}

/// The most a long poll holds a request: under every proxy's idle timeout.
const MAX_WAIT_SECONDS: u32 = 30;

#[utoipa::path(
    get,
    path = "/v1/resources/{key}",
    tag = "resources",
    operation_id = "get_resource",
    summary = "Show a Resource, or wait for its status to change",
    description = "The Resource with its revisions. With `changed_from`, the answer waits (up to `wait_seconds`) \
        until the Resource's status is another one: a client following a job hears of its end at once, without polling.",
    params(("key" = String, Path, description = "An id or a name"), ShowQuery),
    responses((status = 200, description = "The Resource with its revisions (sensitive outputs shown as `<sensitive>`)", body = ResourceDetail), ShowResourceErrors),
)]
async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    QueryParams(query): QueryParams<ShowQuery>,
) -> HttpResult<Json<ResourceDetail>> {
    let wait = match (query.changed_from, query.wait_seconds) {
        (None, Some(_)) => return Err(ApiError::invalid_input("wait_seconds needs changed_from").into()),
        (_, Some(seconds)) if !(1..=MAX_WAIT_SECONDS).contains(&seconds) => {
            return Err(
                ApiError::invalid_input(format!("wait_seconds must be 1 to {MAX_WAIT_SECONDS}")).into()
            )
        }
        (Some(from), seconds) => Some((from, std::time::Duration::from_secs(seconds.unwrap_or(20).into()))),
        (None, None) => None,
    };
    let mut resource = resolve(&state, &caller, &key).await?;
    let placement = Placement::of_resource(&state, &caller, &resource).await?;
    placement.authorize(&state, &caller, Action::ResourceRead, Some(resource.id)).await?;
    if let Some((from, wait)) = wait {
        let deadline = tokio::time::Instant::now() + wait;
        while resource.status == from {
            // Registered before the look, so a change between the look and
            // the wait is not missed.
            let moved = state.jobs_moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            resource = state.store.get_resource(caller.org.id, resource.id).await?;
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            if resource.status != from || remaining.is_zero() {
                break;
            }
            tokio::select! {
                () = &mut moved => {}
                // Another replica moved it, or a change this process does
                // not announce (an approval, a cancel): the re-check.
                () = tokio::time::sleep(remaining.min(state.claim_recheck)) => {}
            }
        }
    }
    let revisions = state.store.list_revisions(caller.org.id, resource.id).await?;
    Ok(Json(ResourceDetail { resource, revisions }))
}

/// Who queues the checks a schema's or an account's `drift_check_every`
/// asks for, in events and jobs.
pub(crate) const DRIFT_SCHEDULE: &str = "heimdall (drift schedule)";

/// Queues a drift check of `candidate` as [`DRIFT_SCHEDULE`] if its
/// schedule (`drift::every` of its schema's and its account's) is due
/// (`drift::due`) at `now`; whether it did. The scan over every candidate
/// is `crate::background::drift`.
pub(crate) async fn queue_scheduled_drift_check(
    state: &AppState,
    candidate: &heimdall_core::ports::DriftCandidate,
    now: OffsetDateTime,
) -> Result<bool, ApiError> {
    let (org, id) = (candidate.org, candidate.resource);
    let resource = state.store.get_resource(org, id).await?;
    let placement = Placement::of_resource_in(state, org, &resource).await?;
    let account = placement.account_in(state, org).await?;
    let account_every = account.as_ref().and_then(|a| a.drift_check_every_seconds);
    let every = heimdall_core::drift::every(candidate.schema_every_seconds, account_every);
    if !every.is_some_and(|every| heimdall_core::drift::due(every, candidate.last, now)) {
        return Ok(false);
    }
    queue_drift_check(state, org, (DRIFT_SCHEDULE, None), &resource, (&placement, account), now).await?;
    Ok(true)
}

/// Plans and applies a drift check of `resource` by `actor`, placed on
/// `account` by `placement`; the job. It acts for `requester`; the drift
/// schedule (`None`) acts for whoever the last apply acted for, so the
/// secrets it uses are still decided as a member's reads.
async fn queue_drift_check(
    state: &AppState,
    org: OrgId,
    (actor, requester): (&str, Option<&heimdall_core::on_behalf::OnBehalfOf>),
    resource: &Resource,
    (placement, account): (&Placement, Option<CloudAccount>),
    now: OffsetDateTime,
) -> Result<heimdall_core::infra::Job, ApiError> {
    let revisions = state.store.list_revisions(org, resource.id).await?;
    let schemas = revision_schemas(state, org, &revisions).await?;
    let jobs = state.store.list_jobs(org, Some(resource.id)).await?;
    let applied_for = jobs
        .iter()
        .rev()
        .find(|j| {
            matches!(j.operation, JobOperation::Apply | JobOperation::Import)
                && j.status == JobStatus::Completed
        })
        .and_then(|j| j.request.requested_by.clone());
    let requester = requester.or(applied_for.as_ref());
    let ctx = placement.context_as(actor, requester, account.as_ref(), now);
    let plan = resources::drift_check(resource, &schemas, &revisions, &jobs, &ctx)?;
    let job =
        plan.job.clone().ok_or_else(|| ApiError::new(ErrorCode::Internal, "a drift check queues a job"))?;
    apply_as(state, org, actor, &plan).await?;
    Ok(job)
}

/// Stops managing a Resource without a destroy (`resources::abandon`).
#[utoipa::path(
    post,
    path = "/v1/resources/{key}/abandon",
    tag = "resources",
    operation_id = "abandon_resource",
    summary = "Stop managing a Resource without destroying it",
    description = "Heimdall lets the Resource go: nothing is destroyed and no job is queued, its state stays \
        in the account's store, queued applies are cancelled and pending revisions superseded; it stays listed \
        as `abandoned` with its history, its name free again. `resource import` (a new Resource) or `terraform \
        export` takes it up later. Refused `CONFLICT` while a job runs on it, or once it is deleting, deleted \
        or abandoned. Needs `resource.abandon` (owners and admins by default).",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "The Resource, abandoned", body = heimdall_wire::schemas::Resource), DeleteErrors),
)]
async fn abandon(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<Resource>> {
    let l = Loaded::for_action(&state, &caller, &key, Action::ResourceAbandon).await?;
    let jobs = l.jobs(&state, &caller).await?;
    let ctx = l.placement.context(&caller, None, state.clock.now());
    let plan = resources::abandon(&l.resource, &jobs, &ctx)?;
    Ok(Json(apply(&state, &caller, &plan).await?))
}

/// Queues a drift check (`resources::drift_check`): `202` with the job.
#[utoipa::path(
    post,
    path = "/v1/resources/{key}/drift-check",
    tag = "resources",
    operation_id = "check_resource_drift",
    summary = "Check a Resource for drift",
    description = "Queues a drift check of a provisioned Resource: its Agent plans the applied revision \
        against what exists, never applying it, and a plan with changes marks the Resource drifted. Needs \
        `resource.write` on the Resource (owners and admins by default); refused `CONFLICT` unless it is \
        provisioned and no job is working on it.",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 202, description = "A drift check (a plan) is queued", body = heimdall_wire::schemas::Job), DriftErrors),
)]
async fn drift_check(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    _: NoBody,
) -> HttpResult<(StatusCode, Json<heimdall_core::infra::Job>)> {
    let l = Loaded::for_action(&state, &caller, &key, Action::ResourceWrite).await?;
    let account = l.placement.account_in(&state, caller.org.id).await?;
    let jobs = l.jobs(&state, &caller).await?;
    // The job acts for the caller: she may read what it uses.
    let ctx = l.placement.context(&caller, account.as_ref(), state.clock.now());
    let plan = resources::drift_check(&l.resource, &l.schemas, &l.revisions, &jobs, &ctx)?;
    check_values_used(&state, &caller, &l.placement, &plan).await?;
    let job =
        plan.job.clone().ok_or_else(|| ApiError::new(ErrorCode::Internal, "a drift check queues a job"))?;
    apply(&state, &caller, &plan).await?;
    Ok((StatusCode::ACCEPTED, Json(job)))
}

/// The root module of the last applied job, for plain `terraform`
/// (`heimdall_core::export::package`): readable by whoever reads the
/// Resource; it holds no credential.
#[utoipa::path(
    get,
    path = "/v1/resources/{key}/export",
    tag = "resources",
    operation_id = "export_resource",
    summary = "Export a Resource as plain Terraform",
    description = "The root module of the Resource's last applied job (module call, backend, input), to \
        manage it with plain `terraform` without Heimdall; it holds no credential, and each secret input is \
        left to fill. Readable by whoever may read the Resource; refused `CONFLICT` before the current \
        revision is applied.",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "A Terraform package that manages the Resource without Heimdall", body = heimdall_wire::schemas::ExportPackage), ShowErrors),
)]
async fn export(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<heimdall_core::export::ExportPackage>> {
    let resource = resolve(&state, &caller, &key).await?;
    let placement = Placement::of_resource(&state, &caller, &resource).await?;
    placement.authorize(&state, &caller, Action::ResourceRead, Some(resource.id)).await?;
    let jobs = state.store.list_jobs(caller.org.id, Some(resource.id)).await?;
    Ok(Json(heimdall_core::export::package(&resource, &jobs)?))
}

#[utoipa::path(
    post,
    path = "/v1/resources",
    tag = "resources",
    operation_id = "create_resource",
    summary = "Request a Resource",
    description = "Requests a Resource of a schema for a component in an environment, with its input \
        (checked against the schema, `SCHEMA_VIOLATION` otherwise) and, optionally, objects to import. Its \
        first revision is planned or, under a schema that requires approval, awaits approval; the job uses \
        the cloud account linked for the place (`NO_CLOUD_ACCOUNT` when none is). Needs `resource.write` \
        there (owners and admins by default), and the caller must be able to read every secret the job would \
        use.",
    request_body = CreateResource,
    responses((status = 201, description = "The Resource; its first revision is planned or awaits approval", body = heimdall_wire::schemas::Resource), CreateErrors),
)]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateResource>,
) -> HttpResult<(StatusCode, Json<Resource>)> {
    let component = resolve_catalog(&state, &caller, CatalogKind::Component, &body.component).await?;
    let environment = resolve_catalog(&state, &caller, CatalogKind::Environment, &body.environment).await?;
    let schema = resolve_schema(&*state.store, caller.org.id, &body.schema).await?;
    let placement = Placement::of(&state, &caller, component, environment).await?;
    placement.authorize(&state, &caller, Action::ResourceWrite, None).await?;
    let account = placement.account(&state, &caller).await?;
    let new = NewResource {
        id: ResourceId::from_uuid(Uuid::new_v4()),
        org_id: caller.org.id,
        name: body.name,
        component_id: placement.component.id,
        environment_id: placement.environment.id,
        schema: &schema,
        input: body.input,
        region: body.region,
        imports: body.imports,
    };
    let plan = resources::create(new, &placement.context(&caller, account.as_ref(), state.clock.now()))?;
    check_values_used(&state, &caller, &placement, &plan).await?;
    Ok((StatusCode::CREATED, Json(apply(&state, &caller, &plan).await?)))
}

#[utoipa::path(
    patch,
    path = "/v1/resources/{key}",
    tag = "resources",
    operation_id = "change_resource",
    summary = "Change a Resource's input",
    description = "Records a new revision of the Resource with a new input (and optionally region), checked \
        against its schema; it is applied, or awaits approval when the schema requires it. Needs \
        `resource.write` on the Resource (owners and admins by default); `CONFLICT` once it is deleting or \
        deleted.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = ChangeResource,
    responses((status = 200, description = "The Resource with a new revision", body = heimdall_wire::schemas::Resource), ChangeErrors),
)]
async fn change(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<ChangeResource>,
) -> HttpResult<Json<Resource>> {
    let l = Loaded::for_action(&state, &caller, &key, Action::ResourceWrite).await?;
    let account = l.placement.account(&state, &caller).await?;
    let ctx = l.placement.context(&caller, account.as_ref(), state.clock.now());
    let change = Change { input: body.input, region: body.region };
    let plan = resources::change(&l.resource, &l.revisions, &l.schemas, change, &ctx)?;
    check_values_used(&state, &caller, &l.placement, &plan).await?;
    Ok(Json(apply(&state, &caller, &plan).await?))
}

#[utoipa::path(
    post,
    path = "/v1/resources/{key}/upgrade",
    tag = "resources",
    operation_id = "upgrade_resource",
    summary = "Move a Resource to another version of its schema",
    description = "Records a new revision of the Resource on another version of its schema's type: the new \
        version's module runs under the existing state, so Terraform updates in place what the module allows \
        (nothing is destroyed first). The input (the current revision's when none is given) is checked in full \
        against the new version (`SCHEMA_VIOLATION`, naming the field); it is applied, or awaits approval when \
        the new version requires it. Refused `CONFLICT` to a deprecated version, to the version it is on, and to \
        an older version unless `allow_downgrade`; `NOT_FOUND` for a version that does not exist. Needs \
        `resource.write` on the Resource (owners and admins by default). Nothing is stored when refused.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = heimdall_wire::UpgradeResource,
    responses((status = 200, description = "The Resource with a new revision on the new version", body = heimdall_wire::schemas::Resource), UpgradeErrors),
)]
async fn upgrade(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<heimdall_wire::UpgradeResource>,
) -> HttpResult<Json<Resource>> {
    let l = Loaded::for_action(&state, &caller, &key, Action::ResourceWrite).await?;
    let current = resources::schema_of(&l.schemas, resources::current_revision(&l.revisions)?)?;
    let to = state
        .store
        .list_schemas(caller.org.id)
        .await?
        .into_iter()
        .find(|s| s.type_name == current.type_name && s.version == body.schema_version)
        .ok_or_else(|| {
            ApiError::not_found(format!("schema {} version {}", current.type_name, body.schema_version))
        })?;
    let account = l.placement.account(&state, &caller).await?;
    let ctx = l.placement.context(&caller, account.as_ref(), state.clock.now());
    let upgrade = Upgrade { to: &to, input: body.input.as_ref(), allow_downgrade: body.allow_downgrade };
    let plan = resources::upgrade(&l.resource, &l.revisions, &l.schemas, upgrade, &ctx)?;
    check_values_used(&state, &caller, &l.placement, &plan).await?;
    Ok(Json(apply(&state, &caller, &plan).await?))
}

#[utoipa::path(
    post,
    path = "/v1/resources/{key}/approve",
    tag = "resources",
    operation_id = "approve_resource",
    summary = "Approve a Resource's pending revision",
    description = "Approves the revision awaiting approval, named by number, and under a schema that \
        requires it the plan's SHA-256 (at least its first 12 hex digits); the revision then applies exactly \
        that plan. Needs `resource.approve` (owners and admins by default), and someone other than the \
        requester must decide (`SELF_APPROVAL`). Another revision or an expired one is refused \
        `STALE_REVISION`, another or missing plan `STALE_PLAN`.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = Decide,
    responses((status = 200, description = "Approved: the revision applies", body = heimdall_wire::schemas::Resource), DecideErrors),
)]
async fn approve(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<Decide>,
) -> HttpResult<Json<Resource>> {
    let l = Loaded::for_action(&state, &caller, &key, Action::ResourceApprove).await?;
    let account = l.placement.account(&state, &caller).await?;
    let ctx = l.placement.context(&caller, account.as_ref(), state.clock.now());
    let request = DecisionRequest { revision: body.revision, plan: body.plan, reason: body.reason };
    let plan = resources::approve(&l.resource, &l.schemas, &l.revisions, request, &ctx)?;
    check_values_used(&state, &caller, &l.placement, &plan).await?;
    Ok(Json(apply(&state, &caller, &plan).await?))
}

#[utoipa::path(
    post,
    path = "/v1/resources/{key}/refuse",
    tag = "resources",
    operation_id = "refuse_resource",
    summary = "Refuse a Resource's pending revision",
    description = "Refuses the revision awaiting approval, named by number, optionally with a reason: it \
        does not apply. Needs `resource.approve` (owners and admins by default), and someone other than the \
        requester must decide (`SELF_APPROVAL`); another revision or an expired one is refused \
        `STALE_REVISION`.",
    params(("key" = String, Path, description = "An id or a name")),
    request_body = Decide,
    responses((status = 200, description = "Refused: the revision does not apply", body = heimdall_wire::schemas::Resource), DecideErrors),
)]
async fn refuse(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<Decide>,
) -> HttpResult<Json<Resource>> {
    let l = Loaded::for_action(&state, &caller, &key, Action::ResourceApprove).await?;
    let jobs = l.jobs(&state, &caller).await?;
    let ctx = l.placement.context(&caller, None, state.clock.now());
    let request = DecisionRequest { revision: body.revision, plan: body.plan, reason: body.reason };
    let plan = resources::refuse(&l.resource, &l.revisions, &jobs, request, &ctx)?;
    Ok(Json(apply(&state, &caller, &plan).await?))
}

#[utoipa::path(
    post,
    path = "/v1/resources/{key}/retry",
    tag = "resources",
    operation_id = "retry_resource",
    summary = "Retry a Resource's failed operation",
    description = "Queues the failed operation again for the newest approved revision (a failed plan is \
        planned again). Needs `resource.write` on the Resource (owners and admins by default); refused \
        `CONFLICT` unless the Resource failed.",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 202, description = "A new attempt is queued", body = heimdall_wire::schemas::Resource), RetryErrors),
)]
async fn retry(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    _: NoBody,
) -> HttpResult<(StatusCode, Json<Resource>)> {
    let l = Loaded::for_action(&state, &caller, &key, Action::ResourceWrite).await?;
    let jobs = l.jobs(&state, &caller).await?;
    let account = l.placement.account(&state, &caller).await?;
    let ctx = l.placement.context(&caller, account.as_ref(), state.clock.now());
    let plan = resources::retry(&l.resource, &l.schemas, &l.revisions, &jobs, &ctx)?;
    check_values_used(&state, &caller, &l.placement, &plan).await?;
    Ok((StatusCode::ACCEPTED, Json(apply(&state, &caller, &plan).await?)))
}

#[utoipa::path(
    delete,
    path = "/v1/resources/{key}",
    tag = "resources",
    operation_id = "delete_resource",
    summary = "Delete a Resource",
    description = "Deletes a Resource: if anything was ever applied, a destroy is queued (or awaits \
        approval) and the answer is `202`; a Resource that never ran is deleted at once, and one already \
        deleting or deleted is answered as it is (`200`). Queued applies are cancelled and pending revisions \
        superseded. Needs `resource.delete` (owners and admins by default).",
    params(("key" = String, Path, description = "An id or a name")),
    responses((status = 200, description = "Already deleted, or removed without a destroy", body = heimdall_wire::schemas::Resource), (status = 202, description = "A destroy is queued (or awaits approval)", body = heimdall_wire::schemas::Resource), DeleteErrors),
)]
async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<(StatusCode, Json<Resource>)> {
    let l = Loaded::for_action(&state, &caller, &key, Action::ResourceDelete).await?;
    let jobs = l.jobs(&state, &caller).await?;
    let account = l.placement.account(&state, &caller).await?;
    let ctx = l.placement.context(&caller, account.as_ref(), state.clock.now());
    let Some(plan) = resources::delete(&l.resource, &l.schemas, &l.revisions, &jobs, &ctx)? else {
        return Ok((StatusCode::OK, Json(l.resource)));
    };
    check_values_used(&state, &caller, &l.placement, &plan).await?;
    // A destroy runs later (202); a Resource that never ran is gone now (200).
    let code = if plan.job.is_some() { StatusCode::ACCEPTED } else { StatusCode::OK };
    Ok((code, Json(apply(&state, &caller, &plan).await?)))
}
