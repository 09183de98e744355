//! The OpenAPI schemas of `heimdall_core::export`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// One file of an export package.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ExportFile {
    /// Relative to the package's directory.
    pub path: String,
    pub content: String,
}

/// The package, file by file.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ExportPackage {
    pub resource_id: ResourceId,
    /// The revision whose apply the package reproduces.
    pub revision: i64,
    pub files: Vec<ExportFile>,
}
