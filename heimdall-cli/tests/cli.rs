//! The `heimdall` binary, run as a user would, against a real API server
//! (SQLite, started in-process by `heimdall_api::testing::TestApi`). One
//! test binary for the whole CLI.
//!
//! Snapshots (`tests/snapshots/`) hold whole transcripts, with ids,
//! timestamps, tokens, ports and temp paths redacted. Update them with
//! `INSTA_UPDATE=always cargo test -p heimdall-cli --test cli` (or
//! `cargo insta review`) and read the diff.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

#[path = "cli/agents.rs"]
mod agents;
#[path = "cli/auth.rs"]
mod auth;
#[path = "cli/catalog.rs"]
mod catalog;
#[path = "cli/config_file.rs"]
mod config_file;
#[path = "cli/databases.rs"]
mod databases;
#[path = "cli/dev.rs"]
mod dev;
#[path = "cli/errors.rs"]
mod errors;
#[path = "cli/infra.rs"]
mod infra;
#[path = "cli/notifications.rs"]
mod notifications;
#[path = "cli/secrets.rs"]
mod secrets;
#[path = "cli/support.rs"]
mod support;
#[path = "cli/values.rs"]
mod values;

use support::regex_escape;

/// Redacts what changes from run to run. `extra` adds literal replacements
/// (temp paths). It stays here, at the root: insta names a snapshot after
/// the module that asserts it (`cli__<name>.snap`).
fn snapshot(name: &str, text: &str, extra: &[(&str, &str)]) {
    let mut settings = insta::Settings::clone_current();
    for (literal, replacement) in extra {
        settings.add_filter(&regex_escape(literal), *replacement);
    }
    // Same-width stand-ins keep the tables aligned.
    settings.add_filter(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
    );
    settings.add_filter(
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
        "YYYY-MM-DDThh:mm:ssZ",
    );
    settings.add_filter(r"hmd_[A-Za-z0-9_-]{43}", "hmd_[TOKEN]");
    settings.add_filter(r"\b[0-9a-f]{64}\b", "[SHA256]");
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT");
    settings.bind(|| insta::assert_snapshot!(name, text));
}
