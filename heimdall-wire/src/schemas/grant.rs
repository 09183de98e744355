//! The OpenAPI schemas of `heimdall_core::grant`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;
use uuid::Uuid;

/// What a grant permits: one value at one address, on one Agent, until
/// `expires_at` (Unix seconds).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteGrantClaims {
    pub grant_id: Uuid,
    pub org: OrgId,
    pub secret_id: SecretId,
    pub secret: String,
    pub environment_id: CatalogId,
    pub environment: String,
    pub version: i64,
    pub agent: AgentId,
    /// Who asked for the version (an email or a program's accessor, for logs).
    pub issued_by: String,
    /// Who asked for the version, by id: the only writer who may store
    /// the value with this grant.
    pub issued_to: GrantWriter,
    /// For a personal secret: the keys bound to it (SHA-256 of each public
    /// key); the writer's certificate must carry one of them. `None` for an
    /// organization secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_keys: Option<Vec<Sha256Hex>>,
    pub issued_at: i64,
    pub expires_at: i64,
}

/// Who a grant is for, by id (never by a name).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum GrantWriter {
    /// A person: the member whose client certificate writes.
    Member(MemberId),
    /// A program, by its token's id on the grant's Agent: the Agent asked
    /// the API on its behalf.
    Program(String),
}
