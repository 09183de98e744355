//! Architecture Invariant: heimdall-core does no I/O. Checked here by
//! walking its normal (non-dev) dependency closure with `cargo metadata`.

use std::collections::{HashMap, HashSet};
use std::process::Command;

const FORBIDDEN_PREFIXES: &[&str] =
    &["tokio", "sqlx", "reqwest", "hyper", "axum", "aws-", "aws_", "mio", "rustls", "tower"];

#[test]
fn core_dependency_closure_has_no_runtime_or_io_crates() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let names: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let nodes: HashMap<&str, &serde_json::Value> =
        meta["resolve"]["nodes"].as_array().unwrap().iter().map(|n| (n["id"].as_str().unwrap(), n)).collect();
    let root = names.iter().find(|(_, n)| **n == "heimdall-core").map(|(id, _)| *id).unwrap();

    // Walk normal and build dependencies only: dev-dependencies are for tests.
    let mut seen = HashSet::new();
    let mut stack = vec![root];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let runtime = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null() || k["kind"] == "build");
            if runtime {
                stack.push(dep["pkg"].as_str().unwrap());
            }
        }
    }
    let offenders: Vec<&str> = seen
        .iter()
        .map(|id| names[id])
        .filter(|name| FORBIDDEN_PREFIXES.iter().any(|p| name.starts_with(p)))
        .collect();
    assert!(offenders.is_empty(), "heimdall-core must stay pure, but depends on {offenders:?}");
    assert!(seen.len() > 5, "the walk found too little to be meaningful: {}", seen.len());
}

/// Architecture Invariant: core holds rules, not transport. With every
/// feature, its closure has no OpenAPI and no query-string crate, and no
/// source file of it names `utoipa`; the HTTP bodies, the OpenAPI schemas
/// (of core's types too: `heimdall_wire::schemas`) and the strict parsers
/// live in `heimdall-wire`.
#[test]
fn core_carries_no_transport() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "-e", "normal", "--prefix", "none", "--format", "{p}", "--manifest-path"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .args(["-p", "heimdall-core", "--all-features"])
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8(out.stdout).unwrap();
    assert!(tree.lines().count() > 5, "the tree is too small to be meaningful:\n{tree}");
    let transport: Vec<&str> = tree
        .lines()
        .filter(|line| ["utoipa", "serde_urlencoded", "http "].iter().any(|t| line.starts_with(t)))
        .collect();
    assert!(transport.is_empty(), "heimdall-core must not carry transport crates: {transport:?}");

    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for gone in ["wire.rs", "body.rs", "page.rs"] {
        assert!(!src.join(gone).exists(), "{gone} belongs to heimdall-wire");
    }
    let mut naming = Vec::new();
    let mut dirs = vec![src];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if std::fs::read_to_string(&path).unwrap().contains("utoipa") {
                naming.push(path.display().to_string());
            }
        }
    }
    assert!(naming.is_empty(), "OpenAPI schemas belong to heimdall-wire, yet these name utoipa: {naming:?}");
}
