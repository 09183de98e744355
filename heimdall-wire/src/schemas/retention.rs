//! The OpenAPI schemas of `heimdall_core::retention`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// A version an Agent is told to erase.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Superseded {
    pub secret: String,
    pub environment: CatalogId,
    pub version: i64,
}
