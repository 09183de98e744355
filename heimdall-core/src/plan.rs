//! Approval bound to the plan itself. Under a schema that requires
//! approval, a requested revision is first planned by an Agent (a `plan`
//! job); the plan file stays in the account's state bucket next to the
//! state (it can hold sensitive values, so never in the API), and the API
//! keeps its SHA-256 and a summary of what it does (addresses, actions and
//! counts: no attribute values). The approver names the hash of the plan
//! they read; the apply runs exactly that file, after checking its hash.
//! If the state moved in between, Terraform refuses the stale plan, the
//! job fails `STALE_PLAN` and the revision goes back to waiting for
//! approval with a new plan: never applied silently.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

use crate::error::{ApiError, ErrorCode};
use crate::ids::{JobId, ResourceId};
use crate::import::PlanSummary;
use crate::infra::{Job, JobOperation, JobStatus};

/// Where a Resource's plan file lives in its account's state bucket.
pub fn plan_key(resource: ResourceId) -> String {
    format!("heimdall/{resource}.tfplan")
}

/// The output of the plan holder's state (`crate::root_module::plan_holder`)
/// that carries the plan file, base64.
pub const HOLDER_OUTPUT: &str = "heimdall_plan";

/// A plan file as a Terraform state of its own (version 4, no resources,
/// one sensitive output), so that Terraform's backend keeps it next to the
/// Resource's state with `terraform state push`: every backend, under its
/// own lock, with the job's credentials. Its lineage names the plan's
/// SHA-256; it is pushed with `-force` over the previous plan's.
pub fn holder_state(plan: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    let sha256 = hex_sha256(plan);
    serde_json::json!({
        "version": 4,
        "terraform_version": "1.0.0",
        "serial": 1,
        "lineage": format!("heimdall-plan-{sha256}"),
        "outputs": { HOLDER_OUTPUT: {
            "value": base64::engine::general_purpose::STANDARD.encode(plan),
            "type": "string",
            "sensitive": true,
        } },
        "resources": [],
    })
    .to_string()
    .into_bytes()
}

/// The plan file in a plan holder's state, as `terraform state pull`
/// prints it. The caller still checks its SHA-256 against the approved one.
pub fn from_holder_state(state: &[u8]) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    if state.iter().all(u8::is_ascii_whitespace) {
        return Err("no plan is kept there".into());
    }
    let state: Value =
        serde_json::from_slice(state).map_err(|e| format!("the plan's state is not JSON: {e}"))?;
    let value = state["outputs"][HOLDER_OUTPUT]["value"]
        .as_str()
        .ok_or_else(|| format!("the state there holds no `{HOLDER_OUTPUT}` output: no plan is kept there"))?;
    base64::engine::general_purpose::STANDARD
        .decode(value)
        .map_err(|e| format!("the kept plan is not base64: {e}"))
}

/// SHA-256 of a plan file, hex.
pub fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// A revision's plan, as the API keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevisionPlan {
    /// SHA-256 (hex) of the plan file.
    pub sha256: String,
    pub summary: PlanSummary,
}

/// The key of a plan job's result in the outputs its Agent reports.
pub const PLAN: &str = "plan";

/// The Agent's report for a plan job: `{"plan": {"sha256", "summary"}}`.
pub fn report(plan: &RevisionPlan) -> Value {
    serde_json::json!({ PLAN: plan })
}

/// The plan a finished plan job reported; `None` if its outputs hold none
/// of the right shape (64 hex digits and a summary).
pub fn from_report(outputs: &Value) -> Option<RevisionPlan> {
    let plan: RevisionPlan = serde_json::from_value(outputs.get(PLAN)?.clone()).ok()?;
    is_sha256(&plan.sha256).then_some(plan)
}

fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The approver's plan hash against the revision's plan: approving
/// anything but the plan the revision has (or before it has one) is
/// `STALE_PLAN`.
pub fn check_named<'a>(
    revision: i64,
    plan: Option<&'a RevisionPlan>,
    named: Option<&str>,
) -> Result<&'a RevisionPlan, ApiError> {
    let stale = |why: String| ApiError::new(ErrorCode::StalePlan, why);
    let Some(plan) = plan else {
        return Err(stale(format!(
            "revision {revision} has no plan yet: its plan job has not finished (`heimdall resource plan` shows it)"
        )));
    };
    match named {
        None => Err(stale(format!(
            "name the plan you read: --plan {} (from `heimdall resource plan`)",
            short(&plan.sha256)
        ))),
        Some(named) if named.len() >= 12 && plan.sha256.starts_with(&named.to_ascii_lowercase()) => Ok(plan),
        Some(named) => Err(stale(format!(
            "plan {named} is not revision {revision}'s plan ({}): read the current plan and approve that",
            short(&plan.sha256)
        ))),
    }
}

/// The first 12 hex digits: what people read and type.
pub fn short(sha256: &str) -> &str {
    sha256.get(..12).unwrap_or(sha256)
}

/// Whether Terraform refused a saved plan because the state moved since
/// it was made (`Saved plan is stale`).
pub fn is_stale(terraform_errors: &str) -> bool {
    terraform_errors.contains("Saved plan is stale")
}

/// The plan job that plans `failed`'s revision again after its apply found
/// the plan stale: the same frozen request, planned afresh.
pub fn replan(failed: &Job, id: JobId, now: OffsetDateTime) -> Job {
    let mut request = failed.request.clone();
    request.operation = JobOperation::Plan;
    request.plan_sha256 = None;
    request.plan_key = Some(plan_key(failed.resource_id));
    Job {
        id,
        org_id: failed.org_id,
        resource_id: failed.resource_id,
        operation: JobOperation::Plan,
        status: JobStatus::Queued,
        attempts: 0,
        max_attempts: failed.max_attempts,
        reason: None,
        request,
        queued_at: now,
        started_at: None,
        finished_at: None,
        lease_expires_at: None,
        agent: None,
        state_lock_id: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> RevisionPlan {
        RevisionPlan {
            sha256: "ab".repeat(32),
            summary: PlanSummary {
                add: 1,
                changes: vec!["terraform_data.this create".into()],
                ..PlanSummary::default()
            },
        }
    }

    #[test]
    fn a_plan_file_round_trips_through_its_holder_state() {
        let file = b"PK\x03\x04 any bytes \x00\xff".to_vec();
        let state: Value = serde_json::from_slice(&holder_state(&file)).unwrap();
        assert_eq!(state["version"], 4);
        assert_eq!(state["resources"], serde_json::json!([]));
        assert_eq!(state["lineage"], format!("heimdall-plan-{}", hex_sha256(&file)));
        assert_eq!(from_holder_state(&holder_state(&file)).unwrap(), file);
        // What `state pull` prints where nothing was pushed, or a state of
        // something else, is no plan.
        assert!(from_holder_state(b"\n").unwrap_err().contains("no plan"));
        let other = br#"{"version":4,"outputs":{},"resources":[]}"#;
        assert!(from_holder_state(other).unwrap_err().contains("no plan"));
    }

    #[test]
    fn only_the_revisions_own_plan_is_approved() {
        let plan = plan();
        assert_eq!(check_named(2, Some(&plan), Some(&plan.sha256)), Ok(&plan));
        assert_eq!(check_named(2, Some(&plan), Some("ABABABABABAB")), Ok(&plan), "12 digits, any case");
        for named in [None, Some("abab"), Some(&*"cd".repeat(32))] {
            let err = check_named(2, Some(&plan), named).unwrap_err();
            assert_eq!(err.code, ErrorCode::StalePlan, "{named:?}");
        }
        assert_eq!(check_named(2, None, Some(&plan.sha256)).unwrap_err().code, ErrorCode::StalePlan);
    }

    #[test]
    fn a_report_round_trips_and_a_bad_one_is_none() {
        let plan = plan();
        assert_eq!(from_report(&report(&plan)), Some(plan.clone()));
        let mut bad = report(&plan);
        bad["plan"]["sha256"] = "not-hex".into();
        assert_eq!(from_report(&bad), None);
        assert_eq!(from_report(&serde_json::json!({ "drifted": true })), None);
    }

    #[test]
    fn terraform_s_stale_plan_error_is_recognised() {
        assert!(is_stale("Error: Saved plan is stale\n\nThe given plan file can no longer be applied"));
        assert!(!is_stale("Error: error acquiring the state lock"));
    }
}
