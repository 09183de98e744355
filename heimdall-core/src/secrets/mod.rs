//! Secret Manager records. The API keeps a
//! secret's name, type, description, tags, links and versions; never its
//! value.

mod assignment;
pub mod certificates;
mod create;
mod lifecycle;
mod new_version;
pub mod service;
mod update;
pub mod versions;
pub mod views;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::deletion::Lifecycle;
use crate::error::ApiError;
use crate::ids::{AgentId, CatalogId, MemberId, OrgId, SecretId};
use crate::names::{validate_name, validate_text};
use crate::sha256::Sha256Hex;

pub use assignment::{assign, unassign, AssignPlan, UnassignPlan};
pub use create::{check as check_new, create, created, own_key, Creator, NewSecret};
pub use lifecycle::{begin_deletion, deactivate, Deactivation, DeletionPlan, DeletionScope};
pub use new_version::{new_version, version_event, VersionPlan, Writer};
pub use update::{update, SecretChange, SecretUpdate};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secret {
    pub id: SecretId,
    pub org_id: OrgId,
    /// The name it is kept under; shown as people gave it (a personal
    /// secret's without its owner's part: [`display_name`]).
    #[serde(serialize_with = "shown_name")]
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

fn shown_name<S: serde::Serializer>(name: &str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(display_name(name))
}

/// What starts the name a personal secret is kept under: `~<owner>.<name>`
/// (the owner's member id, 32 hex digits). No name a person gives has a
/// `~` or a `.`, so a personal secret's name never meets an organization
/// secret's, nor another member's personal one: nobody learns a personal
/// name by trying to create a secret.
pub const PERSONAL_PREFIX: char = '~';

/// The name `owner`'s personal secret `name` is kept under.
pub fn personal_key(owner: MemberId, name: &str) -> String {
    format!("{PERSONAL_PREFIX}{}.{name}", owner.as_uuid().simple())
}

/// The name people see: a personal secret's without its owner's part.
pub fn display_name(kept: &str) -> &str {
    match kept.strip_prefix(PERSONAL_PREFIX).and_then(|rest| rest.split_once('.')) {
        Some((owner, name)) if owner.len() == 32 => name,
        _ => kept,
    }
}

/// The names `name`, asked by `reader`, may be kept under, in the order
/// they are tried: her own personal secret first, then the organization's
/// (or a personal secret from before personal names were scoped).
pub fn lookup_order(name: &str, reader: MemberId) -> [String; 2] {
    [personal_key(reader, name), name.to_owned()]
}

/// An audit event's detail about a personal secret, as anyone may see it
/// (the feed goes to admins and to webhooks): every string that is the
/// secret's name, kept or shown, becomes `personal secret`.
pub fn redact_personal(detail: &mut serde_json::Value, kept_name: &str) {
    let shown = display_name(kept_name);
    match detail {
        serde_json::Value::String(text) if text == kept_name || text == shown => {
            *text = "personal secret".to_owned();
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| redact_personal(v, kept_name)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| redact_personal(v, kept_name)),
        _ => {}
    }
}

/// Whether a read of `version` in `environment` is in a secret's trail,
/// where the trail is kept by name and another secret of the same name
/// existed (a deleted one, or the one that took its name again): their
/// versions never overlap (numbering goes on past a deleted namesake), so
/// a read of one of the namesakes' versions is theirs; any other read
/// stays, so that no read is ever hidden.
pub fn in_trail(environment: &str, version: i64, namesakes: &[(String, i64)]) -> bool {
    !namesakes.iter().any(|(env, v)| env == environment && *v == version)
}

/// A secret's status: `deleting` and `deleted` come from its lifecycle,
/// `at_risk` from its marks, else `active`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretStatus {
    #[default]
    Active,
    AtRisk,
    Deleting,
    Deleted,
}

impl SecretStatus {
    /// From the secret's lifecycle and whether any mark is held.
    pub fn of(lifecycle: Lifecycle, at_risk: bool) -> Self {
        match lifecycle {
            Lifecycle::Deleting => SecretStatus::Deleting,
            Lifecycle::Deleted => SecretStatus::Deleted,
            Lifecycle::Active if at_risk => SecretStatus::AtRisk,
            Lifecycle::Active => SecretStatus::Active,
        }
    }

    /// Where the secret stands in its life (a mark is no stage of it).
    pub fn lifecycle(self) -> Lifecycle {
        match self {
            SecretStatus::Active | SecretStatus::AtRisk => Lifecycle::Active,
            SecretStatus::Deleting => Lifecycle::Deleting,
            SecretStatus::Deleted => Lifecycle::Deleted,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SecretStatus::Active => "active",
            SecretStatus::AtRisk => "at_risk",
            SecretStatus::Deleting => "deleting",
            SecretStatus::Deleted => "deleted",
        }
    }
}

/// A secret at risk in one environment: who was removed having read which
/// of its still-current versions, and when it was marked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// What numbering a version stores besides its number.
#[derive(Clone, Copy, Debug)]
pub struct VersionAsked<'a> {
    /// Who asked: an email, or the rotating Agent.
    pub created_by: &'a str,
    /// A key to bind to the personal secret with this version.
    pub bind: Option<&'a crate::Sha256Hex>,
    /// How long the version before it stays readable.
    pub keep_previous: time::Duration,
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
    pub sha256: Sha256Hex,
    pub org_id: OrgId,
    pub member_id: crate::ids::MemberId,
    /// SHA-256 (hex) of the certificate's public key (SubjectPublicKeyInfo);
    /// absent for certificates issued before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spki_sha256: Option<Sha256Hex>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub not_after: OffsetDateTime,
}

/// How far a person asks to reach a secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach<'a> {
    /// Its metadata, versions and access trail, with an API token.
    Metadata,
    /// Its value at an Agent, with a client certificate whose public key
    /// has this SHA-256 (hex).
    Value { key_sha256: &'a Sha256Hex },
}

/// Whether `member` reaches a secret at all, before any policy: an
/// organization secret, yes (policies decide the rest); a personal one,
/// only its owner by member id, and its value only with a key bound to it
/// (`owner_keys`; none bound yet: her member id alone). No role, not even
/// the organization's owner, reaches another's personal secret, and a
/// certificate minted with only her token opens nothing bound to her key.
/// A personal secret still answers to the organization's `forbid`s.
pub fn reaches(
    owner: Option<MemberId>,
    owner_keys: &[Sha256Hex],
    member: MemberId,
    reach: Reach<'_>,
) -> bool {
    let Some(owner) = owner else { return true };
    if owner != member {
        return false;
    }
    match reach {
        Reach::Metadata => true,
        Reach::Value { key_sha256 } => owner_keys.is_empty() || owner_keys.contains(key_sha256),
    }
}

/// The server certificate of an Agent's local API, by its SHA-256: what
/// people's clients require of that Agent (with its URI SAN).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// What revoking `cert` records: its digest, kind and subject.
pub fn certificate_revoked(cert: &IssuedCertificateInfo) -> crate::audit::EventPlan {
    crate::audit::EventPlan {
        action: crate::audit::AuditAction::CertificateRevoked,
        target: format!("certificate:{}", cert.sha256),
        detail: serde_json::json!({ "sha256": cert.sha256, "kind": cert.kind, "subject": cert.subject }),
    }
}

/// What issuing a client certificate to `member` records.
pub fn member_certificate_issued(
    member: MemberId,
    sha256: &Sha256Hex,
    not_after: OffsetDateTime,
) -> crate::audit::EventPlan {
    crate::audit::EventPlan {
        action: crate::audit::AuditAction::MemberCertificateIssued,
        target: format!("member:{member}"),
        detail: serde_json::json!({ "sha256": sha256, "not_after": not_after.unix_timestamp() }),
    }
}

/// What kind of certificate the installation CA issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CertificateKind {
    /// A person's client certificate.
    Member,
    /// An Agent's local API server certificate.
    AgentServer,
}

/// One issued certificate, as `heimdall certificate list` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

pub const MAX_TAGS: usize = 32;

/// Tags: up to 32, keys are names, values short printable text. A tag is
/// metadata: nothing that looks like room for a value fits.
/// Whether an Agent may read a secret for a job (a cloud account's static
/// credential, a module input): an organization secret, never a personal
/// one (its value is its owner's alone). The API checks it when the
/// account or the Resource is created, the Agent again when it reads.
pub fn usable_by_jobs(owner: Option<MemberId>) -> Result<(), ApiError> {
    match owner {
        None => Ok(()),
        Some(_) => Err(ApiError::new(
            crate::ErrorCode::Forbidden,
            "a personal secret is its owner's alone: a job (a cloud account, a module input) cannot use it; use an organization secret",
        )),
    }
}

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

/// Where the next page of `GET /v1/secrets` starts: after this secret, in
/// the list's order (by name, unique in an organization).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretCursor {
    pub name: String,
}

impl SecretCursor {
    pub fn after(secret: &Secret) -> Self {
        Self { name: secret.name.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namesakes_reads_leave_the_trail_and_nothing_else_does() {
        let old = [("prod".to_owned(), 1), ("prod".to_owned(), 2), ("dev".to_owned(), 1)];
        assert!(!in_trail("prod", 2, &old), "the deleted secret's v2");
        assert!(in_trail("prod", 3, &old), "numbering went on: v3 is the new one's");
        assert!(in_trail("staging", 1, &old), "no namesake read there");
        assert!(in_trail("prod", 1, &[]), "no namesake: every read stays");
    }

    #[test]
    fn personal_secrets_reach_their_owner_by_id_and_key_only() {
        let (bo, bo_again) =
            (MemberId::from_uuid(uuid::Uuid::from_u128(1)), MemberId::from_uuid(uuid::Uuid::from_u128(2)));
        let key = |c: &str| Sha256Hex::parse(&c.repeat(64)).unwrap();
        let (aa, bb, zz) = (key("a"), key("b"), key("0"));
        let keys = vec![aa.clone()];
        // An organization secret: everyone, policies decide.
        assert!(reaches(None, &[], bo_again, Reach::Value { key_sha256: &zz }));
        // Personal: her member id (a re-added email is another member) …
        assert!(reaches(Some(bo), &keys, bo, Reach::Metadata));
        assert!(!reaches(Some(bo), &keys, bo_again, Reach::Metadata));
        // … and for the value, a bound key (either case of hex is one digest).
        let upper = Sha256Hex::parse(&"A".repeat(64)).unwrap();
        assert!(reaches(Some(bo), &keys, bo, Reach::Value { key_sha256: &upper }));
        assert!(!reaches(Some(bo), &keys, bo, Reach::Value { key_sha256: &bb }));
        assert!(!reaches(Some(bo), &keys, bo_again, Reach::Value { key_sha256: &aa }));
        // Created before keys were bound: her member id alone.
        assert!(reaches(Some(bo), &[], bo, Reach::Value { key_sha256: &bb }));
        assert!(!reaches(Some(bo), &[], bo_again, Reach::Value { key_sha256: &bb }));
    }

    #[test]
    fn personal_names_are_their_owners_alone() {
        let (ana, bo) =
            (MemberId::from_uuid(uuid::Uuid::from_u128(1)), MemberId::from_uuid(uuid::Uuid::from_u128(2)));
        let kept = personal_key(ana, "notes");
        assert_ne!(kept, personal_key(bo, "notes"), "two members' notes never meet");
        assert!(
            crate::names::validate_name("name", &kept).is_err(),
            "nobody names an organization secret so"
        );
        assert_eq!(display_name(&kept), "notes");
        assert_eq!(display_name("notes"), "notes");
        assert_eq!(display_name("~short.notes"), "~short.notes");
        assert_eq!(lookup_order("notes", ana), [kept, "notes".to_owned()]);
    }

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
