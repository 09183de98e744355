//! Heimdall's rules, pure.
//!
//! Architecture Invariant: this crate does no I/O, reads no clock, no
//! environment and no randomness. Time, ids and stored state come in as
//! arguments; adapters (`heimdall-api`, `heimdall-agent`) own sockets,
//! databases and processes. `tests/core.rs` fails the build if a runtime or
//! I/O crate (tokio, sqlx, reqwest, hyper, axum, aws-*) enters the
//! dependency closure.
#![forbid(unsafe_code)]

pub mod access;
pub mod accounts;
pub mod agents;
pub mod approval;
pub mod at_risk;
pub mod audit;
pub mod authz;
pub mod catalog;
pub mod clock;
pub mod console;
pub mod credentials;
pub mod current;
pub mod current_delta;
pub mod dbusers;
pub mod deletion;
pub mod domain;
pub mod drift;
pub mod error;
pub mod export;
#[cfg(test)]
mod fixtures;
pub mod grant;
pub mod ids;
pub mod import;
pub mod infra;
pub mod input;
pub mod lagging;
pub mod local_api_status;
pub mod members;
pub mod names;
pub mod notify;
pub mod oidc;
pub mod on_behalf;
pub mod paging;
pub mod plan;
pub mod policies;
pub mod ports;
pub mod program;
pub mod queue;
pub mod redacted;
pub mod renewal;
pub mod resources;
pub mod retention;
pub mod root_module;
pub mod runner;
pub mod schemas;
pub mod secrets;
pub mod server_names;
pub mod sha256;
pub mod signed;
pub mod snapshot;
pub mod standing;
pub mod state_lock;
pub mod sync_delta;
pub mod token;
pub mod transfer;

pub use error::{ApiError, ErrorCode, FieldError};
pub use redacted::Redacted;
pub use sha256::Sha256Hex;
