//! The OpenAPI schemas of `heimdall_core::current`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// A secret's current version in one environment.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CurrentVersion {
    pub secret: String,
    pub environment: CatalogId,
    pub version: i64,
}
