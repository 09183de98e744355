//! Resource schema versions over their life: which version a type name
//! means, whether a new Resource may be requested on one, and when one
//! may go.

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
