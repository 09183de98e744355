//! Numbering a new version, as a planner: refused before a number exists
//! when no Agent could hold it, or when a personal secret's writer holds
//! none of its keys; a personal secret created before keys were bound takes
//! the writer's key now. The adapter numbers the version (binding the key
//! in the same transaction) and signs one grant per holder carrying
//! `owner_keys`.

use super::{own_key, MemberCertificate, Secret};
use crate::audit::{AuditAction, EventPlan};
use crate::error::{ApiError, ErrorCode};
use crate::ids::{AgentId, MemberId, SecretId};
use crate::sha256::Sha256Hex;

/// What numbering the version binds, and what its grants carry.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionPlan {
    /// For a personal secret: the keys that open its value at an Agent.
    pub owner_keys: Option<Vec<Sha256Hex>>,
    /// A key to bind to the secret with this version (its first).
    pub bind: Option<Sha256Hex>,
    pub event: EventPlan,
}

/// What numbering a version of the secret `(id, name)` in `environment`
/// records; `agent` when an Agent asked for it (a program's write, a
/// database rotation).
pub fn version_event((id, name): (SecretId, &str), environment: &str, agent: Option<AgentId>) -> EventPlan {
    let mut detail = serde_json::json!({ "name": name, "environment": environment });
    if let Some(agent) = agent {
        detail["agent"] = serde_json::json!(agent);
    }
    EventPlan { action: AuditAction::SecretVersionCreated, target: format!("secret:{id}"), detail }
}

/// The writer: who, and the certificate she writes with (its SHA-256).
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    pub member: MemberId,
    pub certificate_sha256: Option<&'a Sha256Hex>,
}

/// `holders`: how many Agents hold `environment`; `certificates`: the
/// organization's active member certificates (needed when the writer names one).
pub fn new_version(
    secret: &Secret,
    environment: &str,
    holders: usize,
    writer: Writer<'_>,
    certificates: &[MemberCertificate],
) -> Result<VersionPlan, ApiError> {
    // A version no Agent can hold would be a number with no value behind it.
    if holders == 0 {
        return Err(ApiError::new(
            ErrorCode::NoAgent,
            format!(
                "no Agent holds environment {environment}; an owner assigns one with `heimdall environment assign-agent`"
            ),
        ));
    }
    let writer_key = match writer.certificate_sha256 {
        Some(sha) => Some(own_key(certificates, writer.member, sha)?),
        None => None,
    };
    let mut owner_keys = secret.owner_id.map(|_| secret.owner_keys.clone());
    let bind = match (&mut owner_keys, writer_key) {
        (Some(keys), Some(key)) if keys.is_empty() => {
            keys.push(key.clone());
            Some(key)
        }
        (Some(keys), Some(key)) if !keys.contains(&key) => {
            return Err(ApiError::forbidden(
                "your client certificate's key is not bound to this personal secret",
            ))
        }
        _ => None,
    };
    Ok(VersionPlan { owner_keys, bind, event: version_event((secret.id, &secret.name), environment, None) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{OrgId, SecretId};
    use crate::secrets::create::tests::d;
    use crate::secrets::{create, Creator, NewSecret};
    use time::OffsetDateTime;
    use uuid::Uuid;

    fn certificate(member: MemberId, sha: &str, key: &str) -> MemberCertificate {
        MemberCertificate {
            sha256: d(sha),
            org_id: OrgId::from_uuid(Uuid::nil()),
            member_id: member,
            spki_sha256: Some(d(key)),
            created_at: OffsetDateTime::UNIX_EPOCH,
            not_after: OffsetDateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn a_personal_secrets_version_needs_a_holder_and_a_bound_key() {
        let ana = MemberId::from_uuid(Uuid::new_v4());
        let certs = [certificate(ana, "aa", "old-key"), certificate(ana, "bb", "new-key")];
        let creator = Creator { org: OrgId::from_uuid(Uuid::nil()), member: ana, email: "ana@example.com" };
        let request = NewSecret {
            name: "mine".into(),
            personal: true,
            certificate_sha256: Some(d("aa")),
            ..NewSecret::default()
        };
        let mut secret = create(
            request,
            creator,
            &certs,
            vec![],
            SecretId::from_uuid(Uuid::new_v4()),
            OffsetDateTime::UNIX_EPOCH,
        )
        .unwrap();
        let (aa, bb) = (d("aa"), d("bb"));
        let with = |sha| Writer { member: ana, certificate_sha256: Some(sha) };

        let none = new_version(&secret, "prod", 0, with(&aa), &certs).unwrap_err();
        assert_eq!(none.code, ErrorCode::NoAgent);
        let plan = new_version(&secret, "prod", 2, with(&aa), &certs).unwrap();
        assert_eq!((plan.owner_keys, plan.bind), (Some(vec![d("old-key")]), None));
        let other = new_version(&secret, "prod", 2, with(&bb), &certs).unwrap_err();
        assert_eq!(other.code, ErrorCode::Forbidden);

        // Made before keys were bound: the writer's key is bound now.
        secret.owner_keys.clear();
        let plan = new_version(&secret, "prod", 1, with(&bb), &certs).unwrap();
        assert_eq!((plan.owner_keys, plan.bind), (Some(vec![d("new-key")]), Some(d("new-key"))));
        assert_eq!(plan.event.detail, serde_json::json!({ "name": secret.name, "environment": "prod" }));
    }
}
