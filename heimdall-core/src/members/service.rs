//! The members' use cases, run once for every adapter: ask the policies
//! (`member.read`, `member.write`), resolve the member, plan by the
//! member rules, apply. Generic over the store port ([`MemberStore`]) and
//! the caller ([`Actor`]).

use crate::authz::{Action, Target, TargetKind};
use crate::domain::{Member, Role};
use crate::error::ApiError;
use crate::ids::MemberId;
use crate::names::normalize_email;
use crate::ports::{Actor, MemberStore, NewToken};

/// The member `key` (an id, or an email in any case) means in the
/// caller's organization.
pub async fn resolve<S: MemberStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Member, ApiError> {
    if let Ok(id) = key.parse::<MemberId>() {
        return Ok(store.get_member(actor.org(), id).await?);
    }
    let email = normalize_email(key).map_err(|_| ApiError::not_found("member"))?;
    store.find_member_by_email(actor.org(), &email).await?.ok_or_else(|| ApiError::not_found("member"))
}

async fn allowed(actor: &dyn Actor, action: Action, member: Option<&Member>) -> Result<(), ApiError> {
    let target = match member {
        Some(m) => Target::new(TargetKind::Member, &m.email),
        None => Target::organization(actor.org()),
    };
    actor.authorize(action, &target).await
}

/// The organization's members.
pub async fn list<S: MemberStore + ?Sized>(store: &S, actor: &dyn Actor) -> Result<Vec<Member>, ApiError> {
    allowed(actor, Action::MemberRead, None).await?;
    Ok(store.list_members(actor.org()).await?)
}

/// Adds `email` as `role` with the first token the adapter made
/// ([`super::add`]). A malformed address is refused before the policies
/// are asked: it is the same answer for everyone.
pub async fn add<S: MemberStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    id: MemberId,
    email: &str,
    role: Role,
    token: &NewToken,
) -> Result<Member, ApiError> {
    normalize_email(email)?;
    allowed(actor, Action::MemberWrite, None).await?;
    let plan = super::add(actor.role(), actor.org(), id, email, role, actor.now())?;
    store.add_member(&plan.member, token, actor.event(plan.event)).await?;
    Ok(plan.member)
}

/// The member `key` names.
pub async fn show<S: MemberStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Member, ApiError> {
    allowed(actor, Action::MemberRead, None).await?;
    resolve(store, actor, key).await
}

/// Asks the policies about the organization, then about the member `key`
/// names, and returns that member.
async fn writable<S: MemberStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Member, ApiError> {
    allowed(actor, Action::MemberWrite, None).await?;
    let member = resolve(store, actor, key).await?;
    allowed(actor, Action::MemberWrite, Some(&member)).await?;
    Ok(member)
}

/// Gives the member `key` names the role `role` ([`super::change_role`]);
/// the store refuses it `LAST_OWNER` if no owner would remain.
pub async fn change_role<S: MemberStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    role: Role,
) -> Result<Member, ApiError> {
    let member = writable(store, actor, key).await?;
    let plan = super::change_role(actor.role(), &member, role)?;
    Ok(store.change_role(actor.org(), plan.member, plan.role, actor.event(plan.event)).await?)
}

/// Removes the member `key` names with all their tokens
/// ([`super::remove`]); the store refuses it `LAST_OWNER` if no owner
/// would remain.
pub async fn remove<S: MemberStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Member, ApiError> {
    let member = writable(store, actor, key).await?;
    let plan = super::remove(actor.role(), &member)?;
    Ok(store.remove_member(actor.org(), plan.member, actor.event(plan.event)).await?)
}
