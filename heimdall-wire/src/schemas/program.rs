//! The OpenAPI schemas of `heimdall_core::program`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;
use time::OffsetDateTime;

/// What a token may do. `write` and `delete` go through the API on the
/// program's behalf, as people's writes and deletions do.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    Read,
    Write,
    Delete,
}

/// One token's scope, as the Agent keeps it (never the token itself).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramScope {
    /// The token's id: its first part, not a secret.
    pub id: String,
    /// Who the program is, as records and policies name it.
    pub name: String,
    /// The one environment it reaches, by its name when the token was
    /// made (shown; never used to decide: a name can be given to another
    /// environment).
    pub environment: String,
    /// That environment, by id: what decides. Absent in a token made
    /// before tokens were registered with the API; such a token reaches
    /// nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<CatalogId>,
    /// Globs over secret names (`billing-*`).
    pub secrets: Vec<String>,
    pub verbs: Vec<Verb>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
    /// SHA-256 of the whole token, hex.
    pub token_sha256: String,
}

/// An owner's word that the programs of one Agent may `verbs` (write,
/// delete) the secrets `secret` (a name or glob) names in one environment.
/// Without one, a program token can only read: a write or a deletion is
/// asked of the API by the Agent, and the API lets a program do only
/// what an allowance covers, so a stolen Agent key does no more.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProgramAllowance {
    pub agent_id: AgentId,
    pub environment_id: CatalogId,
    /// The environment's name now (shown).
    pub environment: String,
    /// A secret name or glob (`billing-*`).
    pub secret: String,
    /// `write`, `delete` or both.
    pub verbs: Vec<Verb>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
}

/// A program token as the API knows it: registered by the Agent that made
/// it, never the token itself (nor its hash).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RegisteredToken {
    /// The token's id (its second part).
    pub id: String,
    pub agent_id: AgentId,
    pub name: String,
    pub environment_id: CatalogId,
    /// The environment's name now (shown).
    pub environment: String,
    pub secrets: Vec<String>,
    pub verbs: Vec<Verb>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
}
