//! The policies' use cases, run once for every adapter: ask the policies
//! (owners only by default), load, plan, apply. Generic over the store
//! port ([`PolicyStore`]) and the caller ([`Actor`]), so they run on the
//! SQL store in the API and on an in-memory one in core's tests.

use crate::authz::{Action, Target};
use crate::domain::{Policy, PolicyVersion};
use crate::error::ApiError;
use crate::ids::{OrgId, PolicyId};
use crate::ports::{Actor, PolicyStore};

/// The policy `key` (an id, or a name) means in `org`.
pub async fn resolve<S: PolicyStore + ?Sized>(store: &S, org: OrgId, key: &str) -> Result<Policy, ApiError> {
    if let Ok(id) = key.parse::<PolicyId>() {
        return Ok(store.get_policy(org, id).await?);
    }
    let policies = store.list_policies(org).await?;
    policies.into_iter().find(|p| p.name == key).ok_or_else(|| ApiError::not_found("policy"))
}

async fn allowed(actor: &dyn Actor, action: Action) -> Result<(), ApiError> {
    actor.authorize(action, &Target::organization(actor.org())).await
}

/// The organization's policies, by name.
pub async fn list<S: PolicyStore + ?Sized>(store: &S, actor: &dyn Actor) -> Result<Vec<Policy>, ApiError> {
    allowed(actor, Action::PolicyRead).await?;
    Ok(store.list_policies(actor.org()).await?)
}

/// What a member asks to add.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NewPolicy {
    pub name: String,
    pub description: Option<String>,
    pub text: String,
}

/// Adds a policy as `id`, its text validated ([`super::create`]).
pub async fn create<S: PolicyStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    request: NewPolicy,
    id: PolicyId,
) -> Result<Policy, ApiError> {
    allowed(actor, Action::PolicyWrite).await?;
    let description = request.description.unwrap_or_default();
    let plan =
        super::create(id, actor.org(), request.name, description, request.text, actor.name(), actor.now())?;
    store.create_policy(&plan.policy, actor.event(plan.event)).await?;
    Ok(plan.policy)
}

/// The policy `key` names.
pub async fn show<S: PolicyStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Policy, ApiError> {
    allowed(actor, Action::PolicyRead).await?;
    resolve(store, actor.org(), key).await
}

/// Writes the next version of the policy `key` names ([`super::update`]);
/// the policy as it stands when the change changes nothing.
pub async fn update<S: PolicyStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    change: super::Change,
) -> Result<Policy, ApiError> {
    allowed(actor, Action::PolicyWrite).await?;
    let current = resolve(store, actor.org(), key).await?;
    let Some(write) = super::update(&current, change, actor.name(), actor.now())? else {
        return Ok(current);
    };
    store.update_policy(&write, actor.event(write.event.clone())).await?;
    Ok(write.policy)
}

/// Every version of the policy `key` names, newest first.
pub async fn versions<S: PolicyStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Vec<PolicyVersion>, ApiError> {
    allowed(actor, Action::PolicyRead).await?;
    let policy = resolve(store, actor.org(), key).await?;
    Ok(store.policy_versions(actor.org(), policy.id).await?)
}

/// Deletes the policy `key` names; it stops applying at the next request.
pub async fn delete<S: PolicyStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<(), ApiError> {
    allowed(actor, Action::PolicyWrite).await?;
    let policy = resolve(store, actor.org(), key).await?;
    Ok(store.delete_policy(actor.org(), policy.id, actor.event(super::deleted(&policy))).await?)
}
