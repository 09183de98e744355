//! Request bodies: parsed once, strictly, then checked for secret values,
//! then decoded, all from the same parsed tree (docs/secrets.md, "What the API keeps, and refuses").
//!
//! Every adapter that takes a JSON body (the API's people and Agent
//! routes, the Agent's local API) calls [`decode`], so the bytes the value
//! check inspects are exactly the bytes the handler gets:
//!
//! 1. [`parse_strict`]: one parse of the bytes into a JSON tree. A byte
//!    order mark, trailing data after the value, a duplicate key in any
//!    object, invalid UTF-8 and nesting deeper than 128 are refused
//!    `BAD_REQUEST`. The lenient parsers differ on exactly these, which is
//!    how one trailing `}` once got a value past the check.
//! 2. [`refuse_values`]: the body type's [`ValuePolicy`] decides which keys
//!    are values. The refusal names the key's JSON Pointer, never what is
//!    under it.
//! 3. The typed body is deserialized from that same tree. A closed body
//!    (the secret routes) refuses any field it does not define as
//!    `VALUE_NOT_ACCEPTED`, whatever its name: on those routes an
//!    unexpected field is where a value would go.
//!
//! Errors never quote the input: serde's messages are cut to the field and
//! the expectation ([`describe_serde_error`]).

use std::fmt;

use serde::de::{DeserializeOwned, DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use heimdall_core::error::{ApiError, ErrorCode};

/// Which keys of a body count as a secret value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValuePolicy {
    /// Metadata (members, catalog, policies, cloud accounts, tokens): a
    /// value-like key ([`is_value_key`]) at any depth is refused.
    Metadata,
    /// The secret routes (secrets, versions, deactivation, assignments):
    /// value-like keys are refused at any depth (tags included), and any
    /// field the body type does not define is refused
    /// `VALUE_NOT_ACCEPTED`, whatever it is called.
    Closed,
    /// Infrastructure: the listed top-level members hold data governed by
    /// a resource schema (a DNS record's `value`, a tag list's
    /// `[{"key","value"}]`, a ConfigMap's `data`, Helm `values`), so key
    /// names inside them are not judged; everywhere else as [`Self::Metadata`].
    SchemaGoverned(&'static [&'static str]),
    /// The body that exists to carry a value (the Agent's local API write):
    /// exactly this top-level member is the value; any other value-like key
    /// is refused.
    Carries(&'static str),
    /// Machine-to-machine bodies on the Agent channel (job outputs, logs,
    /// access records), which people never write: parsed strictly, not
    /// scanned.
    NotScanned,
}

/// A request body type and what counts as a value in it.
pub trait Body: DeserializeOwned {
    const VALUES: ValuePolicy;
}

/// Keys refused outright (after normalization: lowercase, `_`, `-`, `.`
/// and spaces removed). `secret` alone is not here: a cloud account names a
/// secret by `auth.secret`, and a name is not a value.
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

/// Normalized keys ending in one of these are values too (`secret_value`,
/// `defaultValue`, `PLAIN-TEXT`).
pub const VALUE_SUFFIXES: &[&str] = &["value", "values", "plaintext"];

fn normalize(key: &str) -> String {
    key.chars().filter(|c| !matches!(c, '_' | '-' | '.' | ' ')).flat_map(char::to_lowercase).collect()
}

/// Is `key` the name of a field that holds a secret value?
pub fn is_value_key(key: &str) -> bool {
    let k = normalize(key);
    VALUE_KEYS.contains(&k.as_str()) || VALUE_SUFFIXES.iter().any(|s| k.ends_with(s))
}

fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The JSON Pointer of the first value-like key under `value`, if any;
/// `prefix` is the pointer of `value` itself.
fn find_value_key(value: &Value, prefix: &str) -> Option<String> {
    match value {
        Value::Object(map) => map.iter().find_map(|(k, child)| {
            let here = format!("{prefix}/{}", pointer_segment(k));
            if is_value_key(k) {
                Some(here)
            } else {
                find_value_key(child, &here)
            }
        }),
        Value::Array(items) => {
            items.iter().enumerate().find_map(|(i, child)| find_value_key(child, &format!("{prefix}/{i}")))
        }
        _ => None,
    }
}

/// The refusal for a value-like key at `pointer`. Names the key, never what
/// was sent under it.
pub fn value_refusal(pointer: &str) -> ApiError {
    ApiError::new(
        ErrorCode::ValueNotAccepted,
        format!(
            "the API never receives secret values, and `{pointer}` looks like one; values go only to an \
             Agent (`heimdall secret set`)"
        ),
    )
}

/// Applies `policy` to a parsed body.
pub fn refuse_values(policy: ValuePolicy, body: &Value) -> Result<(), ApiError> {
    let found = match policy {
        ValuePolicy::NotScanned => None,
        ValuePolicy::Metadata | ValuePolicy::Closed => find_value_key(body, ""),
        ValuePolicy::SchemaGoverned(free) => scan_top_level(body, |k| free.contains(&k)),
        ValuePolicy::Carries(member) => scan_top_level(body, |k| k == member),
    };
    match found {
        Some(pointer) => Err(value_refusal(&pointer)),
        None => Ok(()),
    }
}

/// Scans a body's top-level members, skipping those `skip` names (whose
/// content is judged elsewhere); a non-object body is scanned whole.
fn scan_top_level(body: &Value, skip: impl Fn(&str) -> bool) -> Option<String> {
    let Value::Object(map) = body else { return find_value_key(body, "") };
    map.iter().filter(|(k, _)| !skip(k)).find_map(|(k, child)| {
        let here = format!("/{}", pointer_segment(k));
        if is_value_key(k) {
            Some(here)
        } else {
            find_value_key(child, &here)
        }
    })
}

/// Parses `bytes` as exactly one JSON value: no byte order mark, no
/// trailing data, no duplicate key in any object. Errors say where, never
/// what.
pub fn parse_strict(bytes: &[u8]) -> Result<Value, ApiError> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Err(bad_request("request body starts with a byte order mark; send plain UTF-8 JSON"));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(bad_request("request body is empty; expected a JSON object"));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = StrictValue.deserialize(&mut de).map_err(|e| syntax_error(&e))?;
    de.end().map_err(|e| syntax_error(&e))?;
    Ok(value)
}

/// Parses, applies `T`'s value policy, then decodes `T` from the same tree.
pub fn decode<T: Body>(bytes: &[u8]) -> Result<T, ApiError> {
    let tree = parse_strict(bytes)?;
    decode_tree(tree)
}

/// [`decode`] for a body already parsed by [`parse_strict`].
pub fn decode_tree<T: Body>(tree: Value) -> Result<T, ApiError> {
    refuse_values(T::VALUES, &tree)?;
    serde_path_to_error::deserialize(tree).map_err(|err| {
        let mut path = err.path().to_string();
        let message = err.inner().to_string();
        let unknown = unknown_field(&message).is_some();
        if unknown {
            // serde_path_to_error's path is `a.b`, its last part the unknown
            // key itself: name where it is, never what it is called (a
            // mistaken key can be a value pasted in the wrong place).
            path = match path.rsplit_once('.') {
                Some((parent, _)) => parent.to_owned(),
                None => ".".to_owned(),
            };
        }
        if unknown && T::VALUES == ValuePolicy::Closed {
            let place = if path == "." { "the request".to_owned() } else { format!("`{path}`") };
            return ApiError::new(
                ErrorCode::ValueNotAccepted,
                format!(
                    "{place} has a field this route does not take; on secret routes an unexpected field \
                     is refused, since a value would have nowhere else to go"
                ),
            );
        }
        let what = describe_serde_error(&message);
        bad_request(if path == "." { what } else { format!("`{path}`: {what}") })
    })
}

fn unknown_field(message: &str) -> Option<&str> {
    message.strip_prefix("unknown field `")?.split('`').next()
}

fn bad_request(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::BadRequest, message)
}

fn syntax_error(e: &serde_json::Error) -> ApiError {
    let message = e.to_string();
    if message.starts_with(DUPLICATE_KEY) {
        return bad_request(format!(
            "request body has a key twice in one object (line {}, column {}); each key once",
            e.line(),
            e.column()
        ));
    }
    let why = if message.starts_with("trailing characters") {
        "data after the JSON value"
    } else if message.starts_with("recursion limit exceeded") {
        "nested too deeply"
    } else {
        "not valid JSON"
    };
    bad_request(format!("request body is {why} (line {}, column {})", e.line(), e.column()))
}

const DUPLICATE_KEY: &str = "duplicate key `";

/// Builds a [`Value`] like serde_json does, refusing a key seen twice in
/// one object.
struct StrictValue;

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(StrictValue)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(A::Error::custom(format!("{DUPLICATE_KEY}{key}`")));
            }
            let value = map.next_value_seed(StrictValue)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// Keeps the part of a serde message that names what was expected and
/// drops the part that quotes the input (`invalid type: string "…"`).
pub fn describe_serde_error(message: &str) -> String {
    let message = message.split(" at line ").next().unwrap_or(message);
    if unknown_field(message).is_some() {
        // Never the unknown name itself (see `decode_tree`): what is allowed.
        return match message.split_once(", expected ") {
            Some((_, expected)) => format!("an unknown field; expected {expected}"),
            None => "an unknown field; this takes none".to_owned(),
        };
    }
    if message.starts_with("missing field `") {
        return message.split(", expected").next().unwrap_or(message).to_owned();
    }
    if let Some((_, expected)) = message.split_once(", expected ") {
        return format!("invalid value, expected {expected}");
    }
    if message.starts_with("invalid length") || message.starts_with("duplicate field") {
        return message.split(", expected").next().unwrap_or(message).to_owned();
    }
    "invalid value".to_owned()
}

/// A query-string type and what counts as a value in it (by default:
/// metadata).
pub trait Query: DeserializeOwned {
    const VALUES: ValuePolicy = ValuePolicy::Metadata;
}

/// Decodes a query string. A parameter named like a value is refused
/// (query strings reach proxies' and servers' logs), so is a parameter
/// given twice, and on closed routes any parameter the route does not
/// take, as `VALUE_NOT_ACCEPTED`. Errors never quote a parameter's value.
pub fn decode_query<T: Query>(query: &str) -> Result<T, ApiError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|_| bad_request("the query string is not valid URL encoding"))?;
    let mut seen: Vec<&str> = Vec::new();
    for (name, _) in &pairs {
        if is_value_key(name) && T::VALUES != ValuePolicy::NotScanned {
            return Err(value_refusal(&format!("?{name}")));
        }
        if seen.contains(&name.as_str()) {
            return Err(bad_request("a query parameter is given twice; give each once"));
        }
        seen.push(name);
    }
    serde_urlencoded::from_str(query).map_err(|e: serde_urlencoded::de::Error| {
        let message = e.to_string();
        if T::VALUES == ValuePolicy::Closed && unknown_field(&message).is_some() {
            return ApiError::new(
                ErrorCode::ValueNotAccepted,
                "the query string has a parameter this route does not take; on secret routes an unexpected \
                 parameter is refused",
            );
        }
        bad_request(format!("invalid query string: {}", describe_serde_error(&message)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Closed {
        name: String,
        #[serde(default)]
        tags: std::collections::BTreeMap<String, String>,
    }
    impl Body for Closed {
        const VALUES: ValuePolicy = ValuePolicy::Closed;
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Infra {
        name: String,
        input: Value,
    }
    impl Body for Infra {
        const VALUES: ValuePolicy = ValuePolicy::SchemaGoverned(&["input"]);
    }

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
            assert_eq!(find_value_key(&nested, ""), Some(format!("/a/0/b/{key}")), "{key}");
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
        assert_eq!(find_value_key(&json!(["value"]), ""), None, "a value-like *string* is not a key");
    }

    #[test]
    fn strict_parse_refuses_what_lenient_parsers_disagree_on() {
        let marker = "hunter2";
        for bad in [
            format!(r#"{{"name":"x","tags":{{"t":"{marker}"}}}}}}"#),
            format!(r#"{{"name":"x"}} {{"value":"{marker}"}}"#),
            format!(r#"{{"name":"x","name":"{marker}"}}"#),
            format!(r#"{{"a":{{"k":1,"k":"{marker}"}}}}"#),
            format!("\u{feff}{{\"name\":\"{marker}\"}}"),
            format!(r#"{{"name":"{marker}"#),
            String::new(),
            "  ".into(),
            "[".repeat(200),
        ] {
            let err = parse_strict(bad.as_bytes()).unwrap_err();
            assert_eq!(err.code, ErrorCode::BadRequest, "{bad:.40}");
            assert!(!err.message.contains(marker), "{bad:.40} -> {}", err.message);
        }
        assert!(parse_strict(b" {\"name\":\"x\"} \n").is_ok(), "white space around the value is fine");
        let err = parse_strict(br#"{"a":1,"a":2}"#).unwrap_err();
        assert!(err.message.contains("a key twice") && !err.message.contains("`a`"), "{}", err.message);
        assert!(parse_strict(b"{\"a\":1}}").unwrap_err().message.contains("data after"));
        assert!(parse_strict(b"\xEF\xBB\xBF{}").unwrap_err().message.contains("byte order mark"));
    }

    #[test]
    fn closed_bodies_refuse_any_unknown_field_as_a_value() {
        let err = decode::<Closed>(br#"{"name":"db","note":"hunter2"}"#).unwrap_err();
        assert_eq!(err.code, ErrorCode::ValueNotAccepted);
        assert!(err.message.starts_with("the request has a field"), "{}", err.message);
        assert!(!err.message.contains("hunter2") && !err.message.contains("note"), "{}", err.message);
        // A value pasted where a key goes is not repeated either.
        let err = decode::<Closed>(br#"{"name":"db","hunter2":"x"}"#).unwrap_err();
        assert!(!err.message.contains("hunter2"), "{}", err.message);
        let err = decode::<Closed>(br#"{"name":"db","tags":{"value":"hunter2"}}"#).unwrap_err();
        assert_eq!(err.code, ErrorCode::ValueNotAccepted);
        assert!(err.message.contains("`/tags/value`"), "{}", err.message);
        assert_eq!(decode::<Closed>(br#"{"name":"db","tags":{"team":"a"}}"#).unwrap().name, "db");
        let err = decode::<Closed>(br#"{"name":3}"#).unwrap_err();
        assert_eq!(err.code, ErrorCode::BadRequest);
    }

    #[test]
    fn schema_governed_members_may_say_value() {
        let ok = br#"{"name":"r","input":{"value":"10.0.0.1","tags":[{"key":"k","value":"v"}],"data":{},"values":{}}}"#;
        assert_eq!(decode::<Infra>(ok).unwrap().name, "r");
        let err = decode::<Infra>(br#"{"name":"r","input":{},"secret_value":"x"}"#).unwrap_err();
        assert_eq!(err.code, ErrorCode::ValueNotAccepted);
        // Outside the governed member it is still metadata: an unknown field.
        let err = decode::<Infra>(br#"{"name":"r","input":{},"colour":"x"}"#).unwrap_err();
        assert_eq!(err.code, ErrorCode::BadRequest);
        assert!(err.message.starts_with("an unknown field; expected `name` or `input`"), "{}", err.message);
        assert!(!err.message.contains("colour"), "{}", err.message);
    }

    #[test]
    fn a_carrier_carries_one_value() {
        assert!(refuse_values(ValuePolicy::Carries("value"), &json!({"grant":"g","value":"v"})).is_ok());
        let err = refuse_values(ValuePolicy::Carries("value"), &json!({"value":"v","data":"w"})).unwrap_err();
        assert!(err.message.contains("`/data`"), "{}", err.message);
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct EnvQuery {
        environment: Option<String>,
        limit: Option<u32>,
    }
    impl Query for EnvQuery {
        const VALUES: ValuePolicy = ValuePolicy::Closed;
    }

    #[test]
    fn query_parameters() {
        assert_eq!(decode_query::<EnvQuery>("environment=dev&limit=3").unwrap().limit, Some(3));
        let err = decode_query::<EnvQuery>("environment=dev&note=hunter2").unwrap_err();
        assert_eq!(err.code, ErrorCode::ValueNotAccepted);
        assert!(!err.message.contains("hunter2"), "{}", err.message);
        let err = decode_query::<EnvQuery>("value=hunter2").unwrap_err();
        assert_eq!(err.code, ErrorCode::ValueNotAccepted);
        let err = decode_query::<EnvQuery>("limit=1&limit=2").unwrap_err();
        assert_eq!(err.code, ErrorCode::BadRequest);
        let err = decode_query::<EnvQuery>("hunter2=1&hunter2=2").unwrap_err();
        assert!(!err.message.contains("hunter2"), "{}", err.message);
        let err = decode_query::<EnvQuery>("hunter2=1").unwrap_err();
        assert_eq!(err.code, ErrorCode::ValueNotAccepted);
        assert!(!err.message.contains("hunter2"), "{}", err.message);
        let err = decode_query::<EnvQuery>("limit=hunter2").unwrap_err();
        assert_eq!(err.code, ErrorCode::BadRequest);
        assert!(!err.message.contains("hunter2"), "{}", err.message);
    }
}
