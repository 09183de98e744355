//! heimdall-core's integration tests: the error table, authorization, and
//! the purity of the crate's dependency closure.

mod authz;
mod error_codes;
mod purity;
