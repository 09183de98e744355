//! Agents' use cases as people run them, once for every adapter: ask the
//! policies (`agent.read`, `agent.manage`), resolve the Agent by one rule
//! ([`super::resolve`]), plan, apply. Generic over the store ports
//! ([`AgentRecordStore`], [`ProgramAllowanceStore`], [`CatalogStore`], and
//! for forgetting or withdrawing a name [`HoldingStore`],
//! [`SecretRecordStore`], [`DeletionStore`], [`CertificateStore`]) and the
//! caller ([`Actor`]). A registration's token is made by the adapter
//! (randomness is I/O); core gets its hash.

use super::ByName;
use crate::authz::{Action, Target, TargetKind};
use crate::domain::CatalogKind;
use crate::error::ApiError;
use crate::ids::{OrgId, RegistrationId};
use crate::infra::Agent;
use crate::ports::{
    Actor, AgentRecordStore, CatalogStore, CertificateStore, DeletionStore, HoldingStore, NewRegistration,
    ProgramAllowanceStore, SecretRecordStore,
};
use crate::program::{ProgramAllowance, RegisteredToken, Verb};
use crate::server_names::ApprovedName;
use crate::token::TokenHash;

/// The Agent `key` names in `org`: by id, or by name the one not revoked
/// (with [`ByName::OrLastRevoked`], else the one revoked last).
pub async fn resolve<S: AgentRecordStore + ?Sized>(
    store: &S,
    org: OrgId,
    key: &str,
    by_name: ByName,
) -> Result<Agent, ApiError> {
    let agents = store.list_agents(org).await?;
    super::resolve(&agents, key, by_name).cloned()
}

async fn allowed(actor: &dyn Actor, action: Action) -> Result<(), ApiError> {
    actor.authorize(action, &Target::organization(actor.org())).await
}

/// An Agent as people see it: what it holds, the current versions it
/// lacks, and the host names approved for its local API.
#[derive(Clone, Debug)]
pub struct Shown {
    pub agent: Agent,
    pub holdings: Vec<crate::ports::Holding>,
    pub behind: Vec<crate::standing::HolderBehind>,
    pub names: Vec<ApprovedName>,
}

/// The Agent `key` names (a revoked one too), for a caller the policies
/// let read Agents (`agent.read`); another member's personal secrets are
/// left out of what it holds and lacks (`secrets::reaches`).
pub async fn show<S>(store: &S, actor: &dyn Actor, key: &str) -> Result<Shown, ApiError>
where
    S: AgentRecordStore + SecretRecordStore + crate::standing::StandingStore + ?Sized,
{
    allowed(actor, Action::AgentRead).await?;
    let org = actor.org();
    let agent = resolve(store, org, key, ByName::OrLastRevoked).await?;
    let secrets = store.list_secrets(org).await?;
    let hidden: std::collections::HashSet<String> = secrets
        .into_iter()
        .filter(|s| s.owner_id.is_some_and(|owner| owner != actor.member()))
        .map(|s| s.name)
        .collect();
    let mut holdings = store.holdings_of_agent(org, agent.id).await?;
    holdings.retain(|h| !hidden.contains(&h.secret));
    let names = store.agent_names(org, agent.id).await?;
    let standing = crate::standing::Standing::load_all(store, org).await?;
    let mut behind = standing.behind();
    behind.retain(|b| b.agent == agent.id && !hidden.contains(&b.secret));
    let behind = standing.shown(&behind, actor.now());
    Ok(Shown { agent, holdings, behind, names })
}

/// The organization's Agents, revoked ones too.
pub async fn list<S: AgentRecordStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
) -> Result<Vec<Agent>, ApiError> {
    allowed(actor, Action::AgentRead).await?;
    Ok(store.list_agents(actor.org()).await?)
}

/// A one-time registration `id` for an Agent called `name`, whose token
/// hashes to `hash` ([`super::register`]).
pub async fn create_registration<S: AgentRecordStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    (id, name): (RegistrationId, &str),
    hash: TokenHash,
) -> Result<NewRegistration, ApiError> {
    allowed(actor, Action::AgentManage).await?;
    let plan = super::register(id, actor.org(), name, hash, actor.name(), actor.now())?;
    store.create_registration(&plan.registration, actor.event(plan.event)).await?;
    Ok(plan.registration)
}

/// Revokes the Agent `key` names (not revoked): asked of the policies on
/// the organization, then on that Agent.
pub async fn revoke<S: AgentRecordStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Agent, ApiError> {
    allowed(actor, Action::AgentManage).await?;
    let agent = resolve(store, actor.org(), key, ByName::Active).await?;
    actor.authorize(Action::AgentManage, &Target::new(TargetKind::Agent, agent.id)).await?;
    let plan = super::revoke(&agent);
    Ok(store.revoke_agent(actor.org(), plan.agent, actor.event(plan.event)).await?)
}

/// What the Agent `key` names lets its programs do.
pub async fn allowances<S: AgentRecordStore + ProgramAllowanceStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Vec<ProgramAllowance>, ApiError> {
    allowed(actor, Action::AgentRead).await?;
    let agent = resolve(store, actor.org(), key, ByName::OrLastRevoked).await?;
    Ok(store.program_allowances(actor.org(), agent.id).await?)
}

/// The program tokens the Agent `key` names registered.
pub async fn program_tokens<S: AgentRecordStore + ProgramAllowanceStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Vec<RegisteredToken>, ApiError> {
    allowed(actor, Action::AgentRead).await?;
    let agent = resolve(store, actor.org(), key, ByName::OrLastRevoked).await?;
    Ok(store.program_tokens(actor.org(), agent.id).await?)
}

/// Lets the programs of the Agent `key` names (not revoked) write or
/// delete what `secret` names in `environment` ([`super::allow_programs`]);
/// the same Agent, environment and glob again replaces the verbs.
pub async fn allow_programs<S: AgentRecordStore + ProgramAllowanceStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    (environment, secret): (&str, String),
    verbs: Vec<Verb>,
) -> Result<ProgramAllowance, ApiError> {
    allowed(actor, Action::AgentManage).await?;
    let agent = resolve(store, actor.org(), key, ByName::Active).await?;
    let env =
        crate::catalog::service::resolve(store, actor.org(), CatalogKind::Environment, environment).await?;
    let plan = super::allow_programs(&agent, &env, secret, verbs, actor.name(), actor.now())?;
    store.set_program_allowance(actor.org(), &plan.allowance, actor.event(plan.event)).await?;
    Ok(plan.allowance)
}

/// Withdraws an allowance of the Agent `key` names: from now on what it
/// allowed is refused, whatever tokens were made under it.
pub async fn disallow_programs<S: AgentRecordStore + ProgramAllowanceStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    (environment, secret): (&str, &str),
) -> Result<(), ApiError> {
    allowed(actor, Action::AgentManage).await?;
    let agent = resolve(store, actor.org(), key, ByName::OrLastRevoked).await?;
    let env =
        crate::catalog::service::resolve(store, actor.org(), CatalogKind::Environment, environment).await?;
    let plan = super::disallow_programs(&agent, &env, secret);
    let event = actor.event(plan.event);
    Ok(store.remove_program_allowance(actor.org(), plan.agent, plan.environment, &plan.secret, event).await?)
}

/// Approves `name` for the local-API certificate of the Agent `key` names
/// ([`super::allow_name`]); never one of `api_names`, the API's own.
pub async fn allow_name<S: AgentRecordStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    name: &str,
    api_names: &[String],
) -> Result<ApprovedName, ApiError> {
    allowed(actor, Action::AgentManage).await?;
    let agent = resolve(store, actor.org(), key, ByName::Active).await?;
    let plan = super::allow_name(&agent, name, api_names, actor.name(), actor.now())?;
    store.approve_agent_name(actor.org(), agent.id, &plan.approved, actor.event(plan.event)).await?;
    Ok(plan.approved)
}

/// Forgets the Agent `key` names (revoked ones too) as an owner says its
/// store is destroyed ([`super::forget`]): what it held no longer holds up
/// a delete. The Agent and its approved names, for the answer.
pub async fn forget<S>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    confirmed: bool,
) -> Result<(Agent, Vec<ApprovedName>), ApiError>
where
    S: AgentRecordStore + HoldingStore + SecretRecordStore + DeletionStore + ?Sized,
{
    allowed(actor, Action::AgentManage).await?;
    let agent = resolve(store, actor.org(), key, ByName::OrLastRevoked).await?;
    let held = store.holdings_of_agent(actor.org(), agent.id).await?;
    let secrets = store.list_secrets(actor.org()).await?;
    let personal: std::collections::HashSet<String> =
        secrets.into_iter().filter(|s| s.owner_id.is_some()).map(|s| s.name).collect();
    let plan = super::forget(&agent, confirmed, &held, |s| personal.contains(s))?;
    store.forget_agent(actor.org(), plan.agent, actor.event(plan.event)).await?;
    let names = store.agent_names(actor.org(), agent.id).await?;
    Ok((agent, names))
}

/// Withdraws `name` from the Agent `key` names ([`super::disallow_name`]):
/// the CA signs it no more for that Agent, and the certificates already
/// issued with it are revoked ([`super::revoke_carriers`]), read after the
/// name is gone so that none signed since is missed.
pub async fn disallow_name<S: AgentRecordStore + CertificateStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    name: &str,
) -> Result<(), ApiError> {
    allowed(actor, Action::AgentManage).await?;
    let agent = resolve(store, actor.org(), key, ByName::OrLastRevoked).await?;
    let plan = super::disallow_name(&agent, name);
    store.remove_agent_name(actor.org(), plan.agent, &plan.name, actor.event(plan.event.clone())).await?;
    let certificates = store.active_agent_certificates(actor.org(), actor.now()).await?;
    for (sha256, event) in super::revoke_carriers(&agent, &plan, &certificates) {
        store.revoke_certificate(actor.org(), &sha256, actor.event(event)).await?;
    }
    Ok(())
}

/// Whether `token` has the shape of a registration token: checked before
/// anything (a CSR signed, a lookup); the answer to any other is the
/// answer to an unknown one.
pub fn registration(token: &str) -> Result<TokenHash, ApiError> {
    if crate::token::looks_like_token(token) {
        Ok(TokenHash::of(token))
    } else {
        Err(not_registered())
    }
}

fn not_registered() -> ApiError {
    ApiError::new(crate::error::ErrorCode::Unauthenticated, "registration token is unknown, used or expired")
}

/// Enrolls the Agent `id` whose client certificate (`cert_sha256`) the CA
/// signed: uses its registration token once, before it expires, and
/// stores the Agent under the registration's organization and name, with
/// its event, in one store call. The identity is the certificate's (its
/// URI SAN names `id`); the name is only for people.
pub async fn enroll<S: crate::ports::EnrollmentStore + ?Sized>(
    store: &S,
    recorder: &dyn crate::ports::Recorder,
    token: &TokenHash,
    (id, cert_sha256): (crate::ids::AgentId, crate::Sha256Hex),
) -> Result<Agent, ApiError> {
    let now = recorder.now();
    let agent = Agent {
        id,
        // The organization, name and creator are the registration's, set by the store.
        org_id: OrgId::from_uuid(uuid::Uuid::nil()),
        name: String::new(),
        cert_sha256,
        created_at: now,
        created_by: String::new(),
        revoked_at: None,
        last_seen_at: None,
        local_url: None,
    };
    let event = recorder.event(&format!("agent:{id}"), super::enrolled());
    store.enroll_agent(token, &agent, now, event).await.map_err(|e| match e {
        crate::ports::StoreError::NotFound(_) => not_registered(),
        other => other.into(),
    })
}
