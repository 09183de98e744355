//! heimdall-core's integration tests, one binary: the error table,
//! authorization, the use cases of accounts, Agents, certificates, the catalog,
//! channels, databases, members, policies, programs, Resources and their jobs, schemas, secrets (their records, views and versions), sign-ins, an Agent's sync and tokens on in-memory stores, and the purity of the crate's
//! dependency closure.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

#[path = "core/account_service.rs"]
mod account_service;
#[path = "core/agent_service.rs"]
mod agent_service;
#[path = "core/assignment_service.rs"]
mod assignment_service;
#[path = "core/authz.rs"]
mod authz;
#[path = "core/catalog_service.rs"]
mod catalog_service;
#[path = "core/certificate_service.rs"]
mod certificate_service;
#[path = "core/channel_service.rs"]
mod channel_service;
#[path = "core/database_service.rs"]
mod database_service;
#[path = "core/error_codes.rs"]
mod error_codes;
#[path = "core/fakes/mod.rs"]
mod fakes;
#[path = "core/lifecycle_service.rs"]
mod lifecycle_service;
#[path = "core/member_service.rs"]
mod member_service;
#[path = "core/policy_service.rs"]
mod policy_service;
#[path = "core/program_service.rs"]
mod program_service;
#[path = "core/purity.rs"]
mod purity;
#[path = "core/resource_service.rs"]
mod resource_service;
#[path = "core/schema_service.rs"]
mod schema_service;
#[path = "core/secret_service.rs"]
mod secret_service;
#[path = "core/secret_views.rs"]
mod secret_views;
#[path = "core/sign_in_service.rs"]
mod sign_in_service;
#[path = "core/sync_service.rs"]
mod sync_service;
#[path = "core/token_service.rs"]
mod token_service;
