//! Values, sealed: the store ([`store`]: SQLite, PostgreSQL or DynamoDB),
//! sealed under data keys that the master key seals ([`crypto`], [`kms`]),
//! behind the [`vault`] that validates, seals, opens and caches; the group
//! commit of access records ([`recorder`]); write grants ([`grant`]); what
//! this Agent lacks, fetched from the other holders ([`replication`]).

pub mod crypto;
pub mod grant;
pub mod kms;
pub mod recorder;
pub mod replication;
pub mod store;
pub mod vault;
