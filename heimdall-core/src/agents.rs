//! Which Agent a name or an id means: one rule for every route that takes
//! one. An id names exactly one Agent, revoked or not; a name means the one
//! Agent not revoked that has it (two of them: the caller must use the id),
//! and, where a revoked Agent is what is asked for (`agent forget`), else
//! the one with that name revoked last.

mod plans;
pub mod service;
pub mod sync;

use crate::error::ApiError;
use crate::ids::AgentId;
use crate::infra::Agent;

pub use plans::{
    allow_name, allow_programs, disallow_name, disallow_programs, enrolled, forget, register, revoke,
    revoke_carriers, AgentChange, AllowancePlan, NamePlan, NameWithdrawal, ProgramsDisallowed,
    RegistrationPlan, REGISTRATION_TTL,
};

/// What a name may mean beyond the Agents not revoked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByName {
    /// Only an Agent not revoked.
    Active,
    /// Else the Agent with that name revoked last.
    OrLastRevoked,
}

/// The Agent among `agents` that `key` (an id or a name) means.
pub fn resolve<'a>(agents: &'a [Agent], key: &str, by_name: ByName) -> Result<&'a Agent, ApiError> {
    if let Ok(id) = key.parse::<AgentId>() {
        return agents.iter().find(|a| a.id == id).ok_or_else(|| ApiError::not_found("agent"));
    }
    let mut active = agents.iter().filter(|a| a.name == key && a.revoked_at.is_none());
    match (active.next(), active.next()) {
        (Some(agent), None) => return Ok(agent),
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid_input("several Agents have that name; use the id"))
        }
        (None, _) => {}
    }
    let revoked = agents.iter().filter(|a| a.name == key && a.revoked_at.is_some());
    match by_name {
        ByName::OrLastRevoked => revoked.max_by_key(|a| a.revoked_at),
        ByName::Active => None,
    }
    .ok_or_else(|| ApiError::not_found("agent"))
}

#[cfg(test)]
mod tests {
    use time::{Duration, OffsetDateTime};
    use uuid::Uuid;

    use super::*;
    use crate::error::ErrorCode;
    use crate::ids::OrgId;

    fn agent(name: &str, revoked_days_ago: Option<i64>) -> Agent {
        let now = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        Agent {
            id: AgentId::from_uuid(Uuid::new_v4()),
            org_id: OrgId::from_uuid(Uuid::nil()),
            name: name.into(),
            cert_sha256: crate::Sha256Hex::of(name.as_bytes()),
            created_at: now - Duration::days(30),
            created_by: "owner@example.com".into(),
            revoked_at: revoked_days_ago.map(|d| now - Duration::days(d)),
            last_seen_at: None,
            local_url: None,
        }
    }

    #[test]
    fn an_id_names_one_agent_revoked_or_not() {
        let agents = [agent("edge", Some(3)), agent("edge", None)];
        assert_eq!(resolve(&agents, &agents[0].id.to_string(), ByName::Active).unwrap().id, agents[0].id);
        let unknown = AgentId::from_uuid(Uuid::new_v4()).to_string();
        assert_eq!(resolve(&agents, &unknown, ByName::OrLastRevoked).unwrap_err().code, ErrorCode::NotFound);
    }

    #[test]
    fn a_name_means_the_agent_not_revoked_then_the_one_revoked_last() {
        let agents = [agent("edge", Some(9)), agent("edge", Some(2)), agent("core", None)];
        assert_eq!(resolve(&agents, "core", ByName::Active).unwrap().id, agents[2].id);
        assert_eq!(resolve(&agents, "edge", ByName::Active).unwrap_err().code, ErrorCode::NotFound);
        assert_eq!(resolve(&agents, "edge", ByName::OrLastRevoked).unwrap().id, agents[1].id);
        let renewed = [agents[0].clone(), agent("edge", None)];
        assert_eq!(resolve(&renewed, "edge", ByName::OrLastRevoked).unwrap().id, renewed[1].id);
    }

    #[test]
    fn two_agents_with_one_name_need_the_id() {
        let agents = [agent("edge", None), agent("edge", None)];
        let err = resolve(&agents, "edge", ByName::Active).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        assert!(err.message.contains("use the id"), "{}", err.message);
    }
}
