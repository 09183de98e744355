//! What every handler holds: the store, the clock and the installation's
//! parts ([`AppState`]), and one request's authorization ([`Decider`]).

use std::sync::Arc;

use heimdall_core::audit::EventPlan;
use heimdall_core::authz::{decide, Action, Decision, ManyDecisions, OrgPolicies, Principal, Target};
use heimdall_core::clock::Clock;
use heimdall_core::ids::{EventId, OrgId};
use heimdall_core::ports::{NewEvent, Store};
use heimdall_core::{ApiError, ErrorCode};
use uuid::Uuid;

use super::extract::Caller;

#[derive(Clone, Debug)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    /// Woken whenever this process queues a job, so waiting claims return
    /// at once instead of on their next re-check.
    pub jobs_queued: Arc<tokio::sync::Notify>,
    /// Woken whenever this process sees a job claimed or ended, so a
    /// long poll on a Resource answers at once.
    pub jobs_moved: Arc<tokio::sync::Notify>,
    /// The installation CA, when the Agent listener is configured.
    pub ca: Option<Arc<crate::pki::Ca>>,
    /// Where Agents dial (told to them at enrollment).
    pub agent_api_url: Option<String>,
    /// The names in the API's own certificates: never signed for an Agent.
    pub api_names: Vec<String>,
    /// The OIDC issuer and STS, for jobs of `oidc` accounts.
    pub federation: Option<crate::federation::Federation>,
    /// The key notification channels' secrets derive from (beside the CA).
    pub notifications: Option<Arc<crate::notifications::SigningKey>>,
    /// An Agent not seen for longer may never sync again (`heimdall_core::deletion`).
    pub agent_stale_after: time::Duration,
    /// Counted and served on `--metrics-listen`; `None` when that is off.
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Each organization's policies, compiled once per change.
    pub policies: Arc<crate::policy_cache::PolicyCache>,
    /// How often a waiting claim re-checks the queue unwoken.
    pub claim_recheck: std::time::Duration,
}

impl AppState {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            jobs_queued: Arc::new(tokio::sync::Notify::new()),
            jobs_moved: Arc::new(tokio::sync::Notify::new()),
            ca: None,
            agent_api_url: None,
            api_names: Vec::new(),
            federation: None,
            notifications: None,
            agent_stale_after: heimdall_core::deletion::STALE_AFTER,
            metrics: None,
            policies: Arc::default(),
            claim_recheck: std::time::Duration::from_secs(1),
        }
    }

    /// The caller and the organization's policies as stored right now (so
    /// a new policy applies from the next request), ready to decide.
    pub async fn decider(&self, caller: &Caller) -> Result<Decider, ApiError> {
        let policies = self.org_policies(caller.org.id).await?;
        let principal = Principal {
            org: caller.org.id,
            id: caller.member.id,
            email: caller.member.email.clone(),
            role: caller.member.role,
        };
        Ok(Decider { principal, policies })
    }

    /// The organization's policies as stored right now, compiled (once per
    /// policy version).
    pub async fn org_policies(&self, org: OrgId) -> Result<Arc<OrgPolicies>, ApiError> {
        // The version first, then the policies: see `PolicyCache::compile`.
        let version = self.store.policy_version(org).await?;
        if let Some(policies) = self.policies.at_version(org, version) {
            return Ok(policies);
        }
        let stored = self.store.list_policies(org).await?;
        self.policies.compile(org, version, &stored).map_err(|(id, err)| {
            // Fail closed: a policy that no longer compiles denies everything.
            tracing::error!(policy = %id, error = %err, "stored policy does not compile");
            ApiError::new(
                ErrorCode::Internal,
                format!("stored policy {id} no longer compiles; an owner must delete it"),
            )
        })
    }

    /// Decides one action with the role defaults and the organization's
    /// policies; refused is `FORBIDDEN`.
    pub async fn authorize(
        &self,
        caller: &Caller,
        action: Action,
        target: &Target,
        environment: Option<&str>,
    ) -> Result<(), ApiError> {
        self.decider(caller).await?.require(action, target, environment)
    }

    /// The event a planner decided on (`heimdall_core::audit::EventPlan`),
    /// caused by `actor`, stamped with an id and the time now: the only way
    /// a route makes an event.
    pub fn planned_event(&self, actor: &str, planned: EventPlan) -> NewEvent {
        NewEvent {
            id: EventId::from_uuid(Uuid::new_v4()),
            at: self.clock.now(),
            actor: actor.to_owned(),
            action: planned.action,
            target: planned.target,
            detail: planned.detail,
        }
    }
}

/// The API stamping what flows with no member behind them record (an
/// Agent enrolling, the drift schedule): its clock, and an event's id.
impl heimdall_core::ports::Recorder for AppState {
    fn now(&self) -> time::OffsetDateTime {
        self.clock.now()
    }

    fn event(&self, actor: &str, plan: EventPlan) -> NewEvent {
        self.planned_event(actor, plan)
    }
}

/// The organization's policies, compiled once per version (`policy_cache`).
#[async_trait::async_trait]
impl heimdall_core::program::service::PolicySource for AppState {
    async fn org_policies(&self, org: OrgId) -> Result<Arc<OrgPolicies>, ApiError> {
        AppState::org_policies(self, org).await
    }
}

/// One request's caller as core's use cases see them
/// (`heimdall_core::ports::Actor`): the organization, the policies'
/// answer, the caller's events. The policies are read once, at the first
/// question, so every answer of one use case comes from the same version.
#[derive(Debug)]
pub struct ActingCaller<'a> {
    pub state: &'a AppState,
    pub caller: &'a Caller,
    decider: tokio::sync::OnceCell<Decider>,
}

impl AppState {
    /// `caller` acting through this state, for a use case of core.
    pub fn acting<'a>(&'a self, caller: &'a Caller) -> ActingCaller<'a> {
        ActingCaller { state: self, caller, decider: tokio::sync::OnceCell::new() }
    }
}

impl ActingCaller<'_> {
    async fn decider(&self) -> Result<&Decider, ApiError> {
        self.decider.get_or_try_init(|| self.state.decider(self.caller)).await
    }
}

#[async_trait::async_trait]
impl heimdall_core::ports::Actor for ActingCaller<'_> {
    fn org(&self) -> heimdall_core::ids::OrgId {
        self.caller.org.id
    }

    fn name(&self) -> &str {
        &self.caller.member.email
    }

    fn member(&self) -> heimdall_core::ids::MemberId {
        self.caller.member.id
    }

    fn role(&self) -> heimdall_core::domain::Role {
        self.caller.member.role
    }

    fn now(&self) -> time::OffsetDateTime {
        self.state.clock.now()
    }

    async fn authorize(&self, action: Action, target: &Target) -> Result<(), ApiError> {
        self.decider().await?.require(action, target, None)
    }

    async fn authorize_in(&self, action: Action, target: &Target, environment: &str) -> Result<(), ApiError> {
        self.decider().await?.require(action, target, Some(environment))
    }

    async fn allows_each(
        &self,
        action: Action,
        items: &[(Target, Option<&str>)],
    ) -> Result<Vec<bool>, ApiError> {
        let decider = self.decider().await?;
        let mut decisions = decider.many(action);
        Ok(items.iter().map(|(target, env)| decisions.decide(target, *env).is_allowed()).collect())
    }

    fn event(&self, plan: EventPlan) -> NewEvent {
        self.state.planned_event(&self.caller.member.email, plan)
    }

    async fn may_use(
        &self,
        secret: heimdall_core::on_behalf::UsedSecret<'_>,
        environment: &str,
        tree: &heimdall_core::authz::CatalogTree,
    ) -> Result<(), ApiError> {
        let decider = self.decider().await?;
        heimdall_core::on_behalf::may_use(decider.principal(), secret, environment, tree, decider.policies())
    }
}

/// One request's principal and policies, for handlers that decide more
/// than once (per environment, per item of a list).
#[derive(Debug)]
pub struct Decider {
    principal: Principal,
    policies: Arc<OrgPolicies>,
}

impl Decider {
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    pub fn policies(&self) -> &OrgPolicies {
        &self.policies
    }

    pub fn decide(&self, action: Action, target: &Target, environment: Option<&str>) -> Decision {
        decide(&self.principal, action, target, environment, &self.policies)
    }

    /// For deciding `action` over the items of a list: each distinct
    /// shape of item is evaluated once (`heimdall_core::authz::ManyDecisions`).
    pub fn many(&self, action: Action) -> ManyDecisions<'_> {
        ManyDecisions::new(&self.principal, action, &self.policies)
    }

    pub fn require(
        &self,
        action: Action,
        target: &Target,
        environment: Option<&str>,
    ) -> Result<(), ApiError> {
        match self.decide(action, target, environment) {
            Decision::Allow => Ok(()),
            Decision::NotPermitted => Err(ApiError::forbidden(format!(
                "your role ({}) does not permit {action}",
                self.principal.role
            ))),
            Decision::ForbiddenBy(ids) => {
                Err(ApiError::forbidden(format!("{action} is forbidden by policy {}", ids.join(", "))))
            }
        }
    }

    /// The environments among `environments` where `action` is allowed
    /// (see `authz::allowed_environments`).
    pub fn allowed_environments<'a>(
        &self,
        action: Action,
        target: &Target,
        environments: impl IntoIterator<Item = &'a str>,
    ) -> Vec<&'a str> {
        heimdall_core::authz::allowed_environments(
            &self.principal,
            action,
            target,
            environments,
            &self.policies,
        )
    }
}
