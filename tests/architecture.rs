//! The Architecture Invariants of ARCHITECTURE.md that are about how the
//! crates depend on each other and where decisions are made. Each test
//! names the invariant it enforces; ARCHITECTURE.md names the test.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Each workspace crate's normal (non-dev, non-build) dependencies, by name.
fn normal_dependencies() -> HashMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--manifest-path"])
        .arg(workspace().join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_owned())
                .collect();
            (p["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// Architecture Invariant: the CLI talks to the API only through the SDK:
/// it depends on no server crate and no HTTP client of its own.
#[test]
fn the_cli_uses_only_the_sdk() {
    let deps = &normal_dependencies()["heimdall-cli"];
    assert!(deps.contains("heimdall-sdk"), "{deps:?}");
    for forbidden in ["heimdall-api", "heimdall-agent", "heimdall-tls", "reqwest", "hyper", "axum", "sqlx"] {
        assert!(!deps.contains(forbidden), "heimdall-cli depends on {forbidden}: {deps:?}");
    }
}

/// Architecture Invariant: the Agent and the API share code only through
/// heimdall-core, heimdall-wire and heimdall-tls: neither depends on
/// the other.
#[test]
fn the_agent_never_imports_the_api_nor_the_api_the_agent() {
    let all = normal_dependencies();
    assert!(!all["heimdall-agent"].contains("heimdall-api"), "{:?}", all["heimdall-agent"]);
    assert!(!all["heimdall-api"].contains("heimdall-agent"), "{:?}", all["heimdall-api"]);
    // The SDK is what clients link: no server in it either.
    for server in ["heimdall-api", "heimdall-agent", "axum", "sqlx"] {
        assert!(!all["heimdall-sdk"].contains(server), "heimdall-sdk depends on {server}");
    }
}

/// Architecture Invariant: no API handler decides a Resource's or a job's
/// status. The planners of `heimdall_core::resources` and
/// `heimdall_core::queue` do; a handler may only compare one.
#[test]
fn no_handler_decides_a_status() {
    let http = workspace().join("heimdall-api/src/http");
    let mut offenders = Vec::new();
    for file in rust_files(&http) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let names_status = line.contains("ResourceStatus::") || line.contains("JobStatus::");
            let compares = line.contains("==") || line.contains("!=");
            if names_status && !compares && !line.trim_start().starts_with("//") {
                offenders.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(offenders.is_empty(), "handlers that pick a status:\n{}", offenders.join("\n"));
    // The check sees the handlers at all.
    assert!(rust_files(&http).len() > 5);
}

/// Architecture Invariant: both servers answer errors with one type,
/// `heimdall_tls::server::ErrorAnswer`, through one function that hides
/// internal detail the same way (`error_response`): no other error type
/// of theirs becomes a response, and none builds an error body by hand.
#[test]
fn both_servers_answer_errors_through_one_function() {
    let mut uses = 0;
    for krate in ["heimdall-api/src", "heimdall-agent/src"] {
        for file in rust_files(&workspace().join(krate)) {
            let text = code_of(&file);
            uses += usize::from(text.contains("heimdall_tls::server::ErrorAnswer"));
            assert!(!text.contains("Json(ErrorBody"), "{} builds an error body by hand", file.display());
            for line in text.lines().filter(|l| l.contains("IntoResponse for")) {
                let ty = line.split("IntoResponse for").nth(1).unwrap_or("").trim();
                assert!(
                    !ty.contains("Error") && !ty.contains("Refusal"),
                    "{} answers errors its own way: {line}",
                    file.display()
                );
            }
        }
    }
    assert_eq!(uses, 2, "each server takes its error answer from heimdall_tls");
}

/// Architecture Invariant: the binaries are thin: `main.rs` parses flags
/// and reports the outcome; the work is in the libraries.
#[test]
fn the_binaries_are_thin() {
    for main in ["heimdall-agent/src/main.rs", "heimdall-cli/src/main.rs", "heimdall-api/src/main.rs"] {
        let lines = std::fs::read_to_string(workspace().join(main)).unwrap().lines().count();
        assert!(lines < 150, "{main} has {lines} lines");
    }
    // `heimdall dev` spawns, supervises and prints; the API and the Agent
    // own their files. (800: the banner now also names the Console, the
    // metrics and, on a restart, where to carry on.)
    let dev = workspace().join("heimdall-cli/src/dev");
    let lines: usize = std::fs::read_dir(&dev)
        .unwrap()
        .map(|file| std::fs::read_to_string(file.unwrap().path()).unwrap().lines().count())
        .sum();
    assert!(lines < 800, "heimdall-cli/src/dev/ has {lines} lines");
    for file in std::fs::read_dir(&dev).unwrap() {
        let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
        assert!(!text.contains("toml::") && !text.contains("replacen"), "heimdall dev edits a TOML file");
    }
}

/// Architecture Invariant: every route of the API's people listener and
/// Agent channel, and of the Agent's local API, is registered through
/// `utoipa_axum::routes!` from its
/// handler's `#[utoipa::path]`, so the OpenAPI documents list exactly the
/// routes served (`heimdall-api/tests/api/openapi.rs` and the Agent's
/// `programs::the_local_api_document_lists_what_the_agent_serves` check the
/// served side). A plain `.route(` would be a route no document names.
#[test]
fn api_routes_come_with_their_document() {
    let agent = workspace().join("heimdall-agent/src");
    let files = rust_files(&workspace().join("heimdall-api/src/http"))
        .into_iter()
        .chain(rust_files(&agent.join("local_api")));
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            assert!(
                !code.contains(".route(") && !code.replace("OpenApiRouter::", "").contains("Router::new()"),
                "{}:{}: register routes with utoipa_axum::routes!, not axum's Router: {line}",
                file.display(),
                n + 1
            );
        }
    }
}

/// The audit actions `heimdall_core::audit::AuditAction` names, read from
/// its source (`Variant => "object.what",`).
fn audit_action_names() -> BTreeSet<String> {
    let text = std::fs::read_to_string(workspace().join("heimdall-core/src/audit.rs")).unwrap();
    text.lines()
        .filter_map(|l| l.trim().split_once(" => \"").and_then(|(_, rest)| rest.strip_suffix("\",")))
        .map(str::to_owned)
        .collect()
}

/// A file's code before its test module (`#[cfg(test)]` closes our files).
fn code_of(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    match text.find("#[cfg(test)]") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// Architecture Invariant: an audit event's name comes only from core's
/// `AuditAction`: no adapter spells one as a string, so a rename or a new
/// event is one line in one place, and a notification filter cannot name
/// an event that is never written.
#[test]
fn event_names_come_only_from_cores_enum() {
    let names = audit_action_names();
    assert!(names.len() > 50 && names.contains("secret.created"), "the check reads the enum: {names:?}");
    let mut offenders = Vec::new();
    for krate in ["heimdall-api/src", "heimdall-agent/src", "heimdall-core/src"] {
        for file in rust_files(&workspace().join(krate)) {
            if file.ends_with("heimdall-core/src/audit.rs") {
                continue;
            }
            for (n, line) in code_of(&file).lines().enumerate() {
                for name in &names {
                    if line.contains(&format!("\"{name}\"")) && !line.trim_start().starts_with("//") {
                        offenders.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "event names spelt outside heimdall_core::audit:\n{}",
        offenders.join("\n")
    );
}

/// Architecture Invariant: what a request records is decided with the rest
/// of the request, by a core planner that returns it as an `EventPlan`; no
/// route file names an `AuditAction` or builds a `NewEvent` itself, so the
/// audit trail of a use case is tested with its planner.
#[test]
fn routes_record_the_events_core_planned() {
    let root = workspace().join("heimdall-api/src/http");
    let mut files = 0;
    let mut offenders = Vec::new();
    for file in rust_files(&root) {
        files += 1;
        let code = code_of(&file);
        // `AppState::planned_event` (state.rs) is the one place a route's event is stamped.
        let makes_one = code.contains("NewEvent {") && !file.ends_with("http/state.rs");
        if code.contains("AuditAction::") || makes_one {
            offenders.push(file.strip_prefix(&root).unwrap().display().to_string());
        }
    }
    assert!(files > 20, "the check reads the route files: {files}");
    assert!(offenders.is_empty(), "route files that compose their own events: {offenders:?}");
}

/// Architecture Invariant: the routes parse, call one use case of core
/// and answer. No file of `http/people` (`<module>::service`, and
/// `secrets::{views, versions, certificates}`, `resources::jobs`) or of
/// `http/agent_channel` (`queue::service`, `agents::sync`,
/// `dbusers::agent_tasks`, `program::service`) asks the policies, makes
/// an event or calls the store itself. A new route file must say which
/// use cases it calls.
#[test]
fn routes_of_core_use_cases_only_parse_call_and_answer() {
    // Each route file, and how it names the use cases it calls.
    let people = [
        ("accounts.rs", "service::"),
        ("agents.rs", "service::"),
        ("catalog.rs", "service::"),
        ("certificates.rs", "certificates::"),
        ("console_sign_in.rs", "service::"),
        ("databases.rs", "service::"),
        ("events.rs", "service::"),
        ("jobs.rs", "jobs::"),
        ("members.rs", "service::"),
        ("notifications.rs", "service::"),
        ("policies.rs", "service::"),
        ("resources.rs", "service::"),
        ("schemas.rs", "service::"),
        ("secrets.rs", "service::"),
        ("tokens.rs", "service::"),
        // The router, health, documents and whoami; the value filter.
        ("mod.rs", ""),
        ("values.rs", ""),
    ];
    let agent_channel = [
        // The router, and the job routes (`queue::service`).
        ("mod.rs", "jobs::"),
        ("sync.rs", "use_case::sync("),
        ("database_tasks.rs", "agent_tasks::"),
        ("program_writes.rs", "programs::"),
    ];
    for (folder, files) in [("people", &people[..]), ("agent_channel", &agent_channel[..])] {
        let root = workspace().join("heimdall-api/src/http").join(folder);
        let mut seen = 0;
        for entry in std::fs::read_dir(&root).expect("a routes folder") {
            let path = entry.expect("an entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
            let code = code_of(&path);
            for done_in_core in ["state.authorize(", "planned_event(", "state.store.", "decider("] {
                assert!(
                    !code.contains(done_in_core),
                    "{folder}/{name} does what its use case does: `{done_in_core}`"
                );
            }
            let (_, use_cases) = files.iter().find(|(file, _)| *file == name).unwrap_or_else(|| {
                panic!("{folder}/{name}: a route file the test does not know: list the use cases it calls")
            });
            assert!(code.contains(use_cases), "{folder}/{name} calls no use case of core");
            seen += 1;
        }
        assert_eq!(seen, files.len(), "every listed route file of {folder} exists");
    }
}

/// The part of a crate a file of its `src/` belongs to: its folder (in the
/// API, `http/people` and `http/agent_channel` apart from the rest of
/// `http`, which both share), or its own name for a file at the top.
fn part_of(relative: &str) -> String {
    let segments: Vec<&str> = relative.trim_end_matches(".rs").split('/').collect();
    match segments.as_slice() {
        ["http", sub @ ("people" | "agent_channel"), ..] => format!("http::{sub}"),
        [folder, _, ..] => (*folder).to_owned(),
        [file] => (*file).to_owned(),
        [] => String::new(),
    }
}

/// The part a `crate::` path names (its first segments).
fn part_named(path: &str) -> String {
    let segments: Vec<&str> = path.split("::").map(str::trim).filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["http", sub @ ("people" | "agent_channel"), ..] => format!("http::{sub}"),
        [module, _, ..] => (*module).to_owned(),
        [module] if module.chars().all(|c| c.is_ascii_lowercase() || c == '_') => (*module).to_owned(),
        _ => "lib".to_owned(),
    }
}

/// The parts a file names through `crate::` paths (grouped ones too) and,
/// from a folder's `mod.rs`, `super::` (declarations and re-exports
/// aside: a folder's `mod.rs` lists its children without depending on them).
fn parts_named(relative: &str, code: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("").trim();
        if line.starts_with("pub use") || line.starts_with("pub(crate) use") || line.contains("mod ") {
            continue;
        }
        for (at, _) in line.match_indices("crate::") {
            let rest = &line[at + 7..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = group.split('}').next().unwrap_or("");
                named.extend(group.split(',').map(|item| part_named(&format!("{}::x", item.trim()))));
                continue;
            }
            let path: String =
                rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            named.insert(part_named(&path));
        }
        // `super::` from a folder's `mod.rs` reaches its parent's part.
        if relative.ends_with("mod.rs") && line.contains("super::") && !line.contains("super::super::") {
            let parent = relative.rsplitn(3, '/').nth(2).unwrap_or("");
            named.insert(if parent.is_empty() {
                "lib".to_owned()
            } else {
                part_of(&format!("{parent}/x.rs"))
            });
        }
    }
    named.remove(&part_of(relative));
    named.remove("lib");
    named
}

/// A circle among `crate`'s parts, if there is one: `a -> b -> a`.
fn circle_among_parts(krate: &str) -> Option<Vec<String>> {
    let src = workspace().join(krate).join("src");
    let mut edges: HashMap<String, BTreeSet<String>> = HashMap::new();
    for file in rust_files(&src) {
        let relative = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if relative == "lib.rs" || relative == "main.rs" || relative.starts_with("bin/") {
            continue;
        }
        let named = parts_named(&relative, &code_of(&file));
        edges.entry(part_of(&relative)).or_default().extend(named);
    }
    assert!(edges.len() > 8, "the check reads {krate}'s parts: {edges:?}");
    // Depth-first, remembering the path: a part met again on it closes a circle.
    fn visit(
        part: &str,
        edges: &HashMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == part) {
            let mut circle = path[at..].to_vec();
            circle.push(part.to_owned());
            return Some(circle);
        }
        if !done.insert(part.to_owned()) {
            return None;
        }
        path.push(part.to_owned());
        for next in edges.get(part).into_iter().flatten() {
            if let Some(circle) = visit(next, edges, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    let mut parts: Vec<&String> = edges.keys().collect();
    parts.sort();
    parts.into_iter().find_map(|part| visit(part, &edges, &mut Vec::new(), &mut done))
}

/// Architecture Invariant: the API's parts (the people routes, the Agent
/// channel, the HTTP plumbing both share, the SQL store, the background
/// loops, start-up, each top-level module) and the Agent's (the local
/// API, jobs, values, set-up, each top-level module) depend on each other
/// in one direction: no chain of imports leads from a part back to itself.
/// The crate root (`lib.rs`, `main.rs`) assembles them and is left out.
#[test]
fn the_parts_of_the_servers_depend_on_each_other_in_one_direction() {
    for krate in ["heimdall-api", "heimdall-agent"] {
        if let Some(circle) = circle_among_parts(krate) {
            panic!("{krate}'s parts import each other in a circle: {}", circle.join(" -> "));
        }
    }
}

/// Architecture Invariant: ARCHITECTURE.md stays a map (under 300 lines)
/// and every test it names as holding an invariant exists: a `file::test`
/// (and each `::test` after it on the line) is a `fn` of that file, or of
/// the `on_every_backend!` scenarios it declares.
#[test]
fn architecture_md_is_a_short_map_whose_tests_exist() {
    let text = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    let lines = text.lines().count();
    assert!(lines < 300, "ARCHITECTURE.md has {lines} lines");
    let mut checked = 0;
    let mut missing = Vec::new();
    for line in text.lines() {
        let mut file: Option<String> = None;
        for span in line.split('`').skip(1).step_by(2) {
            let (path, name) = match span.split_once(".rs::") {
                Some((path, rest)) => (Some(format!("{path}.rs")), rest),
                None => match span.strip_prefix("::") {
                    Some(rest) => (None, rest),
                    None => continue,
                },
            };
            if let Some(path) = path {
                file = Some(path);
            }
            let Some(path) = &file else { continue };
            let name = name.rsplit("::").next().unwrap_or(name);
            if !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
                continue;
            }
            let source = std::fs::read_to_string(workspace().join(path))
                .or_else(|_| std::fs::read_to_string(workspace().join("heimdall-api").join(path)))
                .or_else(|_| std::fs::read_to_string(workspace().join("heimdall-agent").join(path)))
                .unwrap_or_else(|_| panic!("ARCHITECTURE.md names {path}, which does not exist"));
            checked += 1;
            if !source.contains(&format!("fn {name}(")) && !source.contains(&format!("fn {name}<")) {
                missing.push(format!("{path}::{name}"));
            }
        }
    }
    assert!(checked > 40, "the check reads the tests named: {checked}");
    assert!(missing.is_empty(), "ARCHITECTURE.md names tests that do not exist: {missing:?}");
}

/// Architecture Invariant: a SHA-256 is a `heimdall_core::Sha256Hex`,
/// parsed once and kept in lower case, so digests compare with `==`; no
/// code folds the case of a certificate's, a key's, a pin's or a plan's
/// digest on its own.
#[test]
fn digests_are_compared_as_sha256hex_never_by_folding_case() {
    let mut offenders = Vec::new();
    let mut seen = 0;
    for krate in [
        "heimdall-core/src",
        "heimdall-api/src",
        "heimdall-agent/src",
        "heimdall-sdk/src",
        "heimdall-tls/src",
        "heimdall-cli/src",
    ] {
        for file in rust_files(&workspace().join(krate)) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                if !line.contains("eq_ignore_ascii_case") {
                    continue;
                }
                seen += 1;
                let lower = line.to_ascii_lowercase();
                if ["sha", "key", "pin", "fingerprint", "digest"].iter().any(|w| lower.contains(w)) {
                    offenders.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "digests compared by folding case:\n{}", offenders.join("\n"));
    // The scan reads code that does fold case (host names do).
    assert!(seen > 0);
}

/// The error type of a `-> Result<T, E>` on `line`, if it has one.
fn error_type_of(line: &str) -> Option<String> {
    let after = &line[line.find("-> Result<")? + "-> Result<".len()..];
    let mut depth = 0;
    let mut comma = None;
    for (i, c) in after.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            ')' => depth -= 1,
            '>' if depth == 0 => return comma.map(|at: usize| after[at + 1..i].trim().to_owned()),
            '>' => depth -= 1,
            ',' if depth == 0 => comma = Some(i),
            _ => {}
        }
    }
    None
}

/// Architecture Invariant: the API's functions, the Agent's and those of
/// the TLS edge they share fail with a typed error (`ApiError` with its stable code, `KeyFileError`,
/// `SealedFileError`, `SetupError`, `RotationError`, `TlsSetupError`, ...),
/// never a bare `String`, and no error type turns itself into one: a caller
/// can tell a setting to fix from a broken key from a peer's refusal, and
/// the code an operator sees is decided once, where the error is made.
#[test]
fn the_servers_fail_with_typed_errors_never_a_string() {
    assert_eq!(
        error_type_of("fn f() -> Result<BTreeMap<String, String>, String> {").as_deref(),
        Some("String")
    );
    assert_eq!(error_type_of("fn f() -> Result<(String, u8), ApiError> {").as_deref(), Some("ApiError"));
    assert_eq!(error_type_of("fn f() -> StoreResult<String> {"), None);
    let mut offenders = Vec::new();
    let mut signatures = 0;
    for krate in ["heimdall-api/src", "heimdall-agent/src", "heimdall-tls/src"] {
        for file in rust_files(&workspace().join(krate)) {
            for (n, line) in code_of(&file).lines().enumerate() {
                let at = || format!("{}:{}: {}", file.display(), n + 1, line.trim());
                if line.trim_start().starts_with("impl From<") && line.contains("> for String") {
                    offenders.push(at());
                }
                let Some(error) = error_type_of(line) else { continue };
                signatures += 1;
                if error == "String" || error == "&'static str" {
                    offenders.push(at());
                }
            }
        }
    }
    assert!(signatures > 100, "the check reads the servers' signatures: {signatures}");
    assert!(offenders.is_empty(), "errors that are strings, or become one:\n{}", offenders.join("\n"));
}
