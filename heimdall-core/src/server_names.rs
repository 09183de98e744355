//! Which host names an Agent's local-API certificate may carry. Heimdall's
//! own clients trust an Agent by the URI SAN `urn:heimdall:agent:<id>`
//! (and the certificates the API lists), never by a host name; but a
//! browser, `curl` or the External Secrets Operator checks the host name
//! only, and they trust the installation CA. So the CA signs for an Agent
//! only this machine's names (`localhost`, loopback addresses: reachable
//! from the same machine alone) and the names an owner approved for that
//! Agent (`heimdall agent allow-name`), never one of the API's own.

pub mod service;

use crate::error::{ApiError, ErrorCode};

/// A name an owner approved for one Agent.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApprovedName {
    pub name: String,
    #[serde(with = "time::serde::rfc3339")]
    pub approved_at: time::OffsetDateTime,
    pub approved_by: String,
}

/// Most names one local-API certificate carries.
pub const MAX_NAMES: usize = 16;

/// `localhost`, or a literal loopback address (`127.0.0.0/8`, `::1`): names
/// only the same machine reaches. A name that merely resolves to one is not.
pub fn is_loopback(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A DNS name (letters, digits, `-`, labels of 1-63, at most 253) or an IP
/// address; lowercase, as certificates compare them.
pub fn check_name(name: &str) -> Result<String, ApiError> {
    let lower = name.to_ascii_lowercase();
    let dns = lower.len() <= 253
        && lower.split('.').all(|l| {
            !l.is_empty() && l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    if dns || lower.parse::<std::net::IpAddr>().is_ok() {
        Ok(lower)
    } else {
        Err(ApiError::invalid_input(format!("{name:?} is neither a DNS name nor an IP address")))
    }
}

/// Why the CA does not sign a set of names for an Agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Names of the API's own certificates.
    ApiNames(Vec<String>),
    /// Names no owner approved for this Agent.
    NotApproved(Vec<String>),
}

impl Refused {
    pub fn names(&self) -> &[String] {
        match self {
            Refused::ApiNames(n) | Refused::NotApproved(n) => n,
        }
    }

    /// As the Agent is told (`FORBIDDEN`), naming what resolves it.
    pub fn error(&self, agent: &str) -> ApiError {
        let message = match self {
            Refused::ApiNames(names) => {
                format!("names {names:?} are the API's own; an Agent's local API certificate cannot name them")
            }
            Refused::NotApproved(names) => format!(
                "names {names:?} are not approved for Agent {agent}: an owner runs `heimdall agent allow-name {agent} \
                 NAME` for each (localhost and loopback addresses need no approval)"
            ),
        };
        ApiError::new(ErrorCode::Forbidden, message)
    }
}

/// Whether the CA may sign `requested` (already [`check_name`]d) for an
/// Agent whose approved names are `approved`, with the API's own names
/// `api_names`: loopback names, and approved names that are not the API's.
pub fn check_agent_names(
    requested: &[String],
    approved: &[String],
    api_names: &[String],
) -> Result<(), Refused> {
    let api: Vec<String> = requested
        .iter()
        .filter(|n| !is_loopback(n) && api_names.iter().any(|a| a.eq_ignore_ascii_case(n)))
        .cloned()
        .collect();
    if !api.is_empty() {
        return Err(Refused::ApiNames(api));
    }
    let unapproved: Vec<String> = requested
        .iter()
        .filter(|n| !is_loopback(n) && !approved.iter().any(|a| a.eq_ignore_ascii_case(n)))
        .cloned()
        .collect();
    if !unapproved.is_empty() {
        return Err(Refused::NotApproved(unapproved));
    }
    Ok(())
}

/// What refusing to sign `refused` names for `agent`'s local API records.
pub fn certificate_refused(agent: &crate::infra::Agent, refused: &Refused) -> crate::audit::EventPlan {
    let reason = match refused {
        Refused::ApiNames(_) => "names of the API",
        Refused::NotApproved(_) => "names no owner approved",
    };
    crate::audit::EventPlan {
        action: crate::audit::AuditAction::AgentCertificateRefused,
        target: format!("agent:{}", agent.id),
        detail: serde_json::json!({ "agent": agent.name, "names": refused.names(), "reason": reason }),
    }
}

/// The names an Agent asks for, each checked ([`check_name`]): 1 to
/// [`MAX_NAMES`] of them. Whether it may have them is
/// [`check_agent_names`].
pub fn requested(names: &[String]) -> Result<Vec<String>, ApiError> {
    if names.is_empty() || names.len() > MAX_NAMES {
        return Err(ApiError::invalid_input(format!("names: 1 to {MAX_NAMES} DNS names or IP addresses")));
    }
    names.iter().map(|n| check_name(n)).collect()
}

/// A signed local-API certificate to record, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct CertificatePlan {
    pub record: crate::secrets::AgentCertificate,
    pub event: crate::audit::EventPlan,
}

/// The CA signed a local-API certificate for `agent` carrying `names`
/// (checked), its fingerprint `sha256`, good until `not_after`.
pub fn issued(
    agent: &crate::infra::Agent,
    names: Vec<String>,
    sha256: crate::sha256::Sha256Hex,
    (now, not_after): (time::OffsetDateTime, time::OffsetDateTime),
) -> CertificatePlan {
    let event = crate::audit::EventPlan {
        action: crate::audit::AuditAction::AgentCertificateIssued,
        target: format!("agent:{}", agent.id),
        detail: serde_json::json!({ "agent": agent.name, "names": names, "sha256": sha256 }),
    };
    let record = crate::secrets::AgentCertificate {
        sha256,
        org_id: agent.org_id,
        agent_id: agent.id,
        names,
        created_at: now,
        not_after,
    };
    CertificatePlan { record, event }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn an_agent_gets_loopback_names_and_the_names_an_owner_approved_only() {
        let api = names(&["heimdall.acme.internal", "localhost"]);
        let approved = names(&["edge-1.acme.internal"]);
        assert_eq!(check_agent_names(&names(&["localhost", "127.0.0.1", "::1"]), &[], &api), Ok(()));
        assert_eq!(
            check_agent_names(&names(&["edge-1.acme.internal", "localhost"]), &approved, &api),
            Ok(())
        );
        assert_eq!(
            check_agent_names(&names(&["www.example.com", "edge-1.acme.internal"]), &approved, &api),
            Err(Refused::NotApproved(names(&["www.example.com"])))
        );
        // Not even approved: the API's own names.
        let approved_api = names(&["heimdall.acme.internal"]);
        assert_eq!(
            check_agent_names(&names(&["heimdall.acme.internal"]), &approved_api, &api),
            Err(Refused::ApiNames(names(&["heimdall.acme.internal"])))
        );
        // A name that resolves to loopback is no loopback name.
        assert!(check_agent_names(&names(&["localhost.attacker.example"]), &[], &api).is_err());
        let err = Refused::NotApproved(names(&["www.example.com"])).error("edge-1");
        assert!(err.message.contains("allow-name edge-1"), "{}", err.message);
    }

    #[test]
    fn an_agent_asks_for_one_to_sixteen_names_lowercased_and_records_them_by_id() {
        assert_eq!(requested(&names(&["Edge-1.ACME.internal"])).unwrap(), names(&["edge-1.acme.internal"]));
        for asked in [vec![], vec!["localhost".to_owned(); MAX_NAMES + 1], names(&["a b"])] {
            assert_eq!(requested(&asked).unwrap_err().code, ErrorCode::InvalidInput, "{asked:?}");
        }
        let agent = crate::fixtures::agent(5, "edge-1");
        let sha = crate::sha256::Sha256Hex::of(b"certificate");
        let epoch = time::OffsetDateTime::UNIX_EPOCH;
        let planned =
            issued(&agent, names(&["localhost"]), sha.clone(), (epoch, epoch + time::Duration::days(30)));
        assert_eq!((planned.record.agent_id, &planned.record.sha256), (agent.id, &sha));
        assert_eq!(planned.event.target, format!("agent:{}", agent.id));
        assert_eq!(planned.event.detail["names"], serde_json::json!(["localhost"]));
    }

    #[test]
    fn names_are_dns_names_or_addresses() {
        assert_eq!(check_name("Edge-1.ACME.internal").unwrap(), "edge-1.acme.internal");
        assert!(check_name("10.0.0.5").is_ok() && check_name("::1").is_ok());
        for bad in ["", "a..b", "*.example.com", "a b", "x_y.example", &"a".repeat(64)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
