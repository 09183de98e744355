//! The Agent's library half: what the `heimdall-agent` binary and the
//! Agent's tests share: the encrypted value store, the local API where
//! people write and read values, the decisions it makes with what sync
//! brought, and the group commit of access records.
#![forbid(unsafe_code)]

pub mod access;
pub mod aws;
pub mod crypto;
pub mod grant;
pub mod kms;
pub mod local_api;
pub mod recorder;
pub mod store;
