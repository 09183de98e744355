//! Test fixtures the planners' tests share: an organization secret, an
//! environment, an Agent and what it holds, each named for reading.

use time::OffsetDateTime;

use crate::domain::{CatalogEntry, CatalogKind};
use crate::ids::{AgentId, CatalogId, MemberId, OrgId, SecretId};
use crate::infra::Agent;
use crate::ports::Holding;
use crate::secrets::{create, Creator, NewSecret, Secret};
use crate::sha256::Sha256Hex;

/// A stable id for a test's `label`.
fn uuid_of(label: &str) -> uuid::Uuid {
    let digest = Sha256Hex::of(label.as_bytes());
    uuid::Uuid::parse_str(&digest.as_str()[..32]).unwrap_or_default()
}

/// An organization secret called `name`, its id from the name.
pub(crate) fn secret(name: &str) -> Secret {
    let id = SecretId::from_uuid(uuid_of(&format!("secret {name}")));
    let creator = Creator {
        org: OrgId::from_uuid(uuid::Uuid::nil()),
        member: MemberId::from_uuid(uuid::Uuid::nil()),
        email: "ana@example.com",
    };
    let request = NewSecret { name: name.into(), ..NewSecret::default() };
    match create(request, creator, &[], vec![], id, OffsetDateTime::UNIX_EPOCH) {
        Ok(secret) => secret,
        Err(e) => panic!("{name}: {e:?}"),
    }
}

/// An environment called `name`, its id from the name.
pub(crate) fn environment(name: &str) -> CatalogEntry {
    CatalogEntry {
        id: CatalogId::from_uuid(uuid_of(&format!("environment {name}"))),
        org_id: OrgId::from_uuid(uuid::Uuid::nil()),
        kind: CatalogKind::Environment,
        name: name.into(),
        description: String::new(),
        parent_id: None,
        created_at: OffsetDateTime::UNIX_EPOCH,
        created_by: "ana@example.com".into(),
    }
}

/// An Agent called `name`, not revoked, its id `n`.
pub(crate) fn agent(n: u128, name: &str) -> Agent {
    Agent {
        id: AgentId::from_uuid(uuid::Uuid::from_u128(n)),
        org_id: OrgId::from_uuid(uuid::Uuid::nil()),
        name: name.into(),
        cert_sha256: Sha256Hex::of(name.as_bytes()),
        created_at: OffsetDateTime::UNIX_EPOCH,
        created_by: "ana@example.com".into(),
        revoked_at: None,
        last_seen_at: None,
        local_url: None,
    }
}

/// `agent` holds `version` of `secret` in `prod`, as it last reported.
pub(crate) fn holding(agent: &Agent, secret: &str, version: i64) -> Holding {
    Holding {
        agent_id: agent.id,
        agent: agent.name.clone(),
        secret: secret.into(),
        environment: "prod".into(),
        version,
        deactivated: false,
        reported_at: OffsetDateTime::UNIX_EPOCH,
        held_since: None,
        agent_revoked: false,
        agent_last_seen_at: None,
    }
}
