//! The Agent's library half: what the `heimdall-agent` binary and the
//! Agent's tests share. For now, the encrypted value store; the read and
//! write paths (the Agent's local API) and sync come next and will use it
//! from the binary.
#![forbid(unsafe_code)]

pub mod crypto;
pub mod store;
