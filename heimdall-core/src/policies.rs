//! The organization's Cedar policies: what a new one and a change must
//! be, decided here for the API (create and update alike), and the next
//! version a change makes. The store applies a [`PolicyWrite`] in one
//! transaction with its history row, the organization's policy version
//! and the audit event.

pub mod service;

use serde_json::{json, Value};
use time::OffsetDateTime;

use crate::audit::AuditAction;
use crate::authz::validate_policy_text;
use crate::domain::Policy;
use crate::names::validate_text;
use crate::{ApiError, ErrorCode, FieldError};

/// Policy text limit: generous for hand-written Cedar, small enough that
/// evaluating every policy on every request stays cheap.
pub const MAX_POLICY_CHARS: usize = 16 * 1024;

/// A description's limit, in characters.
const MAX_DESCRIPTION_CHARS: usize = 1000;

/// Checks policy text: within the limit, and compiling in strict mode
/// against Heimdall's schema. The number of statements it holds.
pub fn check_text(text: &str) -> Result<usize, ApiError> {
    if text.chars().count() > MAX_POLICY_CHARS {
        return Err(ApiError::invalid_input(format!(
            "policy text must be at most {MAX_POLICY_CHARS} characters"
        )));
    }
    validate_policy_text(text).map_err(|e| {
        ApiError::new(ErrorCode::InvalidPolicy, format!("policy does not compile: {e}")).with_fields(vec![
            FieldError {
                path: "/text".into(),
                rule: format!("cedar at line {}, column {}", e.line, e.column),
            },
        ])
    })
}

/// Checks a description.
pub fn check_description(description: &str) -> Result<(), ApiError> {
    validate_text("description", description, MAX_DESCRIPTION_CHARS)
}

/// A new policy to store (version 1), and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyPlan {
    pub policy: Policy,
    pub event: crate::audit::EventPlan,
}

/// A new policy `name`: its description and Cedar text checked as every
/// version's are.
pub fn create(
    id: crate::ids::PolicyId,
    org: crate::ids::OrgId,
    name: String,
    description: String,
    text: String,
    by: &str,
    now: OffsetDateTime,
) -> Result<PolicyPlan, ApiError> {
    crate::names::validate_name("name", &name)?;
    check_description(&description)?;
    let statements = check_text(&text)?;
    let policy = Policy {
        id,
        org_id: org,
        name,
        description,
        text,
        version: 1,
        created_at: now,
        created_by: by.to_owned(),
        updated_at: None,
        updated_by: None,
    };
    let event = policy_event(
        AuditAction::PolicyCreated,
        &policy,
        json!({ "name": policy.name, "statements": statements }),
    );
    Ok(PolicyPlan { policy, event })
}

/// What deleting `policy` records.
pub fn deleted(policy: &Policy) -> crate::audit::EventPlan {
    policy_event(AuditAction::PolicyDeleted, policy, json!({ "name": policy.name }))
}

fn policy_event(action: AuditAction, policy: &Policy, detail: Value) -> crate::audit::EventPlan {
    crate::audit::EventPlan { action, target: format!("policy:{}", policy.id), detail }
}

/// A requested change; what is `None` stays as it is.
#[derive(Clone, Debug, Default)]
pub struct Change {
    pub text: Option<String>,
    pub description: Option<String>,
    /// Refuse `STALE_REVISION` unless the policy is still at this version.
    pub expected_version: Option<i64>,
}

/// A new version of a policy, for the store to write if the policy is
/// still at `previous_version` (else `STALE_REVISION`), with its event.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyWrite {
    pub policy: Policy,
    pub previous_version: i64,
    pub event: crate::audit::EventPlan,
}

/// Decides a change to `current`: `None` when it changes nothing (the
/// same text and description: no new version, no event), else the next
/// version, validated as a new policy is.
pub fn update(
    current: &Policy,
    change: Change,
    actor: &str,
    now: OffsetDateTime,
) -> Result<Option<PolicyWrite>, ApiError> {
    if let Some(expected) = change.expected_version.filter(|v| *v != current.version) {
        return Err(ApiError::new(
            ErrorCode::StaleRevision,
            format!(
                "policy {} is at version {}, not {expected}: read it again",
                current.name, current.version
            ),
        ));
    }
    if let Some(description) = &change.description {
        check_description(description)?;
    }
    let text = change.text.unwrap_or_else(|| current.text.clone());
    let statements = check_text(&text)?;
    let description = change.description.unwrap_or_else(|| current.description.clone());
    if text == current.text && description == current.description {
        return Ok(None);
    }
    let mut policy = current.clone();
    policy.version = current.version + 1;
    policy.text = text;
    policy.description = description;
    policy.updated_at = Some(now);
    policy.updated_by = Some(actor.to_owned());
    let detail = json!({ "name": policy.name, "version": policy.version, "statements": statements });
    Ok(Some(PolicyWrite {
        policy,
        previous_version: current.version,
        event: policy_event(AuditAction::PolicyUpdated, current, detail),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{OrgId, PolicyId};

    const FORBID: &str = r#"forbid (principal, action == Heimdall::Action::"secret.read", resource) when { context.environment == "prod" };"#;
    const PERMIT: &str = r#"permit (principal, action == Heimdall::Action::"secret.read", resource) when { context.environment == "dev" };"#;

    fn policy() -> Policy {
        let at = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        Policy {
            id: PolicyId::from_uuid(uuid::Uuid::from_u128(1)),
            org_id: OrgId::from_uuid(uuid::Uuid::from_u128(2)),
            name: "guard".into(),
            description: "first".into(),
            text: FORBID.into(),
            version: 4,
            created_at: at,
            created_by: "a@example.com".into(),
            updated_at: None,
            updated_by: None,
        }
    }

    fn now() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_100).unwrap()
    }

    #[test]
    fn a_change_makes_the_next_version_and_keeps_what_it_does_not_name() {
        let change = Change { text: Some(PERMIT.into()), expected_version: Some(4), ..Change::default() };
        let write = update(&policy(), change, "b@example.com", now()).unwrap().unwrap();
        assert_eq!((write.previous_version, write.policy.version), (4, 5));
        assert_eq!((write.policy.text.as_str(), write.policy.description.as_str()), (PERMIT, "first"));
        assert_eq!(write.policy.updated_by.as_deref(), Some("b@example.com"));
        assert_eq!(write.event.detail, json!({ "name": "guard", "version": 5, "statements": 1 }));
    }

    #[test]
    fn a_new_policy_is_version_one_and_its_event_counts_its_statements() {
        let (id, org) = (PolicyId::from_uuid(uuid::Uuid::from_u128(1)), OrgId::from_uuid(uuid::Uuid::nil()));
        let text = format!("{FORBID}\n{PERMIT}");
        let plan = create(id, org, "prod-reads".into(), String::new(), text, "ana", now()).unwrap();
        assert_eq!((plan.policy.version, plan.event.action), (1, AuditAction::PolicyCreated));
        assert_eq!(plan.event.detail, json!({ "name": "prod-reads", "statements": 2 }));
        let broken = create(id, org, "broken".into(), String::new(), "permit (".into(), "ana", now());
        assert_eq!(broken.unwrap_err().code, ErrorCode::InvalidPolicy);
        assert_eq!(deleted(&plan.policy).target, format!("policy:{id}"));
    }

    #[test]
    fn the_same_text_and_description_is_no_new_version() {
        let change =
            Change { text: Some(FORBID.into()), description: Some("first".into()), ..Change::default() };
        assert_eq!(update(&policy(), change, "b@example.com", now()).unwrap(), None);
    }

    #[test]
    fn a_stale_version_or_broken_text_is_refused() {
        let stale = Change { text: Some(PERMIT.into()), expected_version: Some(3), ..Change::default() };
        let err = update(&policy(), stale, "b", now()).unwrap_err();
        assert_eq!(err.code, ErrorCode::StaleRevision);
        let broken = Change { text: Some("forbid (principal".into()), ..Change::default() };
        let err = update(&policy(), broken, "b", now()).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidPolicy);
        assert_eq!(err.fields.unwrap()[0].path, "/text");
        let long = Change { description: Some("x".repeat(1001)), ..Change::default() };
        assert_eq!(update(&policy(), long, "b", now()).unwrap_err().code, ErrorCode::InvalidInput);
    }
}
