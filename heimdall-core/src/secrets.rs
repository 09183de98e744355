//! Secret Manager records (DESIGN §2 "Secret Manager"). The API keeps a
//! secret's name, type, description, tags, links and versions; never its
//! value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::error::ApiError;
use crate::ids::{AgentId, CatalogId, OrgId, SecretId};
use crate::names::{validate_name, validate_text};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secret {
    pub id: SecretId,
    pub org_id: OrgId,
    pub name: String,
    /// Free classification, e.g. `password`, `api-key`, `certificate`.
    #[serde(rename = "type")]
    pub secret_type: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// Components that use this secret.
    #[serde(default)]
    pub components: Vec<CatalogId>,
    /// A personal secret: only this member (by email) reaches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub personal_owner: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// One version of a secret in one environment: who made it and when. The
/// value is in the Agents that hold the environment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretVersion {
    pub secret_id: SecretId,
    pub environment_id: CatalogId,
    pub version: i64,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub deactivated_at: Option<OffsetDateTime>,
}

/// "This Agent holds this environment's values" — the owner's decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    pub environment_id: CatalogId,
    pub agent_id: AgentId,
    #[serde(with = "time::serde::rfc3339")]
    pub assigned_at: OffsetDateTime,
    pub assigned_by: String,
}

/// A client certificate the installation CA issued to a person, by the
/// SHA-256 of its DER. Agents serve reads only to these.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberCertificate {
    pub sha256: String,
    pub org_id: OrgId,
    pub member_id: crate::ids::MemberId,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub not_after: OffsetDateTime,
}

pub const MAX_TAGS: usize = 32;

/// Tags: up to 32, keys are names, values short printable text. A tag is
/// metadata: nothing that looks like room for a value fits.
pub fn validate_tags(tags: &BTreeMap<String, String>) -> Result<(), ApiError> {
    if tags.len() > MAX_TAGS {
        return Err(ApiError::invalid_input(format!("at most {MAX_TAGS} tags")));
    }
    for (k, v) in tags {
        validate_name("tag key", k)?;
        validate_text("tag value", v, 128)?;
        if v.contains('\n') {
            return Err(ApiError::invalid_input("tag values are one line"));
        }
    }
    Ok(())
}

pub fn validate_secret_type(t: &str) -> Result<(), ApiError> {
    validate_name("type", t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_bounded_metadata() {
        let ok = BTreeMap::from([("team".to_owned(), "payments".to_owned())]);
        assert!(validate_tags(&ok).is_ok());
        let bad_key = BTreeMap::from([("Team Name".to_owned(), "x".to_owned())]);
        assert!(validate_tags(&bad_key).is_err());
        let long = BTreeMap::from([("k".to_owned(), "x".repeat(129))]);
        assert!(validate_tags(&long).is_err());
        let many: BTreeMap<String, String> = (0..33).map(|i| (format!("k{i}"), "v".into())).collect();
        assert!(validate_tags(&many).is_err());
    }
}
