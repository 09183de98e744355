//! Domains, systems, components and environments: one set of handlers,
//! registered once per kind.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use heimdall_core::authz::{Action, CatalogTree, Target, TargetKind};
use heimdall_core::domain::{CatalogEntry, CatalogKind};
use heimdall_core::ids::{CatalogId, OrgId};
use heimdall_core::names::{validate_name, validate_text};
use heimdall_core::wire::{CreateCatalogEntry, Rename};
use heimdall_core::ApiError;
use serde::Deserialize;
use uuid::Uuid;

use super::error::HttpResult;
use super::extract::{Caller, JsonBody, QueryParams};
use super::AppState;

pub(super) fn routes(kind: CatalogKind) -> Router<AppState> {
    let base = format!("/v1/{}", kind.plural());
    Router::new()
        .route(
            &base,
            get(move |state: State<AppState>, caller: Caller, query: QueryParams<ListQuery>| {
                list(kind, state, caller, query)
            })
            .post(
                move |state: State<AppState>, caller: Caller, body: JsonBody<CreateCatalogEntry>| {
                    create(kind, state, caller, body)
                },
            ),
        )
        .route(
            &format!("{base}/{{key}}"),
            get(move |state: State<AppState>, caller: Caller, key: Path<String>| {
                show(kind, state, caller, key)
            })
            .patch(
                move |state: State<AppState>, caller: Caller, key: Path<String>, body: JsonBody<Rename>| {
                    rename(kind, state, caller, key, body)
                },
            )
            .delete(move |state: State<AppState>, caller: Caller, key: Path<String>| {
                delete(kind, state, caller, key)
            }),
        )
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    /// For systems: only those in this domain (id or name).
    domain: Option<String>,
    /// For components: only those in this system (id or name).
    system: Option<String>,
}

impl heimdall_core::body::Query for ListQuery {}

fn target_kind(kind: CatalogKind) -> TargetKind {
    heimdall_core::authz::catalog_target_kind(kind)
}

/// An entry by id or by name. A name that is not unique in the organization
/// (two domains may each have a system `api`) must be given as an id.
pub(crate) async fn resolve(
    state: &AppState,
    caller: &Caller,
    kind: CatalogKind,
    key: &str,
) -> Result<CatalogEntry, ApiError> {
    if let Ok(id) = key.parse::<CatalogId>() {
        let entry = state.store.get_catalog_entry(caller.org.id, id).await?;
        if entry.kind != kind {
            return Err(ApiError::not_found(kind));
        }
        return Ok(entry);
    }
    let mut found = state.store.find_catalog_by_name(caller.org.id, kind, key).await?;
    match found.len() {
        0 => Err(ApiError::not_found(kind)),
        1 => Ok(found.remove(0)),
        n => Err(ApiError::invalid_input(format!("{n} {}s have that name; use the id", kind.as_str()))),
    }
}

/// The organization's domains, systems and components, for building
/// targets (`heimdall_core::authz::{secret_target, resource_target}`).
pub(crate) async fn tree(state: &AppState, org: OrgId) -> Result<CatalogTree, ApiError> {
    let mut entries = Vec::new();
    for kind in [CatalogKind::Domain, CatalogKind::System, CatalogKind::Component] {
        for e in state.store.list_catalog(org, kind, None).await? {
            entries.push((e.id, e.kind, e.parent_id));
        }
    }
    Ok(CatalogTree::new(entries))
}

/// The entry as a Cedar target, with its ancestors, so that policies can
/// say `resource in Heimdall::Domain::"<id>"`.
pub(crate) async fn target_of(
    state: &AppState,
    caller: &Caller,
    entry: &CatalogEntry,
) -> Result<Target, ApiError> {
    let mut target = Target::new(target_kind(entry.kind), entry.id);
    let mut parent = entry.parent_id;
    while let Some(id) = parent {
        let p = state.store.get_catalog_entry(caller.org.id, id).await?;
        target = target.with_ancestor(target_kind(p.kind), p.id);
        parent = p.parent_id;
    }
    Ok(target)
}

async fn list(
    kind: CatalogKind,
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<ListQuery>,
) -> HttpResult<Json<Vec<CatalogEntry>>> {
    state.authorize(&caller, Action::CatalogRead, &Target::organization(caller.org.id), None).await?;
    let parent_key = match (kind, query.domain, query.system) {
        (CatalogKind::System, Some(domain), None) => Some((CatalogKind::Domain, domain)),
        (CatalogKind::Component, None, Some(system)) => Some((CatalogKind::System, system)),
        (_, None, None) => None,
        _ => {
            return Err(ApiError::invalid_input(format!(
                "{} can be filtered by {}",
                kind.plural(),
                match kind {
                    CatalogKind::System => "domain only",
                    CatalogKind::Component => "system only",
                    _ => "nothing",
                }
            ))
            .into())
        }
    };
    let parent = match parent_key {
        Some((parent_kind, key)) => Some(resolve(&state, &caller, parent_kind, &key).await?.id),
        None => None,
    };
    Ok(Json(state.store.list_catalog(caller.org.id, kind, parent).await?))
}

async fn create(
    kind: CatalogKind,
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateCatalogEntry>,
) -> HttpResult<(StatusCode, Json<CatalogEntry>)> {
    validate_name("name", &body.name)?;
    let description = body.description.unwrap_or_default();
    validate_text("description", &description, 1000)?;
    let parent = match (kind.parent_kind(), body.parent_id) {
        (Some(parent_kind), Some(parent_id)) => {
            Some(resolve(&state, &caller, parent_kind, &parent_id.to_string()).await?)
        }
        (Some(parent_kind), None) => {
            return Err(ApiError::invalid_input(format!(
                "a {kind} needs parent_id: the {parent_kind} it belongs to"
            ))
            .into())
        }
        (None, Some(_)) => {
            return Err(ApiError::invalid_input(format!(
                "a {kind} belongs to the organization; omit parent_id"
            ))
            .into())
        }
        (None, None) => None,
    };
    let target = match &parent {
        Some(p) => target_of(&state, &caller, p).await?,
        None => Target::organization(caller.org.id),
    };
    state.authorize(&caller, Action::CatalogWrite, &target, None).await?;
    let entry = CatalogEntry {
        id: CatalogId::from_uuid(Uuid::new_v4()),
        org_id: caller.org.id,
        kind,
        name: body.name,
        description,
        parent_id: parent.map(|p| p.id),
        created_at: state.clock.now(),
        created_by: caller.member.email.clone(),
    };
    let event = state.event(
        &caller,
        &format!("{kind}.created"),
        format!("{kind}:{}", entry.id),
        serde_json::json!({ "name": entry.name, "parent_id": entry.parent_id }),
    );
    state.store.create_catalog_entry(&entry, event).await?;
    Ok((StatusCode::CREATED, Json(entry)))
}

async fn show(
    kind: CatalogKind,
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<Json<CatalogEntry>> {
    let entry = resolve(&state, &caller, kind, &key).await?;
    let target = target_of(&state, &caller, &entry).await?;
    state.authorize(&caller, Action::CatalogRead, &target, None).await?;
    Ok(Json(entry))
}

async fn rename(
    kind: CatalogKind,
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(body): JsonBody<Rename>,
) -> HttpResult<Json<CatalogEntry>> {
    validate_name("name", &body.name)?;
    let entry = resolve(&state, &caller, kind, &key).await?;
    let target = target_of(&state, &caller, &entry).await?;
    state.authorize(&caller, Action::CatalogWrite, &target, None).await?;
    let event = state.event(
        &caller,
        &format!("{kind}.renamed"),
        format!("{kind}:{}", entry.id),
        serde_json::json!({ "from": entry.name, "to": body.name }),
    );
    Ok(Json(state.store.rename_catalog_entry(caller.org.id, entry.id, &body.name, event).await?))
}

async fn delete(
    kind: CatalogKind,
    State(state): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
) -> HttpResult<StatusCode> {
    let entry = resolve(&state, &caller, kind, &key).await?;
    let target = target_of(&state, &caller, &entry).await?;
    state.authorize(&caller, Action::CatalogWrite, &target, None).await?;
    let event = state.event(
        &caller,
        &format!("{kind}.deleted"),
        format!("{kind}:{}", entry.id),
        serde_json::json!({ "name": entry.name }),
    );
    state.store.delete_catalog_entry(caller.org.id, entry.id, event).await?;
    Ok(StatusCode::NO_CONTENT)
}
