//! HTTP transport: axum routes over the store and core's rules.
//!
//! - [`people`]: the people-facing API (tokens and sessions), with its
//!   OpenAPI document.
//! - [`agent_channel`]: what Agents call over mTLS, with its own document.
//! - [`state`], [`extract`], [`error`], [`openapi`], [`paging`]: what both
//!   share.
//!
//! Every handler follows the same order: authenticate ([`extract::Caller`]),
//! parse and validate input ([`extract::JsonBody`]), authorize with Cedar
//! ([`AppState::authorize`]), then one store call that writes the change
//! and its audit event in one transaction.

pub mod agent_channel;
mod error;
pub(crate) mod extract;
pub(crate) mod openapi;
mod paging;
pub(crate) mod people;
mod state;

pub use error::ErrorAnswer;
pub(crate) use paging::{short_page, sort_number, sort_time, sort_time_newest_first, visible, PageQuery};
pub use people::{openapi_document, router};
pub use state::{AppState, Decider};
