//! The OpenAPI schemas of `heimdall_core::domain`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;
use time::OffsetDateTime;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Organization {
    pub id: OrgId,
    pub name: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Owner,
    Admin,
    Member,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Member {
    pub id: MemberId,
    pub org_id: OrgId,
    pub email: String,
    pub role: Role,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A token's metadata. The token itself exists only in the response that
/// created it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TokenInfo {
    pub id: TokenId,
    pub member_id: MemberId,
    pub name: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub revoked_at: Option<OffsetDateTime>,
    /// When it stops working by itself (a Console session's token); absent
    /// for a token that lasts until revoked.
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<OffsetDateTime>,
}

/// Domain → System → Component form one tree under the organization;
/// Environments hang off the organization.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CatalogKind {
    Domain,
    System,
    Component,
    Environment,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CatalogEntry {
    pub id: CatalogId,
    pub org_id: OrgId,
    pub kind: CatalogKind,
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The containing domain (for a system) or system (for a component).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<CatalogId>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Policy {
    pub id: PolicyId,
    pub org_id: OrgId,
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Cedar policy text (one or more `permit`/`forbid` statements).
    pub text: String,
    /// 1 when created, one more at each change (`policies::update`); every
    /// version is kept in the policy's history.
    #[serde(default = "first_version")]
    pub version: i64,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
    /// When and by whom the current version was written, if not at creation.
    #[serde(default, with = "time::serde::rfc3339::option", skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<OffsetDateTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
}

/// One version of a policy, as its history keeps it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PolicyVersion {
    pub version: i64,
    pub name: String,
    pub description: String,
    pub text: String,
    #[serde(with = "time::serde::rfc3339")]
    pub written_at: OffsetDateTime,
    pub written_by: String,
}

/// One line of the organization's audit feed: who did what to what, when.
/// Details never carry a secret, token or input value.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AuditEvent {
    pub id: EventId,
    pub org_id: OrgId,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The actor's email, or `system` for the API itself.
    pub actor: String,
    /// Dotted verb, e.g. `member.removed`.
    pub action: String,
    /// `kind:id` of what was acted on.
    pub target: String,
    /// The target's name (or email, for a member) as it is now, when it
    /// still exists: for people reading the feed; `target` is the reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_name: Option<String>,
    #[serde(default)]
    pub detail: serde_json::Value,
}
