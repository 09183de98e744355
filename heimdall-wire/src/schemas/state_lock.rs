//! The OpenAPI schemas of `heimdall_core::state_lock`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;
use time::OffsetDateTime;

/// One attempt of a job: when it began, when it ended (its lease ran out,
/// or its Agent reported), and how its Agent's Terraform names itself in a
/// lock.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Attempt {
    pub attempt: i64,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub started_at: OffsetDateTime,
    /// `None` while the attempt has not ended (it cannot be, for a job
    /// claimed again; then the claim's time bounds it).
    #[serde(default, with = "time::serde::rfc3339::option", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub ended_at: Option<OffsetDateTime>,
    /// Terraform's `Who` on that Agent (`user@host`), as it announced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_holder: Option<String>,
}
