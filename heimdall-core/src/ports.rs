//! Ports: what core needs from the outside world, in core's own types.
//!
//! Adapters implement these (`heimdall-api`'s SQL store for PostgreSQL and
//! SQLite). Architecture Invariant: no driver type (sqlx, tokio, …) appears
//! in a port's signature; storage failures are [`StoreError`].

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::audit::AuditAction;
use crate::domain::{AuditEvent, CatalogEntry, CatalogKind, Member, Organization, Policy, Role, TokenInfo};
use crate::error::{ApiError, ErrorCode};
use crate::ids::{CatalogId, EventId, MemberId, OrgId, PolicyId, TokenId};
use crate::token::TokenHash;

/// Why a store operation failed, in terms a caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("that {0} already exists")]
    AlreadyExists(&'static str),
    #[error("{0}")]
    NotEmpty(String),
    /// A rule of core, decided inside the store's transaction on what it
    /// read there (the last owner: `members::check_owner_remains`).
    #[error("{0}")]
    Refused(ApiError),
    #[error("this database already has an organization; bootstrap runs once")]
    AlreadyBootstrapped,
    /// The backend failed (connection lost, disk full, …). The message is
    /// for operators' logs; it never reaches an API response.
    #[error("storage unavailable: {0}")]
    Backend(String),
    /// The caller acted on a revision that is no longer current.
    #[error("{0}")]
    StaleRevision(String),
    /// The caller's lease on a job is gone (see [`FENCED`]).
    #[error("{FENCED}")]
    Fenced,
    /// The request conflicts with the current state (e.g. retrying a
    /// Resource that has not failed).
    #[error("{0}")]
    Conflict(String),
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound(what) => ApiError::not_found(what),
            StoreError::AlreadyExists(_) => ApiError::new(ErrorCode::AlreadyExists, err.to_string()),
            StoreError::NotEmpty(msg) => ApiError::new(ErrorCode::NotEmpty, msg),
            StoreError::Refused(refusal) => refusal,
            StoreError::AlreadyBootstrapped => ApiError::new(ErrorCode::AlreadyBootstrapped, err.to_string()),
            StoreError::Backend(_) => ApiError::new(ErrorCode::Internal, "internal storage error"),
            StoreError::StaleRevision(msg) => ApiError::new(ErrorCode::StaleRevision, msg),
            StoreError::Fenced => ApiError::new(ErrorCode::Conflict, FENCED),
            StoreError::Conflict(msg) => ApiError::new(ErrorCode::Conflict, msg),
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// An audit event to be written in the same transaction as the change it
/// describes: either both are stored or neither.
#[derive(Clone, Debug)]
pub struct NewEvent {
    pub id: EventId,
    pub at: OffsetDateTime,
    pub actor: String,
    pub action: AuditAction,
    pub target: String,
    pub detail: serde_json::Value,
}

impl NewEvent {
    pub fn into_event(self, org_id: OrgId) -> AuditEvent {
        AuditEvent {
            id: self.id,
            org_id,
            at: self.at,
            actor: self.actor,
            action: self.action.as_str().to_owned(),
            target: self.target,
            target_name: None,
            detail: self.detail,
        }
    }
}

/// A newly issued token: its id, whose it is and its hash (never the token).
#[derive(Clone, Debug)]
pub struct NewToken {
    pub id: TokenId,
    pub name: String,
    pub hash: TokenHash,
    /// When it stops working; `None`: when revoked (a Console session's
    /// token ends, `heimdall_core::console::SESSION_LIFETIME`).
    pub expires_at: Option<OffsetDateTime>,
}

/// Query for the audit feed, newest first.
#[derive(Clone, Debug, Default)]
pub struct EventQuery {
    pub limit: u32,
    /// Only events strictly older than this one (keyset pagination).
    pub before: Option<OffsetDateTime>,
    pub action_prefix: Option<String>,
}

/// A member's own API tokens (stored as their SHA-256 only); what
/// `token::service` runs its use cases on.
#[async_trait]
pub trait TokenStore: Send + Sync {
    /// Stores `token` for `member`, still in the organization.
    async fn create_token(
        &self,
        org: OrgId,
        member: MemberId,
        token: &NewToken,
        event: NewEvent,
    ) -> StoreResult<TokenInfo>;
    /// The member's tokens, revoked ones too, oldest first.
    async fn list_tokens(&self, org: OrgId, member: MemberId) -> StoreResult<Vec<TokenInfo>>;
    /// Revokes one of the member's tokens (idempotent: the first time is
    /// kept); `NotFound` for a token that is not hers.
    async fn revoke_token(
        &self,
        org: OrgId,
        member: MemberId,
        id: TokenId,
        event: NewEvent,
    ) -> StoreResult<TokenInfo>;
}

/// The organization's members, scoped to one organization; what
/// `members::service` runs its use cases on.
#[async_trait]
pub trait MemberStore: Send + Sync {
    /// Adds a member with their first token; an address already there is
    /// refused `AlreadyExists`.
    async fn add_member(&self, member: &Member, token: &NewToken, event: NewEvent) -> StoreResult<()>;
    async fn list_members(&self, org: OrgId) -> StoreResult<Vec<Member>>;
    async fn get_member(&self, org: OrgId, id: MemberId) -> StoreResult<Member>;
    async fn find_member_by_email(&self, org: OrgId, email: &str) -> StoreResult<Option<Member>>;
    /// Changes a role; refuses with `LAST_OWNER` (checked in the transaction)
    /// if no owner would remain.
    async fn change_role(&self, org: OrgId, id: MemberId, role: Role, event: NewEvent)
        -> StoreResult<Member>;
    /// Removes a member and revokes all their tokens, atomically; refuses
    /// with `LAST_OWNER` if no owner would remain.
    async fn remove_member(&self, org: OrgId, id: MemberId, event: NewEvent) -> StoreResult<Member>;
}

/// The resource schemas' versions, scoped to one organization; what
/// `schemas::service` runs its use cases on.
#[async_trait]
pub trait SchemaStore: Send + Sync {
    /// Stores a new schema version; the store assigns `version` (1 + the
    /// newest of that type) and returns the stored schema.
    async fn create_schema(&self, schema: &ResourceSchema, event: NewEvent) -> StoreResult<ResourceSchema>;
    async fn list_schemas(&self, org: OrgId) -> StoreResult<Vec<ResourceSchema>>;
    /// A schema by id, deleted ones too (the Resources that were on one
    /// keep it); [`Self::list_schemas`] leaves them out.
    async fn get_schema(&self, org: OrgId, id: SchemaId) -> StoreResult<ResourceSchema>;
    /// Deprecates a version (`Some((when, by whom))`) or takes that back
    /// (`None`), with its event; the schema as it is now.
    async fn set_schema_deprecation(
        &self,
        org: OrgId,
        id: SchemaId,
        deprecation: Option<(time::OffsetDateTime, String)>,
        event: NewEvent,
    ) -> StoreResult<ResourceSchema>;
    /// Deletes a version once no Resource (not deleted) uses it
    /// (`schemas::check_delete`, decided in the transaction).
    async fn delete_schema(
        &self,
        schema: &ResourceSchema,
        at: time::OffsetDateTime,
        event: NewEvent,
    ) -> StoreResult<()>;
}

/// The catalog (domains, systems, components, environments), scoped to
/// one organization; what `catalog::service` runs its use cases on.
#[async_trait]
pub trait CatalogStore: Send + Sync {
    async fn create_catalog_entry(&self, entry: &CatalogEntry, event: NewEvent) -> StoreResult<()>;
    async fn list_catalog(
        &self,
        org: OrgId,
        kind: CatalogKind,
        parent: Option<CatalogId>,
    ) -> StoreResult<Vec<CatalogEntry>>;
    async fn get_catalog_entry(&self, org: OrgId, id: CatalogId) -> StoreResult<CatalogEntry>;
    /// Entries of `kind` with this name, anywhere in the organization
    /// (a system's name is unique only within its domain).
    async fn find_catalog_by_name(
        &self,
        org: OrgId,
        kind: CatalogKind,
        name: &str,
    ) -> StoreResult<Vec<CatalogEntry>>;
    async fn rename_catalog_entry(
        &self,
        org: OrgId,
        id: CatalogId,
        name: &str,
        event: NewEvent,
    ) -> StoreResult<CatalogEntry>;
    /// Deletes an entry that contains nothing; `NotEmpty` otherwise.
    async fn delete_catalog_entry(&self, org: OrgId, id: CatalogId, event: NewEvent) -> StoreResult<()>;
}

/// The organization's Cedar policies and their history; what
/// `policies::service` runs its use cases on.
#[async_trait]
pub trait PolicyStore: Send + Sync {
    async fn create_policy(&self, policy: &Policy, event: NewEvent) -> StoreResult<()>;
    async fn list_policies(&self, org: OrgId) -> StoreResult<Vec<Policy>>;
    /// A number that changes in the same transaction as any change to the
    /// organization's policies (what a cache of compiled policies keys on).
    async fn policy_version(&self, org: OrgId) -> StoreResult<i64>;
    async fn get_policy(&self, org: OrgId, id: PolicyId) -> StoreResult<Policy>;
    async fn delete_policy(&self, org: OrgId, id: PolicyId, event: NewEvent) -> StoreResult<()>;
    /// Writes a policy's next version (`policies::update`) if it is still
    /// at `write.previous_version` (else `StaleRevision`), with its history
    /// row, the organization's policy version and the event, in one
    /// transaction: there is no moment without the policy.
    async fn update_policy(&self, write: &crate::policies::PolicyWrite, event: NewEvent) -> StoreResult<()>;
    /// Every version of a policy that exists, newest first.
    async fn policy_versions(
        &self,
        org: OrgId,
        id: PolicyId,
    ) -> StoreResult<Vec<crate::domain::PolicyVersion>>;
}

/// Who a use case runs for, as the adapter knows them: the organization,
/// the policies' answer for this caller, and the caller's event from a
/// plan (its id, time and actor). Core decides what to ask; the adapter
/// answers.
#[async_trait]
pub trait Actor: Send + Sync {
    fn org(&self) -> OrgId;
    /// How events and rows name the caller (`created_by`).
    fn name(&self) -> &str;
    /// The caller's member id (what personal secrets are bound to).
    fn member(&self) -> MemberId;
    /// The caller's role in the organization (the member rules weigh it).
    fn role(&self) -> Role;
    fn now(&self) -> OffsetDateTime;
    /// `FORBIDDEN` unless the policies let the caller do `action` on `target`.
    async fn authorize(
        &self,
        action: crate::authz::Action,
        target: &crate::authz::Target,
    ) -> Result<(), ApiError>;
    /// As [`Actor::authorize`], for an action in `environment` (policies
    /// may name it: `context.environment`).
    async fn authorize_in(
        &self,
        action: crate::authz::Action,
        target: &crate::authz::Target,
        environment: &str,
    ) -> Result<(), ApiError>;
    /// For each of `items` (a target, and its environment when it is in
    /// one), whether the policies let the caller do `action` on it: a
    /// list's entries decided together (`authz::ManyDecisions`); a refusal
    /// is `false`, never an error.
    async fn allows_each(
        &self,
        action: crate::authz::Action,
        items: &[(crate::authz::Target, Option<&str>)],
    ) -> Result<Vec<bool>, ApiError>;
    /// The environments among `environments` where the policies let the
    /// caller do `action` on `target`, each once, in order: what lives in
    /// environments (versions, a trail) shown only where it may be.
    async fn allowed_environments(
        &self,
        action: crate::authz::Action,
        target: &crate::authz::Target,
        environments: &[&str],
    ) -> Result<Vec<String>, ApiError> {
        let mut distinct: Vec<&str> = Vec::new();
        for env in environments {
            if !distinct.contains(env) {
                distinct.push(env);
            }
        }
        let items: Vec<_> = distinct.iter().map(|env| (target.clone(), Some(*env))).collect();
        let allowed = self.allows_each(action, &items).await?;
        Ok(distinct.into_iter().zip(allowed).filter(|(_, ok)| *ok).map(|(env, _)| env.to_owned()).collect())
    }
    /// The event a planned one becomes, stamped for this caller.
    fn event(&self, plan: crate::audit::EventPlan) -> NewEvent;
    /// `FORBIDDEN` unless a job may use `secret` in `environment` on the
    /// caller's behalf: `on_behalf::may_use` under her policies.
    async fn may_use(
        &self,
        secret: crate::on_behalf::UsedSecret<'_>,
        environment: &str,
        tree: &crate::authz::CatalogTree,
    ) -> Result<(), ApiError>;
}

/// The audit feed as stored; what `audit::service` reads.
#[async_trait]
pub trait EventStore: Send + Sync {
    /// Newest first, at most `query.limit`.
    async fn list_events(&self, org: OrgId, query: &EventQuery) -> StoreResult<Vec<AuditEvent>>;
    /// An audit event on its own (a refusal worth recording).
    async fn record_event(&self, org: OrgId, event: NewEvent) -> StoreResult<()>;
}

/// Console sign-in links: made by a member, traded once for a session;
/// what `console::service` runs on.
#[async_trait]
pub trait SignInStore: Send + Sync {
    /// Stores a one-time Console sign-in code (its hash) for `member`,
    /// usable until `expires_at`, with its event.
    async fn create_sign_in(
        &self,
        org: OrgId,
        member: MemberId,
        code: &TokenHash,
        expires_at: OffsetDateTime,
        event: NewEvent,
    ) -> StoreResult<()>;

    /// Uses a sign-in code: once, before it expires, for a member still
    /// there. In one transaction marks it used, stores `token` for that
    /// member and records `console.signed_in`. `None` for a code that is
    /// unknown, used, expired or whose member was removed (nothing stored).
    async fn redeem_sign_in(
        &self,
        code: &TokenHash,
        now: OffsetDateTime,
        token: &NewToken,
    ) -> StoreResult<Option<(Member, Organization)>>;
}

/// How an adapter stamps what a flow with no member behind it records (an
/// Agent enrolling, a sign-in link traded, the drift schedule): the time
/// now, and an event's id and time.
pub trait Recorder: Send + Sync {
    fn now(&self) -> OffsetDateTime;
    /// The event a planned one becomes, caused by `actor`.
    fn event(&self, actor: &str, plan: crate::audit::EventPlan) -> NewEvent;
}

/// Metadata storage for the API. Every method is scoped to one organization
/// where it touches tenant data.
#[async_trait]
pub trait MetadataStore: Send + Sync + std::fmt::Debug {
    /// Creates the first organization with its owner and the owner's first
    /// token. Refused once any organization exists.
    async fn bootstrap(
        &self,
        org: &Organization,
        owner: &Member,
        token: &NewToken,
        event: NewEvent,
    ) -> StoreResult<()>;

    /// The member and organization an active token belongs to.
    /// The member and organization an active token belongs to: not
    /// revoked, not expired at `now`, its member not removed.
    async fn authenticate(
        &self,
        hash: &TokenHash,
        now: OffsetDateTime,
    ) -> StoreResult<Option<(Member, Organization)>>;
}

// ---- Infrastructure Manager ---------------------------------------------------

use crate::ids::{CloudAccountId, JobId, LeaseId, ResourceId, SchemaId};
use crate::infra::{
    AccountLink, CloudAccount, Job, JobOperation, JobStatus, Resource, ResourceSchema, ResourceStatus,
    Revision,
};
use crate::queue::ReapDecision;
use crate::resources::ResourcePlan;

/// Filters for listing Resources; `None` means any.
#[derive(Clone, Debug, Default)]
pub struct ResourceFilter {
    pub component: Option<CatalogId>,
    pub environment: Option<CatalogId>,
    pub status: Option<ResourceStatus>,
    /// Only those after this one, in the list's order (oldest first).
    pub after: Option<crate::resources::ResourceCursor>,
    /// At most this many (`None`: all).
    pub limit: Option<u32>,
}

/// How a run ended, as reported by the Agent holding the lease.
#[derive(Clone, Debug)]
pub enum JobOutcome {
    Completed {
        outputs: serde_json::Value,
    },
    Failed {
        reason: String,
        retryable: bool,
    },
    /// The apply of an approved plan found it stale (the state moved): the
    /// job fails, and the revision is planned again for approval
    /// (`heimdall_core::plan`).
    StalePlan {
        reason: String,
    },
}

/// Why a lease-holder's call was refused.
pub const FENCED: &str = "lease is no longer held: the job was reaped or claimed by another Agent";

/// A Resource a drift schedule may be due for (`drift::due` decides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriftCandidate {
    pub org: OrgId,
    pub resource: ResourceId,
    /// Its schema's schedule; its account's is found through its placement.
    pub schema_every_seconds: Option<i64>,
    /// The newest drift check, apply or import of it, queued or finished.
    pub last: Option<OffsetDateTime>,
}

/// The cloud accounts and their links, scoped to one organization; what
/// `accounts::service` runs its use cases on.
#[async_trait]
pub trait AccountStore: Send + Sync {
    async fn create_account(&self, account: &CloudAccount, event: NewEvent) -> StoreResult<()>;
    async fn list_accounts(&self, org: OrgId) -> StoreResult<Vec<CloudAccount>>;
    async fn get_account(&self, org: OrgId, id: CloudAccountId) -> StoreResult<CloudAccount>;
    async fn find_account_by_name(&self, org: OrgId, name: &str) -> StoreResult<Option<CloudAccount>>;
    /// Links an account to a scope for an environment, replacing any
    /// account linked there before, unless Resources there keep state on
    /// that one (`accounts::check_relink`, decided in the transaction).
    async fn link_account(&self, org: OrgId, link: &AccountLink, event: NewEvent) -> StoreResult<()>;
    async fn list_links(&self, org: OrgId) -> StoreResult<Vec<AccountLink>>;
    /// Writes a change (`accounts::update`) with its event; one that moves
    /// where the account keeps state only while no Resource keeps state
    /// there (`accounts::check_state_move`, decided in the transaction).
    async fn update_account(
        &self,
        change: &crate::accounts::AccountChange,
        event: NewEvent,
    ) -> StoreResult<()>;
    /// Removes the account's link for that scope (`None`: the
    /// organization) and environment, only while no Resource of that
    /// environment keeps state on the account (`accounts::check_unlink`).
    /// `NotFound` if the account has no such link.
    async fn unlink_account(
        &self,
        account: &CloudAccount,
        scope: crate::infra::LinkScope,
        scope_id: Option<CatalogId>,
        environment: CatalogId,
        event: NewEvent,
    ) -> StoreResult<()>;
    /// Deletes an account that nothing links and no Resource keeps state
    /// on (`accounts::check_delete`, decided in the transaction).
    async fn delete_account(&self, account: &CloudAccount, event: NewEvent) -> StoreResult<()>;
}

/// Resources as records: found by id or name, listed.
#[async_trait]
pub trait ResourceRecordStore: Send + Sync {
    async fn get_resource(&self, org: OrgId, id: ResourceId) -> StoreResult<Resource>;
    async fn find_resources_by_name(&self, org: OrgId, name: &str) -> StoreResult<Vec<Resource>>;
    async fn list_resources(&self, org: OrgId, filter: &ResourceFilter) -> StoreResult<Vec<Resource>>;
    /// The Resources of `org` among `ids`, in no set order; an id of none
    /// is left out. One query for a page's worth (a job page decides each
    /// job under its Resource).
    async fn resources_by_ids(&self, org: OrgId, ids: &[ResourceId]) -> StoreResult<Vec<Resource>>;
}

/// Storage for Resources' plans, revisions and jobs.
#[async_trait]
pub trait InfraStore: Send + Sync + std::fmt::Debug {
    /// Applies a plan from `heimdall_core::resources` in one transaction,
    /// in the order `ResourcePlan` documents: all of it or, on
    /// `StaleRevision` or any error, nothing. Returns the Resource after.
    async fn apply_resource_plan(
        &self,
        org: OrgId,
        plan: &ResourcePlan,
        event: NewEvent,
    ) -> StoreResult<Resource>;
    /// Every provisioned Resource, in every organization, whose schema
    /// checks for drift on a schedule, with when it was last checked or
    /// applied.
    async fn list_drift_candidates(&self) -> StoreResult<Vec<DriftCandidate>>;
    async fn list_revisions(&self, org: OrgId, resource: ResourceId) -> StoreResult<Vec<Revision>>;
    async fn list_jobs(&self, org: OrgId, resource: Option<ResourceId>) -> StoreResult<Vec<Job>> {
        self.list_jobs_page(org, resource, None, crate::queue::JobOrder::Oldest, None, u32::MAX).await
    }
    /// At most `limit` jobs after `after`, in `order`; of one Resource,
    /// or of the Resources of one Component, when asked.
    async fn list_jobs_page(
        &self,
        org: OrgId,
        resource: Option<ResourceId>,
        component: Option<CatalogId>,
        order: crate::queue::JobOrder,
        after: Option<&crate::queue::JobCursor>,
        limit: u32,
    ) -> StoreResult<Vec<Job>>;
    async fn get_job(&self, org: OrgId, id: JobId) -> StoreResult<Job>;
    /// The job's log and whether it was truncated.
    async fn job_log(&self, org: OrgId, id: JobId) -> StoreResult<(String, bool)>;
}

/// The job queue an Agent pulls from. Claims take a lease; only the
/// current lease may heartbeat, log or complete (`StoreError::Fenced`).
#[async_trait]
pub trait JobQueue: Send + Sync + std::fmt::Debug {
    /// Claims the oldest queued job of `org` whose Resource has no running
    /// job, counting an attempt. Two claimers never get the same job.
    /// `lock_holder` is how the Agent's Terraform names itself in a state
    /// lock (`Who`), kept with the attempt.
    async fn claim(
        &self,
        org: OrgId,
        agent: &str,
        lock_holder: Option<&str>,
        lease: LeaseId,
        now: OffsetDateTime,
    ) -> StoreResult<Option<Job>>;
    /// The attempts whose Agent died (their lease ran out) of any job of
    /// `resource` since its last completed run, the most recent few
    /// (`state_lock::DEAD_ATTEMPTS_KEPT`), oldest first: a state lock one
    /// of them made may be forced by the next attempt
    /// (`state_lock::takeover`).
    async fn dead_attempts(&self, resource: ResourceId) -> StoreResult<Vec<crate::state_lock::Attempt>>;
    /// Extends the lease; returns the new expiry.
    /// Also records the state lock the attempt holds, if it knows it.
    async fn heartbeat(
        &self,
        job: JobId,
        lease: LeaseId,
        state_lock_id: Option<&str>,
        now: OffsetDateTime,
    ) -> StoreResult<OffsetDateTime>;
    /// Appends output, capped at 1 MiB per job with a truncation marker.
    async fn append_log(&self, job: JobId, lease: LeaseId, chunk: &str) -> StoreResult<()>;
    /// Ends the attempt: completes the job, requeues it (attempts left and
    /// retryable), or fails it; the Resource follows.
    async fn finish(
        &self,
        job: JobId,
        lease: LeaseId,
        outcome: JobOutcome,
        now: OffsetDateTime,
    ) -> StoreResult<Job>;
    /// [`Self::finish`] with the log's last lines appended first, in the
    /// same transaction (one commit for the run's end).
    async fn finish_with_log(
        &self,
        job: JobId,
        lease: LeaseId,
        log_tail: &str,
        outcome: JobOutcome,
        now: OffsetDateTime,
    ) -> StoreResult<Job>;
    /// Requeues or fails every running job whose lease expired before `now`.
    async fn reap(&self, now: OffsetDateTime) -> StoreResult<Vec<(JobId, ReapDecision)>>;
    /// How many jobs are queued and running, by operation (every
    /// organization: what the metrics scrape reports as the queue).
    async fn count_active_jobs(&self) -> StoreResult<Vec<(JobOperation, JobStatus, i64)>>;
}

/// Everything the API needs from storage.
/// Every port, for the adapters that need them all.
pub trait Store:
    MetadataStore
    + EventStore
    + MemberStore
    + SignInStore
    + TokenStore
    + CatalogStore
    + PolicyStore
    + SchemaStore
    + AccountStore
    + ResourceRecordStore
    + InfraStore
    + JobQueue
    + AgentRecordStore
    + AgentStore
    + EnrollmentStore
    + SecretRecordStore
    + CertificateStore
    + AssignmentStore
    + VersionStore
    + SecretStore
    + AccessStore
    + TrailStore
    + ChannelStore
    + NotificationStore
    + HoldingStore
    + DeletionStore
    + InventoryStore
    + DatabaseRecordStore
    + DatabaseStore
    + ProgramAllowanceStore
    + ProgramStore
{
}
impl<T> Store for T where
    T: MetadataStore
        + EventStore
        + MemberStore
        + SignInStore
        + TokenStore
        + CatalogStore
        + PolicyStore
        + SchemaStore
        + AccountStore
        + ResourceRecordStore
        + InfraStore
        + JobQueue
        + AgentRecordStore
        + AgentStore
        + EnrollmentStore
        + SecretRecordStore
        + CertificateStore
        + AssignmentStore
        + VersionStore
        + SecretStore
        + AccessStore
        + TrailStore
        + ChannelStore
        + NotificationStore
        + HoldingStore
        + DeletionStore
        + InventoryStore
        + DatabaseRecordStore
        + DatabaseStore
        + ProgramAllowanceStore
        + ProgramStore
{
}

// ---- What Agents hold, and deleting a secret -----------------------------------

/// One version an Agent's last inventory lists (never a value).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Holding {
    pub agent_id: AgentId,
    pub agent: String,
    pub secret: String,
    /// The environment's name.
    pub environment: String,
    pub version: i64,
    pub deactivated: bool,
    /// When the Agent last reported its inventory.
    #[serde(with = "time::serde::rfc3339")]
    pub reported_at: OffsetDateTime,
    /// When the Agent first reported holding this version.
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub held_since: Option<OffsetDateTime>,
    /// Whether the Agent is revoked, and when it last synced (for `deletion::may_delete`).
    #[serde(default)]
    pub agent_revoked: bool,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub agent_last_seen_at: Option<OffsetDateTime>,
}

/// A secret being deleted (or deleted) in one environment.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EnvironmentDeletion {
    pub secret: String,
    pub environment_id: CatalogId,
    /// The environment's name.
    pub environment: String,
    /// `deleting` or `deleted`.
    pub status: crate::deletion::Lifecycle,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<OffsetDateTime>,
    /// The highest version numbered there when it started: what it deletes
    /// (a version numbered after it is done is another write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_version: Option<i64>,
}

/// What an Agent reported on a sync, besides the inventory's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReportedAt {
    /// When the API received it.
    pub now: OffsetDateTime,
    /// The `at` of the last answer the Agent applied before it took the
    /// inventory (`heimdall_core::deletion::Hearer`).
    pub applied_through: Option<OffsetDateTime>,
}

/// One version an Agent reports holding (the environment as the Agent keys it: its id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reported {
    pub secret: String,
    pub environment: String,
    pub version: i64,
    pub deactivated: bool,
}

/// What Agents reported holding; what use cases that refuse to lose a
/// value (`deletion::may_delete`) read.
#[async_trait]
pub trait HoldingStore: Send + Sync {
    async fn holdings_of_secret(&self, org: OrgId, secret: &str) -> StoreResult<Vec<Holding>>;
    async fn holdings_of_agent(&self, org: OrgId, agent: AgentId) -> StoreResult<Vec<Holding>>;
    /// Everything every Agent of the organization reported holding.
    async fn holdings_of_org(&self, org: OrgId) -> StoreResult<Vec<Holding>>;
}

/// Starting a secret's deletion, everywhere or in one environment, the
/// deletions under way, and forgetting an Agent whose store is destroyed
/// (what it held up goes).
#[async_trait]
pub trait DeletionStore: Send + Sync {
    /// Drops `agent`'s inventory (its store is destroyed), completing deletions it held up.
    async fn forget_agent(&self, org: OrgId, agent: AgentId, event: NewEvent) -> StoreResult<()>;
    /// The secret goes `deleting` (or `deleted` at once when no Agent holds it).
    async fn start_deletion(&self, org: OrgId, secret: SecretId, event: NewEvent) -> StoreResult<()>;
    /// The secret goes `deleting` in one environment only (or `deleted`
    /// there at once when no Agent holds it there).
    async fn start_environment_deletion(
        &self,
        org: OrgId,
        secret: SecretId,
        environment: CatalogId,
        event: NewEvent,
    ) -> StoreResult<()>;
    /// Names of the organization's secrets being deleted or deleted: Agents drop what they hold of them.
    async fn deleted_secret_names(&self, org: OrgId) -> StoreResult<Vec<String>>;
    /// (secret name, environment) pairs being deleted: Agents drop what they hold there.
    async fn environment_deletions(&self, org: OrgId) -> StoreResult<Vec<EnvironmentDeletion>>;
}

#[async_trait]
pub trait InventoryStore: Send + Sync {
    /// Replaces what `agent` holds with its report (environments by id) and
    /// records how far it applied the API's answers; every deletion now
    /// done (`heimdall_core::deletion::is_done`) becomes `deleted`
    /// (`secret.deleted`), in the same transaction.
    async fn store_inventory(
        &self,
        org: OrgId,
        agent: &crate::infra::Agent,
        items: &[Reported],
        at: ReportedAt,
    ) -> StoreResult<()>;
    /// The environments `agent` must delete what it holds of.
    async fn released_environments(&self, org: OrgId, agent: AgentId) -> StoreResult<Vec<CatalogId>>;
}

// ---- Notifications ------------------------------------------------------------

use crate::notify::{Channel, Delivery, Outcome};

/// A delivery due now, with what sending it needs.
#[derive(Clone, Debug)]
pub struct DueDelivery {
    pub id: String,
    pub channel_id: String,
    /// The webhook URL, sealed (the sender opens it).
    pub url: String,
    pub action: String,
    /// The audit event, as JSON: the request body.
    pub body: String,
    /// Tries made before this one.
    pub attempts: u32,
}

/// The organization's notification channels and what was delivered,
/// scoped to one organization; what `notify::service` runs its use cases
/// on.
#[async_trait]
pub trait ChannelStore: Send + Sync {
    async fn create_channel(&self, channel: &Channel, event: NewEvent) -> StoreResult<()>;
    async fn list_channels(&self, org: OrgId) -> StoreResult<Vec<Channel>>;
    /// Removes a channel (by id or name); its pending deliveries are dropped.
    async fn delete_channel(&self, org: OrgId, key: &str, event: NewEvent) -> StoreResult<Channel>;
    /// Writes a channel's new name and webhook (its id, and so its signing
    /// secret, stay); `AlreadyExists` if the name is taken. Deliveries not
    /// yet sent go to the new webhook.
    async fn update_channel(&self, channel: &Channel, event: NewEvent) -> StoreResult<()>;
    async fn list_deliveries(&self, org: OrgId, limit: u32) -> StoreResult<Vec<Delivery>>;
}

/// The deliveries' queue, across organizations, for the delivery loop. A
/// delivery is queued by the store itself, in the transaction that writes
/// an event `notify::is_notified` names, once per channel.
#[async_trait]
pub trait NotificationStore: Send + Sync {
    /// Takes up to `limit` deliveries due at `now`, each until `lease_until`
    /// (another replica does not send it meanwhile).
    async fn claim_deliveries(
        &self,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
    ) -> StoreResult<Vec<DueDelivery>>;
    /// Records try number `attempts` and what the delivery becomes.
    async fn finish_delivery(
        &self,
        id: &str,
        attempts: u32,
        outcome: &Outcome,
        result: &str,
        now: OffsetDateTime,
    ) -> StoreResult<()>;
}

// ---- Databases and their service users -----------------------------------------

use crate::dbusers::{Database, ServiceUser, TaskKind};
use crate::ids::{DatabaseId, ServiceUserId};

/// How a claimed task of a service user ended, as its Agent reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceUserTaskResult {
    /// Created or rotated: `version` is current from `at`, the previous one
    /// (if any) retiring at `grace_until`.
    Activated { version: i64, at: OffsetDateTime, grace_until: Option<OffsetDateTime> },
    /// The previous login was locked; its version is deactivated separately.
    Retired,
    /// Nothing changed for readers; tried again from `retry_at`.
    Failed { reason: String, retry_at: OffsetDateTime },
}

/// Databases and their service users as people register and change
/// them, scoped to one organization; what `dbusers::service` runs its use
/// cases on.
#[async_trait]
pub trait DatabaseRecordStore: Send + Sync {
    async fn create_database(&self, database: &Database, event: NewEvent) -> StoreResult<()>;
    async fn list_databases(&self, org: OrgId) -> StoreResult<Vec<Database>>;
    async fn find_database(&self, org: OrgId, name: &str) -> StoreResult<Option<Database>>;
    async fn get_database(&self, org: OrgId, id: DatabaseId) -> StoreResult<Database>;
    /// Writes a change (`dbusers::update`) with its event; the next task an
    /// Agent claims uses it.
    async fn update_database(&self, database: &Database, event: NewEvent) -> StoreResult<()>;
    /// Deletes a database that has no service users (`dbusers::check_delete`,
    /// decided in the transaction).
    async fn delete_database(&self, database: &Database, event: NewEvent) -> StoreResult<()>;
    /// Creates the user's secret and the user, in one transaction.
    async fn create_service_user(
        &self,
        user: &ServiceUser,
        secret: &Secret,
        event: NewEvent,
    ) -> StoreResult<()>;
    async fn list_service_users(&self, org: OrgId, database: DatabaseId) -> StoreResult<Vec<ServiceUser>>;
    async fn get_service_user(&self, org: OrgId, id: ServiceUserId) -> StoreResult<ServiceUser>;
    /// Asks for a rotation before its time (`database user rotate`).
    async fn request_rotation(&self, org: OrgId, id: ServiceUserId, event: NewEvent) -> StoreResult<()>;
    /// Marks the user deleted from `drop_after` on, by `by`
    /// (`dbusers::request_deletion`), and ends any claim of it (an
    /// Agent's report of that claim is fenced); `Conflict` when it is
    /// already being deleted.
    async fn request_user_deletion(
        &self,
        org: OrgId,
        id: ServiceUserId,
        drop_after: OffsetDateTime,
        by: &crate::on_behalf::OnBehalfOf,
        event: NewEvent,
    ) -> StoreResult<()>;
}

/// The Agents' side of service users' tasks: what is due in their
/// environments, the claims and their reports.
#[async_trait]
pub trait DatabaseStore: Send + Sync {
    /// The claimed drop is done: the user goes (with `event`), and its
    /// secret starts deleting (with `secret_event`, unless it already is;
    /// Agents delete their copies at their next sync), in one transaction;
    /// `Fenced` if the claim is not current.
    async fn finish_user_drop(
        &self,
        id: ServiceUserId,
        lease: LeaseId,
        event: NewEvent,
        secret_event: NewEvent,
    ) -> StoreResult<()>;
    /// The users of databases in `environments`, for an Agent's claim.
    async fn service_users_in(&self, environments: &[CatalogId]) -> StoreResult<Vec<ServiceUser>>;
    /// Takes the user's lease for `agent` unless another Agent's claim of
    /// it is still running at `now`, or the user changed since it was read
    /// as `seen` (what is due was decided on that); whether it did. The same Agent takes
    /// its own back: it works on one task at a time, so asking again means
    /// its last attempt ended (it crashed, or its report was lost).
    async fn lease_service_user(
        &self,
        seen: &ServiceUser,
        agent: AgentId,
        lease: LeaseId,
        kind: TaskKind,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> StoreResult<bool>;
    /// Records the version a rotation in flight stores, unless one is
    /// recorded already; the recorded one.
    async fn set_pending_version(&self, id: ServiceUserId, lease: LeaseId, version: i64) -> StoreResult<i64>;
    /// Ends the claim `lease` with `result` (and `event`, in the same
    /// transaction); `Fenced` if the claim is not the current one.
    async fn finish_service_user_task(
        &self,
        id: ServiceUserId,
        lease: LeaseId,
        result: &ServiceUserTaskResult,
        event: NewEvent,
    ) -> StoreResult<ServiceUser>;
}

// ---- Agents -------------------------------------------------------------------

use crate::ids::{AgentId, RegistrationId};
use crate::infra::Agent;

/// A one-time registration token as stored: its hash, never the token.
#[derive(Clone, Debug)]
pub struct NewRegistration {
    pub id: RegistrationId,
    pub org_id: OrgId,
    pub name: String,
    pub hash: TokenHash,
    pub created_by: String,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
}

/// Agents as people manage them: registrations, revocations and the
/// names their local APIs may carry; what `agents::service` runs its use
/// cases on.
#[async_trait]
pub trait AgentRecordStore: Send + Sync {
    async fn create_registration(&self, registration: &NewRegistration, event: NewEvent) -> StoreResult<()>;
    async fn list_agents(&self, org: OrgId) -> StoreResult<Vec<Agent>>;
    async fn revoke_agent(&self, org: OrgId, id: AgentId, event: NewEvent) -> StoreResult<Agent>;
    /// Approves `name` for the Agent's local-API certificate (again: no change).
    async fn approve_agent_name(
        &self,
        org: OrgId,
        agent: AgentId,
        name: &crate::server_names::ApprovedName,
        event: NewEvent,
    ) -> StoreResult<()>;
    /// `NotFound` when it was not approved.
    async fn remove_agent_name(
        &self,
        org: OrgId,
        agent: AgentId,
        name: &str,
        event: NewEvent,
    ) -> StoreResult<()>;
    async fn agent_names(
        &self,
        org: OrgId,
        agent: AgentId,
    ) -> StoreResult<Vec<crate::server_names::ApprovedName>>;
}

/// An Agent trading its one-time registration token for its identity;
/// what `agents::service::enroll` runs on.
#[async_trait]
pub trait EnrollmentStore: Send + Sync {
    /// Uses a registration token (once, before it expires) and stores the
    /// Agent it enrolls, atomically. `NotFound` for an unknown, used or
    /// expired token.
    async fn enroll_agent(
        &self,
        hash: &TokenHash,
        agent: &Agent,
        now: OffsetDateTime,
        event: NewEvent,
    ) -> StoreResult<Agent>;
}

/// Enrolled Agents, as the Agent channel knows them.
#[async_trait]
pub trait AgentStore: Send + Sync + std::fmt::Debug {
    async fn get_agent(&self, id: AgentId) -> StoreResult<Agent>;
    async fn touch_agent(&self, id: AgentId, now: OffsetDateTime) -> StoreResult<()>;
    /// Records where people reach the Agent's local API (from its sync).
    async fn set_agent_local_url(&self, id: AgentId, url: Option<&str>) -> StoreResult<()>;
}

/// What owners allow an Agent's programs, and the program tokens Agents
/// registered, as people read and change them.
#[async_trait]
pub trait ProgramAllowanceStore: Send + Sync {
    /// Adds the allowance, or replaces the verbs of the one for the same
    /// Agent, environment and glob.
    async fn set_program_allowance(
        &self,
        org: OrgId,
        allowance: &crate::program::ProgramAllowance,
        event: NewEvent,
    ) -> StoreResult<()>;
    /// `NotFound` when there is no such allowance.
    async fn remove_program_allowance(
        &self,
        org: OrgId,
        agent: AgentId,
        environment: CatalogId,
        secret: &str,
        event: NewEvent,
    ) -> StoreResult<()>;
    async fn program_allowances(
        &self,
        org: OrgId,
        agent: AgentId,
    ) -> StoreResult<Vec<crate::program::ProgramAllowance>>;
    async fn program_tokens(
        &self,
        org: OrgId,
        agent: AgentId,
    ) -> StoreResult<Vec<crate::program::RegisteredToken>>;
}

/// What owners let each Agent's programs write and delete, and the program
/// tokens Agents registered (ids and scopes, never a token).
#[async_trait]
pub trait ProgramStore: Send + Sync {
    /// `AlreadyExists` for a token id the Agent registered before.
    async fn register_program_token(
        &self,
        org: OrgId,
        token: &crate::program::RegisteredToken,
        event: NewEvent,
    ) -> StoreResult<()>;
    /// Revokes those of `ids` that are this Agent's and live, each with a
    /// `program_token.revoked` event by `actor`; the ids it revoked.
    async fn revoke_program_tokens(
        &self,
        org: OrgId,
        agent: AgentId,
        ids: &[String],
        at: OffsetDateTime,
        actor: &str,
    ) -> StoreResult<Vec<String>>;
}

// ---- Secret Manager (metadata) -------------------------------------------------

use crate::ids::SecretId;
use crate::secrets::{
    AgentCertificate, Assignment, IssuedCertificateInfo, MemberCertificate, Secret, SecretVersion,
};

/// A secret as an Agent decides reads of it: its name, its Components
/// (for policies) and, for a personal secret, its owner and bound keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncedSecret {
    pub id: SecretId,
    pub name: String,
    pub owner_id: Option<MemberId>,
    pub owner_keys: Vec<crate::Sha256Hex>,
    pub components: Vec<CatalogId>,
}

/// The secrets of a sync answer, complete through generation `through`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretChanges {
    pub through: i64,
    /// `Some(g)`: only the secrets changed after `g` (`changed`) and those
    /// deleted since (`removed`); `None`: every secret not deleted.
    pub since: Option<i64>,
    pub changed: Vec<SyncedSecret>,
    pub removed: Vec<SecretId>,
}

/// Secrets' records (names, owners, Components, metadata; never a
/// value), scoped to one organization; what `secrets::service` runs its
/// use cases on.
#[async_trait]
pub trait SecretRecordStore: Send + Sync {
    async fn list_secrets(&self, org: OrgId) -> StoreResult<Vec<Secret>> {
        self.list_secrets_page(org, None, u32::MAX).await
    }
    /// At most `limit` secrets after `after`, by name.
    async fn list_secrets_page(
        &self,
        org: OrgId,
        after: Option<&crate::secrets::SecretCursor>,
        limit: u32,
    ) -> StoreResult<Vec<Secret>>;
    async fn create_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()>;
    async fn get_secret(&self, org: OrgId, id: SecretId) -> StoreResult<Secret>;
    async fn find_secret_by_name(&self, org: OrgId, name: &str) -> StoreResult<Option<Secret>>;
    /// Replaces the secret's metadata (type, description, tags, components).
    async fn update_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()>;
    /// Its version numbers per environment (never a value).
    async fn list_versions(&self, org: OrgId, secret: SecretId) -> StoreResult<Vec<SecretVersion>>;
    /// Marks a version deactivated (idempotent: the first time is kept).
    /// `NotFound` if the version does not exist.
    async fn deactivate_version(
        &self,
        org: OrgId,
        secret: SecretId,
        environment: CatalogId,
        version: i64,
        event: NewEvent,
    ) -> StoreResult<SecretVersion>;
}

/// The certificates the CA issued: people's client certificates (which a
/// personal secret's key is bound to) and Agents' local-API certificates.
#[async_trait]
pub trait CertificateStore: Send + Sync {
    /// Stores a person's client certificate (its SHA-256 and expiry).
    async fn add_member_certificate(&self, cert: &MemberCertificate, event: NewEvent) -> StoreResult<()>;
    /// Unexpired, unrevoked certificates of members not removed, at `now`.
    async fn active_member_certificates(
        &self,
        org: OrgId,
        now: OffsetDateTime,
    ) -> StoreResult<Vec<MemberCertificate>>;
    /// Stores an Agent's local API certificate (its SHA-256, names and expiry).
    async fn add_agent_certificate(&self, cert: &AgentCertificate, event: NewEvent) -> StoreResult<()>;
    /// Unexpired, unrevoked local API certificates of Agents not revoked, at `now`.
    async fn active_agent_certificates(
        &self,
        org: OrgId,
        now: OffsetDateTime,
    ) -> StoreResult<Vec<AgentCertificate>>;
    /// Every certificate the CA issued in the organization to people and
    /// for Agents' local APIs, newest first; with `member`, only hers.
    async fn list_certificates(
        &self,
        org: OrgId,
        member: Option<MemberId>,
    ) -> StoreResult<Vec<IssuedCertificateInfo>>;
    /// Revokes one certificate by SHA-256 (idempotent: the first time is
    /// kept); `NotFound` if the organization has none with it.
    async fn revoke_certificate(
        &self,
        org: OrgId,
        sha256: &crate::Sha256Hex,
        event: NewEvent,
    ) -> StoreResult<IssuedCertificateInfo>;
}

/// Which Agents hold which environments; what the assignment use cases
/// of `secrets::service` run on.
#[async_trait]
pub trait AssignmentStore: Send + Sync {
    async fn assign_agent(&self, org: OrgId, assignment: &Assignment, event: NewEvent) -> StoreResult<()>;
    async fn list_assignments(&self, org: OrgId, environment: CatalogId) -> StoreResult<Vec<Assignment>>;
    /// Every environment's assignments in the organization, in one read.
    async fn list_all_assignments(&self, org: OrgId) -> StoreResult<Vec<Assignment>>;
    /// Takes `agent` off `environment`: it deletes what it holds there on
    /// its next sync (until its inventory lists nothing there).
    async fn unassign_agent(
        &self,
        org: OrgId,
        environment: CatalogId,
        agent: AgentId,
        event: NewEvent,
    ) -> StoreResult<()>;
}

/// Numbering a secret's versions, and which were deactivated; what
/// `secrets::versions` runs on.
#[async_trait]
pub trait VersionStore: Send + Sync {
    /// Numbers the next version of `secret` in `environment` (1 for the
    /// first) and stores who asked and the overlap asked for, with
    /// `event`, in one transaction; with `asked.bind`, also binds that
    /// public key (SHA-256 hex) to the personal secret.
    async fn create_version(
        &self,
        org: OrgId,
        secret: SecretId,
        environment: CatalogId,
        asked: crate::secrets::VersionAsked<'_>,
        event: NewEvent,
    ) -> StoreResult<SecretVersion>;
    /// Every deactivated version in the organization: (secret name,
    /// environment id, version).
    async fn deactivated_versions(&self, org: OrgId) -> StoreResult<Vec<(String, CatalogId, i64)>>;
}

/// Secrets' versions as Agents write them, and the sync's view of them.
#[async_trait]
pub trait SecretStore: Send + Sync + std::fmt::Debug {
    /// What an Agent's sync answer says of the organization's secrets
    /// (`crate::sync_delta`): those changed after `known` when the
    /// organization has reached it, else every secret not deleted.
    async fn secret_changes(&self, org: OrgId, known: Option<i64>) -> StoreResult<SecretChanges>;
    /// An API process starts: lists of secrets Agents hold from before are
    /// answered whole (`crate::sync_delta::RESTART_STEP`).
    async fn start_sync_epoch(&self) -> StoreResult<()>;
    /// Every version of the live secrets named in `wanted` (name,
    /// environment): when each was numbered and the overlap it asked for
    /// (`heimdall_core::retention`).
    async fn version_overlaps(
        &self,
        org: OrgId,
        wanted: &[(&str, CatalogId)],
    ) -> StoreResult<Vec<(String, CatalogId, crate::retention::Overlap)>>;
}

// ---- Secret Manager (access records from Agents) --------------------------------

use crate::access::AccessLogEntry;

/// What one sync's records did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncOutcome {
    /// Records stored now.
    pub stored: usize,
    /// Records already stored by an earlier sync (or twice in this one).
    pub duplicates: usize,
    /// The audit events the records raised (gaps, a restarted numbering,
    /// conflicting records), written in the same transaction.
    pub events: Vec<crate::access::AccessEvent>,
    /// The highest sequence number stored for this Agent in the epoch it reported.
    pub received_through: i64,
}

/// A secret's access trail as people read it; what `secrets::views`
/// runs on.
#[async_trait]
pub trait TrailStore: Send + Sync {
    /// A secret's reads aggregated per (accessor, environment, version,
    /// Agent, address, second), newest first.
    async fn access_log(
        &self,
        org: OrgId,
        secret_name: &str,
        page: &crate::access::AccessLogPage,
    ) -> StoreResult<Vec<AccessLogEntry>>;
    /// Every environment name the secret's reads were recorded under
    /// (a renamed environment's old name included).
    async fn access_log_environments(&self, org: OrgId, secret_name: &str) -> StoreResult<Vec<String>>;
}

/// Access records reported by Agents, stored as the trail.
#[async_trait]
pub trait AccessStore: Send + Sync + std::fmt::Debug {
    /// Stores a sync's records for `agent` as `heimdall_core::access::ingest`
    /// plans (repeats dropped, conflicts kept, gaps and restarts raised as
    /// audit events, records after a number it lost refused for sending
    /// again), all in one transaction. `environment_names` maps the
    /// environment ids records carry to the names the log shows.
    async fn record_access(
        &self,
        org: OrgId,
        agent: &Agent,
        report: crate::access::Report<'_>,
        environment_names: &[(String, String)],
        now: OffsetDateTime,
    ) -> StoreResult<SyncOutcome>;
}
