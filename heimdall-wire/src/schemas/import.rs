//! The OpenAPI schemas of `heimdall_core::import`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// What an import's plan would do, from Terraform's machine-readable
/// plan output: its `change_summary` and each `planned_change`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PlanSummary {
    pub add: u64,
    pub change: u64,
    pub remove: u64,
    pub import: u64,
    /// `address action` for each planned change other than an import alone.
    pub changes: Vec<String>,
}
