//! Typed async client for the Heimdall API.
//!
//! One [`Client`] per API URL and token. Every route of the API has one
//! method here; bodies are the [`heimdall_wire`] types, so the SDK and
//! the server cannot drift. Errors carry the API's stable code
//! ([`Error::code`]).
//!
//! ```no_run
//! use heimdall_sdk::wire::{CatalogKind, CreateCatalogEntry};
//! use heimdall_sdk::{Client, ErrorCode};
//!
//! # async fn tour() -> Result<(), heimdall_sdk::Error> {
//! let client = Client::new("http://127.0.0.1:7480", "hmd_…")?;
//! let me = client.whoami().await?;
//! println!("{} ({}) in {}", me.member.email, me.member.role, me.organization.name);
//!
//! let payments = client
//!     .create_catalog_entry(
//!         CatalogKind::Domain,
//!         &CreateCatalogEntry { name: "payments".into(), ..Default::default() },
//!     )
//!     .await?;
//! println!("created {} {}", payments.kind, payments.id);
//!
//! match client.get_catalog_entry(CatalogKind::Domain, "billing").await {
//!     Err(err) if err.code() == Some(ErrorCode::NotFound) => println!("no billing domain yet"),
//!     other => println!("{other:?}"),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Architecture Invariant: the token lives in a [`Redacted`] and reaches
//! the wire only as a sensitive `Authorization` header; no error, log or
//! `Debug` output contains it.
//!
//! [`Redacted`]: heimdall_core::Redacted
#![forbid(unsafe_code)]

mod accounts;
mod agent;
mod agents;
mod catalog;
mod client;
pub mod config;
mod databases;
mod error;
mod events;
pub mod flows;
mod jobs;
mod members;
mod notifications;
mod policies;
mod resources;
mod schemas;
mod secrets;
mod tokens;
mod values;

pub use agent::{AgentClient, Identity};
pub use client::{Client, Timeouts};
pub use error::Error;
pub use events::EventQuery;
pub use heimdall_core::{ApiError, ErrorCode, FieldError};
pub use heimdall_wire as wire;
pub use jobs::{JobOrder, JobQuery};
pub use resources::ResourceQuery;

/// `Result` with the SDK's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
