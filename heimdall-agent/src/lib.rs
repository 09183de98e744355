//! The Agent, as a library: its configuration, the channel to the API, the
//! job workers and Terraform runs, the encrypted value store, the local API
//! where people write and read values, the decisions it makes with what
//! sync brought, and the group commit of access records. The binary
//! (`main.rs`) parses flags and wires these together.
#![forbid(unsafe_code)]

pub mod access;
pub mod alerts;
pub mod aws;
pub mod channel;
pub mod config;
pub mod configure;
pub mod crypto;
pub mod db_rotation;
pub mod dev;
pub mod enroll;
pub mod eso;
pub mod grant;
pub mod job_credentials;
pub mod kms;
pub mod local_api;
pub mod local_cert;
pub mod metrics;
pub mod openapi;
pub mod plan_files;
pub mod policy_file;
pub mod program_tokens;
pub mod program_writes;
pub mod recorder;
pub mod rekey;
pub mod runtime;
pub mod sealed_file;
pub mod store;
pub mod sync;
pub mod terraform;
pub mod terraform_guard;
pub mod token_command;
pub mod vault;
pub mod watch;
pub mod worker;
