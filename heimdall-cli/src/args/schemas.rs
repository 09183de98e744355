//! `heimdall schema`.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum SchemaCommand {
    /// Create a schema, or a new version of an existing type
    Create {
        /// The type name, e.g. s3-bucket (versions of one type share it)
        #[arg(long = "type", value_name = "TYPE")]
        type_name: String,
        /// The input's JSON Schema (draft 2020-12) file, or `-` for standard input
        #[arg(long, value_name = "FILE")]
        input_schema: PathBuf,
        /// Per-environment defaults laid under every input, a JSON file
        /// `{"<environment>": {…}}`, or `-` for standard input
        #[arg(long, value_name = "FILE")]
        defaults: Option<PathBuf>,
        /// Where the Terraform module comes from (the Agent decides whether it is allowed)
        #[arg(long, value_name = "SOURCE", requires = "module_version")]
        module_source: Option<String>,
        /// The module's version
        #[arg(long, value_name = "VERSION", requires = "module_source")]
        module_version: Option<String>,
        /// Creates and changes wait for another person's approval
        #[arg(long)]
        requires_approval: bool,
        /// Check each provisioned Resource for drift this often, e.g. 24h (s, m, h, d)
        #[arg(long, value_name = "DURATION")]
        drift_check_every: Option<String>,
    },
    /// List schemas (every version)
    List {
        /// Only this type's versions
        #[arg(long = "type", value_name = "TYPE")]
        type_name: Option<String>,
    },
    /// Show a schema and its input schema (by id, or a type for its newest version)
    Show {
        /// The schema (id, or a type for its newest version)
        schema: String,
    },
    /// Deprecate a version: no new Resource is requested on it; the Resources on it go on
    Deprecate {
        /// The schema: an id, or a type with --version
        schema: String,
        /// The version, when SCHEMA is a type
        #[arg(long, value_name = "N")]
        version: Option<i64>,
    },
    /// Take a deprecation back
    Undeprecate {
        /// The schema: an id, or a type with --version
        schema: String,
        /// The version, when SCHEMA is a type
        #[arg(long, value_name = "N")]
        version: Option<i64>,
    },
    /// Delete a version no Resource uses (its number is never used again)
    Delete {
        /// The schema: an id, or a type with --version
        schema: String,
        /// The version, when SCHEMA is a type
        #[arg(long, value_name = "N")]
        version: Option<i64>,
    },
}
