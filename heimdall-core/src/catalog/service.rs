//! The catalog's use cases, run once for every adapter: load what a
//! request names, ask the policies, plan, apply. Generic over the store
//! port ([`CatalogStore`]) and the caller ([`Actor`]), so they run on the
//! SQL store in the API and on an in-memory one in core's tests.

use crate::authz::{catalog_target_kind, Action, CatalogTree, Target};
use crate::domain::{CatalogEntry, CatalogKind};
use crate::error::ApiError;
use crate::ids::{CatalogId, OrgId};
use crate::ports::{Actor, CatalogStore};

/// Which `kind` entry `key` (an id or a name) means in `org`
/// ([`super::resolve`] over what the store finds for it).
pub async fn resolve<S: CatalogStore + ?Sized>(
    store: &S,
    org: OrgId,
    kind: CatalogKind,
    key: &str,
) -> Result<CatalogEntry, ApiError> {
    let found = match key.parse::<CatalogId>() {
        Ok(id) => vec![store.get_catalog_entry(org, id).await?],
        Err(_) => store.find_catalog_by_name(org, kind, key).await?,
    };
    super::resolve(&found, kind, key).cloned()
}

/// `entry` as a policy target, with its ancestors, so that policies can
/// say `resource in Heimdall::Domain::"<id>"`.
pub async fn target_of<S: CatalogStore + ?Sized>(
    store: &S,
    org: OrgId,
    entry: &CatalogEntry,
) -> Result<Target, ApiError> {
    let mut target = Target::new(catalog_target_kind(entry.kind), entry.id);
    let mut parent = entry.parent_id;
    while let Some(id) = parent {
        let p = store.get_catalog_entry(org, id).await?;
        target = target.with_ancestor(catalog_target_kind(p.kind), p.id);
        parent = p.parent_id;
    }
    Ok(target)
}

/// The organization's `kind` entries; a domain's systems or a system's
/// components when `within` names it (`domain` for systems, `system` for
/// components: the other filters are refused).
pub async fn list<S: CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    kind: CatalogKind,
    (domain, system): (Option<&str>, Option<&str>),
) -> Result<Vec<CatalogEntry>, ApiError> {
    actor.authorize(Action::CatalogRead, &Target::organization(actor.org())).await?;
    let within = match (kind, domain, system) {
        (CatalogKind::System, Some(domain), None) => Some((CatalogKind::Domain, domain)),
        (CatalogKind::Component, None, Some(system)) => Some((CatalogKind::System, system)),
        (_, None, None) => None,
        _ => {
            let only = match kind {
                CatalogKind::System => "domain only",
                CatalogKind::Component => "system only",
                _ => "nothing",
            };
            return Err(ApiError::invalid_input(format!("{} can be filtered by {only}", kind.plural())));
        }
    };
    let parent = match within {
        Some((parent_kind, key)) => Some(resolve(store, actor.org(), parent_kind, key).await?.id),
        None => None,
    };
    Ok(store.list_catalog(actor.org(), kind, parent).await?)
}

/// What a member asks to add.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NewEntry {
    pub name: String,
    pub description: Option<String>,
    /// The domain of a system, the system of a component; none otherwise.
    pub parent: Option<CatalogId>,
}

/// Adds a `kind` entry as `id`: its parent named as its kind needs, the
/// caller allowed to write there (`catalog.write` on the parent, or the
/// organization), stored with its event.
pub async fn create<S: CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    kind: CatalogKind,
    request: NewEntry,
    id: CatalogId,
) -> Result<CatalogEntry, ApiError> {
    let org = actor.org();
    let parent = match (kind.parent_kind(), request.parent) {
        (Some(parent_kind), Some(parent)) => {
            Some(resolve(store, org, parent_kind, &parent.to_string()).await?)
        }
        (Some(parent_kind), None) => {
            return Err(ApiError::invalid_input(format!(
                "a {kind} needs parent_id: the {parent_kind} it belongs to"
            )))
        }
        (None, Some(_)) => {
            let a = if kind == CatalogKind::Environment { "an" } else { "a" };
            return Err(ApiError::invalid_input(format!(
                "{a} {kind} belongs to the organization; omit parent_id"
            )));
        }
        (None, None) => None,
    };
    let target = match &parent {
        Some(p) => target_of(store, org, p).await?,
        None => Target::organization(org),
    };
    actor.authorize(Action::CatalogWrite, &target).await?;
    let description = request.description.unwrap_or_default();
    let plan =
        super::create(kind, request.name, description, parent.as_ref(), id, org, actor.name(), actor.now())?;
    store.create_catalog_entry(&plan.entry, actor.event(plan.event)).await?;
    Ok(plan.entry)
}

/// The `kind` entry `key` names, if the caller may read it.
pub async fn show<S: CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    kind: CatalogKind,
    key: &str,
) -> Result<CatalogEntry, ApiError> {
    let entry = resolve(store, actor.org(), kind, key).await?;
    actor.authorize(Action::CatalogRead, &target_of(store, actor.org(), &entry).await?).await?;
    Ok(entry)
}

/// Renames the `kind` entry `key` names to `name`; its id stays.
pub async fn rename<S: CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    kind: CatalogKind,
    key: &str,
    name: &str,
) -> Result<CatalogEntry, ApiError> {
    let entry = resolve(store, actor.org(), kind, key).await?;
    actor.authorize(Action::CatalogWrite, &target_of(store, actor.org(), &entry).await?).await?;
    let event = actor.event(super::renamed(&entry, name)?);
    Ok(store.rename_catalog_entry(actor.org(), entry.id, name, event).await?)
}

/// Deletes the `kind` entry `key` names; the store refuses it `NOT_EMPTY`
/// while anything is in it or uses it.
pub async fn delete<S: CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    kind: CatalogKind,
    key: &str,
) -> Result<(), ApiError> {
    let entry = resolve(store, actor.org(), kind, key).await?;
    actor.authorize(Action::CatalogWrite, &target_of(store, actor.org(), &entry).await?).await?;
    let event = actor.event(super::deleted(&entry));
    Ok(store.delete_catalog_entry(actor.org(), entry.id, event).await?)
}

/// The organization's domains, systems and components, for building
/// targets (`authz::{secret_target, resource_target}`).
pub async fn tree<S: CatalogStore + ?Sized>(store: &S, org: OrgId) -> Result<CatalogTree, ApiError> {
    let mut entries = Vec::new();
    for kind in [CatalogKind::Domain, CatalogKind::System, CatalogKind::Component] {
        for e in store.list_catalog(org, kind, None).await? {
            entries.push((e.id, e.kind, e.parent_id));
        }
    }
    Ok(CatalogTree::new(entries))
}
