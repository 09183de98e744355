//! The OpenAPI schemas of `heimdall_core::at_risk`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// A secret put at risk in one environment by one removed member: the
/// versions they read that are still that environment's current one.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Mark {
    pub secret: String,
    pub environment: String,
    pub member: MemberId,
    pub email: String,
    pub versions: Vec<i64>,
}
