//! Resource input: defaults overlaid by the request, validated in full
//! against the schema's JSON Schema (draft 2020-12), hashed per revision.
//!
//! A refusal names each field (JSON Pointer) and the keyword broken, never
//! the value: not for `enum`, `pattern`, `const`, types, nor an unexpected
//! property's value. Patterns run on the `regex` crate's engine, which
//! matches in linear time: a schema cannot make validation backtrack
//! catastrophically. Remote `$ref`s are never fetched (the crate is built
//! without its HTTP and file resolvers).

use std::collections::BTreeMap;

use jsonschema::{PatternOptions, Validator};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{ApiError, ErrorCode, FieldError};

/// Upper bound on refused fields reported at once (a huge input must not
/// produce a huge error).
const MAX_FIELD_ERRORS: usize = 50;

/// A compiled input schema.
pub struct InputSchema {
    validator: Validator,
}

impl std::fmt::Debug for InputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputSchema").finish_non_exhaustive()
    }
}

impl InputSchema {
    /// Compiles a schema written by the platform team. The error says where
    /// the schema is wrong (the schema is not secret, so it may quote it).
    pub fn compile(schema: &Value) -> Result<Self, ApiError> {
        if !schema.is_object() {
            return Err(ApiError::invalid_input("input_schema must be a JSON object"));
        }
        if let Some(dialect) = schema.get("$schema").and_then(Value::as_str) {
            if !dialect.contains("2020-12") {
                return Err(ApiError::invalid_input(
                    "input_schema must use JSON Schema draft 2020-12 (omit $schema or use https://json-schema.org/draft/2020-12/schema)",
                ));
            }
        }
        check_secret_marks(schema, "", true)?;
        let validator = jsonschema::draft202012::options()
            .with_pattern_options(PatternOptions::regex())
            .should_validate_formats(true)
            .build(schema)
            .map_err(|e| {
                ApiError::invalid_input(format!(
                    "input_schema is not a valid JSON Schema at {}: {e}",
                    pointer_or_root(e.instance_path().as_str())
                ))
            })?;
        Ok(Self { validator })
    }

    /// Validates an effective input; `SCHEMA_VIOLATION` with every broken
    /// field otherwise.
    pub fn validate(&self, input: &Value) -> Result<(), ApiError> {
        let mut fields: Vec<FieldError> = Vec::new();
        for error in self.validator.iter_errors(input) {
            let path = error.instance_path().as_str().to_owned();
            match error.kind() {
                // Name each unexpected property: its name is the caller's
                // key, its value is never read.
                jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected }
                | jsonschema::error::ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                    for name in unexpected {
                        fields.push(FieldError {
                            path: format!("{path}/{}", escape_pointer(name)),
                            rule: error.kind().keyword().to_owned(),
                        });
                    }
                }
                jsonschema::error::ValidationErrorKind::Required { property } => {
                    let name = property.as_str().map(escape_pointer).unwrap_or_default();
                    fields.push(FieldError { path: format!("{path}/{name}"), rule: "required".into() });
                }
                kind => fields.push(FieldError { path, rule: kind.keyword().to_owned() }),
            }
            if fields.len() >= MAX_FIELD_ERRORS {
                break;
            }
        }
        if fields.is_empty() {
            return Ok(());
        }
        fields.iter_mut().filter(|f| f.path.is_empty()).for_each(|f| f.path = "/".into());
        fields.dedup();
        let summary: Vec<String> =
            fields.iter().take(5).map(|f| format!("{} ({})", f.path, f.rule)).collect();
        Err(ApiError::new(
            ErrorCode::SchemaViolation,
            format!("input does not match the schema: {}", summary.join(", ")),
        )
        .with_fields(fields))
    }
}

fn pointer_or_root(p: &str) -> &str {
    if p.is_empty() {
        "/"
    } else {
        p
    }
}

fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// The keyword that makes a top-level string property of an input schema
/// a secret reference: the request names a secret there, never a value,
/// and the Agent gives the module the secret's value at run time.
pub const SECRET_REFERENCE: &str = "x-heimdall-secret";

/// The input keys whose property the schema marks as a secret reference,
/// with the secret each names; `SCHEMA_VIOLATION` if one is not a name.
pub fn secret_references(schema: &Value, input: &Value) -> Result<Vec<crate::infra::SecretInput>, ApiError> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Ok(Vec::new()) };
    let mut found = Vec::new();
    for (key, property) in properties {
        if property.get(SECRET_REFERENCE) != Some(&Value::Bool(true)) {
            continue;
        }
        let Some(named) = input.get(key) else { continue };
        let secret =
            named.as_str().filter(|s| crate::names::validate_name("secret", s).is_ok()).ok_or_else(|| {
                ApiError::new(ErrorCode::SchemaViolation, "input does not match the schema").with_fields(
                    vec![FieldError {
                        path: format!("/{}", escape_pointer(key)),
                        rule: SECRET_REFERENCE.to_owned(),
                    }],
                )
            })?;
        found.push(crate::infra::SecretInput { variable: key.clone(), secret: secret.to_owned() });
    }
    Ok(found)
}

/// The secret-reference mark works on a top-level property of type
/// string, set to `true`; anywhere else it would be silently ignored and
/// a value typed in its place would reach the job as plain input. Refused.
fn check_secret_marks(schema: &Value, at: &str, top: bool) -> Result<(), ApiError> {
    let bad = |why: &str| {
        ApiError::invalid_input(format!("input_schema: {SECRET_REFERENCE} at {}: {why}", pointer_or_root(at)))
    };
    match schema {
        Value::Object(map) => {
            if let Some(mark) = map.get(SECRET_REFERENCE) {
                let top_property = !top && at.matches('/').count() == 2 && at.starts_with("/properties/");
                if !top_property {
                    return Err(bad("only a top-level property may be a secret reference"));
                }
                if mark != &Value::Bool(true) {
                    return Err(bad("must be true"));
                }
                if map.get("type") != Some(&Value::String("string".into())) {
                    return Err(bad("the property must be of type string (a secret's name)"));
                }
            }
            for (key, sub) in map {
                check_secret_marks(sub, &format!("{at}/{}", escape_pointer(key)), false)?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, sub) in items.iter().enumerate() {
                check_secret_marks(sub, &format!("{at}/{i}"), false)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The effective input: the environment's defaults with the request laid
/// over them. Objects merge key by key (recursively); anything else in the
/// request replaces the default.
pub fn effective_input(defaults: &BTreeMap<String, Value>, environment: &str, input: &Value) -> Value {
    match defaults.get(environment) {
        Some(base) => overlay(base, input),
        None => input.clone(),
    }
}

fn overlay(base: &Value, top: &Value) -> Value {
    match (base, top) {
        (Value::Object(b), Value::Object(t)) => {
            let mut merged: Map<String, Value> = b.clone();
            for (k, v) in t {
                let value = match merged.get(k) {
                    Some(existing) => overlay(existing, v),
                    None => v.clone(),
                };
                merged.insert(k.clone(), value);
            }
            Value::Object(merged)
        }
        (_, top) => top.clone(),
    }
}

/// Content hash of a revision: SHA-256 over the canonical JSON (keys
/// sorted) of the effective input and the region.
pub fn revision_hash(effective_input: &Value, region: Option<&str>) -> String {
    let mut canonical = String::new();
    write_canonical(&serde_json::json!({ "input": effective_input, "region": region }), &mut canonical);
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

/// JSON with object keys sorted at every depth. (serde_json keeps insertion
/// order when any crate in the build enables `preserve_order`, so its own
/// serialization is not canonical.)
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> InputSchema {
        InputSchema::compile(&json!({
            "type": "object",
            "required": ["bucket"],
            "additionalProperties": false,
            "properties": {
                "bucket": { "type": "string", "pattern": "^[a-z0-9-]{3,63}$" },
                "tier": { "enum": ["standard", "glacier"] },
                "versioning": { "type": "boolean" },
                "tags": { "type": "object", "additionalProperties": { "type": "string" } },
                "lifecycle": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": { "days": { "type": "integer", "minimum": 1 } }
                },
                "replicas": { "type": "array", "items": { "type": "string", "const": "eu-west-1" }, "maxItems": 2 }
            }
        }))
        .unwrap()
    }

    #[test]
    fn valid_input_passes() {
        schema()
            .validate(&json!({ "bucket": "checkout-recibos", "tier": "standard", "tags": { "team": "x" } }))
            .unwrap();
    }

    #[test]
    fn every_violation_is_named_without_the_value() {
        let marker = "MARKER-Zq9";
        let input = json!({
            "bucket": format!("UPPER {marker}"),
            "tier": marker,
            "versioning": marker,
            "tags": { "a": 1 },
            "lifecycle": { "days": 0, "extra": marker },
            "replicas": [marker, "eu-west-1", "eu-west-1"],
            "unexpected": marker,
        });
        let err = schema().validate(&input).unwrap_err();
        assert_eq!(err.code, ErrorCode::SchemaViolation);
        let body = serde_json::to_string(&err).unwrap();
        assert!(!body.contains(marker), "{body}");
        let fields = err.fields.unwrap();
        let has = |path: &str, rule: &str| fields.iter().any(|f| f.path == path && f.rule == rule);
        assert!(has("/bucket", "pattern"), "{fields:?}");
        assert!(has("/tier", "enum"), "{fields:?}");
        assert!(has("/versioning", "type"), "{fields:?}");
        assert!(has("/tags/a", "type"), "{fields:?}");
        assert!(has("/lifecycle/days", "minimum"), "{fields:?}");
        assert!(has("/lifecycle/extra", "additionalProperties"), "{fields:?}");
        assert!(has("/replicas/0", "const"), "{fields:?}");
        assert!(has("/replicas", "maxItems"), "{fields:?}");
        assert!(has("/unexpected", "additionalProperties"), "{fields:?}");
    }

    #[test]
    fn missing_required_names_the_field() {
        let err = schema().validate(&json!({})).unwrap_err();
        assert_eq!(err.fields.unwrap(), vec![FieldError { path: "/bucket".into(), rule: "required".into() }]);
        let err = schema().validate(&json!("just a string")).unwrap_err();
        assert_eq!(err.fields.unwrap()[0].path, "/");
    }

    #[test]
    fn invalid_schemas_are_refused() {
        assert!(InputSchema::compile(&json!({ "type": "nope" })).is_err());
        assert!(InputSchema::compile(&json!({ "type": "string", "pattern": "(" })).is_err());
        assert!(InputSchema::compile(&json!([1])).is_err());
        assert!(
            InputSchema::compile(&json!({ "$schema": "http://json-schema.org/draft-04/schema#" })).is_err()
        );
        // Lookaround needs backtracking; the linear-time engine refuses it.
        assert!(InputSchema::compile(&json!({ "type": "string", "pattern": "^(?=a)a$" })).is_err());
    }

    #[test]
    fn catastrophic_pattern_runs_in_linear_time() {
        let s = InputSchema::compile(&json!({ "type": "string", "pattern": "^(a+)+$" })).unwrap();
        let evil = format!("{}!", "a".repeat(50_000));
        // With a backtracking engine this would not finish.
        assert!(s.validate(&json!(evil)).is_err());
    }

    #[test]
    fn defaults_are_overlaid_per_environment() {
        let defaults = BTreeMap::from([(
            "prod".to_owned(),
            json!({ "versioning": true, "tags": { "env": "prod", "team": "platform" } }),
        )]);
        let input = json!({ "bucket": "b", "tags": { "team": "payments" } });
        assert_eq!(
            effective_input(&defaults, "prod", &input),
            json!({ "bucket": "b", "versioning": true, "tags": { "env": "prod", "team": "payments" } })
        );
        assert_eq!(effective_input(&defaults, "dev", &input), input);
    }

    #[test]
    fn hash_is_canonical() {
        let a = json!({ "b": 1, "a": [1, 2] });
        let b: Value = serde_json::from_str(r#"{"a":[1,2],"b":1}"#).unwrap();
        assert_eq!(revision_hash(&a, Some("eu")), revision_hash(&b, Some("eu")));
        assert_ne!(revision_hash(&a, Some("eu")), revision_hash(&a, None));
    }

    #[test]
    fn secret_references_name_secrets_and_refuse_anything_else() {
        let schema = json!({ "type": "object", "properties": {
            "name": { "type": "string" },
            "admin_password": { "type": "string", "x-heimdall-secret": true } } });
        InputSchema::compile(&schema).unwrap();
        let found =
            secret_references(&schema, &json!({ "name": "x", "admin_password": "orders-admin" })).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].variable.as_str(), found[0].secret.as_str()),
            ("admin_password", "orders-admin")
        );
        assert!(secret_references(&schema, &json!({ "name": "x" })).unwrap().is_empty());
        for named in [json!("Not A Name"), json!(""), json!(7), json!({ "value": "hunter2" })] {
            let err = secret_references(&schema, &json!({ "admin_password": named })).unwrap_err();
            assert_eq!(err.code, ErrorCode::SchemaViolation);
            assert!(!err.message.contains("hunter2") && !err.message.contains("Not A Name"));
            assert_eq!(err.fields.as_ref().unwrap()[0].path, "/admin_password");
        }
    }

    #[test]
    fn a_secret_mark_where_it_would_be_ignored_is_refused() {
        let nested = json!({ "type": "object", "properties": { "db": { "type": "object",
            "properties": { "password": { "type": "string", "x-heimdall-secret": true } } } } });
        let not_string = json!({ "properties": { "p": { "type": "integer", "x-heimdall-secret": true } } });
        let not_true = json!({ "properties": { "p": { "type": "string", "x-heimdall-secret": "yes" } } });
        let at_root = json!({ "type": "string", "x-heimdall-secret": true });
        for schema in [nested, not_string, not_true, at_root] {
            let err = InputSchema::compile(&schema).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidInput, "{schema}");
            assert!(err.message.contains("x-heimdall-secret"), "{}", err.message);
        }
    }
}
