//! Jobs as people read them, run once for every adapter: each job is
//! decided under its Resource, in the Resource's environment, so a
//! `forbid` on prod or on a Domain hides what it forbids.

use super::service::{name_in, placements, resolve};
use crate::authz::{job_target, Action, Target};
use crate::domain::CatalogKind;
use crate::error::ApiError;
use crate::ids::{JobId, ResourceId};
use crate::infra::{Job, Resource};
use crate::paging::{visible, Page};
use crate::ports::{Actor, CatalogStore, InfraStore, ResourceRecordStore};
use crate::queue::{JobCursor, JobOrder};

/// Which jobs a list shows: of one Resource, or of one Component's
/// Resources, by id or name.
#[derive(Clone, Debug, Default)]
pub struct ListAsked {
    pub resource: Option<String>,
    pub component: Option<String>,
    pub order: JobOrder,
}

/// A page of the jobs the caller may read (`job.read`), in the order
/// asked; a cursor of the other order is refused.
pub async fn list<S: CatalogStore + ResourceRecordStore + InfraStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    asked: ListAsked,
    limit: u32,
    after: Option<JobCursor>,
) -> Result<Page<Job, JobCursor>, ApiError> {
    let (org, order) = (actor.org(), asked.order);
    if after.as_ref().is_some_and(|a| a.order != order) {
        return Err(ApiError::invalid_input(
            "after is a cursor of the other order: pass the same order as for the first page",
        ));
    }
    actor.authorize(Action::JobRead, &Target::organization(org)).await?;
    let resource = match &asked.resource {
        Some(key) => Some(resolve(store, org, key).await?),
        None => None,
    };
    let component = match &asked.component {
        Some(key) => {
            let component = crate::catalog::service::resolve(store, org, CatalogKind::Component, key).await?;
            if resource.as_ref().is_some_and(|r| r.component_id != component.id) {
                return Err(ApiError::not_found("resource in that component"));
            }
            Some(component.id)
        }
        None => None,
    };
    let (tree, environments) = placements(store, org).await?;
    let (tree, environments, resource) = (&tree, &environments, resource.as_ref().map(|r| r.id));
    // Each chunk of jobs comes with its own Resources (one query), never
    // the organization's every Resource; the Component is the query's.
    let fetch = |after: Option<JobCursor>, n| async move {
        let jobs = store.list_jobs_page(org, resource, component, order, after.as_ref(), n).await?;
        let ids: Vec<ResourceId> = jobs.iter().map(|j| j.resource_id).collect();
        let resources = store.resources_by_ids(org, &ids).await?;
        Ok(jobs
            .into_iter()
            .map(|job| {
                let under = resources.iter().find(|r| r.id == job.resource_id).cloned();
                (job, under)
            })
            .collect())
    };
    let keep = |chunk: Vec<(Job, Option<Resource>)>| async move {
        // A job whose Resource is gone is shown to no one.
        let placed: Vec<(Job, Resource)> = chunk.into_iter().filter_map(|(j, r)| Some((j, r?))).collect();
        let targets: Vec<(Target, Option<&str>)> = placed
            .iter()
            .map(|(j, r)| {
                (job_target(j.id, r.id, r.component_id, tree), Some(name_in(environments, r.environment_id)))
            })
            .collect();
        let allowed = actor.allows_each(Action::JobRead, &targets).await?;
        Ok(placed.into_iter().zip(allowed).filter_map(|((j, r), ok)| ok.then_some((j, Some(r)))).collect())
    };
    let page = visible(limit, after, fetch, keep, |(j, _): &(Job, _)| JobCursor::after(j, order)).await?;
    Ok(Page { items: page.items.into_iter().map(|(job, _)| job).collect(), next: page.next })
}

/// A job the caller may read: decided under its Resource, in its
/// environment. Any key that is not a job's id is not found.
pub async fn show<S: CatalogStore + ResourceRecordStore + InfraStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Job, ApiError> {
    let org = actor.org();
    let id: JobId = key.parse().map_err(|_| ApiError::not_found("job"))?;
    let job = store.get_job(org, id).await?;
    let resource = store.get_resource(org, job.resource_id).await?;
    let (tree, environments) = placements(store, org).await?;
    let target = job_target(job.id, resource.id, resource.component_id, &tree);
    actor.authorize_in(Action::JobRead, &target, name_in(&environments, resource.environment_id)).await?;
    Ok(job)
}

/// A readable job's log (secrets masked by the Agent) and whether it was
/// cut short.
pub async fn log<S: CatalogStore + ResourceRecordStore + InfraStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<(String, bool), ApiError> {
    let job = show(store, actor, key).await?;
    Ok(store.job_log(actor.org(), job.id).await?)
}
