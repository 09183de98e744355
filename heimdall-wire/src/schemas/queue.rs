//! The OpenAPI schemas of `heimdall_core::queue`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// Which end of the job list comes first (`GET /v1/jobs?order=`): by
/// when each job was queued, then by id.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobOrder {
    Oldest,
    Newest,
}
