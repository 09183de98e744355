//! The OpenAPI schemas of `heimdall_core::current_delta`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// A (secret, environment) the Agent reported a value in and where no
/// version is current.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoCurrent {
    pub secret: String,
    pub environment: CatalogId,
}
