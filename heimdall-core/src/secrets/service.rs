//! The secrets' use cases on their records, run once for every adapter:
//! which secret a name means for the caller, creating one (a personal one
//! bound to her member id and her certificate's key) and changing its
//! metadata, each asked of the policies where the secret is and, when it
//! moves, where it lands; deactivating a version and starting a deletion;
//! and which Agents hold an environment. Generic over the store ports
//! ([`SecretRecordStore`], [`CertificateStore`], [`AssignmentStore`],
//! [`AgentRecordStore`], [`HoldingStore`], [`DeletionStore`],
//! [`CatalogStore`]) and the caller ([`Actor`]).

use std::collections::BTreeMap;

use time::{Duration, OffsetDateTime};

use super::{
    reaches, Assignment, Creator, DeletionScope, NewSecret, Reach, Secret, SecretChange, SecretVersion,
};
use crate::agents::ByName;
use crate::audit::EventPlan;
use crate::authz::{secret_target, Action, Target, TargetKind};
use crate::domain::CatalogEntry;
use crate::domain::CatalogKind;
use crate::error::{ApiError, ErrorCode};
use crate::ids::{CatalogId, OrgId, SecretId};
use crate::on_behalf::UsedSecret;
use crate::ports::{
    Actor, AgentRecordStore, AssignmentStore, CatalogStore, CertificateStore, DeletionStore, Holding,
    HoldingStore, NewEvent, SecretRecordStore,
};

/// A personal secret exists only for its owner, by member id: anyone else
/// is told it does not exist, whatever their role ([`reaches`]).
fn visible(secret: &Secret, actor: &dyn Actor) -> bool {
    reaches(secret.owner_id, &secret.owner_keys, actor.member(), Reach::Metadata)
}

/// The secret `key` means for the caller: by id, or by name her own
/// personal secret of that name first, then the organization's
/// ([`super::lookup_order`]).
pub async fn resolve<S: SecretRecordStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Secret, ApiError> {
    if let Ok(id) = key.parse::<SecretId>() {
        let found = Some(store.get_secret(actor.org(), id).await?);
        return found.filter(|s| visible(s, actor)).ok_or_else(|| ApiError::not_found("secret"));
    }
    for name in super::lookup_order(key, actor.member()) {
        if let Some(secret) =
            store.find_secret_by_name(actor.org(), &name).await?.filter(|s| visible(s, actor))
        {
            return Ok(secret);
        }
    }
    Err(ApiError::not_found("secret"))
}

/// Before a job or task uses `secret` on the caller's behalf in
/// `environment` (a Resource's secret input or static credential, a
/// database's admin secret): it exists for her and she may have it used
/// there (`on_behalf::may_use`, which the Agent decides again when it uses
/// the value). `NOT_FOUND` or `FORBIDDEN`, nothing stored.
pub async fn check_use<S: SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    secret: &str,
    environment: &str,
) -> Result<Secret, ApiError> {
    let found = resolve(store, actor, secret)
        .await
        .map_err(|_| ApiError::new(ErrorCode::NotFound, format!("secret {secret} not found")))?;
    let tree = crate::catalog::service::tree(store, actor.org()).await?;
    let used =
        UsedSecret { name: &found.name, id: found.id, owner: found.owner_id, components: &found.components };
    actor.may_use(used, environment, &tree).await?;
    Ok(found)
}

/// A secret as the policies see it: under its Components, with its owner.
pub async fn target<S: CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    secret: &Secret,
) -> Result<Target, ApiError> {
    let tree = crate::catalog::service::tree(store, actor.org()).await?;
    Ok(secret_target(secret.id, secret.owner_id, &secret.components, &tree))
}

/// The Components `keys` (ids or names) name, each once, in order.
async fn components<S: CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    keys: &[String],
) -> Result<Vec<CatalogId>, ApiError> {
    let mut ids = Vec::with_capacity(keys.len());
    for key in keys {
        let id = crate::catalog::service::resolve(store, actor.org(), CatalogKind::Component, key).await?.id;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Creates secret `id` under the Components `component_keys` name
/// ([`super::create`]): a bad request is refused before anything is
/// loaded; the caller's certificates are read only when she names one.
/// Organization secrets are for owners and admins, a personal one is its
/// owner's (`default:personal-owner`); the organization's `forbid`s apply
/// to both.
pub async fn create<S: SecretRecordStore + CertificateStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    request: NewSecret,
    component_keys: &[String],
    id: SecretId,
) -> Result<Secret, ApiError> {
    super::check_new(&request)?;
    let certificates = match request.certificate_sha256 {
        Some(_) => store.active_member_certificates(actor.org(), actor.now()).await?,
        None => Vec::new(),
    };
    let components = components(store, actor, component_keys).await?;
    let creator = Creator { org: actor.org(), member: actor.member(), email: actor.name() };
    let secret = super::create(request, creator, &certificates, components, id, actor.now())?;
    actor.authorize(Action::SecretWrite, &target(store, actor, &secret).await?).await?;
    store.create_secret(&secret, actor.event(super::created(&secret))).await?;
    Ok(secret)
}

/// What a member asks to change; a field not given stays. Components by
/// id or name.
#[derive(Clone, Debug, Default)]
pub struct Change {
    pub secret_type: Option<String>,
    pub description: Option<String>,
    pub tags: Option<BTreeMap<String, String>>,
    pub components: Option<Vec<String>>,
}

/// Changes the metadata of the secret `key` names ([`super::update`]),
/// allowed where it is and, when it moves, where it lands.
pub async fn update<S: SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    change: Change,
) -> Result<Secret, ApiError> {
    let current = resolve(store, actor, key).await?;
    actor.authorize(Action::SecretWrite, &target(store, actor, &current).await?).await?;
    let components = match &change.components {
        Some(keys) => Some(components(store, actor, keys).await?),
        None => None,
    };
    let change = SecretChange {
        secret_type: change.secret_type,
        description: change.description,
        tags: change.tags,
        components,
    };
    let plan = super::update(&current, change, actor.now())?;
    if plan.moves {
        actor.authorize(Action::SecretWrite, &target(store, actor, &plan.secret).await?).await?;
    }
    store.update_secret(&plan.secret, actor.event(plan.event)).await?;
    Ok(plan.secret)
}

/// The Agents assigned to `environment` (an id or a name).
pub async fn assignments<S: AssignmentStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    environment: &str,
) -> Result<Vec<Assignment>, ApiError> {
    actor.authorize(Action::AgentRead, &Target::organization(actor.org())).await?;
    let env =
        crate::catalog::service::resolve(store, actor.org(), CatalogKind::Environment, environment).await?;
    Ok(store.list_assignments(actor.org(), env.id).await?)
}

/// The environment `key` names, once the caller may assign its Agents.
async fn assignable<S: CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<crate::domain::CatalogEntry, ApiError> {
    let env = crate::catalog::service::resolve(store, actor.org(), CatalogKind::Environment, key).await?;
    let target = Target::new(TargetKind::Environment, env.id);
    actor.authorize_in(Action::EnvironmentAssignAgent, &target, &env.name).await?;
    Ok(env)
}

/// Assigns the Agent `agent` names (not revoked) to `environment`
/// ([`super::assign`]): it holds the environment's values from its next
/// sync.
pub async fn assign<S: AssignmentStore + AgentRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    environment: &str,
    agent: &str,
) -> Result<Assignment, ApiError> {
    let env = assignable(store, actor, environment).await?;
    let agent = crate::agents::service::resolve(store, actor.org(), agent, ByName::Active).await?;
    let plan = super::assign(&env, &agent, actor.name(), actor.now())?;
    store.assign_agent(actor.org(), &plan.assignment, actor.event(plan.event)).await?;
    Ok(plan.assignment)
}

/// Takes the Agent `agent` names (among those assigned there, revoked ones
/// too) off `environment` ([`super::unassign`]): refused while it is the
/// only holder of a current version there. Its assignment as it was.
pub async fn unassign<S>(
    store: &S,
    actor: &dyn Actor,
    environment: &str,
    agent: &str,
) -> Result<Assignment, ApiError>
where
    S: AssignmentStore + AgentRecordStore + HoldingStore + SecretRecordStore + CatalogStore + ?Sized,
{
    let env = assignable(store, actor, environment).await?;
    let assignments = store.list_assignments(actor.org(), env.id).await?;
    let mut agents = store.list_agents(actor.org()).await?;
    agents.retain(|a| assignments.iter().any(|x| x.agent_id == a.id));
    let agent = crate::agents::resolve(&agents, agent, ByName::OrLastRevoked).map_err(|e| match e.code {
        ErrorCode::NotFound => ApiError::not_found(format!("agent holding {}", env.name)),
        _ => e,
    })?;
    let assignment = assignments.iter().find(|x| x.agent_id == agent.id).cloned();
    // Only the secrets this Agent holds there matter: who else holds them
    // there, and each one's current version there (one lookup per secret).
    let mut secrets: Vec<String> = store
        .holdings_of_agent(actor.org(), agent.id)
        .await?
        .into_iter()
        .filter(|h| h.environment == env.name)
        .map(|h| h.secret)
        .collect();
    secrets.sort();
    secrets.dedup();
    let (mut holdings, mut current) = (Vec::new(), std::collections::HashMap::new());
    for name in &secrets {
        let held = store.holdings_of_secret(actor.org(), name).await?;
        holdings.extend(held.into_iter().filter(|h| h.environment == env.name));
        if let Some(secret) = store.find_secret_by_name(actor.org(), name).await? {
            let versions = store.list_versions(actor.org(), secret.id).await?;
            let top = versions.iter().filter(|v| v.environment_id == env.id).map(|v| v.version).max();
            current.insert(name.clone(), top);
        }
    }
    let plan = super::unassign(&env, agent, &holdings, |s| current.get(s).copied().flatten())?;
    store.unassign_agent(actor.org(), plan.environment, plan.agent, actor.event(plan.event)).await?;
    assignment.ok_or_else(|| ApiError::not_found("assignment"))
}

/// Deactivates version `version` of the secret `key` names in
/// `environment` ([`super::deactivate`]): Agents stop serving it at their
/// next sync. Idempotent; the version as it stands.
pub async fn deactivate<S: SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    (environment, version): (&str, i64),
) -> Result<SecretVersion, ApiError> {
    let secret = resolve(store, actor, key).await?;
    let env =
        crate::catalog::service::resolve(store, actor.org(), CatalogKind::Environment, environment).await?;
    actor.authorize_in(Action::SecretWrite, &target(store, actor, &secret).await?, &env.name).await?;
    let plan = super::deactivate(&secret, &env, version)?;
    let event = actor.event(plan.event);
    Ok(store.deactivate_version(actor.org(), plan.secret, plan.environment, plan.version, event).await?)
}

/// Starts deleting the secret `key` names, everywhere or only in
/// `environment` ([`super::begin_deletion`]): allowed by the policies on
/// the secret and in every environment it is deleted from (those of the
/// organization and those its holders report), and refused while an Agent
/// that will not sync again (none for `stale_after`) holds it. The secret
/// and what its holders held there, for the answer.
pub async fn delete<S: SecretRecordStore + HoldingStore + DeletionStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    environment: Option<&str>,
    stale_after: Duration,
) -> Result<(Secret, Vec<Holding>), ApiError> {
    let secret = resolve(store, actor, key).await?;
    let only = match environment {
        Some(env) => {
            Some(crate::catalog::service::resolve(store, actor.org(), CatalogKind::Environment, env).await?)
        }
        None => None,
    };
    let mut holdings = store.holdings_of_secret(actor.org(), &secret.name).await?;
    holdings.retain(|h| only.as_ref().is_none_or(|env| h.environment == env.name));
    let mut environments: Vec<String> = match &only {
        Some(env) => vec![env.name.clone()],
        None => {
            let all = store.list_catalog(actor.org(), CatalogKind::Environment, None).await?;
            holdings.iter().map(|h| h.environment.clone()).chain(all.into_iter().map(|e| e.name)).collect()
        }
    };
    environments.sort();
    environments.dedup();
    let target = target(store, actor, &secret).await?;
    actor.authorize(Action::SecretWrite, &target).await?;
    for env in &environments {
        actor.authorize_in(Action::SecretWrite, &target, env).await?;
    }
    let when = (actor.now(), stale_after);
    start_deletion(store, (actor.org(), &secret, only.as_ref()), &holdings, when, |p| actor.event(p)).await?;
    Ok((secret, holdings))
}

/// Plans ([`super::begin_deletion`]) and stores the start of `secret`'s
/// deletion in `org`, everywhere or only in one environment, given what
/// its holders hold there, at `now`; `stamp` makes the event for whoever
/// asked (a member through [`delete`], a program through the Agent channel).
pub async fn start_deletion<S: DeletionStore + ?Sized>(
    store: &S,
    (org, secret, only): (OrgId, &Secret, Option<&CatalogEntry>),
    holdings: &[Holding],
    (now, stale_after): (OffsetDateTime, Duration),
    stamp: impl FnOnce(EventPlan) -> NewEvent + Send,
) -> Result<(), ApiError> {
    let holders: Vec<crate::deletion::Holder> = holdings.iter().map(Into::into).collect();
    let plan = super::begin_deletion(secret, only, &holders, now, stale_after)?;
    let event = stamp(plan.event);
    match plan.scope {
        DeletionScope::Environment(env) => {
            store.start_environment_deletion(org, plan.secret, env, event).await?
        }
        DeletionScope::Everywhere => store.start_deletion(org, plan.secret, event).await?,
    }
    Ok(())
}

/// The environments `agent` is assigned: where it holds values, serves
/// reads, registers program tokens and takes database tasks.
pub async fn environments_held<S: AssignmentStore + ?Sized>(
    store: &S,
    org: OrgId,
    agent: crate::ids::AgentId,
) -> Result<Vec<CatalogId>, ApiError> {
    let all = store.list_all_assignments(org).await?;
    Ok(all.into_iter().filter(|a| a.agent_id == agent).map(|a| a.environment_id).collect())
}
