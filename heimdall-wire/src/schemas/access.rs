//! The OpenAPI schemas of `heimdall_core::access`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// One read an Agent served, as it recorded it before serving. `seq` is the
/// Agent's own gap-free sequence number (from 1).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccessRecord {
    pub seq: i64,
    /// Who read (an email, or a program token's name).
    pub accessor: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
    /// The secret's name.
    pub secret: String,
    /// The environment's id (as the Agent's store keys it) or name; the
    /// API records the name.
    pub environment: String,
    pub version: i64,
    /// The reader's source address.
    pub from: String,
}

/// One line of a secret's access log: the reads of one accessor, of one
/// version, served by one Agent to one address within one second.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AccessLogEntry {
    /// The second the reads happened in.
    #[serde(with = "time::serde::rfc3339")]
    pub accessed_at: time::OffsetDateTime,
    pub accessor: String,
    pub environment: String,
    pub version: i64,
    /// The Agent's name.
    pub served_by: String,
    /// The Agent, by id (two Agents can have had one name).
    pub served_by_id: AgentId,
    pub from: String,
    pub reads: u64,
}

/// Where the next page of an access log starts: after this entry, in the
/// log's order (newest second first, then every other column descending,
/// so that one row comparison finds the place). Sent as an opaque token.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccessLogCursor {
    pub second: i64,
    pub accessor: String,
    pub environment: String,
    pub version: i64,
    pub agent: AgentId,
    pub from: String,
}
