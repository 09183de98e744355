//! Wire types: the JSON bodies of the HTTP API, shared by the server and
//! the SDK so the two cannot drift. Request bodies refuse unknown fields.
//!
//! Routes (all under `/v1`, bearer token unless noted):
//!
//! | method | path | body → response |
//! |---|---|---|
//! | GET | `/health` (no auth) | → [`Health`] |
//! | GET | `/whoami` | → [`WhoAmI`] |
//! | GET, POST | `/members` | [`AddMember`] → [`AddedMember`] |
//! | GET, PATCH, DELETE | `/members/{id-or-email}` | [`ChangeRole`] → `Member` |
//! | GET, POST | `/tokens` | [`CreateToken`] → [`CreatedToken`] (the caller's own) |
//! | DELETE | `/tokens/{id}` | → `TokenInfo` |
//! | GET, POST | `/domains`, `/systems?domain=`, `/components?system=`, `/environments` | [`CreateCatalogEntry`] → `CatalogEntry` |
//! | GET, PATCH, DELETE | `/{domains,systems,components,environments}/{id-or-name}` | [`Rename`] → `CatalogEntry` |
//! | GET, POST | `/policies` | [`CreatePolicy`] → `Policy` |
//! | GET, DELETE | `/policies/{id}` | → `Policy` |
//! | GET | `/events?limit=&before=&action=` | → `[AuditEvent]` |

use serde::{Deserialize, Serialize};

pub use crate::domain::{
    AuditEvent, CatalogEntry, CatalogKind, Member, Organization, Policy, Role, TokenInfo,
};
use crate::error::ApiError;
use crate::ids::CatalogId;

/// Every error response: `{"error": {"code", "message", "fields"?}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ApiError,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    pub status: String,
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhoAmI {
    pub member: Member,
    pub organization: Organization,
}

/// The output of `heimdall-api bootstrap --output json`. `token` is shown once.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bootstrapped {
    pub organization: Organization,
    pub owner: Member,
    pub token: String,
}

impl std::fmt::Debug for Bootstrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bootstrapped")
            .field("organization", &self.organization)
            .field("owner", &self.owner)
            .field("token", &"<redacted>")
            .finish()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddMember {
    pub email: String,
    pub role: Role,
}

/// A new member and their first API token, shown this once.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddedMember {
    pub member: Member,
    pub token: String,
}

impl std::fmt::Debug for AddedMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddedMember")
            .field("member", &self.member)
            .field("token", &"<redacted>")
            .finish()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeRole {
    pub role: Role,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    pub name: String,
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedToken {
    pub info: TokenInfo,
    pub token: String,
}

impl std::fmt::Debug for CreatedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatedToken").field("info", &self.info).field("token", &"<redacted>").finish()
    }
}

/// Create a domain, system, component or environment. `parent_id` names
/// the domain of a new system or the system of a new component, and must
/// be absent for domains and environments.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateCatalogEntry {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<CatalogId>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rename {
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreatePolicy {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Cedar policy text.
    pub text: String,
}
