//! Creating a secret, as a planner: the request checked and given its
//! defaults, and a personal secret bound to its owner (her member id, her
//! certificate's key, a name kept under her id). The adapter loads the
//! caller's certificates and the Components, authorizes the result, and
//! writes it with its event in one store call.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::{personal_key, validate_secret_type, validate_tags, MemberCertificate, Secret};
use crate::error::ApiError;
use crate::ids::{CatalogId, MemberId, OrgId, SecretId};
use crate::names::{validate_name, validate_text};
use crate::sha256::Sha256Hex;

/// What a member asks for.
#[derive(Clone, Debug, Default)]
pub struct NewSecret {
    pub name: String,
    pub secret_type: Option<String>,
    pub description: Option<String>,
    pub tags: Option<BTreeMap<String, String>>,
    pub personal: bool,
    /// For a personal secret: the SHA-256 of the certificate whose key it is bound to.
    pub certificate_sha256: Option<Sha256Hex>,
}

/// Who asks.
#[derive(Clone, Copy, Debug)]
pub struct Creator<'a> {
    pub org: OrgId,
    pub member: MemberId,
    pub email: &'a str,
}

/// The checks that need nothing loaded; [`create`] makes them again. An
/// adapter calls this first so that a bad request is refused before it
/// loads anything for it.
pub fn check(request: &NewSecret) -> Result<(), ApiError> {
    validate_name("name", &request.name)?;
    validate_secret_type(request.secret_type.as_deref().unwrap_or(DEFAULT_TYPE))?;
    validate_text("description", request.description.as_deref().unwrap_or_default(), 1000)?;
    validate_tags(request.tags.as_ref().unwrap_or(&BTreeMap::new()))?;
    match (request.personal, request.certificate_sha256.is_some()) {
        (true, false) => Err(ApiError::invalid_input(
            "a personal secret is bound to your client certificate's key: send certificate_sha256 \
             (`heimdall login` gets you a certificate)",
        )),
        (false, true) => Err(ApiError::invalid_input("certificate_sha256 goes only with personal")),
        _ => Ok(()),
    }
}

/// The key a personal secret is bound to: that of the certificate named,
/// if it is one of the creator's current ones (`certificates`: the
/// organization's active member certificates).
pub fn own_key(
    certificates: &[MemberCertificate],
    member: MemberId,
    certificate_sha256: &Sha256Hex,
) -> Result<Sha256Hex, ApiError> {
    certificates
        .iter()
        .find(|c| c.member_id == member && &c.sha256 == certificate_sha256)
        .and_then(|c| c.spki_sha256.clone())
        .ok_or_else(|| {
            ApiError::invalid_input(
                "certificate_sha256 names none of your current client certificates; run `heimdall login` again",
            )
        })
}

/// The secret to create. `certificates` are needed only for a personal
/// secret; `components` are the Components it names, resolved.
pub fn create(
    request: NewSecret,
    creator: Creator<'_>,
    certificates: &[MemberCertificate],
    components: Vec<CatalogId>,
    id: SecretId,
    now: OffsetDateTime,
) -> Result<Secret, ApiError> {
    check(&request)?;
    let owner_keys = match &request.certificate_sha256 {
        Some(sha) => vec![own_key(certificates, creator.member, sha)?],
        None => Vec::new(),
    };
    // A personal secret's name is kept under her member id: it meets no
    // organization secret's nor another member's.
    let name = if request.personal { personal_key(creator.member, &request.name) } else { request.name };
    Ok(Secret {
        id,
        org_id: creator.org,
        name,
        secret_type: request.secret_type.unwrap_or_else(|| DEFAULT_TYPE.to_owned()),
        description: request.description.unwrap_or_default(),
        tags: request.tags.unwrap_or_default(),
        components,
        personal_owner: request.personal.then(|| creator.email.to_owned()),
        owner_id: request.personal.then_some(creator.member),
        owner_keys,
        created_at: now,
        created_by: creator.email.to_owned(),
        updated_at: now,
        at_risk: Vec::new(),
        status: Default::default(),
        deleted_at: None,
    })
}

/// What creating `secret` records.
pub fn created(secret: &Secret) -> crate::audit::EventPlan {
    crate::audit::EventPlan {
        action: crate::audit::AuditAction::SecretCreated,
        target: format!("secret:{}", secret.id),
        detail: serde_json::json!({ "name": secret.name, "personal": secret.owner_id.is_some() }),
    }
}

const DEFAULT_TYPE: &str = "generic";

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use uuid::Uuid;

    /// A digest named by a label, for reading.
    pub(crate) fn d(label: &str) -> Sha256Hex {
        Sha256Hex::of(label.as_bytes())
    }

    fn certificate(member: MemberId, sha: &str, key: Option<&str>) -> MemberCertificate {
        MemberCertificate {
            sha256: d(sha),
            org_id: OrgId::from_uuid(Uuid::nil()),
            member_id: member,
            spki_sha256: key.map(d),
            created_at: OffsetDateTime::UNIX_EPOCH,
            not_after: OffsetDateTime::UNIX_EPOCH,
        }
    }

    fn creator(member: MemberId) -> Creator<'static> {
        Creator { org: OrgId::from_uuid(Uuid::nil()), member, email: "ana@example.com" }
    }

    #[test]
    fn an_organization_secret_gets_the_defaults_and_no_owner() {
        let ana = MemberId::from_uuid(Uuid::new_v4());
        let request = NewSecret { name: "db".into(), ..NewSecret::default() };
        let secret = create(
            request,
            creator(ana),
            &[],
            vec![],
            SecretId::from_uuid(Uuid::new_v4()),
            OffsetDateTime::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!((secret.name.as_str(), secret.secret_type.as_str()), ("db", "generic"));
        assert!(secret.owner_id.is_none() && secret.owner_keys.is_empty() && secret.personal_owner.is_none());
    }

    #[test]
    fn a_personal_secret_is_bound_to_her_id_and_her_certificates_key_only() {
        let (ana, bo) = (MemberId::from_uuid(Uuid::new_v4()), MemberId::from_uuid(Uuid::new_v4()));
        let certificates = [certificate(bo, "ab", Some("bo-key")), certificate(ana, "cd", Some("ana-key"))];
        let personal = |sha: &str| NewSecret {
            name: "mine".into(),
            personal: true,
            certificate_sha256: Some(d(sha)),
            ..NewSecret::default()
        };
        let id = SecretId::from_uuid(Uuid::new_v4());
        let secret =
            create(personal("cd"), creator(ana), &certificates, vec![], id, OffsetDateTime::UNIX_EPOCH)
                .unwrap();
        assert_eq!(secret.owner_id, Some(ana));
        assert_eq!(secret.owner_keys, vec![d("ana-key")]);
        assert_eq!(secret.name, personal_key(ana, "mine"));
        // Another member's certificate binds nothing.
        let err = create(personal("ab"), creator(ana), &certificates, vec![], id, OffsetDateTime::UNIX_EPOCH)
            .unwrap_err();
        assert!(err.message.contains("names none of your current client certificates"), "{}", err.message);
        // Personal needs a certificate; a certificate needs personal.
        let err = check(&NewSecret { certificate_sha256: None, ..personal("cd") }).unwrap_err();
        assert!(err.message.contains("send certificate_sha256"), "{}", err.message);
        let err = check(&NewSecret { personal: false, ..personal("cd") }).unwrap_err();
        assert_eq!(err.message, "certificate_sha256 goes only with personal");
    }
}
