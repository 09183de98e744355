//! The API refuses secret values (DESIGN §2 "No value at the API").
//!
//! The rule, applied to every request body on the people's API before any
//! handler runs: if the body is JSON and any object key, at any depth, is
//! value-like, the request is refused `400 VALUE_NOT_ACCEPTED` and nothing
//! is stored. A key is value-like when, lowercased with `_`, `-`, `.` and
//! spaces removed, it is one of [`VALUE_KEYS`] or ends in `value`,
//! `values` or `plaintext` (`secret_value`, `Value`, `defaultValue`,
//! `PLAIN-TEXT`, …). The refusal names the key's JSON Pointer, never
//! what was sent under it. The Agent channel is not scanned: it carries
//! Terraform outputs, never secret values.

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use heimdall_core::{ApiError, ErrorCode};

use super::HttpError;

/// Keys refused outright (after normalization).
/// (`secret` alone is not here: a cloud account names a secret by
/// `auth.secret`, and a name is not a value.)
pub const VALUE_KEYS: &[&str] = &[
    "value",
    "values",
    "data",
    "plaintext",
    "secretvalue",
    "secretdata",
    "cleartext",
    "rawvalue",
    "payload",
];

const VALUE_SUFFIXES: &[&str] = &["value", "values", "plaintext"];

fn normalize(key: &str) -> String {
    key.chars().filter(|c| !matches!(c, '_' | '-' | '.' | ' ')).flat_map(char::to_lowercase).collect()
}

pub fn is_value_key(key: &str) -> bool {
    let k = normalize(key);
    VALUE_KEYS.contains(&k.as_str()) || VALUE_SUFFIXES.iter().any(|s| k.ends_with(s))
}

/// The JSON Pointer of the first value-like key, if any.
pub fn find_value_key(value: &serde_json::Value) -> Option<String> {
    fn walk(v: &serde_json::Value, path: &mut Vec<String>) -> Option<String> {
        match v {
            serde_json::Value::Object(map) => {
                for (k, child) in map {
                    path.push(k.replace('~', "~0").replace('/', "~1"));
                    if is_value_key(k) {
                        return Some(format!("/{}", path.join("/")));
                    }
                    if let Some(found) = walk(child, path) {
                        return Some(found);
                    }
                    path.pop();
                }
                None
            }
            serde_json::Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    path.push(i.to_string());
                    if let Some(found) = walk(child, path) {
                        return Some(found);
                    }
                    path.pop();
                }
                None
            }
            _ => None,
        }
    }
    walk(value, &mut Vec::new())
}

/// Middleware: refuses bodies over `limit` bytes, and bodies that carry a
/// value-like key.
pub async fn refuse_values(limit: usize, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match to_bytes(body, limit).await {
        Ok(b) => b,
        Err(_) => {
            return HttpError(ApiError::new(ErrorCode::PayloadTooLarge, "request body is too large"))
                .into_response();
        }
    };
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(&bytes) {
        if let Some(pointer) = find_value_key(&json) {
            // A key's name is the caller's field name, not the value under it.
            return HttpError(ApiError::new(
                ErrorCode::ValueNotAccepted,
                format!(
                    "the API never receives secret values, and `{pointer}` looks like one; values go only to an Agent (`heimdall secret set`)"
                ),
            ))
            .into_response();
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn value_like_keys_anywhere() {
        for key in [
            "value",
            "Value",
            "VALUE",
            "secret_value",
            "secretValue",
            "data",
            "Data",
            "plaintext",
            "plain_text",
            "PLAIN-TEXT",
            "default_value",
            "values",
            "payload",
        ] {
            assert!(is_value_key(key), "{key}");
            let nested = json!({ "a": [{ "b": { key: "x" } }] });
            assert_eq!(find_value_key(&nested), Some(format!("/a/0/b/{key}")), "{key}");
        }
        for key in [
            "name",
            "description",
            "tags",
            "bucket",
            "role",
            "email",
            "text",
            "input",
            "valuation",
            "metadata",
            "state_bucket",
            "token",
            "csr_pem",
            "secret",
            "secret_name",
        ] {
            assert!(!is_value_key(key), "{key}");
        }
        assert_eq!(find_value_key(&json!({ "name": "x", "tags": { "team": "a" } })), None);
        assert_eq!(find_value_key(&json!(["value"])), None, "a value-like *string* is not a key");
    }
}
