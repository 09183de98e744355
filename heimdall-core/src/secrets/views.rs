//! What people read of secrets, as use cases run once for every adapter:
//! the list of those the caller may see, one secret with its versions,
//! where it is read from in an environment (its holders) and its access
//! trail. Never a value: values are the
//! Agents'.

use time::OffsetDateTime;

use super::service::{resolve, target};
use super::{reaches, Assignment, Reach, Secret, SecretCursor, SecretVersion};
use crate::authz::{secret_target, Action, Target};
use crate::domain::CatalogKind;
use crate::error::ApiError;
use crate::ids::{AgentId, CatalogId, OrgId};
use crate::paging::{visible, Page};
use crate::ports::{
    Actor, AgentRecordStore, AssignmentStore, CatalogStore, CertificateStore, DeletionStore,
    EnvironmentDeletion, Holding, SecretRecordStore, TrailStore,
};
use crate::standing::{HolderBehind, Standing, StandingStore};
use crate::Sha256Hex;

/// A page of the secrets the caller reaches and may read (`secret.read`
/// on the organization, then on each secret where it is): another
/// member's personal secret is never listed, and a `forbid` on a
/// Component, System or Domain hides the secrets under it.
pub async fn list<S: SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    limit: u32,
    after: Option<SecretCursor>,
) -> Result<Page<Secret, SecretCursor>, ApiError> {
    actor.authorize(Action::SecretRead, &Target::organization(actor.org())).await?;
    let tree = crate::catalog::service::tree(store, actor.org()).await?;
    let (org, tree) = (actor.org(), &tree);
    let fetch =
        |after: Option<SecretCursor>, n| async move { store.list_secrets_page(org, after.as_ref(), n).await };
    let keep = |chunk: Vec<Secret>| async move {
        let reached: Vec<Secret> = chunk
            .into_iter()
            .filter(|s| reaches(s.owner_id, &s.owner_keys, actor.member(), Reach::Metadata))
            .collect();
        let targets: Vec<(Target, Option<&str>)> =
            reached.iter().map(|s| (secret_target(s.id, s.owner_id, &s.components, tree), None)).collect();
        let allowed = actor.allows_each(Action::SecretRead, &targets).await?;
        Ok(reached.into_iter().zip(allowed).filter_map(|(s, ok)| ok.then_some(s)).collect())
    };
    visible(limit, after, fetch, keep, SecretCursor::after).await
}

/// An Agent that holds an environment, and where people reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub agent_id: AgentId,
    pub agent: String,
    /// Its local API's URL as it last reported it; none until it synced.
    pub url: Option<String>,
    /// Its local API's unexpired, unrevoked certificates: a client accepts
    /// it only with one of these.
    pub certificates: Vec<Sha256Hex>,
}

/// An assignment, and its Agent as a holder unless it is revoked.
#[derive(Clone, Debug)]
pub struct Assigned {
    pub assignment: Assignment,
    pub holder: Option<Holder>,
}

/// Where to read `key` in `environment`: the Agents assigned to it, in the
/// order they were assigned, for a caller who may read the secret there.
pub async fn holders<S>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    environment: &str,
) -> Result<Vec<Assigned>, ApiError>
where
    S: SecretRecordStore + CatalogStore + AssignmentStore + AgentRecordStore + CertificateStore + ?Sized,
{
    let secret = resolve(store, actor, key).await?;
    let env =
        crate::catalog::service::resolve(store, actor.org(), CatalogKind::Environment, environment).await?;
    actor.authorize_in(Action::SecretRead, &target(store, actor, &secret).await?, &env.name).await?;
    let assigned = store.list_assignments(actor.org(), env.id).await?;
    let holders = holders_among(store, actor.org(), &assigned, actor.now()).await?;
    Ok(assigned
        .into_iter()
        .map(|assignment| {
            let holder = holders.iter().find(|h| h.agent_id == assignment.agent_id).cloned();
            Assigned { assignment, holder }
        })
        .collect())
}

/// The unrevoked Agents of `assigned`, in that order, with their local
/// API's certificates active at `now`.
pub async fn holders_among<S: AgentRecordStore + CertificateStore + ?Sized>(
    store: &S,
    org: OrgId,
    assigned: &[Assignment],
    now: OffsetDateTime,
) -> Result<Vec<Holder>, ApiError> {
    let ids: Vec<AgentId> = assigned.iter().map(|a| a.agent_id).collect();
    holders_of(store, org, &ids, now).await
}

/// The unrevoked Agents of `ids`, in that order, as people and other
/// Agents reach them: the one place that says where a holder is.
pub async fn holders_of<S: AgentRecordStore + CertificateStore + ?Sized>(
    store: &S,
    org: OrgId,
    ids: &[AgentId],
    now: OffsetDateTime,
) -> Result<Vec<Holder>, ApiError> {
    let agents = store.list_agents(org).await?;
    let certificates = store.active_agent_certificates(org, now).await?;
    Ok(ids
        .iter()
        .filter_map(|id| agents.iter().find(|g| g.id == *id && g.revoked_at.is_none()))
        .map(|g| Holder {
            agent_id: g.id,
            agent: g.name.clone(),
            url: g.local_url.clone(),
            certificates: certificates
                .iter()
                .filter(|c| c.agent_id == g.id)
                .map(|c| c.sha256.clone())
                .collect(),
        })
        .collect())
}

/// A page of `key`'s access trail, oldest first: the reads Agents
/// recorded, in `environment` only or in every environment where the
/// policies let the caller read the trail (`secret.access_log`); a
/// personal secret's is its owner's alone. The trail is kept by name: a
/// namesake's reads (a deleted secret's, or its successor's) are not this
/// one's (`in_trail`).
pub async fn trail<S>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    environment: Option<&str>,
    limit: u32,
    after: Option<crate::access::AccessLogCursor>,
) -> Result<Page<crate::access::AccessLogEntry, crate::access::AccessLogCursor>, ApiError>
where
    S: SecretRecordStore + CatalogStore + TrailStore + ?Sized,
{
    let (org, secret) = (actor.org(), resolve(store, actor, key).await?);
    let environment = match environment {
        Some(env) => {
            Some(crate::catalog::service::resolve(store, org, CatalogKind::Environment, env).await?.name)
        }
        None => None,
    };
    let target = target(store, actor, &secret).await?;
    match environment.as_deref() {
        Some(env) => actor.authorize_in(Action::SecretAccessLog, &target, env).await?,
        None => actor.authorize(Action::SecretAccessLog, &target).await?,
    }
    // The environments the caller may see the trail of (or the one asked),
    // by the names the reads were recorded under.
    let recorded = store.access_log_environments(org, &secret.name).await?;
    let recorded: Vec<&str> = recorded.iter().map(String::as_str).collect();
    let mut environments = actor.allowed_environments(Action::SecretAccessLog, &target, &recorded).await?;
    environments.retain(|e| environment.as_deref().is_none_or(|asked| asked == e));
    let names = store.list_catalog(org, CatalogKind::Environment, None).await?;
    let mut namesakes = Vec::new();
    for other in store.list_secrets(org).await? {
        if other.name == secret.name && other.id != secret.id {
            for v in store.list_versions(org, other.id).await? {
                let env = names.iter().find(|e| e.id == v.environment_id).map(|e| e.name.clone());
                namesakes.extend(env.map(|env| (env, v.version)));
            }
        }
    }
    // One more than asked: whether there is a next page.
    let page =
        crate::access::AccessLogPage { environments, namesakes, after, limit: limit.saturating_add(1) };
    let mut items = store.access_log(org, &secret.name, &page).await?;
    items.retain(|e| super::in_trail(&e.environment, e.version, &page.namesakes));
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if items.len() <= limit {
        return Ok(Page { items, next: None });
    }
    items.truncate(limit);
    let next = items.last().map(crate::access::AccessLogCursor::after);
    Ok(Page { items, next })
}

/// A secret as people see it: its versions, who holds them, who lags
/// behind the current one and its deletions per environment, each only in
/// the environments where the caller may read it.
#[derive(Clone, Debug)]
pub struct Detail {
    pub secret: Secret,
    pub versions: Vec<SecretVersion>,
    pub holdings: Vec<Holding>,
    pub behind: Vec<HolderBehind>,
    pub environment_deletions: Vec<EnvironmentDeletion>,
}

/// `key` for a caller the policies let read it (`secret.read`), with
/// what lives in environments shown only where she may read it there (an
/// environment-scoped `forbid` hides it).
pub async fn show<S: SecretRecordStore + StandingStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Detail, ApiError> {
    let (org, secret) = (actor.org(), resolve(store, actor, key).await?);
    let target = target(store, actor, &secret).await?;
    actor.authorize(Action::SecretRead, &target).await?;
    let environments = store.list_catalog(org, CatalogKind::Environment, None).await?;
    let name_of =
        |id: CatalogId| environments.iter().find(|e| e.id == id).map_or(String::new(), |e| e.name.clone());
    let mut versions = store.list_versions(org, secret.id).await?;
    let named: Vec<String> = versions.iter().map(|v| name_of(v.environment_id)).collect();
    let named: Vec<&str> = named.iter().map(String::as_str).collect();
    let allowed = actor.allowed_environments(Action::SecretRead, &target, &named).await?;
    let shown = |env: &str| allowed.iter().any(|a| a == env);
    versions.retain(|v| shown(&name_of(v.environment_id)));
    let mut holdings = store.holdings_of_secret(org, &secret.name).await?;
    holdings.retain(|h| shown(&h.environment));
    let mut environment_deletions = deletions_of(store, org, &secret.name).await?;
    environment_deletions.retain(|d| shown(&d.environment));
    let standing = Standing::load(store, org, environments.clone()).await?;
    mark_superseded(&standing, &secret.name, &mut versions);
    let mut behind = standing.behind();
    behind.retain(|b| b.secret == secret.name);
    let mut behind = standing.shown(&behind, actor.now());
    behind.retain(|b| shown(&b.environment));
    Ok(Detail { secret, versions, holdings, behind, environment_deletions })
}

/// A secret as a change left it (`holdings`: what its Agents hold), for
/// the one who changed it.
pub async fn as_changed<S: SecretRecordStore + DeletionStore + ?Sized>(
    store: &S,
    org: OrgId,
    id: crate::ids::SecretId,
    holdings: Vec<Holding>,
) -> Result<Detail, ApiError> {
    let secret = store.get_secret(org, id).await?;
    let versions = store.list_versions(org, id).await?;
    let environment_deletions = deletions_of(store, org, &secret.name).await?;
    Ok(Detail { secret, versions, holdings, behind: Vec::new(), environment_deletions })
}

async fn deletions_of<S: DeletionStore + ?Sized>(
    store: &S,
    org: OrgId,
    name: &str,
) -> Result<Vec<EnvironmentDeletion>, ApiError> {
    let mut all = store.environment_deletions(org).await?;
    all.retain(|d| d.secret == name);
    Ok(all)
}

/// When each version a newer current one replaced is (or was) erased
/// (`retention::kept_until`).
fn mark_superseded(standing: &Standing, name: &str, versions: &mut [SecretVersion]) {
    let (held, assigned) = (standing.held(), standing.assigned());
    let current = standing.current(&held, &assigned);
    let overlaps: Vec<(CatalogId, crate::retention::Overlap)> = versions
        .iter()
        .map(|v| {
            let overlap = crate::retention::Overlap::stored(v.version, v.created_at, v.keep_previous_seconds);
            (v.environment_id, overlap)
        })
        .collect();
    for v in versions.iter_mut() {
        let Some(now_current) =
            current.iter().find(|c| c.secret == name && c.environment == v.environment_id)
        else {
            continue;
        };
        let same_environment: Vec<_> =
            overlaps.iter().filter(|(e, _)| *e == v.environment_id).map(|(_, o)| *o).collect();
        v.superseded_at = crate::retention::kept_until(&same_environment, v.version, now_current.version);
    }
}
