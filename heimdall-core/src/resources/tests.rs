//! The Resource lifecycle driven request by request with a fake clock, as
//! the API would: plan, then "apply" the plan to the loaded state the way
//! the store does, then plan the next request on the result.

use std::collections::BTreeMap;

use serde_json::json;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::*;
use crate::clock::{Clock, ManualClock};
use crate::ids::{CloudAccountId, SchemaId};
use crate::infra::{AccountAuth, Provider};

const ANA: &str = "ana@example.com";
const BEN: &str = "ben@example.com";
const PLACE: Place<'static> = Place { environment: "prod", system: "shop", domain: "retail" };

fn start() -> ManualClock {
    ManualClock::new(OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap())
}

fn org() -> OrgId {
    OrgId::from_uuid(Uuid::from_u128(1))
}

fn schema(requires_approval: bool) -> ResourceSchema {
    ResourceSchema {
        id: SchemaId::from_uuid(Uuid::from_u128(2)),
        org_id: org(),
        type_name: "bucket".into(),
        version: 1,
        input_schema: json!({
            "type": "object",
            "properties": { "size": { "type": "integer", "maximum": 10 }, "tier": { "type": "string" } },
            "required": ["size", "tier"],
            "additionalProperties": false
        }),
        defaults: BTreeMap::from([("prod".to_owned(), json!({ "tier": "gold" }))]),
        module: None,
        requires_approval,
        drift_check_every_seconds: None,
        created_at: OffsetDateTime::UNIX_EPOCH,
        created_by: ANA.into(),
        deprecated_at: None,
        deprecated_by: None,
        deleted_at: None,
    }
}

#[test]
fn no_new_resource_is_requested_on_a_deprecated_version_and_those_on_it_go_on() {
    let mut w = World::new(false);
    w.create(ANA, json!({ "size": 1, "tier": "basic" })).unwrap();
    let created = w.create_named("kept", json!({ "size": 1, "tier": "basic" })).unwrap();
    w.apply(created);
    w.schema.deprecated_at = Some(w.clock.now());
    let err = w.create_named("late", json!({ "size": 1, "tier": "basic" })).unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(err.message.contains("bucket version 1 is deprecated"), "{}", err.message);
    assert!(w.change(ANA, json!({ "size": 2, "tier": "basic" })).is_ok(), "a Resource on it still changes");
}

fn account() -> CloudAccount {
    CloudAccount {
        id: CloudAccountId::from_uuid(Uuid::from_u128(3)),
        org_id: org(),
        name: "main".into(),
        provider: Provider::Aws,
        region: "eu-west-1".into(),
        state_bucket: "state".into(),
        state_backend: crate::infra::StateBackend::S3,
        state_storage_account: None,
        state_endpoint: None,
        auth: AccountAuth::Oidc(crate::infra::OidcTarget::aws("arn:aws:iam::1:role/x")),
        drift_check_every_seconds: None,
        created_at: OffsetDateTime::UNIX_EPOCH,
        created_by: ANA.into(),
    }
}

/// The loaded state of one Resource, as the API reads it back.
struct World {
    clock: ManualClock,
    account: Option<CloudAccount>,
    schema: ResourceSchema,
    /// Other versions of the schema's type, for upgrades.
    other_versions: Vec<ResourceSchema>,
    resource: Option<Resource>,
    revisions: Vec<Revision>,
    jobs: Vec<Job>,
    next_job: u128,
}

impl World {
    fn new(requires_approval: bool) -> Self {
        Self {
            clock: start(),
            account: Some(account()),
            schema: schema(requires_approval),
            other_versions: Vec::new(),
            resource: None,
            revisions: vec![],
            jobs: vec![],
            next_job: 100,
        }
    }

    fn ctx<'a>(&'a mut self, actor: &'a str) -> Context<'a> {
        self.next_job += 1;
        Context {
            actor,
            requester: None,
            now: self.clock.now(),
            place: PLACE,
            account: self.account.as_ref(),
            job_id: JobId::from_uuid(Uuid::from_u128(self.next_job)),
        }
    }

    fn resource(&self) -> &Resource {
        self.resource.as_ref().unwrap()
    }

    fn create(&mut self, actor: &str, input: Value) -> Result<ResourcePlan, ApiError> {
        self.create_as(actor, "orders", input)
    }

    fn create_named(&mut self, name: &str, input: Value) -> Result<ResourcePlan, ApiError> {
        self.create_as(ANA, name, input)
    }

    fn create_as(&mut self, actor: &str, name: &str, input: Value) -> Result<ResourcePlan, ApiError> {
        self.create_importing(actor, name, input, Vec::new())
    }

    fn create_importing(
        &mut self,
        actor: &str,
        name: &str,
        input: Value,
        imports: Vec<crate::infra::ImportTarget>,
    ) -> Result<ResourcePlan, ApiError> {
        let schema = self.schema.clone();
        let new = NewResource {
            id: ResourceId::from_uuid(Uuid::from_u128(9)),
            org_id: org(),
            name: name.into(),
            component_id: CatalogId::from_uuid(Uuid::from_u128(4)),
            environment_id: CatalogId::from_uuid(Uuid::from_u128(5)),
            schema: &schema,
            input,
            region: None,
            imports,
        };
        create(new, &self.ctx(actor))
    }

    fn change(&mut self, actor: &str, input: Value) -> Result<ResourcePlan, ApiError> {
        let (resource, schemas, revisions) =
            (self.resource().clone(), self.schemas(), self.revisions.clone());
        change(&resource, &revisions, &schemas, Change { input, region: None }, &self.ctx(actor))
    }

    fn upgrade(
        &mut self,
        to: &ResourceSchema,
        input: Option<Value>,
        allow_downgrade: bool,
    ) -> Result<ResourcePlan, ApiError> {
        let (resource, schemas, revisions) =
            (self.resource().clone(), self.schemas(), self.revisions.clone());
        let request = Upgrade { to, input: input.as_ref(), allow_downgrade };
        upgrade(&resource, &revisions, &schemas, request, &self.ctx(ANA))
    }

    /// Every schema version known: the one requests use and the others
    /// registered, as the adapter would load those the revisions name.
    fn schemas(&self) -> Vec<ResourceSchema> {
        let mut all = vec![self.schema.clone()];
        all.extend(self.other_versions.iter().cloned());
        all
    }

    fn decide(&mut self, actor: &str, revision: i64, verdict: Verdict) -> Result<ResourcePlan, ApiError> {
        let (resource, schemas) = (self.resource().clone(), self.schemas());
        // The approver reads the revision's plan once its plan job ran.
        let planning = |j: &Job| j.operation == JobOperation::Plan && j.request.revision == revision;
        if self.jobs.iter().any(|j| j.status == JobStatus::Queued && planning(j)) {
            self.run_job(JobStatus::Completed);
        }
        let plan = self.revisions.iter().find(|r| r.number == revision).and_then(|r| r.plan.clone());
        let (revisions, jobs) = (self.revisions.clone(), self.jobs.clone());
        let request =
            DecisionRequest { revision, plan: plan.map(|p| p.sha256), reason: Some("reviewed".into()) };
        let ctx = self.ctx(actor);
        match verdict {
            Verdict::Approve => approve(&resource, &schemas, &revisions, request, &ctx),
            Verdict::Refuse => refuse(&resource, &revisions, &jobs, request, &ctx),
        }
    }

    fn delete(&mut self) -> Result<Option<ResourcePlan>, ApiError> {
        let (resource, schemas) = (self.resource().clone(), self.schemas());
        let (revisions, jobs) = (self.revisions.clone(), self.jobs.clone());
        delete(&resource, &schemas, &revisions, &jobs, &self.ctx(BEN))
    }

    fn retry(&mut self) -> Result<ResourcePlan, ApiError> {
        let (resource, schemas) = (self.resource().clone(), self.schemas());
        let (revisions, jobs) = (self.revisions.clone(), self.jobs.clone());
        retry(&resource, &schemas, &revisions, &jobs, &self.ctx(BEN))
    }

    /// What the SQL store does with a plan, in its order.
    fn apply(&mut self, plan: ResourcePlan) {
        if let Some(created) = plan.create {
            self.resource = Some(created);
        }
        if let Some(expected) = plan.expected_revision {
            assert_eq!(self.resource().revision, expected, "a stale plan would be refused");
        }
        if let Some(d) = &plan.decision {
            let r = self.revisions.iter_mut().find(|r| r.number == d.revision).unwrap();
            assert_eq!(r.state, RevisionState::PendingApproval);
            r.state = d.state;
        }
        if plan.supersede_pending {
            for r in self.revisions.iter_mut().filter(|r| r.state == RevisionState::PendingApproval) {
                r.state = RevisionState::Superseded;
            }
        }
        if let Some(why) = &plan.cancel_queued_applies {
            for j in self
                .jobs
                .iter_mut()
                .filter(|j| j.status == JobStatus::Queued && j.operation != JobOperation::Destroy)
            {
                j.status = JobStatus::Cancelled;
                j.reason = Some(why.clone());
            }
        }
        let resource = self.resource.as_mut().unwrap();
        if let Some(revision) = plan.revision {
            resource.revision = revision.number;
            resource.region = revision.region.clone();
            resource.schema_id = revision.schema_id;
            self.revisions.push(revision);
        }
        if let Some(job) = plan.job {
            self.jobs.push(job);
        }
        let status = match plan.status {
            StatusUpdate::Set(s) => s,
            StatusUpdate::Settle(s) => self.settled(s),
        };
        self.resource.as_mut().unwrap().status = status;
    }

    fn settled(&self, fallback: ResourceStatus) -> ResourceStatus {
        let waiting = self
            .jobs
            .iter()
            .find(|j| j.status == JobStatus::Running)
            .or_else(|| self.jobs.iter().find(|j| j.status == JobStatus::Queued))
            .map(|j| (j.operation, j.status));
        let pending = self.revisions.iter().any(|r| r.state == RevisionState::PendingApproval);
        settle(fallback, waiting, pending)
    }

    /// An Agent ran the newest queued job to `outcome`.
    fn run_job(&mut self, outcome: JobStatus) {
        let job = self.jobs.iter_mut().rev().find(|j| j.status == JobStatus::Queued).unwrap();
        job.attempts += 1;
        job.status = outcome;
        let (operation, revision) = (job.operation, job.request.revision);
        if (operation, outcome) == (JobOperation::Plan, JobStatus::Completed) {
            let planned = self.revisions.iter_mut().find(|r| r.number == revision).unwrap();
            let sha256 = format!("{revision:064x}");
            planned.plan = Some(crate::plan::RevisionPlan { sha256, summary: Default::default() });
        }
        if let Some(status) = queue::resource_status_for(operation, outcome) {
            let settled = self.settled(status);
            self.resource.as_mut().unwrap().status = settled;
        }
    }

    fn status(&self) -> ResourceStatus {
        self.resource().status
    }
}

fn input() -> Value {
    json!({ "size": 3 })
}

#[test]
fn create_without_approval_queues_an_apply_with_everything_frozen() {
    let mut w = World::new(false);
    let plan = w.create(ANA, input()).unwrap();
    assert_eq!(plan.status, StatusUpdate::Set(ResourceStatus::Queued));
    assert_eq!(plan.event.action, crate::audit::AuditAction::ResourceCreated);
    let job = plan.job.as_ref().unwrap();
    assert_eq!(job.operation, JobOperation::Apply);
    assert_eq!(job.queued_at, w.clock.now());
    // Defaults for the environment are laid under the input.
    assert_eq!(job.request.effective_input, json!({ "size": 3, "tier": "gold" }));
    // No region asked for: the account's.
    assert_eq!(job.request.region, "eu-west-1");
    assert_eq!(job.request.state_key, state_key(plan.resource));
    let revision = plan.revision.as_ref().unwrap();
    assert_eq!((revision.number, revision.state), (1, RevisionState::NotRequired));
    assert_eq!(revision.requested_by, ANA);
}

#[test]
fn bad_input_or_no_account_refuses_before_anything_is_planned() {
    let mut w = World::new(true);
    let err = w.create(ANA, json!({ "size": 11 })).unwrap_err();
    assert_eq!(err.code, ErrorCode::SchemaViolation);
    let err = w.create(ANA, json!({ "size": 3, "extra": true })).unwrap_err();
    assert_eq!(err.code, ErrorCode::SchemaViolation);
    // Keys a module cannot take, or that Heimdall sets itself, are refused now, not by the Agent.
    for key in ["heimdall_region", "not a name"] {
        w.schema.input_schema["additionalProperties"] = json!(true);
        let err = w.create(ANA, json!({ "size": 3, key: "x" })).unwrap_err();
        assert_eq!(err.code, ErrorCode::SchemaViolation, "{key}: {err:?}");
    }
    let err = w.create_named("Not A Name", input()).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    // Refused now, even though it would wait for approval first.
    w.account = None;
    let err = w.create(ANA, input()).unwrap_err();
    assert_eq!(err.code, ErrorCode::NoCloudAccount);
    assert!(err.message.contains("environment prod to system shop, domain retail"), "{}", err.message);
}

#[test]
fn approval_flow_with_a_fake_clock() {
    let mut w = World::new(true);
    let plan = w.create(ANA, input()).unwrap();
    assert_eq!(plan.job.as_ref().unwrap().operation, JobOperation::Plan, "only a plan runs before approval");
    w.apply(plan);
    assert_eq!(w.status(), ResourceStatus::PendingApproval);

    // The requester cannot decide; naming another revision is stale.
    assert_eq!(w.decide(ANA, 1, Verdict::Approve).unwrap_err().code, ErrorCode::SelfApproval);
    assert_eq!(w.decide(BEN, 2, Verdict::Approve).unwrap_err().code, ErrorCode::StaleRevision);

    w.clock.advance(Duration::hours(2));
    let plan = w.decide(BEN, 1, Verdict::Approve).unwrap();
    let decision = plan.decision.clone().unwrap();
    assert_eq!((decision.state, decision.decided_by.as_str()), (RevisionState::Approved, BEN));
    assert_eq!(decision.decided_at, w.clock.now());
    assert_eq!(plan.cancel_queued_applies.as_deref(), Some("superseded by revision 1"));
    w.apply(plan);
    assert_eq!(w.status(), ResourceStatus::Queued);
    w.run_job(JobStatus::Completed);
    assert_eq!(w.status(), ResourceStatus::Provisioned);

    // A change waits; a week later it can no longer be approved.
    let plan = w.change(ANA, json!({ "size": 4 })).unwrap();
    assert_eq!(plan.expected_revision, Some(1));
    assert!(plan.job.as_ref().is_some_and(|j| j.operation == JobOperation::Plan));
    assert!(plan.cancel_queued_applies.is_none());
    w.apply(plan);
    assert_eq!(w.status(), ResourceStatus::PendingApproval);
    w.clock.advance(Duration::days(8));
    let err = w.decide(BEN, 2, Verdict::Approve).unwrap_err();
    assert_eq!(err.code, ErrorCode::StaleRevision);
    assert!(err.message.contains("expired"), "{}", err.message);
}

#[test]
fn a_refused_create_is_refused_and_a_refused_change_goes_back_to_its_last_job() {
    let mut w = World::new(true);
    let plan = w.create(ANA, input()).unwrap();
    w.apply(plan);
    let plan = w.decide(BEN, 1, Verdict::Refuse).unwrap();
    assert_eq!(plan.status, StatusUpdate::Settle(ResourceStatus::Refused));
    assert_eq!(plan.event.action, crate::audit::AuditAction::ResourceRefused);
    w.apply(plan);
    assert_eq!(w.status(), ResourceStatus::Refused);

    let mut w = World::new(true);
    let plan = w.create(ANA, input()).unwrap();
    w.apply(plan);
    let plan = w.decide(BEN, 1, Verdict::Approve).unwrap();
    w.apply(plan);
    w.run_job(JobStatus::Failed);
    let plan = w.change(ANA, json!({ "size": 5 })).unwrap();
    w.apply(plan);
    let plan = w.decide(BEN, 2, Verdict::Refuse).unwrap();
    assert_eq!(plan.status, StatusUpdate::Settle(ResourceStatus::Failed));
    w.apply(plan);
    assert_eq!(w.status(), ResourceStatus::Failed);
}

#[test]
fn a_change_without_approval_supersedes_what_is_queued() {
    let mut w = World::new(false);
    let plan = w.create(ANA, input()).unwrap();
    w.apply(plan);
    let plan = w.change(ANA, json!({ "size": 6 })).unwrap();
    assert_eq!(plan.cancel_queued_applies.as_deref(), Some("superseded by revision 2"));
    assert!(plan.supersede_pending);
    w.apply(plan);
    let states: Vec<_> = w.jobs.iter().map(|j| j.status).collect();
    assert_eq!(states, [JobStatus::Cancelled, JobStatus::Queued]);
    assert_eq!(w.jobs[1].request.revision, 2);
    assert_eq!(w.status(), ResourceStatus::Queued);
}

#[test]
fn delete_destroys_only_what_ran_and_is_idempotent() {
    // Never ran: deleted at once, no job.
    let mut w = World::new(false);
    let plan = w.create(ANA, input()).unwrap();
    w.apply(plan);
    let plan = w.delete().unwrap().unwrap();
    assert!(plan.job.is_none());
    assert_eq!(plan.status, StatusUpdate::Set(ResourceStatus::Deleted));
    assert_eq!(plan.cancel_queued_applies.as_deref(), Some("cancelled by delete"));
    w.apply(plan);
    assert_eq!(w.jobs[0].status, JobStatus::Cancelled);
    assert!(w.delete().unwrap().is_none(), "deleting twice changes nothing");
    assert_eq!(w.change(ANA, input()).unwrap_err().code, ErrorCode::Conflict);

    // Ran: a destroy is queued, and the Resource is deleting until it ends.
    let mut w = World::new(false);
    let plan = w.create(ANA, input()).unwrap();
    w.apply(plan);
    w.run_job(JobStatus::Completed);
    let plan = w.delete().unwrap().unwrap();
    assert_eq!(plan.job.as_ref().unwrap().operation, JobOperation::Destroy);
    w.apply(plan);
    assert_eq!(w.status(), ResourceStatus::Deleting);
    assert!(w.delete().unwrap().is_none());
    w.run_job(JobStatus::Completed);
    assert_eq!(w.status(), ResourceStatus::Deleted);
}

#[test]
fn retry_repeats_the_failed_operation_only() {
    let mut w = World::new(false);
    let plan = w.create(ANA, input()).unwrap();
    w.apply(plan);
    assert_eq!(w.retry().unwrap_err().code, ErrorCode::Conflict, "a queued Resource is not retried");
    w.run_job(JobStatus::Completed);
    let plan = w.delete().unwrap().unwrap();
    w.apply(plan);
    w.run_job(JobStatus::Failed);
    assert_eq!(w.status(), ResourceStatus::Failed);
    let plan = w.retry().unwrap();
    assert_eq!(plan.job.as_ref().unwrap().operation, JobOperation::Destroy);
    assert_eq!(plan.status, StatusUpdate::Set(ResourceStatus::Deleting));
    assert_eq!(plan.event.action, crate::audit::AuditAction::ResourceRetried);
}

#[test]
fn settle_shows_what_the_resource_waits_on() {
    use JobOperation::*;
    use ResourceStatus::*;
    assert_eq!(settle(Provisioned, None, false), Provisioned);
    assert_eq!(settle(Provisioned, Some((Apply, JobStatus::Queued)), true), Queued);
    assert_eq!(settle(Failed, Some((Destroy, JobStatus::Running)), false), Deleting);
    assert_eq!(settle(Provisioned, None, true), PendingApproval);
    assert_eq!(settle(Deleted, None, true), Deleted, "a deleted Resource waits on nothing");
}

#[test]
fn an_import_is_an_import_job_until_it_lands_then_changes_are_applies() {
    let target = crate::infra::ImportTarget { address: "terraform_data.bucket".into(), id: "f19f".into() };
    for requires_approval in [false, true] {
        let mut w = World::new(requires_approval);
        let bad = crate::infra::ImportTarget { address: "not an address".into(), id: "x".into() };
        let refused = w.create_importing(ANA, "orders", input(), vec![bad]).unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidInput);
        let plan = w.create_importing(ANA, "orders", input(), vec![target.clone()]).unwrap();
        assert_eq!(plan.event.action, crate::audit::AuditAction::ResourceImportRequested);
        w.apply(plan);
        if requires_approval {
            let planned = w.jobs.iter().map(|j| (j.operation, j.request.imports.len())).collect::<Vec<_>>();
            assert_eq!(
                planned,
                [(JobOperation::Plan, 1)],
                "only a plan (with its imports) runs before approval"
            );
            let plan = w.decide(BEN, 1, Verdict::Approve).unwrap();
            w.apply(plan);
        }
        let job = w.jobs.last().unwrap();
        assert_eq!(
            (job.operation, job.request.imports.as_slice()),
            (JobOperation::Import, [target.clone()].as_slice())
        );
        // A failed import is retried as an import.
        w.run_job(JobStatus::Failed);
        let plan = w.retry().unwrap();
        w.apply(plan);
        assert_eq!(w.jobs.last().unwrap().operation, JobOperation::Import);
        w.run_job(JobStatus::Completed);
        assert_eq!(w.status(), ResourceStatus::Provisioned);
        // Later revisions apply; they import nothing.
        let plan = w.change(ANA, json!({ "size": 4 })).unwrap();
        w.apply(plan);
        if requires_approval {
            let plan = w.decide(BEN, 2, Verdict::Approve).unwrap();
            w.apply(plan);
        }
        let job = w.jobs.last().unwrap();
        assert_eq!(job.operation, JobOperation::Apply);
        assert!(job.request.imports.is_empty());
    }
}

#[test]
fn an_approval_names_the_plan_and_the_apply_runs_exactly_that_plan() {
    let mut w = World::new(true);
    let plan = w.create(ANA, input()).unwrap();
    let job = plan.job.clone().unwrap();
    assert_eq!(job.request.plan_key.as_deref(), Some(crate::plan::plan_key(plan.resource).as_str()));
    assert!(job.request.plan_sha256.is_none());
    w.apply(plan);
    let (resource, schemas) = (w.resource().clone(), w.schemas());
    let ask = |w: &mut World, plan: Option<&str>| {
        let request = DecisionRequest { revision: 1, plan: plan.map(str::to_owned), reason: None };
        let revisions = w.revisions.clone();
        approve(&resource, &schemas, &revisions, request, &w.ctx(BEN))
    };
    // Before its plan job ran, nothing can be approved.
    assert_eq!(ask(&mut w, Some(&"a".repeat(64))).unwrap_err().code, ErrorCode::StalePlan);
    w.run_job(JobStatus::Completed);
    let sha = w.revisions[0].plan.clone().unwrap().sha256;
    for wrong in [None, Some("b".repeat(64))] {
        assert_eq!(ask(&mut w, wrong.as_deref()).unwrap_err().code, ErrorCode::StalePlan, "{wrong:?}");
    }
    let approved = ask(&mut w, Some(&sha[..12])).unwrap();
    let apply = approved.job.unwrap();
    assert_eq!(apply.operation, JobOperation::Apply);
    assert_eq!(apply.request.plan_sha256.as_deref(), Some(sha.as_str()), "the full hash, not the prefix");
    assert_eq!(approved.event.detail["plan"], json!(sha));
}

#[test]
fn a_failed_plan_is_planned_again_by_retry() {
    let mut w = World::new(true);
    let plan = w.create(ANA, input()).unwrap();
    w.apply(plan);
    w.run_job(JobStatus::Failed);
    assert_eq!(w.status(), ResourceStatus::PendingApproval);
    let plan = w.retry().unwrap();
    assert_eq!(plan.job.as_ref().map(|j| (j.operation, j.request.revision)), Some((JobOperation::Plan, 1)));
    assert_eq!(plan.status, StatusUpdate::Set(ResourceStatus::PendingApproval));
}

#[test]
fn abandon_lets_a_resource_go_without_a_job_and_refuses_while_one_runs() {
    let mut w = World::new(false);
    let plan = w.create(ANA, input()).unwrap();
    w.apply(plan);
    w.run_job(JobStatus::Completed);
    let change = w.change(ANA, json!({ "size": 4 })).unwrap();
    w.apply(change);
    w.jobs.last_mut().unwrap().status = JobStatus::Running;
    let (resource, jobs) = (w.resource().clone(), w.jobs.clone());
    let running = abandon(&resource, &jobs, &w.ctx(ANA)).unwrap_err();
    assert_eq!(running.code, ErrorCode::Conflict);
    assert!(running.message.contains("running"), "{}", running.message);

    w.jobs.last_mut().unwrap().status = JobStatus::Queued;
    let (resource, jobs) = (w.resource().clone(), w.jobs.clone());
    let plan = abandon(&resource, &jobs, &w.ctx(ANA)).unwrap();
    assert_eq!(plan.job, None, "nothing is destroyed: no job at all");
    assert_eq!(plan.event.action, AuditAction::ResourceAbandoned);
    w.apply(plan);
    assert_eq!(w.status(), ResourceStatus::Abandoned);
    assert_eq!(w.jobs.last().unwrap().status, JobStatus::Cancelled, "the queued apply is cancelled");

    let (resource, jobs) = (w.resource().clone(), w.jobs.clone());
    assert_eq!(abandon(&resource, &jobs, &w.ctx(ANA)).unwrap_err().code, ErrorCode::Conflict);
    assert_eq!(w.change(ANA, json!({ "size": 5 })).unwrap_err().code, ErrorCode::Conflict, "no more changes");
}

/// Version `n` of the `bucket` type over module `acme/bucket` at `1.n.0`;
/// from version 2 on it takes an optional `zone`.
fn version(n: i64, requires_approval: bool) -> ResourceSchema {
    let mut v = schema(requires_approval);
    v.id = SchemaId::from_uuid(Uuid::from_u128(200 + n as u128));
    v.version = n;
    v.module =
        Some(crate::infra::ModuleRef { source: "acme/bucket/aws".into(), version: format!("1.{n}.0") });
    if n >= 2 {
        v.input_schema["properties"]["zone"] = json!({ "enum": ["a", "b"] });
    }
    v
}

fn module_version(plan: &ResourcePlan) -> String {
    plan.job.as_ref().and_then(|j| j.request.module.as_ref()).map(|m| m.version.clone()).unwrap_or_default()
}

#[test]
fn an_upgrade_runs_the_new_module_on_the_same_state_and_approval_follows_the_new_version() {
    let mut w = World::new(false);
    w.schema = version(1, false);
    w.other_versions = vec![version(2, true)];
    let plan = w.create(ANA, input()).unwrap();
    w.apply(plan);
    w.run_job(JobStatus::Completed);
    let state_key_before = w.jobs[0].request.state_key.clone();

    let v2 = version(2, true);
    let plan = w.upgrade(&v2, Some(json!({ "size": 3, "zone": "a" })), false).unwrap();
    let revision = plan.revision.clone().unwrap();
    assert_eq!((revision.number, revision.schema_id, revision.schema_version), (2, v2.id, 2));
    assert_eq!(revision.state, RevisionState::PendingApproval, "version 2 requires approval");
    assert_eq!(plan.job.as_ref().unwrap().operation, JobOperation::Plan);
    assert_eq!(module_version(&plan), "1.2.0");
    assert_eq!(
        plan.job.as_ref().unwrap().request.state_key,
        state_key_before,
        "the same state: no new Resource"
    );
    assert_eq!(plan.event.action, AuditAction::ResourceUpgraded);
    assert_eq!(
        (plan.event.detail["from_version"].clone(), plan.event.detail["to_version"].clone()),
        (json!(1), json!(2))
    );
    w.apply(plan);
    assert_eq!(w.resource().schema_id, v2.id);

    // While it waits, a destroy or a retry still runs what is applied: version 1's module.
    let destroy = w.delete().unwrap().unwrap();
    assert_eq!(module_version(&destroy), "1.1.0");
    // Approved by someone else, the apply runs version 2's module.
    let approved = w.decide(BEN, 2, Verdict::Approve).unwrap();
    assert_eq!(
        (approved.job.as_ref().unwrap().operation, module_version(&approved)),
        (JobOperation::Apply, "1.2.0".into())
    );
    w.apply(approved);
    w.run_job(JobStatus::Completed);
    // A plain change now stays on version 2, with version 2's rules.
    let change = w.change(ANA, json!({ "size": 4, "zone": "b" })).unwrap();
    assert_eq!(change.revision.as_ref().unwrap().schema_version, 2);
    assert_eq!(module_version(&change), "1.2.0");
}

#[test]
fn a_change_while_an_upgrade_waits_stays_on_the_applied_version_and_supersedes_it() {
    let mut w = World::new(false);
    w.schema = version(1, false);
    let plan = w.create(ANA, input()).unwrap();
    w.apply(plan);
    w.run_job(JobStatus::Completed);
    let plan = w.upgrade(&version(2, true), None, false).unwrap();
    assert_eq!(plan.revision.as_ref().unwrap().input, input(), "no input given: the current one is kept");
    w.other_versions = vec![version(2, true)];
    w.apply(plan);
    let change = w.change(ANA, json!({ "size": 5 })).unwrap();
    assert_eq!(change.revision.as_ref().unwrap().schema_version, 1);
    assert!(change.supersede_pending);
    // Version 1's rules: `zone` is not one of its fields.
    assert_eq!(
        w.change(ANA, json!({ "size": 5, "zone": "a" })).unwrap_err().code,
        ErrorCode::SchemaViolation
    );
}

#[test]
fn an_upgrade_is_refused_to_the_same_an_older_a_deprecated_or_another_type_and_checks_the_new_rules() {
    let mut w = World::new(false);
    w.schema = version(2, false);
    w.other_versions = vec![version(1, false), version(3, false)];
    let plan = w.create(ANA, input()).unwrap();
    w.apply(plan);
    w.run_job(JobStatus::Completed);

    let mut v3 = version(3, false);
    v3.input_schema["required"] = json!(["size", "tier", "zone"]);
    let err = w.upgrade(&v3, None, false).unwrap_err();
    assert_eq!(err.code, ErrorCode::SchemaViolation);
    assert!(err.message.contains("zone"), "names the field: {}", err.message);

    let err = w.upgrade(&version(2, false), None, false).unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(err.message.contains("already"), "{}", err.message);

    let err = w.upgrade(&version(1, false), None, false).unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(err.message.contains("--allow-downgrade"), "{}", err.message);
    let down = w.upgrade(&version(1, false), None, true).unwrap();
    assert_eq!((down.revision.as_ref().unwrap().schema_version, module_version(&down)), (1, "1.1.0".into()));

    let mut deprecated = version(3, false);
    deprecated.deprecated_at = Some(w.clock.now());
    assert_eq!(w.upgrade(&deprecated, None, false).unwrap_err().code, ErrorCode::Conflict);

    let mut other = version(3, false);
    other.type_name = "queue".into();
    assert_eq!(w.upgrade(&other, None, false).unwrap_err().code, ErrorCode::InvalidInput);

    let abandoned = abandon(&w.resource().clone(), &w.jobs.clone(), &w.ctx(ANA)).unwrap();
    w.apply(abandoned);
    assert_eq!(w.upgrade(&version(3, false), None, false).unwrap_err().code, ErrorCode::Conflict);
}

#[test]
fn a_resource_is_outdated_until_it_moves_to_the_version_a_new_request_gets() {
    let mut w = World::new(false);
    w.schema = version(1, false);
    let plan = w.create(ANA, input()).unwrap();
    w.apply(plan);
    w.run_job(JobStatus::Completed);
    let (v1, v2) = (version(1, false), version(2, false));
    assert!(!is_outdated(w.resource(), std::slice::from_ref(&v1)), "no newer version");
    assert!(is_outdated(w.resource(), &[v1.clone(), v2.clone()]));
    let mut v2_deprecated = v2.clone();
    v2_deprecated.deprecated_at = Some(w.clock.now());
    assert!(!is_outdated(w.resource(), &[v1.clone(), v2_deprecated]), "a deprecated version is no target");

    let plan = w.upgrade(&v2, None, false).unwrap();
    w.apply(plan);
    assert!(!is_outdated(w.resource(), &[v1.clone(), v2.clone()]), "its newest revision names version 2");

    let mut gone = w.resource().clone();
    gone.schema_id = v1.id;
    gone.status = ResourceStatus::Abandoned;
    assert!(!is_outdated(&gone, &[v1, v2]), "a Resource no longer managed is not outdated");
}
