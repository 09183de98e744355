//! The OpenAPI schemas of `heimdall_core::server_names`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// A name an owner approved for one Agent.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ApprovedName {
    pub name: String,
    #[serde(with = "time::serde::rfc3339")]
    pub approved_at: time::OffsetDateTime,
    pub approved_by: String,
}
