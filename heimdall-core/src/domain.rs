//! The organization, its members, catalog, tokens, policies and audit events: the records the API stores and serves.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::ids::{CatalogId, EventId, MemberId, OrgId, PolicyId, TokenId};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Organization {
    pub id: OrgId,
    pub name: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Owner,
    Admin,
    Member,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Owner, Role::Admin, Role::Member];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Member => "member",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "owner" => Ok(Role::Owner),
            "admin" => Ok(Role::Admin),
            "member" => Ok(Role::Member),
            _ => Err("role must be one of owner, admin, member".to_owned()),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CatalogKind {
    Domain,
    System,
    Component,
    Environment,
}

impl CatalogKind {
    pub const ALL: [CatalogKind; 4] =
        [CatalogKind::Domain, CatalogKind::System, CatalogKind::Component, CatalogKind::Environment];

    pub fn as_str(self) -> &'static str {
        match self {
            CatalogKind::Domain => "domain",
            CatalogKind::System => "system",
            CatalogKind::Component => "component",
            CatalogKind::Environment => "environment",
        }
    }

    /// The kind this kind lives in; `None` means directly in the organization.
    pub fn parent_kind(self) -> Option<CatalogKind> {
        match self {
            CatalogKind::Domain | CatalogKind::Environment => None,
            CatalogKind::System => Some(CatalogKind::Domain),
            CatalogKind::Component => Some(CatalogKind::System),
        }
    }

    /// The kind that lives in this one, if any.
    pub fn child_kind(self) -> Option<CatalogKind> {
        match self {
            CatalogKind::Domain => Some(CatalogKind::System),
            CatalogKind::System => Some(CatalogKind::Component),
            CatalogKind::Component | CatalogKind::Environment => None,
        }
    }

    /// Plural path segment used by the HTTP API (`/v1/domains`, …).
    pub fn plural(self) -> &'static str {
        match self {
            CatalogKind::Domain => "domains",
            CatalogKind::System => "systems",
            CatalogKind::Component => "components",
            CatalogKind::Environment => "environments",
        }
    }
}

impl fmt::Display for CatalogKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CatalogKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| "kind must be one of domain, system, component, environment".to_owned())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

fn first_version() -> i64 {
    1
}

/// One version of a policy, as its history keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
