//! Which Agents hold an environment, as planners: assigning one (then it
//! gets the environment's new versions) and taking one off (then it
//! deletes what it holds there on its next sync). The Agent is resolved
//! first, by id or name (`agents::resolve`); the adapter applies each plan
//! with one store call, its event in the same transaction.

use serde_json::json;
use time::OffsetDateTime;

use super::Assignment;
use crate::audit::{AuditAction, EventPlan};
use crate::domain::CatalogEntry;
use crate::error::ApiError;
use crate::ids::{AgentId, CatalogId};
use crate::infra::Agent;
use crate::ports::Holding;

/// A new assignment, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct AssignPlan {
    pub assignment: Assignment,
    pub event: EventPlan,
}

/// Assigns `agent` to `environment`, by `by` at `now`. A revoked Agent
/// holds nothing (`NOT_FOUND`, as an Agent that is not there); one
/// already assigned is the store's to refuse (`ALREADY_EXISTS`).
pub fn assign(
    environment: &CatalogEntry,
    agent: &Agent,
    by: &str,
    now: OffsetDateTime,
) -> Result<AssignPlan, ApiError> {
    if agent.revoked_at.is_some() {
        return Err(ApiError::not_found("agent (active)"));
    }
    let assignment = Assignment {
        environment_id: environment.id,
        agent_id: agent.id,
        assigned_at: now,
        assigned_by: by.into(),
    };
    Ok(AssignPlan { assignment, event: event(AuditAction::EnvironmentAgentAssigned, environment, agent) })
}

/// An assignment to remove, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct UnassignPlan {
    pub environment: CatalogId,
    pub agent: AgentId,
    pub event: EventPlan,
}

/// Takes `agent` off `environment`, unless it holds the only copy of a
/// current version there (`deletion::may_unassign`). `holdings` are what
/// the environment's Agents last reported there; `current` is each
/// secret's highest version there.
pub fn unassign(
    environment: &CatalogEntry,
    agent: &Agent,
    holdings: &[Holding],
    current: impl Fn(&str) -> Option<i64>,
) -> Result<UnassignPlan, ApiError> {
    crate::deletion::may_unassign(agent.id, &environment.name, holdings, current)?;
    Ok(UnassignPlan {
        environment: environment.id,
        agent: agent.id,
        event: event(AuditAction::EnvironmentAgentUnassigned, environment, agent),
    })
}

fn event(action: AuditAction, environment: &CatalogEntry, agent: &Agent) -> EventPlan {
    EventPlan {
        action,
        target: format!("environment:{}", environment.id),
        detail: json!({ "environment": environment.name, "agent": agent.name }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::fixtures::{agent, environment, holding};

    #[test]
    fn an_active_agent_is_assigned_by_id_with_its_event() {
        let (prod, mut edge) = (environment("prod"), agent(1, "edge-1"));
        let plan = assign(&prod, &edge, "ana@example.com", OffsetDateTime::UNIX_EPOCH).unwrap();
        assert_eq!((plan.assignment.environment_id, plan.assignment.agent_id), (prod.id, edge.id));
        assert_eq!(plan.event.action, AuditAction::EnvironmentAgentAssigned);
        assert_eq!(plan.event.target, format!("environment:{}", prod.id));
        assert_eq!(plan.event.detail, json!({ "environment": "prod", "agent": "edge-1" }));
        edge.revoked_at = Some(OffsetDateTime::UNIX_EPOCH);
        let refused = assign(&prod, &edge, "ana@example.com", OffsetDateTime::UNIX_EPOCH).unwrap_err();
        assert_eq!(refused.code, ErrorCode::NotFound);
    }

    #[test]
    fn an_agent_holding_the_only_current_copy_stays() {
        let (prod, one, two) = (environment("prod"), agent(1, "edge-1"), agent(2, "edge-2"));
        let current = |_: &str| Some(2);
        // edge-1 alone holds v2 (edge-2 has only v1): refused, naming the version.
        let held = [holding(&one, "db", 2), holding(&two, "db", 1)];
        let refused = unassign(&prod, &one, &held, current).unwrap_err();
        assert_eq!(refused.code, ErrorCode::Conflict);
        assert!(refused.message.contains("db v2"), "{}", refused.message);
        // edge-2 may go; and edge-1 once edge-2 holds v2 too.
        assert_eq!(unassign(&prod, &two, &held, current).unwrap().agent, two.id);
        let both = [holding(&one, "db", 2), holding(&two, "db", 2)];
        let plan = unassign(&prod, &one, &both, current).unwrap();
        assert_eq!((plan.environment, plan.event.action), (prod.id, AuditAction::EnvironmentAgentUnassigned));
    }
}
