//! Property tests for the one body parser and the value refusal
//! (`heimdall_wire::body`): random JSON, mangled the ways lenient parsers
//! disagree on (trailing bytes, duplicate keys, a byte order mark).

use heimdall_core::ErrorCode;
use heimdall_wire::body::{decode, is_value_key, parse_strict};
use heimdall_wire::{CreateResource, CreateSecret};
use proptest::prelude::*;
use serde_json::Value;

const MARKER: &str = "hunter2-MARKER";

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("name".to_owned()),
        Just("tags".to_owned()),
        Just("description".to_owned()),
        Just("input".to_owned()),
        Just("value".to_owned()),
        Just("Secret_Value".to_owned()),
        Just("data".to_owned()),
        Just("team".to_owned()),
        "[a-z]{1,6}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        Just(Value::String(MARKER.to_owned())),
        "[a-z0-9 ]{0,8}".prop_map(Value::String),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A body as an attacker would send it: JSON, then maybe mangled.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let object =
        prop::collection::btree_map(key(), json(), 0..5).prop_map(|m| Value::Object(m.into_iter().collect()));
    let tail = prop_oneof![
        Just(""),
        Just(""),
        Just(" \n"),
        Just("}"),
        Just("x"),
        Just("{}"),
        Just(",\"value\":\"hunter2-MARKER\"}"),
    ];
    (object, tail, any::<bool>(), any::<bool>()).prop_map(|(v, tail, bom, dup)| {
        let mut text = v.to_string();
        if dup && text.len() > 2 {
            // Repeat the first member: `{"k":…,"k":…,…}`.
            if let Some(Value::Object(map)) = Some(&v) {
                if let Some((k, val)) = map.iter().next() {
                    let member = format!("{}:{},", Value::String(k.clone()), val);
                    text.insert_str(1, &member);
                }
            }
        }
        text.push_str(tail);
        let mut bytes = Vec::new();
        if bom {
            bytes.extend_from_slice(b"\xEF\xBB\xBF");
        }
        bytes.extend_from_slice(text.as_bytes());
        bytes
    })
}

fn value_keys(v: &Value, skip_top: &[&str], top: bool) -> bool {
    match v {
        Value::Object(map) => map.iter().any(|(k, child)| {
            if top && skip_top.contains(&k.as_str()) {
                return false;
            }
            is_value_key(k) || value_keys(child, skip_top, false)
        }),
        Value::Array(items) => items.iter().any(|c| value_keys(c, skip_top, false)),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Never a panic; a refusal never quotes the input; where the strict
    /// parser accepts, it reads exactly what serde_json reads.
    #[test]
    fn strict_parse_agrees_with_serde_json_where_it_accepts(bytes in body()) {
        match parse_strict(&bytes) {
            Ok(tree) => {
                let lenient: Value = serde_json::from_slice(&bytes).expect("strict accepted what lenient refuses");
                prop_assert_eq!(tree, lenient);
            }
            Err(err) => {
                prop_assert_eq!(err.code, ErrorCode::BadRequest);
                prop_assert!(!err.message.contains(MARKER), "{}", err.message);
            }
        }
    }

    /// What the filter passes is what the handler gets, and the handler
    /// never gets a value-like key (outside a schema-governed input).
    #[test]
    fn the_handler_never_sees_a_value(bytes in body()) {
        match decode::<CreateSecret>(&bytes) {
            Ok(secret) => {
                let seen = serde_json::to_value(&secret).expect("serializes");
                prop_assert!(!value_keys(&seen, &[], true), "{seen}");
                let tree = parse_strict(&bytes).expect("decode implies a strict parse");
                prop_assert!(!value_keys(&tree, &[], true), "{tree}");
            }
            Err(err) => {
                prop_assert!(matches!(err.code, ErrorCode::BadRequest | ErrorCode::ValueNotAccepted));
                prop_assert!(!err.message.contains(MARKER), "{}", err.message);
            }
        }
        match decode::<CreateResource>(&bytes) {
            Ok(resource) => {
                let seen = serde_json::to_value(&resource).expect("serializes");
                prop_assert!(!value_keys(&seen, &["input"], true), "{seen}");
            }
            Err(err) => prop_assert!(!err.message.contains(MARKER), "{}", err.message),
        }
    }
}

#[test]
fn the_reported_bypass_is_refused() {
    let body =
        br#"{"type":"x","input_schema":{"type":"object"},"defaults":{"dev":{"secret_value":"hunter2"}}}}"#;
    let err = decode::<heimdall_wire::CreateSchema>(body).unwrap_err();
    assert_eq!(err.code, ErrorCode::BadRequest);
    assert!(!err.message.contains("hunter2"));
}
