//! Taking values out of use, as planners: deactivating one version, and
//! starting a secret's deletion everywhere or in one environment. The
//! adapter applies each plan with one store call, its event in the same
//! transaction; the deletion's end is `deletion::is_done`, decided in the
//! sync's transaction.

use serde_json::json;
use time::{Duration, OffsetDateTime};

use super::Secret;
use crate::audit::{AuditAction, EventPlan};
use crate::deletion::{self, Holder};
use crate::domain::CatalogEntry;
use crate::error::ApiError;
use crate::ids::{CatalogId, SecretId};

/// One version of a secret in one environment, no longer served.
#[derive(Clone, Debug, PartialEq)]
pub struct Deactivation {
    pub secret: SecretId,
    pub environment: CatalogId,
    pub version: i64,
    pub event: EventPlan,
}

/// Deactivates `version` of `secret` in `environment`. Versions start at 1;
/// whether that version exists is the store's to say (`NOT_FOUND`).
pub fn deactivate(
    secret: &Secret,
    environment: &CatalogEntry,
    version: i64,
) -> Result<Deactivation, ApiError> {
    if version < 1 {
        return Err(ApiError::invalid_input("version starts at 1"));
    }
    let event = EventPlan {
        action: AuditAction::SecretVersionDeactivated,
        target: format!("secret:{}", secret.id),
        detail: json!({ "name": secret.name, "environment": environment.name, "version": version }),
    };
    Ok(Deactivation { secret: secret.id, environment: environment.id, version, event })
}

/// Where a deletion applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeletionScope {
    /// The whole secret: it goes `deleting` (or `deleted` when no Agent holds it).
    Everywhere,
    /// The secret in one environment only.
    Environment(CatalogId),
}

/// A deletion that may start, and its event (naming the Agents that hold
/// the secret there, each once).
#[derive(Clone, Debug, PartialEq)]
pub struct DeletionPlan {
    pub secret: SecretId,
    pub scope: DeletionScope,
    pub event: EventPlan,
}

/// Starts deleting `secret` (in `only`, else everywhere) when
/// [`deletion::may_start`] says it may: every holder there will sync again
/// and the secret is not already going. `holders` hold it there.
pub fn begin_deletion(
    secret: &Secret,
    only: Option<&CatalogEntry>,
    holders: &[Holder],
    now: OffsetDateTime,
    stale_after: Duration,
) -> Result<DeletionPlan, ApiError> {
    let what = match only {
        Some(env) => format!("{} in {}", secret.name, env.name),
        None => secret.name.clone(),
    };
    let agents = deletion::may_start(&what, (&secret.name, secret.status), holders, now, stale_after)?;
    let event = EventPlan {
        action: AuditAction::SecretDeletionStarted,
        target: format!("secret:{}", secret.id),
        detail: json!({ "name": secret.name, "environment": only.map(|e| &e.name), "held_by": agents }),
    };
    let scope = only.map_or(DeletionScope::Everywhere, |env| DeletionScope::Environment(env.id));
    Ok(DeletionPlan { secret: secret.id, scope, event })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::fixtures::{environment, secret};
    use crate::secrets::SecretStatus;

    fn at(days: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap_or(OffsetDateTime::UNIX_EPOCH)
            + Duration::days(days)
    }

    #[test]
    fn a_deactivation_names_a_version_from_one() {
        let (s, prod) = (secret("db-password"), environment("prod"));
        assert_eq!(deactivate(&s, &prod, 0).unwrap_err().code, ErrorCode::InvalidInput);
        let plan = deactivate(&s, &prod, 3).unwrap();
        assert_eq!((plan.secret, plan.environment, plan.version), (s.id, prod.id, 3));
        assert_eq!(plan.event.action, AuditAction::SecretVersionDeactivated);
        assert_eq!(plan.event.target, format!("secret:{}", s.id));
        assert_eq!(plan.event.detail, json!({ "name": "db-password", "environment": "prod", "version": 3 }));
    }

    #[test]
    fn a_deletion_starts_once_every_holder_will_hear_of_it() {
        let (mut s, prod) = (secret("db-password"), environment("prod"));
        let holder = |agent: &str, seen: i64| Holder {
            agent: agent.into(),
            revoked: false,
            last_seen_at: Some(at(seen)),
        };
        let stale = Duration::days(7);
        // Held by two Agents (one twice): both named once, in one environment.
        let held = [holder("edge-1", 0), holder("edge-1", 0), holder("edge-2", -1)];
        let plan = begin_deletion(&s, Some(&prod), &held, at(0), stale).unwrap();
        assert_eq!(plan.scope, DeletionScope::Environment(prod.id));
        assert_eq!(plan.event.action, AuditAction::SecretDeletionStarted);
        assert_eq!(plan.event.detail["held_by"], json!(["edge-1", "edge-2"]));
        assert_eq!(plan.event.detail["environment"], json!("prod"));
        assert_eq!(begin_deletion(&s, None, &[], at(0), stale).unwrap().scope, DeletionScope::Everywhere);
        // An Agent unseen for longer than `stale_after` may keep a copy: refused, naming it.
        let err = begin_deletion(&s, None, &[holder("edge-9", -30)], at(0), stale).unwrap_err();
        assert_eq!(err.code, ErrorCode::ValueMayPersist);
        assert!(err.message.contains("edge-9"), "{}", err.message);
        // Already going: CONFLICT.
        s.status = SecretStatus::Deleting;
        assert_eq!(begin_deletion(&s, None, &[], at(0), stale).unwrap_err().code, ErrorCode::Conflict);
    }
}
