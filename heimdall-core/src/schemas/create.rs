//! A new resource schema version, as a planner: what a member asks for,
//! checked in full, and the row the store numbers and writes with its
//! event (`audit::EventPlan`) in one transaction.

use std::collections::BTreeMap;

use serde_json::Value;
use time::OffsetDateTime;

use super::created;
use crate::audit::EventPlan;
use crate::domain::{CatalogEntry, CatalogKind};
use crate::error::ApiError;
use crate::ids::{OrgId, SchemaId};
use crate::infra::{ModuleRef, ResourceSchema};
use crate::input::InputSchema;
use crate::names::{validate_name, validate_text};

/// What a member asks for. `defaults` are keyed as sent: an
/// environment's name or id.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewSchema {
    pub type_name: String,
    pub input_schema: Value,
    pub defaults: BTreeMap<String, Value>,
    pub module: Option<ModuleRef>,
    pub requires_approval: bool,
    /// E.g. `24h` (`drift::parse_every`); off when absent.
    pub drift_check_every: Option<String>,
}

/// The checks that need nothing loaded; [`create`] makes them again. An
/// adapter calls this first so that a bad request is refused before it
/// loads anything for it.
pub fn check(request: &NewSchema) -> Result<(), ApiError> {
    validate_name("type", &request.type_name)?;
    InputSchema::compile(&request.input_schema)?;
    if let Some(module) = &request.module {
        validate_text("module.source", &module.source, 500)?;
        validate_text("module.version", &module.version, 100)?;
        if module.source.trim().is_empty() || module.version.trim().is_empty() {
            return Err(ApiError::invalid_input("module needs both source and version"));
        }
    }
    for (environment, value) in &request.defaults {
        // Laid under an object input: an object.
        if !value.is_object() {
            return Err(ApiError::invalid_input(format!(
                "defaults for `{environment}` must be a JSON object"
            )));
        }
    }
    request.drift_check_every.as_deref().map(crate::drift::parse_every).transpose()?;
    Ok(())
}

/// A schema version to store, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaPlan {
    /// Its `version` is numbered by the store, in its transaction.
    pub schema: ResourceSchema,
    pub event: EventPlan,
}

/// The version `request` adds, made by `by` at `now`. `environments` are
/// the organization's: defaults name existing ones, once each, and are
/// kept under their names.
pub fn create(
    request: NewSchema,
    environments: &[CatalogEntry],
    (id, org): (SchemaId, OrgId),
    by: &str,
    now: OffsetDateTime,
) -> Result<SchemaPlan, ApiError> {
    check(&request)?;
    let mut defaults = BTreeMap::new();
    for (key, value) in request.defaults {
        let environment =
            crate::catalog::resolve(environments, CatalogKind::Environment, &key).map_err(|_| {
                ApiError::invalid_input(format!("defaults name environment `{key}`, which does not exist"))
            })?;
        if defaults.insert(environment.name.clone(), value).is_some() {
            return Err(ApiError::invalid_input(format!(
                "defaults name environment `{}` twice (by name and by id)",
                environment.name
            )));
        }
    }
    let drift_check_every_seconds =
        request.drift_check_every.as_deref().map(crate::drift::parse_every).transpose()?;
    let schema = ResourceSchema {
        id,
        org_id: org,
        type_name: request.type_name,
        version: 0,
        input_schema: request.input_schema,
        defaults,
        module: request.module,
        requires_approval: request.requires_approval,
        drift_check_every_seconds,
        created_at: now,
        created_by: by.to_owned(),
        deprecated_at: None,
        deprecated_by: None,
        deleted_at: None,
    };
    let event = created(&schema);
    Ok(SchemaPlan { schema, event })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditAction;
    use crate::error::ErrorCode;
    use crate::fixtures::environment;
    use serde_json::json;

    fn bucket() -> NewSchema {
        NewSchema {
            type_name: "bucket".into(),
            input_schema: json!({ "type": "object", "properties": { "name": { "type": "string" } } }),
            ..NewSchema::default()
        }
    }

    fn plan(request: NewSchema) -> Result<SchemaPlan, ApiError> {
        let ids = (SchemaId::from_uuid(uuid::Uuid::from_u128(3)), OrgId::from_uuid(uuid::Uuid::nil()));
        create(
            request,
            &[environment("prod"), environment("dev")],
            ids,
            "ana@example.com",
            OffsetDateTime::UNIX_EPOCH,
        )
    }

    #[test]
    fn defaults_are_kept_under_the_environments_name_however_they_were_named() {
        let prod = environment("prod");
        let defaults =
            BTreeMap::from([(prod.id.to_string(), json!({ "tier": "gold" })), ("dev".into(), json!({}))]);
        let planned = plan(NewSchema { defaults, drift_check_every: Some("1h".into()), ..bucket() }).unwrap();
        assert_eq!(planned.schema.defaults.keys().collect::<Vec<_>>(), ["dev", "prod"]);
        assert_eq!(planned.schema.drift_check_every_seconds, Some(3600));
        assert_eq!(planned.event.action, AuditAction::SchemaCreated);
        assert_eq!(planned.event.detail["type"], "bucket");
    }

    #[test]
    fn defaults_name_each_existing_environment_once_as_an_object() {
        let prod = environment("prod");
        let refusals = [
            (BTreeMap::from([("staging".into(), json!({}))]), "`staging`, which does not exist"),
            (BTreeMap::from([("prod".into(), json!("gold"))]), "must be a JSON object"),
            (
                BTreeMap::from([("prod".into(), json!({})), (prod.id.to_string(), json!({}))]),
                "`prod` twice (by name and by id)",
            ),
        ];
        for (defaults, said) in refusals {
            let refused = plan(NewSchema { defaults, ..bucket() }).unwrap_err();
            assert_eq!(refused.code, ErrorCode::InvalidInput);
            assert!(refused.message.contains(said), "{}", refused.message);
        }
    }

    #[test]
    fn a_schema_that_does_not_compile_or_a_half_module_is_refused() {
        let broken = NewSchema { input_schema: json!(["not", "an", "object"]), ..bucket() };
        assert_eq!(check(&broken).unwrap_err().message, "input_schema must be a JSON object");
        let half =
            NewSchema { module: Some(ModuleRef { source: "./m".into(), version: " ".into() }), ..bucket() };
        assert_eq!(check(&half).unwrap_err().message, "module needs both source and version");
        assert_eq!(
            check(&NewSchema { type_name: "Bucket!".into(), ..bucket() }).unwrap_err().code,
            ErrorCode::InvalidInput
        );
    }
}
