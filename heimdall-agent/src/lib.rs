//! The Agent, as a library. Its parts:
//! - [`local_api`]: where people and programs write and read values;
//! - [`jobs`]: claiming jobs and running pinned Terraform;
//! - [`values`]: the sealed value store, keys, access records, grants;
//! - [`setup`]: enrollment, configuration, `heimdall dev`'s Agent, tokens;
//! - beside them: the channel to the API ([`channel`], [`sync`]), the
//!   decisions made with what sync brought ([`access`]), database rotations
//!   ([`db_rotation`]), the configuration ([`config`]) and start-up
//!   ([`runtime`]). The binary (`main.rs`) parses flags and wires these.
#![forbid(unsafe_code)]

pub mod access;
pub mod alerts;
pub mod aws;
pub mod channel;
pub mod config;
pub mod db_rotation;
pub mod files;
pub mod jobs;
pub mod known_secrets;
pub mod local_api;
pub mod metrics;
pub mod policy_file;
pub mod program_tokens;
pub mod runtime;
pub mod sealed_file;
pub mod setup;
pub mod sync;
pub mod values;
