//! The OpenAPI schemas of `heimdall_core::ports`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;
use time::OffsetDateTime;

/// One version an Agent's last inventory lists (never a value).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Holding {
    pub agent_id: AgentId,
    pub agent: String,
    pub secret: String,
    /// The environment's name.
    pub environment: String,
    pub version: i64,
    pub deactivated: bool,
    /// When the Agent last reported its inventory.
    #[serde(with = "time::serde::rfc3339")]
    pub reported_at: OffsetDateTime,
    /// When the Agent first reported holding this version.
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub held_since: Option<OffsetDateTime>,
    /// Whether the Agent is revoked, and when it last synced (for `deletion::may_delete`).
    #[serde(default)]
    pub agent_revoked: bool,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub agent_last_seen_at: Option<OffsetDateTime>,
}

/// A secret being deleted (or deleted) in one environment.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EnvironmentDeletion {
    pub secret: String,
    pub environment_id: CatalogId,
    /// The environment's name.
    pub environment: String,
    /// `deleting` or `deleted`.
    pub status: Lifecycle,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<OffsetDateTime>,
    /// The highest version numbered there when it started: what it deletes
    /// (a version numbered after it is done is another write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_version: Option<i64>,
}
