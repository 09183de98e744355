//! The OpenAPI schemas of `heimdall_core::secrets`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;
use std::collections::BTreeMap;
use time::OffsetDateTime;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Secret {
    pub id: SecretId,
    pub org_id: OrgId,
    /// The name it is kept under; shown as people gave it (a personal
    /// secret's without its owner's part: [`display_name`]).
    // Serialized by core as the name a person sees (`secrets::display_name`).
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
    /// A personal secret: its owner's email when she created it (shown;
    /// never used to decide: an email can be re-added as a new member).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub personal_owner: Option<String>,
    /// A personal secret's owner, by member id: only she reaches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_id: Option<MemberId>,
    /// The SHA-256 (hex) of each public key bound to a personal secret:
    /// the key of the client certificate she created it with, and keys she
    /// added by proving she holds one already bound. Only these open its
    /// value at an Agent. Empty for one created before keys were bound
    /// (then her member id alone, until her next write binds her key).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_keys: Vec<Sha256Hex>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// Where a removed member's reads put it at risk (`heimdall_core::at_risk`),
    /// until a new version is written there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at_risk: Vec<AtRisk>,
    /// Where it stands ([`SecretStatus::of`]).
    #[serde(default)]
    pub status: SecretStatus,
    /// When its deletion completed.
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<OffsetDateTime>,
}

/// A secret's status: `deleting` and `deleted` come from its lifecycle,
/// `at_risk` from its marks, else `active`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SecretStatus {
    Active,
    AtRisk,
    Deleting,
    Deleted,
}

/// A secret at risk in one environment: who was removed having read which
/// of its still-current versions, and when it was marked.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AtRisk {
    /// The environment's name.
    pub environment: String,
    pub member_id: MemberId,
    pub email: String,
    pub versions: Vec<i64>,
    #[serde(with = "time::serde::rfc3339")]
    pub marked_at: OffsetDateTime,
}

/// One version of a secret in one environment: who made it and when. The
/// value is in the Agents that hold the environment.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SecretVersion {
    pub secret_id: SecretId,
    pub environment_id: CatalogId,
    pub version: i64,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub deactivated_at: Option<OffsetDateTime>,
    /// How long its writer asked the version before it to stay readable
    /// (`heimdall_core::retention`); 0: not at all; -1: written by a
    /// release that kept every version, so the one before it is kept.
    #[serde(default)]
    pub keep_previous_seconds: i64,
    /// For a version a newer current one replaced: when its overlap ends
    /// (or ended) and the Agents erase it (`heimdall_core::retention`).
    /// Computed when shown, never stored.
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub superseded_at: Option<OffsetDateTime>,
}

/// "This Agent holds this environment's values" — the owner's decision.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Assignment {
    pub environment_id: CatalogId,
    pub agent_id: AgentId,
    #[serde(with = "time::serde::rfc3339")]
    pub assigned_at: OffsetDateTime,
    pub assigned_by: String,
}

/// A client certificate the installation CA issued to a person, by the
/// SHA-256 of its DER. Agents serve reads only to these.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MemberCertificate {
    pub sha256: Sha256Hex,
    pub org_id: OrgId,
    pub member_id: MemberId,
    /// SHA-256 (hex) of the certificate's public key (SubjectPublicKeyInfo);
    /// absent for certificates issued before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spki_sha256: Option<Sha256Hex>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub not_after: OffsetDateTime,
}

/// The server certificate of an Agent's local API, by its SHA-256: what
/// people's clients require of that Agent (with its URI SAN).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AgentCertificate {
    pub sha256: Sha256Hex,
    pub org_id: OrgId,
    pub agent_id: AgentId,
    /// The DNS names and IP addresses it names.
    pub names: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub not_after: OffsetDateTime,
}

/// What kind of certificate the installation CA issued.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CertificateKind {
    /// A person's client certificate.
    Member,
    /// An Agent's local API server certificate.
    AgentServer,
}

/// One issued certificate, as `heimdall certificate list` shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct IssuedCertificateInfo {
    pub sha256: Sha256Hex,
    pub kind: CertificateKind,
    /// The member's or Agent's id.
    pub subject_id: String,
    /// The member's email or the Agent's name.
    pub subject: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub not_after: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<OffsetDateTime>,
}
