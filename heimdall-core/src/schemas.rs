//! Resource schema versions over their life: which version a type name
//! means, whether a new Resource may be requested on one, and when one
//! may go.

mod create;
pub mod service;

pub use create::{check, create, NewSchema, SchemaPlan};

use crate::error::{ApiError, ErrorCode};
use crate::infra::ResourceSchema;

/// What a type name means where a schema is named: its newest version
/// that is not deprecated, else its newest (which a request then refuses,
/// saying so).
pub fn by_type<'a>(schemas: &'a [ResourceSchema], type_name: &str) -> Option<&'a ResourceSchema> {
    let of_type = || schemas.iter().filter(|s| s.type_name == type_name);
    of_type()
        .filter(|s| s.deprecated_at.is_none())
        .max_by_key(|s| s.version)
        .or_else(|| of_type().max_by_key(|s| s.version))
}

/// The version a Resource on `schema` could move to, when one is newer:
/// what its type name means now ([`by_type`]: the newest version not
/// deprecated). `None` when it is on that version, or on a newer one
/// (a deprecated newest). This is what "outdated" means in lists.
pub fn newer_version<'a>(
    schemas: &'a [ResourceSchema],
    schema: &ResourceSchema,
) -> Option<&'a ResourceSchema> {
    by_type(schemas, &schema.type_name).filter(|newest| newest.version > schema.version)
}

/// A new Resource is requested only on a version that is not deprecated.
pub fn check_requestable(schema: &ResourceSchema) -> Result<(), ApiError> {
    if schema.deprecated_at.is_none() {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::Conflict,
        format!(
            "schema {} version {} is deprecated: request new Resources on a newer version (`heimdall schema list --type {}`)",
            schema.type_name, schema.version, schema.type_name
        ),
    ))
}

/// A version goes only once no Resource (not deleted) uses it.
pub fn check_delete(schema: &ResourceSchema, resources_using: u64) -> Result<(), ApiError> {
    if resources_using == 0 {
        return Ok(());
    }
    let resources =
        if resources_using == 1 { "1 Resource".to_owned() } else { format!("{resources_using} Resources") };
    Err(ApiError::new(
        ErrorCode::NotEmpty,
        format!(
            "schema {} version {} is used by {resources}: delete them first, or deprecate the version instead",
            schema.type_name, schema.version
        ),
    ))
}

/// What creating `schema` records.
pub fn created(schema: &ResourceSchema) -> crate::audit::EventPlan {
    let detail =
        serde_json::json!({ "type": schema.type_name, "requires_approval": schema.requires_approval });
    schema_event(crate::audit::AuditAction::SchemaCreated, schema, detail)
}

/// Deprecating `schema` (or, with `deprecated` false, taking that back)
/// by `by` at `now`: `None` when it already stands so; else what the store
/// sets (`Some((when, who))` or `None`) and the event.
pub fn deprecation(
    schema: &ResourceSchema,
    deprecated: bool,
    by: &str,
    now: time::OffsetDateTime,
) -> Option<(Option<(time::OffsetDateTime, String)>, crate::audit::EventPlan)> {
    use crate::audit::AuditAction::{SchemaDeprecated, SchemaUndeprecated};
    if deprecated == schema.deprecated_at.is_some() {
        return None;
    }
    let (action, set) =
        if deprecated { (SchemaDeprecated, Some((now, by.to_owned()))) } else { (SchemaUndeprecated, None) };
    Some((set, schema_event(action, schema, version_detail(schema))))
}

/// What deleting `schema` records.
pub fn deleted(schema: &ResourceSchema) -> crate::audit::EventPlan {
    schema_event(crate::audit::AuditAction::SchemaDeleted, schema, version_detail(schema))
}

fn version_detail(schema: &ResourceSchema) -> serde_json::Value {
    serde_json::json!({ "type": schema.type_name, "version": schema.version })
}

fn schema_event(
    action: crate::audit::AuditAction,
    schema: &ResourceSchema,
    detail: serde_json::Value,
) -> crate::audit::EventPlan {
    crate::audit::EventPlan { action, target: format!("schema:{}", schema.id), detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(n: i64, deprecated: bool) -> ResourceSchema {
        serde_json::from_value(serde_json::json!({
            "id": uuid::Uuid::from_u128(n as u128), "org_id": uuid::Uuid::from_u128(99), "type": "bucket",
            "version": n, "input_schema": {}, "requires_approval": false,
            "created_at": "2026-12-01T00:00:00Z", "created_by": "a@example.com",
            "deprecated_at": if deprecated { serde_json::json!("2026-12-02T00:00:00Z") } else { serde_json::Value::Null },
        }))
        .unwrap()
    }

    #[test]
    fn deprecating_twice_changes_nothing_and_each_way_is_its_own_event() {
        use crate::audit::AuditAction;
        let now = time::OffsetDateTime::UNIX_EPOCH;
        assert!(deprecation(&version(1, true), true, "ana", now).is_none());
        assert!(deprecation(&version(1, false), false, "ana", now).is_none());
        let (set, event) = deprecation(&version(1, false), true, "ana", now).unwrap();
        assert_eq!((set, event.action), (Some((now, "ana".to_owned())), AuditAction::SchemaDeprecated));
        let (set, event) = deprecation(&version(1, true), false, "ana", now).unwrap();
        assert_eq!((set, event.action), (None, AuditAction::SchemaUndeprecated));
        assert_eq!(event.detail, serde_json::json!({ "type": "bucket", "version": 1 }));
    }

    #[test]
    fn a_type_name_means_its_newest_version_not_deprecated() {
        let versions = [version(1, false), version(2, false), version(3, true)];
        assert_eq!(by_type(&versions, "bucket").map(|s| s.version), Some(2));
        let all_deprecated = [version(1, true), version(2, true)];
        assert_eq!(by_type(&all_deprecated, "bucket").map(|s| s.version), Some(2));
        assert!(by_type(&versions, "queue").is_none());
        assert!(check_requestable(&version(2, false)).is_ok());
        assert_eq!(check_requestable(&version(3, true)).unwrap_err().code, ErrorCode::Conflict);
    }

    #[test]
    fn a_resource_is_outdated_while_a_newer_requestable_version_exists() {
        let versions = [version(1, false), version(2, false), version(3, true)];
        assert_eq!(newer_version(&versions, &versions[0]).map(|s| s.version), Some(2));
        // On the newest requestable version, or past it on a deprecated one.
        assert!(newer_version(&versions, &versions[1]).is_none());
        assert!(newer_version(&versions, &versions[2]).is_none());
        // A version of a type that has no other is never outdated.
        assert!(newer_version(&versions[..1], &versions[0]).is_none());
    }

    #[test]
    fn a_version_goes_once_unused() {
        assert!(check_delete(&version(1, false), 0).is_ok());
        let err = check_delete(&version(1, false), 2).unwrap_err();
        assert_eq!(err.code, ErrorCode::NotEmpty);
        assert!(err.message.contains("2 Resources"), "{}", err.message);
    }
}
