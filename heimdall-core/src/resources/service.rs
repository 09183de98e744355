//! Resources' use cases, run once for every adapter: load what a request
//! is about the same way for every one (the Resource by id or name, where
//! it sits, the caller authorized there, its revisions and the schema
//! versions they name), ask the planner what follows, refuse a plan whose
//! job would use a secret the caller may not read, and apply it with its
//! event in one store call. Generic over the store ports ([`ResourceStores`])
//! and the caller ([`Actor`]). Ids are the adapter's (randomness is I/O):
//! each use case that may queue a job takes the id it would get.

use serde_json::Value;
use time::OffsetDateTime;

use super::{Change, Context, DecisionRequest, NewResource, Place, ResourceCursor, ResourcePlan, Upgrade};
use crate::accounts::resolve_account;
use crate::audit::EventPlan;
use crate::authz::{resource_target, Action, CatalogTree, Target};
use crate::domain::{CatalogEntry, CatalogKind};
use crate::error::{ApiError, ErrorCode};
use crate::ids::{JobId, OrgId, ResourceId};
use crate::infra::{
    CloudAccount, Job, JobOperation, JobStatus, Resource, ResourceSchema, ResourceStatus, Revision,
};
use crate::on_behalf::OnBehalfOf;
use crate::paging::{visible, Page};
use crate::ports::{
    AccountStore, Actor, CatalogStore, DriftCandidate, InfraStore, NewEvent, Recorder, ResourceFilter,
    ResourceRecordStore, SchemaStore, SecretRecordStore,
};

/// Every port a Resource's use cases read or write.
pub trait ResourceStores:
    CatalogStore + SchemaStore + AccountStore + ResourceRecordStore + InfraStore + SecretRecordStore
{
}
impl<T> ResourceStores for T where
    T: CatalogStore
        + SchemaStore
        + AccountStore
        + ResourceRecordStore
        + InfraStore
        + SecretRecordStore
        + ?Sized
{
}

/// Who queues the checks a schema's or an account's `drift_check_every`
/// asks for, in events and jobs.
pub const DRIFT_SCHEDULE: &str = "heimdall (drift schedule)";

/// What a plan did: the Resource after it, and the job it queued.
#[derive(Clone, Debug)]
pub struct Applied {
    pub resource: Resource,
    pub queued: Option<Job>,
}

/// A Resource by id, or by name among those not deleted: the managed one
/// if there is one (an abandoned Resource's name is free again), else the
/// abandoned one.
pub async fn resolve<S: ResourceRecordStore + ?Sized>(
    store: &S,
    org: OrgId,
    key: &str,
) -> Result<Resource, ApiError> {
    if let Ok(id) = key.parse::<ResourceId>() {
        return Ok(store.get_resource(org, id).await?);
    }
    let named: Vec<Resource> = store
        .find_resources_by_name(org, key)
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

/// Where a Resource sits: its component's system and domain, and its
/// environment. What it is authorized in and its account resolved by.
#[derive(Clone, Debug)]
pub struct Placement {
    pub component: CatalogEntry,
    pub system: CatalogEntry,
    pub domain: CatalogEntry,
    pub environment: CatalogEntry,
}

impl Placement {
    pub async fn load<S: CatalogStore + ?Sized>(
        store: &S,
        org: OrgId,
        component: CatalogEntry,
        environment: CatalogEntry,
    ) -> Result<Self, ApiError> {
        let system_id = component
            .parent_id
            .ok_or_else(|| ApiError::new(ErrorCode::Internal, "component without system"))?;
        let system = store.get_catalog_entry(org, system_id).await?;
        let domain_id =
            system.parent_id.ok_or_else(|| ApiError::new(ErrorCode::Internal, "system without domain"))?;
        let domain = store.get_catalog_entry(org, domain_id).await?;
        Ok(Self { component, system, domain, environment })
    }

    pub async fn of<S: CatalogStore + ?Sized>(
        store: &S,
        org: OrgId,
        resource: &Resource,
    ) -> Result<Self, ApiError> {
        let component = store.get_catalog_entry(org, resource.component_id).await?;
        let environment = store.get_catalog_entry(org, resource.environment_id).await?;
        Self::load(store, org, component, environment).await
    }

    /// The Resource (or a new one, `None`) as policies see it here.
    pub fn target(&self, resource: Option<ResourceId>) -> Target {
        let tree = CatalogTree::new(
            [&self.component, &self.system, &self.domain].map(|e| (e.id, e.kind, e.parent_id)),
        );
        resource_target(resource, self.component.id, &tree)
    }

    async fn authorize(
        &self,
        actor: &dyn Actor,
        action: Action,
        resource: Option<ResourceId>,
    ) -> Result<(), ApiError> {
        actor.authorize_in(action, &self.target(resource), &self.environment.name).await
    }

    /// The account linked for this place, if any (`resolve_account`).
    pub async fn account<S: AccountStore + ?Sized>(
        &self,
        store: &S,
        org: OrgId,
    ) -> Result<Option<CloudAccount>, ApiError> {
        let links = store.list_links(org).await?;
        match resolve_account(&links, self.system.id, self.domain.id, self.environment.id) {
            Some(id) => Ok(Some(store.get_account(org, id).await?)),
            None => Ok(None),
        }
    }

    /// What a planner needs to know about a request besides the Resource.
    pub fn context<'a>(
        &'a self,
        (actor, requester): (&'a str, Option<&'a OnBehalfOf>),
        account: Option<&'a CloudAccount>,
        now: OffsetDateTime,
        job_id: JobId,
    ) -> Context<'a> {
        let place = Place {
            environment: &self.environment.name,
            system: &self.system.name,
            domain: &self.domain.name,
        };
        Context { actor, requester, now, place, account, job_id }
    }
}

/// The member a caller's jobs act for.
fn on_behalf(actor: &dyn Actor) -> OnBehalfOf {
    OnBehalfOf { member_id: actor.member(), email: actor.name().to_owned() }
}

/// The schema versions a Resource's revisions name: what its planners
/// choose from (`schema_of`). Deleted versions too: a revision on one
/// still destroys with its module.
async fn revision_schemas<S: SchemaStore + ?Sized>(
    store: &S,
    org: OrgId,
    revisions: &[Revision],
) -> Result<Vec<ResourceSchema>, ApiError> {
    let mut schemas: Vec<ResourceSchema> = Vec::new();
    for revision in revisions {
        if !schemas.iter().any(|s| s.id == revision.schema_id) {
            schemas.push(store.get_schema(org, revision.schema_id).await?);
        }
    }
    Ok(schemas)
}

/// What a request about one Resource is decided on, loaded the same way
/// for every use case: the Resource, where it is, the caller authorized
/// for `action` there, its revisions and the schema versions they name.
struct Loaded {
    resource: Resource,
    placement: Placement,
    revisions: Vec<Revision>,
    schemas: Vec<ResourceSchema>,
}

impl Loaded {
    async fn for_action<S: ResourceStores + ?Sized>(
        store: &S,
        actor: &dyn Actor,
        key: &str,
        action: Action,
    ) -> Result<Self, ApiError> {
        let org = actor.org();
        let resource = resolve(store, org, key).await?;
        let placement = Placement::of(store, org, &resource).await?;
        placement.authorize(actor, action, Some(resource.id)).await?;
        let revisions = store.list_revisions(org, resource.id).await?;
        let schemas = revision_schemas(store, org, &revisions).await?;
        Ok(Self { resource, placement, revisions, schemas })
    }

    async fn jobs<S: InfraStore + ?Sized>(&self, store: &S, org: OrgId) -> Result<Vec<Job>, ApiError> {
        Ok(store.list_jobs(org, Some(self.resource.id)).await?)
    }
}

/// Every secret the plan's job would use (its account's static
/// credential, its secret inputs) is one the caller may read where the
/// Resource lives: the job acts on her behalf (`on_behalf::may_use`; the
/// Agent decides it again at the run). Refused before anything is stored.
async fn check_values_used<S: SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    placement: &Placement,
    plan: &ResourcePlan,
) -> Result<(), ApiError> {
    let Some(job) = &plan.job else { return Ok(()) };
    for (secret, what) in job.request.secrets_used() {
        crate::secrets::service::check_use(store, actor, secret, &placement.environment.name)
            .await
            .map_err(|e| ApiError::new(e.code, format!("{}, named as {what}", e.message)))?;
    }
    Ok(())
}

/// Applies `plan` in one transaction with its event, as `stamp` makes it.
async fn apply_with<S: InfraStore + ?Sized>(
    store: &S,
    org: OrgId,
    plan: &ResourcePlan,
    stamp: impl FnOnce(EventPlan) -> NewEvent,
) -> Result<Applied, ApiError> {
    let resource = store.apply_resource_plan(org, plan, stamp(plan.event_plan())).await?;
    Ok(Applied { resource, queued: plan.job.clone() })
}

/// Checks what the plan's job would use, then applies it for the caller.
async fn apply<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    placement: &Placement,
    plan: &ResourcePlan,
) -> Result<Applied, ApiError> {
    check_values_used(store, actor, placement, plan).await?;
    apply_with(store, actor.org(), plan, |event| actor.event(event)).await
}

/// Which Resources a list shows besides what the policies allow.
#[derive(Clone, Debug, Default)]
pub struct ListAsked {
    /// A component, by id or name.
    pub component: Option<String>,
    /// An environment, by id or name.
    pub environment: Option<String>,
    pub status: Option<ResourceStatus>,
    /// Only Resources of this schema type (any version).
    pub type_name: Option<String>,
    /// Only Resources on an older version of their type than a new request gets.
    pub outdated: bool,
}

/// A page of the Resources the caller may read (`resource.read`), each
/// decided in its own environment and place: a `forbid` scoped to an
/// environment or a domain hides what it forbids.
pub async fn list<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    asked: ListAsked,
    limit: u32,
    after: Option<ResourceCursor>,
) -> Result<Page<Resource, ResourceCursor>, ApiError> {
    let org = actor.org();
    actor.authorize(Action::ResourceRead, &Target::organization(org)).await?;
    let mut filter = ResourceFilter { status: asked.status, ..ResourceFilter::default() };
    if let Some(c) = &asked.component {
        filter.component =
            Some(crate::catalog::service::resolve(store, org, CatalogKind::Component, c).await?.id);
    }
    if let Some(e) = &asked.environment {
        filter.environment =
            Some(crate::catalog::service::resolve(store, org, CatalogKind::Environment, e).await?.id);
    }
    let (tree, environments) = placements(store, org).await?;
    let schemas = match (&asked.type_name, asked.outdated) {
        (None, false) => Vec::new(),
        _ => store.list_schemas(org).await?,
    };
    let wanted = |r: &Resource| {
        let schema = schemas.iter().find(|s| s.id == r.schema_id);
        let of_type = asked.type_name.as_ref().is_none_or(|t| schema.is_some_and(|s| s.type_name == *t));
        of_type && (!asked.outdated || super::is_outdated(r, &schemas))
    };
    let (tree, environments, filter, wanted) = (&tree, &environments, &filter, &wanted);
    let fetch = |after, n| async move {
        store.list_resources(org, &ResourceFilter { after, limit: Some(n), ..filter.clone() }).await
    };
    let keep = |chunk: Vec<Resource>| async move {
        let chunk: Vec<Resource> = chunk.into_iter().filter(|r| wanted(r)).collect();
        let targets: Vec<(Target, Option<&str>)> = chunk
            .iter()
            .map(|r| {
                (
                    resource_target(Some(r.id), r.component_id, tree),
                    Some(name_in(environments, r.environment_id)),
                )
            })
            .collect();
        let allowed = actor.allows_each(Action::ResourceRead, &targets).await?;
        Ok(chunk.into_iter().zip(allowed).filter_map(|(r, ok)| ok.then_some(r)).collect())
    };
    visible(limit, after, fetch, keep, ResourceCursor::after).await
}

/// The catalog and the environments' names, for deciding many Resources
/// (or their jobs) each where it is.
pub(crate) async fn placements<S: CatalogStore + ?Sized>(
    store: &S,
    org: OrgId,
) -> Result<(CatalogTree, Vec<(crate::ids::CatalogId, String)>), ApiError> {
    let tree = crate::catalog::service::tree(store, org).await?;
    let environments = store.list_catalog(org, CatalogKind::Environment, None).await?;
    Ok((tree, environments.into_iter().map(|e| (e.id, e.name)).collect()))
}

/// An environment's name among `environments` (empty for one that is gone).
pub(crate) fn name_in(environments: &[(crate::ids::CatalogId, String)], id: crate::ids::CatalogId) -> &str {
    environments.iter().find(|(e, _)| *e == id).map_or("", |(_, n)| n.as_str())
}

/// The Resource `key` for a caller who may read it there (`resource.read`).
pub async fn readable<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Resource, ApiError> {
    let resource = resolve(store, actor.org(), key).await?;
    let placement = Placement::of(store, actor.org(), &resource).await?;
    placement.authorize(actor, Action::ResourceRead, Some(resource.id)).await?;
    Ok(resource)
}

/// `resource` as stored now (for a caller [`readable`] answered) and its
/// revisions.
pub async fn as_stored<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    resource: ResourceId,
) -> Result<(Resource, Vec<Revision>), ApiError> {
    let resource = store.get_resource(actor.org(), resource).await?;
    let revisions = store.list_revisions(actor.org(), resource.id).await?;
    Ok((resource, revisions))
}

/// The root module of the last applied job, for plain `terraform`
/// (`export::package`): readable by whoever reads the Resource.
pub async fn export<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<crate::export::ExportPackage, ApiError> {
    let resource = readable(store, actor, key).await?;
    let jobs = store.list_jobs(actor.org(), Some(resource.id)).await?;
    crate::export::package(&resource, &jobs)
}

/// What a request for a new Resource names.
#[derive(Clone, Debug)]
pub struct Requested {
    pub id: ResourceId,
    pub name: String,
    /// Component, environment and schema, each by id or name.
    pub component: String,
    pub environment: String,
    pub schema: String,
    pub input: Value,
    pub region: Option<String>,
    pub imports: Vec<crate::infra::ImportTarget>,
}

/// Requests a Resource (`resource.write` where it will live).
pub async fn create<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    asked: Requested,
    job_id: JobId,
) -> Result<Applied, ApiError> {
    let org = actor.org();
    let component =
        crate::catalog::service::resolve(store, org, CatalogKind::Component, &asked.component).await?;
    let environment =
        crate::catalog::service::resolve(store, org, CatalogKind::Environment, &asked.environment).await?;
    let schema = crate::schemas::service::resolve(store, org, &asked.schema).await?;
    let placement = Placement::load(store, org, component, environment).await?;
    placement.authorize(actor, Action::ResourceWrite, None).await?;
    let account = placement.account(store, org).await?;
    let new = NewResource {
        id: asked.id,
        org_id: org,
        name: asked.name,
        component_id: placement.component.id,
        environment_id: placement.environment.id,
        schema: &schema,
        input: asked.input,
        region: asked.region,
        imports: asked.imports,
    };
    let requester = on_behalf(actor);
    let ctx = placement.context((actor.name(), Some(&requester)), account.as_ref(), actor.now(), job_id);
    let plan = super::create(new, &ctx)?;
    apply(store, actor, &placement, &plan).await
}

/// One of the use cases that load a Resource for `action`, read its
/// account when `with_account`, and plan with the caller as requester.
async fn planned<S, F>(
    store: &S,
    actor: &dyn Actor,
    (key, action, with_account): (&str, Action, bool),
    job_id: JobId,
    plan: F,
) -> Result<Applied, ApiError>
where
    S: ResourceStores + ?Sized,
    F: FnOnce(&Loaded, &[Job], &Context<'_>) -> Result<Option<ResourcePlan>, ApiError>,
{
    let org = actor.org();
    let loaded = Loaded::for_action(store, actor, key, action).await?;
    let jobs = loaded.jobs(store, org).await?;
    let account = if with_account { loaded.placement.account(store, org).await? } else { None };
    let requester = on_behalf(actor);
    let ctx =
        loaded.placement.context((actor.name(), Some(&requester)), account.as_ref(), actor.now(), job_id);
    match plan(&loaded, &jobs, &ctx)? {
        Some(plan) => apply(store, actor, &loaded.placement, &plan).await,
        None => Ok(Applied { resource: loaded.resource, queued: None }),
    }
}

/// A new revision with a new input (`resource.write`).
pub async fn change<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    change: Change,
    job_id: JobId,
) -> Result<Applied, ApiError> {
    planned(store, actor, (key, Action::ResourceWrite, true), job_id, |l, _, ctx| {
        super::change(&l.resource, &l.revisions, &l.schemas, change, ctx).map(Some)
    })
    .await
}

/// A new revision on another version of its schema's type
/// (`resource.write`): `version` among the organization's schemas.
pub async fn upgrade<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    (version, input, allow_downgrade): (i64, Option<&Value>, bool),
    job_id: JobId,
) -> Result<Applied, ApiError> {
    let org = actor.org();
    let loaded = Loaded::for_action(store, actor, key, Action::ResourceWrite).await?;
    let current = super::schema_of(&loaded.schemas, super::current_revision(&loaded.revisions)?)?;
    let to = store
        .list_schemas(org)
        .await?
        .into_iter()
        .find(|s| s.type_name == current.type_name && s.version == version)
        .ok_or_else(|| ApiError::not_found(format!("schema {} version {version}", current.type_name)))?;
    let account = loaded.placement.account(store, org).await?;
    let requester = on_behalf(actor);
    let ctx =
        loaded.placement.context((actor.name(), Some(&requester)), account.as_ref(), actor.now(), job_id);
    let upgrade = Upgrade { to: &to, input, allow_downgrade };
    let plan = super::upgrade(&loaded.resource, &loaded.revisions, &loaded.schemas, upgrade, &ctx)?;
    apply(store, actor, &loaded.placement, &plan).await
}

/// Approves the pending revision (`resource.approve`; not its requester).
pub async fn approve<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    request: DecisionRequest,
    job_id: JobId,
) -> Result<Applied, ApiError> {
    planned(store, actor, (key, Action::ResourceApprove, true), job_id, |l, _, ctx| {
        super::approve(&l.resource, &l.schemas, &l.revisions, request, ctx).map(Some)
    })
    .await
}

/// Refuses the pending revision (`resource.approve`; not its requester).
pub async fn refuse<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    request: DecisionRequest,
    job_id: JobId,
) -> Result<Applied, ApiError> {
    planned(store, actor, (key, Action::ResourceApprove, false), job_id, |l, jobs, ctx| {
        super::refuse(&l.resource, &l.revisions, jobs, request, ctx).map(Some)
    })
    .await
}

/// Queues the failed operation again (`resource.write`).
pub async fn retry<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    job_id: JobId,
) -> Result<Applied, ApiError> {
    planned(store, actor, (key, Action::ResourceWrite, true), job_id, |l, jobs, ctx| {
        super::retry(&l.resource, &l.schemas, &l.revisions, jobs, ctx).map(Some)
    })
    .await
}

/// Deletes a Resource (`resource.delete`): a destroy queued when anything
/// was applied, else gone at once; one already deleting is as it is.
pub async fn delete<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    job_id: JobId,
) -> Result<Applied, ApiError> {
    planned(store, actor, (key, Action::ResourceDelete, true), job_id, |l, jobs, ctx| {
        super::delete(&l.resource, &l.schemas, &l.revisions, jobs, ctx)
    })
    .await
}

/// Stops managing a Resource without a destroy (`resource.abandon`).
pub async fn abandon<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    job_id: JobId,
) -> Result<Applied, ApiError> {
    planned(store, actor, (key, Action::ResourceAbandon, false), job_id, |l, jobs, ctx| {
        super::abandon(&l.resource, jobs, ctx).map(Some)
    })
    .await
}

/// Queues a drift check for the caller (`resource.write`): the job acts
/// for her, so she may read what it uses.
pub async fn drift_check<S: ResourceStores + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    job_id: JobId,
) -> Result<Job, ApiError> {
    let applied = planned(store, actor, (key, Action::ResourceWrite, true), job_id, |l, jobs, ctx| {
        super::drift_check(&l.resource, &l.schemas, &l.revisions, jobs, ctx).map(Some)
    })
    .await?;
    applied.queued.ok_or_else(|| ApiError::new(ErrorCode::Internal, "a drift check queues a job"))
}

/// Queues a drift check of `candidate` as [`DRIFT_SCHEDULE`] if its
/// schedule (`drift::every` of its schema's and its account's) is due
/// (`drift::due`) at `now`; the job, if it did. It acts for whoever the
/// last apply acted for, so the secrets it uses are still decided as a
/// member's reads (by the Agent, at the run). `recorder` tells the time
/// and makes the event.
pub async fn scheduled_drift_check<S: ResourceStores + ?Sized>(
    store: &S,
    recorder: &dyn Recorder,
    candidate: &DriftCandidate,
    job_id: JobId,
) -> Result<Option<Job>, ApiError> {
    let (org, id, now) = (candidate.org, candidate.resource, recorder.now());
    let resource = store.get_resource(org, id).await?;
    let placement = Placement::of(store, org, &resource).await?;
    let account = placement.account(store, org).await?;
    let account_every = account.as_ref().and_then(|a| a.drift_check_every_seconds);
    let every = crate::drift::every(candidate.schema_every_seconds, account_every);
    if !every.is_some_and(|every| crate::drift::due(every, candidate.last, now)) {
        return Ok(None);
    }
    let revisions = store.list_revisions(org, resource.id).await?;
    let schemas = revision_schemas(store, org, &revisions).await?;
    let jobs = store.list_jobs(org, Some(resource.id)).await?;
    let applied_for = jobs
        .iter()
        .rev()
        .find(|j| {
            matches!(j.operation, JobOperation::Apply | JobOperation::Import)
                && j.status == JobStatus::Completed
        })
        .and_then(|j| j.request.requested_by.clone());
    let ctx = placement.context((DRIFT_SCHEDULE, applied_for.as_ref()), account.as_ref(), now, job_id);
    let plan = super::drift_check(&resource, &schemas, &revisions, &jobs, &ctx)?;
    let stamp = |planned| recorder.event(DRIFT_SCHEDULE, planned);
    Ok(apply_with(store, org, &plan, stamp).await?.queued)
}
