//! The OpenAPI schemas of `heimdall_core::plan`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// A revision's plan, as the API keeps it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevisionPlan {
    /// SHA-256 (hex) of the plan file.
    pub sha256: String,
    pub summary: PlanSummary,
}
