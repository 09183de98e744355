//! The resource schemas' use cases, run once for every adapter: ask the
//! policies (`schema.read`, `schema.write` on the organization), resolve
//! the version, plan, apply. Generic over the store ports
//! ([`SchemaStore`], and [`CatalogStore`] for the environments defaults
//! name) and the caller ([`Actor`]).

use crate::authz::{Action, Target};
use crate::domain::CatalogKind;
use crate::error::ApiError;
use crate::ids::{OrgId, SchemaId};
use crate::infra::ResourceSchema;
use crate::ports::{Actor, CatalogStore, SchemaStore};

/// The schema `key` means in `org`, not deleted: by id, or by type name
/// its newest version not deprecated ([`super::by_type`]).
pub async fn resolve<S: SchemaStore + ?Sized>(
    store: &S,
    org: OrgId,
    key: &str,
) -> Result<ResourceSchema, ApiError> {
    if let Ok(id) = key.parse::<SchemaId>() {
        let schema = store.get_schema(org, id).await?;
        return match schema.deleted_at {
            None => Ok(schema),
            Some(_) => Err(ApiError::not_found("schema")),
        };
    }
    let schemas = store.list_schemas(org).await?;
    super::by_type(&schemas, key).cloned().ok_or_else(|| ApiError::not_found("schema"))
}

/// A version to change, by id only: a type name would pick the version
/// for the caller.
async fn by_id<S: SchemaStore + ?Sized>(
    store: &S,
    org: OrgId,
    key: &str,
) -> Result<ResourceSchema, ApiError> {
    let id: SchemaId = key.parse().map_err(|_| ApiError::not_found("schema (by id)"))?;
    resolve(store, org, &id.to_string()).await
}

async fn allowed(actor: &dyn Actor, action: Action) -> Result<(), ApiError> {
    actor.authorize(action, &Target::organization(actor.org())).await
}

/// Every version not deleted, of one type when `type_name` says which.
pub async fn list<S: SchemaStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    type_name: Option<&str>,
) -> Result<Vec<ResourceSchema>, ApiError> {
    allowed(actor, Action::SchemaRead).await?;
    let mut schemas = store.list_schemas(actor.org()).await?;
    if let Some(t) = type_name {
        schemas.retain(|s| s.type_name == t);
    }
    Ok(schemas)
}

/// The schema `key` names (an id, or a type name).
pub async fn show<S: SchemaStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<ResourceSchema, ApiError> {
    allowed(actor, Action::SchemaRead).await?;
    resolve(store, actor.org(), key).await
}

/// Adds a version as `id` ([`super::create`]): the request is checked
/// before the policies are asked or anything is loaded; the store numbers
/// the version.
pub async fn create<S: SchemaStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    request: super::NewSchema,
    id: SchemaId,
) -> Result<ResourceSchema, ApiError> {
    super::check(&request)?;
    allowed(actor, Action::SchemaWrite).await?;
    let environments = store.list_catalog(actor.org(), CatalogKind::Environment, None).await?;
    let planned = super::create(request, &environments, (id, actor.org()), actor.name(), actor.now())?;
    Ok(store.create_schema(&planned.schema, actor.event(planned.event)).await?)
}

/// Deprecates the version `key` (an id) names, or takes that back
/// ([`super::deprecation`]); the version as it stands when nothing changes.
pub async fn set_deprecated<S: SchemaStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    deprecated: bool,
) -> Result<ResourceSchema, ApiError> {
    allowed(actor, Action::SchemaWrite).await?;
    let schema = by_id(store, actor.org(), key).await?;
    let Some((deprecation, planned)) = super::deprecation(&schema, deprecated, actor.name(), actor.now())
    else {
        return Ok(schema);
    };
    Ok(store.set_schema_deprecation(actor.org(), schema.id, deprecation, actor.event(planned)).await?)
}

/// Deletes the version `key` (an id) names; the store refuses it
/// `NOT_EMPTY` while a Resource uses it.
pub async fn delete<S: SchemaStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<(), ApiError> {
    allowed(actor, Action::SchemaWrite).await?;
    let schema = by_id(store, actor.org(), key).await?;
    Ok(store.delete_schema(&schema, actor.now(), actor.event(super::deleted(&schema))).await?)
}
