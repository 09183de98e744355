//! The cloud accounts' use cases, run once for every adapter: ask the
//! policies (`cloud_account.read`, `cloud_account.write` on the
//! organization), resolve the account and the catalog entries a link
//! names, decide a static credential's secret as the caller's use
//! ([`crate::secrets::service::check_use`]), plan, apply. Generic over
//! the store ports ([`AccountStore`], [`SecretRecordStore`],
//! [`CatalogStore`]) and the caller ([`Actor`]).

use super::{AccountChange, CreateCloudAccount, UpdateCloudAccount};
use crate::authz::{Action, Target};
use crate::domain::CatalogKind;
use crate::error::{ApiError, ErrorCode};
use crate::ids::{CatalogId, CloudAccountId, OrgId};
use crate::infra::{AccountAuth, AccountLink, CloudAccount, LinkScope};
use crate::ports::{AccountStore, Actor, CatalogStore, SecretRecordStore};

/// The account `key` (an id, or a name) means in `org`.
pub async fn resolve<S: AccountStore + ?Sized>(
    store: &S,
    org: OrgId,
    key: &str,
) -> Result<CloudAccount, ApiError> {
    if let Ok(id) = key.parse::<CloudAccountId>() {
        return Ok(store.get_account(org, id).await?);
    }
    store.find_account_by_name(org, key).await?.ok_or_else(|| ApiError::not_found("cloud account"))
}

async fn allowed(actor: &dyn Actor, action: Action) -> Result<(), ApiError> {
    actor.authorize(action, &Target::organization(actor.org())).await
}

/// The organization's accounts (never a credential: they hold none).
pub async fn list<S: AccountStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
) -> Result<Vec<CloudAccount>, ApiError> {
    allowed(actor, Action::CloudAccountRead).await?;
    Ok(store.list_accounts(actor.org()).await?)
}

/// The account `key` names, and its links.
pub async fn show<S: AccountStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<(CloudAccount, Vec<AccountLink>), ApiError> {
    allowed(actor, Action::CloudAccountRead).await?;
    let account = resolve(store, actor.org(), key).await?;
    let links =
        store.list_links(actor.org()).await?.into_iter().filter(|l| l.account_id == account.id).collect();
    Ok((account, links))
}

/// A static credential's secret: the job will carry only this name, so it
/// must be an organization secret that exists now (its value lives in the
/// Agents) and one the caller may have used somewhere (each link decides
/// its environment, each job its requester).
async fn check_static_secret<S: SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    secret: &str,
) -> Result<(), ApiError> {
    let found = store.find_secret_by_name(actor.org(), secret).await?.ok_or_else(|| {
        ApiError::new(
            ErrorCode::NotFound,
            format!("secret {secret} not found: `heimdall secret create {secret}` and set its value first"),
        )
    })?;
    crate::secrets::usable_by_jobs(found.owner_id)?;
    // The secret and the catalog are read once; each environment is one
    // more question to the caller's policies.
    let tree = crate::catalog::service::tree(store, actor.org()).await?;
    let used = || crate::on_behalf::UsedSecret {
        name: &found.name,
        id: found.id,
        owner: found.owner_id,
        components: &found.components,
    };
    let mut refusal = None;
    for environment in store.list_catalog(actor.org(), CatalogKind::Environment, None).await? {
        match actor.may_use(used(), &environment.name, &tree).await {
            Ok(()) => return Ok(()),
            Err(e) => refusal = Some(e),
        }
    }
    refusal.map_or(Ok(()), Err)
}

/// Registers account `id` ([`super::register`]): a bad request is refused
/// before the policies are asked.
pub async fn create<S: AccountStore + SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    request: CreateCloudAccount,
    id: CloudAccountId,
) -> Result<CloudAccount, ApiError> {
    let planned = super::register(request, id, actor.org(), actor.name(), actor.now())?;
    allowed(actor, Action::CloudAccountWrite).await?;
    if let AccountAuth::Static { secret } = &planned.account.auth {
        check_static_secret(store, actor, secret).await?;
    }
    store.create_account(&planned.account, actor.event(planned.event)).await?;
    Ok(planned.account)
}

/// Changes the account `key` names ([`super::update`]); the account as it
/// stands when nothing changes. A new static secret is decided as at
/// creation; the store refuses moving state while a Resource keeps it.
pub async fn update<S: AccountStore + SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    request: &UpdateCloudAccount,
) -> Result<CloudAccount, ApiError> {
    allowed(actor, Action::CloudAccountWrite).await?;
    let current = resolve(store, actor.org(), key).await?;
    let Some(change): Option<AccountChange> = super::update(&current, request)? else {
        return Ok(current);
    };
    if let (Some(AccountAuth::Static { secret }), true) = (&request.auth, change.changed.contains(&"auth")) {
        check_static_secret(store, actor, secret).await?;
    }
    let planned = super::updated(&current, &change.changed);
    store.update_account(&change, actor.event(planned)).await?;
    Ok(change.account)
}

/// Deletes the account `key` names; the store refuses it while a link or a
/// Resource's state needs it.
pub async fn delete<S: AccountStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<(), ApiError> {
    allowed(actor, Action::CloudAccountWrite).await?;
    let account = resolve(store, actor.org(), key).await?;
    Ok(store.delete_account(&account, actor.event(super::deleted(&account))).await?)
}

/// Where a link applies: a scope, the domain or system it names (an id or
/// a name; none for the organization) and the environment.
#[derive(Clone, Debug)]
pub struct Place {
    pub scope: LinkScope,
    pub scope_key: Option<String>,
    pub environment: String,
}

/// The scope's entry ([`super::scope_kind`]) and the environment.
async fn place<S: CatalogStore + ?Sized>(
    store: &S,
    org: OrgId,
    place: Place,
) -> Result<(Option<CatalogId>, crate::domain::CatalogEntry), ApiError> {
    let environment =
        crate::catalog::service::resolve(store, org, CatalogKind::Environment, &place.environment).await?;
    let scope_id = match (super::scope_kind(place.scope, place.scope_key.as_deref())?, place.scope_key) {
        (Some(kind), Some(key)) => Some(crate::catalog::service::resolve(store, org, kind, &key).await?.id),
        _ => None,
    };
    Ok((scope_id, environment))
}

/// Links the account `key` names at `at` ([`super::link`]). Linked, a
/// static account's secret is used in that environment: the caller must
/// be allowed to use it there (each job decides its own requester too).
pub async fn link<S: AccountStore + SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    at: Place,
) -> Result<AccountLink, ApiError> {
    allowed(actor, Action::CloudAccountWrite).await?;
    let account = resolve(store, actor.org(), key).await?;
    let scope = at.scope;
    let (scope_id, environment) = place(store, actor.org(), at).await?;
    if let AccountAuth::Static { secret } = &account.auth {
        crate::secrets::service::check_use(store, actor, secret, &environment.name).await?;
    }
    let planned = super::link(&account, (scope, scope_id), &environment, actor.name(), actor.now());
    store.link_account(actor.org(), &planned.link, actor.event(planned.event)).await?;
    Ok(planned.link)
}

/// Removes the link of the account `key` names at `at`; the store refuses
/// it while a Resource of that environment keeps state on the account.
pub async fn unlink<S: AccountStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    at: Place,
) -> Result<(), ApiError> {
    allowed(actor, Action::CloudAccountWrite).await?;
    let account = resolve(store, actor.org(), key).await?;
    let scope = at.scope;
    let (scope_id, environment) = place(store, actor.org(), at).await?;
    let planned = super::link_event(&account, false, (scope, scope_id), &environment.name);
    let event = actor.event(planned);
    Ok(store.unlink_account(&account, scope, scope_id, environment.id, event).await?)
}
