//! What people change about Agents, as planners: registering one,
//! revoking or forgetting it, what its programs may write, which host
//! names its local API may carry. Each returns what the adapter applies
//! with one store call, its event (`audit::EventPlan`) in the same
//! transaction; the Agent is resolved first ([`super::resolve`]).

use serde_json::json;
use time::{Duration, OffsetDateTime};

use crate::audit::{AuditAction, EventPlan};
use crate::domain::CatalogEntry;
use crate::error::ApiError;
use crate::ids::{AgentId, CatalogId, OrgId, RegistrationId};
use crate::infra::Agent;
use crate::ports::{Holding, NewRegistration};
use crate::program::{ProgramAllowance, Verb};
use crate::secrets::AgentCertificate;
use crate::server_names::ApprovedName;
use crate::sha256::Sha256Hex;
use crate::token::TokenHash;

/// A registration token is good for one enrollment within this time.
pub const REGISTRATION_TTL: Duration = Duration::hours(1);

/// A registration to store (its token's hash only), and its event.
#[derive(Clone, Debug)]
pub struct RegistrationPlan {
    pub registration: NewRegistration,
    pub event: EventPlan,
}

/// A one-time registration for an Agent called `name`, good for
/// [`REGISTRATION_TTL`] from `now`.
pub fn register(
    id: RegistrationId,
    org: OrgId,
    name: &str,
    hash: TokenHash,
    by: &str,
    now: OffsetDateTime,
) -> Result<RegistrationPlan, ApiError> {
    crate::names::validate_name("name", name)?;
    let registration = NewRegistration {
        id,
        org_id: org,
        name: name.to_owned(),
        hash,
        created_by: by.to_owned(),
        created_at: now,
        expires_at: now + REGISTRATION_TTL,
    };
    let event = EventPlan {
        action: AuditAction::AgentRegistrationCreated,
        target: format!("registration:{id}"),
        detail: json!({ "name": name }),
    };
    Ok(RegistrationPlan { registration, event })
}

/// An Agent to revoke or forget, and the event that says so.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentChange {
    pub agent: AgentId,
    pub event: EventPlan,
}

/// Revokes `agent`: its certificate authenticates nothing from now on.
pub fn revoke(agent: &Agent) -> AgentChange {
    AgentChange {
        agent: agent.id,
        event: agent_event(AuditAction::AgentRevoked, agent, json!({ "name": agent.name })),
    }
}

/// Forgets `agent` as a holder: its store and every copy of it are gone,
/// which the caller must have confirmed. The event names the organization
/// secrets it held and counts the personal ones (`is_personal`), never
/// naming those: the feed is the organization's.
pub fn forget(
    agent: &Agent,
    confirmed: bool,
    held: &[Holding],
    is_personal: impl Fn(&str) -> bool,
) -> Result<AgentChange, ApiError> {
    if !confirmed {
        return Err(ApiError::invalid_input(
            "forgetting an Agent says its value store is destroyed: confirm it with confirm_store_destroyed",
        ));
    }
    let names = |personal: bool| {
        let mut names: Vec<&str> =
            held.iter().map(|h| h.secret.as_str()).filter(|s| is_personal(s) == personal).collect();
        names.sort_unstable();
        names.dedup();
        names
    };
    let detail = json!({ "name": agent.name, "secrets_it_held": names(false),
        "personal_secrets_it_held": names(true).len() });
    Ok(AgentChange { agent: agent.id, event: agent_event(AuditAction::AgentForgotten, agent, detail) })
}

/// An allowance to store (replacing one for the same Agent, environment
/// and glob), and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct AllowancePlan {
    pub allowance: ProgramAllowance,
    pub event: EventPlan,
}

/// Lets `agent`'s programs write or delete (`verbs`, each once) what
/// `secret` (a name or a glob) names in `environment`
/// (`program::check_allowance`).
pub fn allow_programs(
    agent: &Agent,
    environment: &CatalogEntry,
    secret: String,
    mut verbs: Vec<Verb>,
    by: &str,
    now: OffsetDateTime,
) -> Result<AllowancePlan, ApiError> {
    verbs.dedup();
    crate::program::check_allowance(&secret, &verbs)?;
    let allowance = ProgramAllowance {
        agent_id: agent.id,
        environment_id: environment.id,
        environment: environment.name.clone(),
        secret,
        verbs,
        created_at: now,
        created_by: by.to_owned(),
    };
    let detail = json!({ "agent": agent.name, "environment": environment.name,
        "secret": allowance.secret, "verbs": allowance.verbs });
    Ok(AllowancePlan { allowance, event: agent_event(AuditAction::AgentProgramsAllowed, agent, detail) })
}

/// An allowance to remove, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramsDisallowed {
    pub agent: AgentId,
    pub environment: CatalogId,
    pub secret: String,
    pub event: EventPlan,
}

/// Withdraws what `agent`'s programs were allowed for `secret` in `environment`.
pub fn disallow_programs(agent: &Agent, environment: &CatalogEntry, secret: &str) -> ProgramsDisallowed {
    let detail = json!({ "agent": agent.name, "environment": environment.name, "secret": secret });
    ProgramsDisallowed {
        agent: agent.id,
        environment: environment.id,
        secret: secret.to_owned(),
        event: agent_event(AuditAction::AgentProgramsDisallowed, agent, detail),
    }
}

/// An approved host name to store, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct NamePlan {
    pub approved: ApprovedName,
    pub event: EventPlan,
}

/// Approves `name` (`server_names::check_name`) for `agent`'s local-API
/// certificate; never one of the API's own names (`api_names`).
pub fn allow_name(
    agent: &Agent,
    name: &str,
    api_names: &[String],
    by: &str,
    now: OffsetDateTime,
) -> Result<NamePlan, ApiError> {
    use crate::server_names::{check_agent_names, check_name, Refused};
    let name = check_name(name)?;
    let one = std::slice::from_ref(&name);
    if let Err(refused @ Refused::ApiNames(_)) = check_agent_names(one, one, api_names) {
        return Err(refused.error(&agent.name));
    }
    let detail = json!({ "agent": agent.name, "name": name });
    let approved = ApprovedName { name, approved_at: now, approved_by: by.to_owned() };
    Ok(NamePlan { approved, event: agent_event(AuditAction::AgentNameAllowed, agent, detail) })
}

/// A host name withdrawn, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct NameWithdrawal {
    pub agent: AgentId,
    /// Lowercased, as approved names are kept.
    pub name: String,
    pub event: EventPlan,
}

/// Withdraws `name` from `agent`. Once it is withdrawn (no certificate
/// carrying it is signed any more), those that carry it are revoked:
/// [`revoke_carriers`].
pub fn disallow_name(agent: &Agent, name: &str) -> NameWithdrawal {
    let name = name.to_ascii_lowercase();
    let event =
        agent_event(AuditAction::AgentNameDisallowed, agent, json!({ "agent": agent.name, "name": name }));
    NameWithdrawal { agent: agent.id, name, event }
}

/// `agent`'s certificates among `certificates` that carry the withdrawn
/// `name`, each to revoke with its event (the Agent gets a new one at its
/// next sync).
pub fn revoke_carriers(
    agent: &Agent,
    withdrawn: &NameWithdrawal,
    certificates: &[AgentCertificate],
) -> Vec<(Sha256Hex, EventPlan)> {
    certificates
        .iter()
        .filter(|c| c.agent_id == agent.id && c.names.iter().any(|n| n.eq_ignore_ascii_case(&withdrawn.name)))
        .map(|c| {
            let event = EventPlan {
                action: AuditAction::CertificateRevoked,
                target: format!("certificate:{}", c.sha256),
                detail: json!({ "agent": agent.name, "reason": "a name it carried was withdrawn" }),
            };
            (c.sha256.clone(), event)
        })
        .collect()
}

/// An Agent's enrollment: recorded by the Agent itself (`agent:<id>`); the
/// store fills in the rest from the registration it uses.
pub fn enrolled() -> EventPlan {
    EventPlan { action: AuditAction::AgentEnrolled, target: String::new(), detail: serde_json::Value::Null }
}

fn agent_event(action: AuditAction, agent: &Agent, detail: serde_json::Value) -> EventPlan {
    EventPlan { action, target: format!("agent:{}", agent.id), detail }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::fixtures::{agent, environment, holding};

    fn certificate(agent: &Agent, label: &str, names: &[&str]) -> AgentCertificate {
        AgentCertificate {
            sha256: Sha256Hex::of(label.as_bytes()),
            org_id: OrgId::from_uuid(uuid::Uuid::nil()),
            agent_id: agent.id,
            names: names.iter().map(|n| (*n).to_owned()).collect(),
            created_at: OffsetDateTime::UNIX_EPOCH,
            not_after: OffsetDateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn a_registration_lasts_an_hour_and_records_only_its_name() {
        let id = RegistrationId::from_uuid(uuid::Uuid::from_u128(3));
        let (org, now) = (OrgId::from_uuid(uuid::Uuid::nil()), OffsetDateTime::UNIX_EPOCH);
        let plan = register(id, org, "edge-1", TokenHash::of("token"), "ana@example.com", now).unwrap();
        assert_eq!(plan.registration.expires_at - now, Duration::hours(1));
        assert_eq!(plan.event.detail, json!({ "name": "edge-1" }));
        assert_eq!(plan.event.target, format!("registration:{id}"));
        let refused =
            register(id, org, "Edge 1", TokenHash::of("token"), "ana@example.com", now).unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidInput);
    }

    #[test]
    fn forgetting_needs_the_confirmation_and_never_names_a_personal_secret() {
        let edge = agent(1, "edge-1");
        let personal = "~0123.notes";
        let held = [holding(&edge, "db", 1), holding(&edge, personal, 1), holding(&edge, "db", 1)];
        let is_personal = |s: &str| s == personal;
        assert_eq!(forget(&edge, false, &held, is_personal).unwrap_err().code, ErrorCode::InvalidInput);
        let plan = forget(&edge, true, &held, is_personal).unwrap();
        assert_eq!(plan.event.action, AuditAction::AgentForgotten);
        assert_eq!(plan.event.detail["secrets_it_held"], json!(["db"]));
        assert_eq!(plan.event.detail["personal_secrets_it_held"], json!(1));
        assert!(!plan.event.detail.to_string().contains("notes"));
        assert_eq!(revoke(&edge).event.action, AuditAction::AgentRevoked);
    }

    #[test]
    fn programs_are_allowed_each_verb_once_and_withdrawn_by_environment() {
        let (edge, prod) = (agent(1, "edge-1"), environment("prod"));
        let now = OffsetDateTime::UNIX_EPOCH;
        let verbs = vec![Verb::Write, Verb::Write, Verb::Delete];
        let plan = allow_programs(&edge, &prod, "billing-*".into(), verbs, "ana@example.com", now).unwrap();
        assert_eq!(plan.allowance.verbs, [Verb::Write, Verb::Delete]);
        assert_eq!((plan.allowance.agent_id, plan.allowance.environment_id), (edge.id, prod.id));
        assert_eq!(plan.event.action, AuditAction::AgentProgramsAllowed);
        assert!(allow_programs(&edge, &prod, "billing-*".into(), vec![], "ana@example.com", now).is_err());
        let gone = disallow_programs(&edge, &prod, "billing-*");
        assert_eq!((gone.agent, gone.environment, gone.secret.as_str()), (edge.id, prod.id, "billing-*"));
    }

    #[test]
    fn a_name_is_never_the_apis_and_withdrawing_it_revokes_the_certificates_that_carry_it() {
        let (edge, other) = (agent(1, "edge-1"), agent(2, "edge-2"));
        let (api, now) = (vec!["api.example.com".to_owned()], OffsetDateTime::UNIX_EPOCH);
        let plan = allow_name(&edge, "Vault.Example.com", &api, "ana@example.com", now).unwrap();
        assert_eq!(plan.approved.name, "vault.example.com");
        assert_eq!(
            allow_name(&edge, "api.example.com", &api, "ana", now).unwrap_err().code,
            ErrorCode::Forbidden
        );
        let certificates = [
            certificate(&edge, "a", &["vault.example.com", "localhost"]),
            certificate(&edge, "b", &["localhost"]),
            certificate(&other, "c", &["vault.example.com"]),
        ];
        let withdrawn = disallow_name(&edge, "VAULT.example.com");
        assert_eq!(withdrawn.name, "vault.example.com");
        let revoke = revoke_carriers(&edge, &withdrawn, &certificates);
        let revoked: Vec<&Sha256Hex> = revoke.iter().map(|(sha, _)| sha).collect();
        assert_eq!(revoked, [&certificates[0].sha256], "only this Agent's certificate that names it");
        assert_eq!(revoke[0].1.action, AuditAction::CertificateRevoked);
    }
}
