//! The OpenAPI schemas of `heimdall_core::deletion`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// Where a secret stands in its life, as a whole or in one environment.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    Active,
    /// Every holder drops it on its next sync; done once all have ([`is_done`]).
    Deleting,
    Deleted,
}
