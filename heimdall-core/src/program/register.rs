//! An Agent registering a program token it made, as a planner: the row
//! the API keeps (its scope, never the token nor its hash) and its event,
//! applied by one store call.

use time::OffsetDateTime;

use super::{check_registration, token_registered, ProgramAllowance, RegisteredToken, Verb};
use crate::audit::EventPlan;
use crate::domain::{CatalogEntry, CatalogKind};
use crate::error::ApiError;
use crate::ids::CatalogId;
use crate::infra::Agent;

/// What the Agent sends: its token's id and scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewToken {
    pub id: String,
    pub name: String,
    /// The environment's name or id.
    pub environment: String,
    pub secrets: Vec<String>,
    pub verbs: Vec<Verb>,
    pub expires_at: Option<OffsetDateTime>,
}

/// A token to register, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenPlan {
    pub token: RegisteredToken,
    pub event: EventPlan,
}

/// `agent` registering `request` at `now`. Its environment (among
/// `environments`) is one the Agent holds (`held`: the environments it is
/// assigned), else a token of its would reach nothing there; it expires
/// after `now`; its writes and deletions fit an owner's `allowances`
/// ([`check_registration`]).
pub fn register(
    request: NewToken,
    agent: &Agent,
    (environments, held): (&[CatalogEntry], &[CatalogId]),
    allowances: &[ProgramAllowance],
    now: OffsetDateTime,
) -> Result<TokenPlan, ApiError> {
    let environment = crate::catalog::resolve(environments, CatalogKind::Environment, &request.environment)?;
    if !held.contains(&environment.id) {
        return Err(ApiError::forbidden(format!(
            "Agent {} does not hold environment {}: a token of its could reach nothing there",
            agent.name, environment.name
        )));
    }
    let token = RegisteredToken {
        id: request.id,
        agent_id: agent.id,
        name: request.name,
        environment_id: environment.id,
        environment: environment.name.clone(),
        secrets: request.secrets,
        verbs: request.verbs,
        created_at: now,
        expires_at: request.expires_at,
        revoked_at: None,
    };
    if token.expires_at.is_some_and(|at| at <= now) {
        return Err(ApiError::invalid_input("expires_at must be in the future"));
    }
    check_registration(&agent.name, &token, allowances)?;
    let event = token_registered(&token);
    Ok(TokenPlan { token, event })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditAction;
    use crate::error::ErrorCode;
    use crate::fixtures::{agent, environment};
    use time::Duration;

    fn request(environment: &str) -> NewToken {
        NewToken {
            id: "0123456789abcdef".into(),
            name: "billing-api".into(),
            environment: environment.into(),
            secrets: vec!["billing-*".into()],
            verbs: vec![Verb::Read],
            expires_at: None,
        }
    }

    fn plan(request: NewToken, held: &[&CatalogEntry]) -> Result<TokenPlan, ApiError> {
        let environments = [environment("prod"), environment("dev")];
        let held: Vec<CatalogId> = held.iter().map(|e| e.id).collect();
        register(request, &agent(1, "edge-1"), (&environments, &held), &[], OffsetDateTime::UNIX_EPOCH)
    }

    #[test]
    fn a_token_is_registered_in_an_environment_its_agent_holds_by_id() {
        let prod = environment("prod");
        let planned = plan(request(&prod.id.to_string()), &[&prod]).unwrap();
        assert_eq!((planned.token.environment_id, planned.token.environment.as_str()), (prod.id, "prod"));
        assert_eq!(planned.token.agent_id, agent(1, "edge-1").id);
        assert_eq!(planned.event.action, AuditAction::ProgramTokenRegistered);
    }

    #[test]
    fn elsewhere_expired_or_beyond_an_allowance_it_is_refused() {
        let (prod, dev) = (environment("prod"), environment("dev"));
        let refused = plan(request("prod"), &[&dev]).unwrap_err();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        assert!(refused.message.contains("does not hold environment prod"), "{}", refused.message);
        assert_eq!(plan(request("staging"), &[&prod]).unwrap_err().code, ErrorCode::NotFound);
        let expired = NewToken {
            expires_at: Some(OffsetDateTime::UNIX_EPOCH - Duration::seconds(1)),
            ..request("prod")
        };
        assert_eq!(plan(expired, &[&prod]).unwrap_err().message, "expires_at must be in the future");
        let writes = NewToken { verbs: vec![Verb::Write], ..request("prod") };
        assert_eq!(plan(writes, &[&prod]).unwrap_err().code, ErrorCode::Forbidden);
    }
}
