//! `heimdall resource import`: objects created outside Heimdall come under
//! management without being recreated. The request names each object by
//! its resource address inside the schema's module and its provider id;
//! the Agent writes Terraform `import` blocks for them, plans, and applies
//! only a plan that changes nothing ([`verdict`]).

use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ErrorCode};
use crate::infra::ImportTarget;
use crate::root_module::{hcl_string, MODULE_NAME};

/// At most this many objects in one import.
pub const MAX_IMPORTS: usize = 100;

/// Checks what a request asks to import: each address a resource address
/// (`type.name`, `type.name[0]`, `type.name["key"]`, under `module.x.` if
/// nested), each id non-empty text, no address twice.
pub fn check_targets(targets: &[ImportTarget]) -> Result<(), ApiError> {
    if targets.len() > MAX_IMPORTS {
        return Err(ApiError::invalid_input(format!("at most {MAX_IMPORTS} objects per import")));
    }
    let mut seen = std::collections::BTreeSet::new();
    for target in targets {
        if !is_resource_address(&target.address) {
            return Err(ApiError::invalid_input(format!(
                "import address {:?} is not a resource address inside the module (e.g. aws_s3_bucket.this)",
                target.address
            )));
        }
        let id_ok =
            !target.id.is_empty() && target.id.len() <= 1024 && !target.id.chars().any(char::is_control);
        if !id_ok {
            return Err(ApiError::invalid_input(format!(
                "import id for {} must be 1-1024 characters without control characters",
                target.address
            )));
        }
        if !seen.insert(target.address.as_str()) {
            return Err(ApiError::invalid_input(format!("import address {} is named twice", target.address)));
        }
    }
    Ok(())
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `[module.name[index].]*type.name[index]`, index a number or a quoted key.
fn is_resource_address(address: &str) -> bool {
    let parts = split_address(address);
    let Some(parts) = parts else { return false };
    let mut rest = parts.as_slice();
    while let [(m, None), (name, _), tail @ ..] = rest {
        if *m != "module" || !is_identifier(name) {
            break;
        }
        rest = tail;
    }
    matches!(rest, [(kind, None), (name, _)] if *kind != "module" && *kind != "data" && is_identifier(kind) && is_identifier(name))
}

/// Dot-separated steps, each a name and an optional index; `None` if an
/// index is malformed.
fn split_address(address: &str) -> Option<Vec<(&str, Option<&str>)>> {
    let mut steps = Vec::new();
    let mut rest = address;
    while !rest.is_empty() {
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let (name, after) = rest.split_at(end);
        let (index, after) = match after.strip_prefix('[') {
            Some(inner) => {
                let close = match inner.strip_prefix('"') {
                    Some(key) => key.find('"')? + 2,
                    None => inner.find(']')?,
                };
                let (index, tail) = inner.split_at(close);
                let tail = tail.strip_prefix(']')?;
                let quoted = index.len() >= 2 && index.starts_with('"') && index.ends_with('"');
                let numeric = !index.is_empty() && index.chars().all(|c| c.is_ascii_digit());
                let key_ok = quoted && !index[1..index.len() - 1].contains(['"', '\\', '\n']);
                if !(numeric || key_ok) {
                    return None;
                }
                (Some(index), tail)
            }
            None => (None, after),
        };
        steps.push((name, index));
        rest = match after.strip_prefix('.') {
            Some(next) if !next.is_empty() => next,
            Some(_) => return None,
            None if after.is_empty() => "",
            None => return None,
        };
    }
    Some(steps)
}

/// The `import` blocks of the root module (`imports.tf`): each address
/// under the module call.
pub fn import_blocks(targets: &[ImportTarget]) -> String {
    targets
        .iter()
        .map(|t| {
            format!(
                "import {{\n  to = module.{MODULE_NAME}.{}\n  id = {}\n}}\n",
                t.address,
                hcl_string(&t.id)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What an import's plan would do, from Terraform's machine-readable
/// plan output: its `change_summary` and each `planned_change`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanSummary {
    pub add: u64,
    pub change: u64,
    pub remove: u64,
    pub import: u64,
    /// `address action` for each planned change other than an import alone.
    pub changes: Vec<String>,
}

impl PlanSummary {
    /// Whether applying the plan would add, change or destroy anything
    /// (imports and reads alone do not).
    pub fn changes_anything(&self) -> bool {
        self.add + self.change + self.remove > 0
    }
}

/// An import applies only when its plan adds, changes and removes nothing:
/// else `IMPORT_WOULD_CHANGE`, naming what differs (addresses and actions,
/// never values).
pub fn verdict(plan: &PlanSummary) -> Result<(), ApiError> {
    if !plan.changes_anything() {
        return Ok(());
    }
    let mut what = plan.changes.join(", ");
    if what.is_empty() {
        what = format!("{} to add, {} to change, {} to destroy", plan.add, plan.change, plan.remove);
    }
    Err(ApiError::new(
        ErrorCode::ImportWouldChange,
        format!(
            "importing would change what exists ({what}); nothing was applied, the imported objects are in the state, and the plan is in the job log: request the input that matches, or change the objects"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(address: &str, id: &str) -> ImportTarget {
        ImportTarget { address: address.into(), id: id.into() }
    }

    #[test]
    fn addresses_are_resource_addresses_inside_the_module() {
        for ok in [
            "aws_s3_bucket.this",
            "terraform_data.bucket",
            "aws_instance.web[0]",
            "aws_iam_user.u[\"ana\"]",
            "module.inner.aws_s3_bucket.b",
            "module.inner[1].aws_s3_bucket.b",
        ] {
            assert!(check_targets(&[target(ok, "id-1")]).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "aws_s3_bucket",
            "data.aws_s3_bucket.x",
            "module.inner",
            "aws_s3_bucket.this.",
            "aws_s3_bucket.this[x]",
            "aws_s3_bucket.this[\"a\"b\"]",
            "aws s3.this",
            "aws_s3_bucket.this\n}",
            "9bucket.this",
        ] {
            assert!(check_targets(&[target(bad, "id-1")]).is_err(), "{bad:?}");
        }
        assert!(check_targets(&[target("a.b", "")]).is_err());
        assert!(check_targets(&[target("a.b", "x\ny")]).is_err());
        assert!(check_targets(&[target("a.b", "1"), target("a.b", "2")]).is_err());
        let many: Vec<ImportTarget> = (0..=MAX_IMPORTS).map(|i| target(&format!("a.b{i}"), "x")).collect();
        assert!(check_targets(&many).is_err());
    }

    #[test]
    fn import_blocks_name_the_module_call() {
        let text = import_blocks(&[target("terraform_data.bucket", "f19f-1\"${x}")]);
        assert_eq!(
            text,
            "import {\n  to = module.resource.terraform_data.bucket\n  id = \"f19f-1\\\"$${x}\"\n}\n"
        );
    }

    #[test]
    fn only_a_plan_that_changes_nothing_applies() {
        assert!(verdict(&PlanSummary { import: 2, ..PlanSummary::default() }).is_ok());
        let changing = PlanSummary {
            change: 1,
            import: 1,
            changes: vec!["module.resource.terraform_data.this update".into()],
            ..PlanSummary::default()
        };
        let err = verdict(&changing).unwrap_err();
        assert_eq!(err.code, ErrorCode::ImportWouldChange);
        assert!(err.message.contains("module.resource.terraform_data.this update"), "{}", err.message);
        let counted = verdict(&PlanSummary { add: 1, ..PlanSummary::default() }).unwrap_err();
        assert!(counted.message.contains("1 to add"), "{}", counted.message);
    }
}
