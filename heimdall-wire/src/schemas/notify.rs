//! The OpenAPI schemas of `heimdall_core::notify`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;
use time::OffsetDateTime;

/// A channel as the API keeps it (its secret is not kept).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Channel {
    pub id: String,
    pub org_id: OrgId,
    pub name: String,
    /// Scheme and host only ([`display_url`]).
    pub url: String,
    /// The whole URL, sealed under the API's key; never shown.
    #[serde(skip)]
    pub sealed_url: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
}

/// One event's delivery to one channel, and how it went.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Delivery {
    pub id: String,
    pub channel: String,
    pub event_id: String,
    pub action: String,
    /// `pending`, `delivered` or `failed` (given up).
    pub status: String,
    pub attempts: u32,
    /// The receiver's HTTP status, or why there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_result: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<OffsetDateTime>,
}
