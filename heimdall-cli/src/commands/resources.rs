//! `resource create|import|list|show|plan|update|upgrade|approve|refuse|retry|delete|abandon`.

use std::collections::HashMap;

use heimdall_core::ids::CatalogId;
use heimdall_sdk::{Client, ResourceQuery};
use heimdall_wire::{
    CatalogKind, ChangeResource, CreateResource, Decide, Resource, ResourceSchema, ResourceStatus, Revision,
    RevisionState, UpgradeResource,
};

use super::{parse_json, read_json_file, wait, Context};
use crate::args::{InputArgs, NewResourceArgs, ResourceCommand, WaitArgs};
use crate::error::{CliError, Result};
use crate::output::{self, timestamp, Out};

const LIST_HEADERS: &[&str] = &[
    "ID",
    "NAME",
    "STATUS",
    "REVISION",
    "SCHEMA",
    "ENVIRONMENT",
    "COMPONENT",
    "UPDATED AT",
    "DRIFTED SINCE",
];
const REVISION_HEADERS: &[&str] =
    &["REVISION", "SCHEMA VERSION", "STATE", "HASH", "REQUESTED BY", "REQUESTED AT", "DECIDED BY"];

pub async fn run(ctx: &Context, cmd: ResourceCommand) -> Result<()> {
    let out = &ctx.out;
    match cmd {
        ResourceCommand::Create { new, input, region, wait } => {
            // The input first: a typo should not cost a round trip.
            let input = read_input(&input)?;
            let client = ctx.client()?;
            let request = new_resource(new, input, region, Vec::new());
            let r = client.create_resource(&request).await?;
            let line = format!("Resource created: {} ({})", r.name, r.id);
            done_then_wait(&client, out, wait, r, line).await
        }
        ResourceCommand::Import { new, input, imports, region, wait } => {
            let input = read_input(&input)?;
            heimdall_core::import::check_targets(&imports).map_err(|e| CliError::usage(e.message))?;
            let client = ctx.client()?;
            let count = imports.len();
            let request = new_resource(new, input, region, imports);
            let r = client.create_resource(&request).await?;
            let line = format!("Resource import requested: {} ({}), {count} object(s)", r.name, r.id);
            done_then_wait(&client, out, wait, r, line).await
        }
        ResourceCommand::List { component, environment, status, type_name, outdated, page } => {
            let client = ctx.client()?;
            let query = ResourceQuery {
                component,
                environment,
                status: status.map(Into::into),
                schema_type: type_name,
                outdated,
            };
            let resources = if page.one_page() {
                let (resources, next) =
                    client.list_resources_page(&query, page.limit, page.after.as_deref()).await?;
                super::say_next_page(next.as_deref());
                resources
            } else {
                client.list_resources(&query).await?
            };
            let (names, schemas) = if out.is_json() {
                (HashMap::new(), Vec::new())
            } else {
                let names = catalog_names(&client, &[CatalogKind::Environment, CatalogKind::Component]).await;
                (names, client.list_schemas(None).await.unwrap_or_default())
            };
            out.list(&resources, LIST_HEADERS, |r: &Resource| {
                vec![
                    r.id.to_string(),
                    r.name.clone(),
                    r.status.to_string(),
                    r.revision.to_string(),
                    schema_label(&schemas, r),
                    name_of(&names, r.environment_id),
                    name_of(&names, r.component_id),
                    timestamp(r.updated_at),
                    r.drifted_at.map(timestamp).unwrap_or_default(),
                ]
            })
        }
        ResourceCommand::Show { resource } => {
            let client = ctx.client()?;
            let detail = client.get_resource(&resource).await?;
            if out.is_json() {
                return output::json(&detail);
            }
            let r = &detail.resource;
            // Readable names cost a request each: best effort, ids otherwise.
            let label = |name: Option<String>, id: String| match name {
                Some(name) => format!("{name} ({id})"),
                None => id,
            };
            let component =
                client.get_catalog_entry(CatalogKind::Component, &r.component_id.to_string()).await;
            let environment =
                client.get_catalog_entry(CatalogKind::Environment, &r.environment_id.to_string()).await;
            let schema = client.get_schema(&r.schema_id.to_string()).await;
            out.record(
                &detail,
                &[
                    ("ID", r.id.to_string()),
                    ("NAME", r.name.clone()),
                    ("STATUS", r.status.to_string()),
                    ("REASON", r.reason.clone().unwrap_or_default()),
                    ("REVISION", r.revision.to_string()),
                    (
                        "DRIFTED",
                        r.drifted_at.map(|at| format!("since {}", timestamp(at))).unwrap_or_default(),
                    ),
                    ("COMPONENT", label(component.ok().map(|c| c.name), r.component_id.to_string())),
                    ("ENVIRONMENT", label(environment.ok().map(|e| e.name), r.environment_id.to_string())),
                    (
                        "SCHEMA",
                        label(
                            schema.ok().map(|s| format!("{} version {}", s.type_name, s.version)),
                            r.schema_id.to_string(),
                        ),
                    ),
                    ("REGION", r.region.clone().unwrap_or_default()),
                    ("CREATED BY", r.created_by.clone()),
                    ("CREATED AT", timestamp(r.created_at)),
                    ("UPDATED AT", timestamp(r.updated_at)),
                ],
            )?;
            let outputs = output_rows(&r.outputs);
            if !outputs.is_empty() {
                out.section(&["OUTPUT", "VALUE"], outputs)?;
            }
            out.section(REVISION_HEADERS, detail.revisions.iter().map(revision_row).collect())?;
            match detail.revisions.iter().rev().find(|rev| rev.state == RevisionState::PendingApproval) {
                Some(pending) => {
                    out.text(&plan_text(&r.name, pending.number, pending.state, pending.plan.as_ref()))
                }
                None => Ok(()),
            }
        }
        ResourceCommand::Update { resource, input, region, wait } => {
            let input = read_input(&input)?;
            let client = ctx.client()?;
            let r = client.change_resource(&resource, &ChangeResource { input, region }).await?;
            let line = format!("Resource changed: {}, revision {} ({})", r.name, r.revision, r.status);
            done_then_wait(&client, out, wait, r, line).await
        }
        ResourceCommand::Upgrade { resource, to_version, input, input_file, allow_downgrade, wait } => {
            let input = match (input, input_file) {
                (None, None) => None,
                (input, input_file) => Some(read_input(&InputArgs { input, input_file })?),
            };
            let client = ctx.client()?;
            let upgrade = UpgradeResource { schema_version: to_version, input, allow_downgrade };
            let r = client.upgrade_resource(&resource, &upgrade).await?;
            let line = format!(
                "Resource upgraded: {} to schema version {to_version}, revision {} ({})",
                r.name, r.revision, r.status
            );
            done_then_wait(&client, out, wait, r, line).await
        }
        ResourceCommand::Plan { resource, revision } => {
            let client = ctx.client()?;
            let shown = plan_of(&client, &resource, revision).await?;
            show_plan(out, &shown)
        }
        ResourceCommand::Approve { resource, revision, plan, reason, wait } => {
            let client = ctx.client()?;
            let plan = match plan {
                Some(plan) => Some(plan),
                None => confirm_plan(&client, out, &resource, revision).await?,
            };
            let r = client.approve_resource(&resource, &Decide { revision, plan, reason }).await?;
            let line = format!("Resource approved: {}, revision {revision} ({})", r.name, r.status);
            done_then_wait(&client, out, wait, r, line).await
        }
        ResourceCommand::Refuse { resource, revision, reason } => {
            let client = ctx.client()?;
            let r = client.refuse_resource(&resource, &Decide { revision, plan: None, reason }).await?;
            // Refusing a change leaves the Resource where its jobs are (e.g.
            // an earlier approved apply still queued): say both.
            let line =
                format!("Resource refused: {}, revision {revision}; the Resource is {}", r.name, r.status);
            out.done(&r, &line, &[])
        }
        ResourceCommand::Retry { resource, wait } => {
            let client = ctx.client()?;
            let r = client.retry_resource(&resource).await?;
            let line = format!("Resource retried: {}, revision {} ({})", r.name, r.revision, r.status);
            done_then_wait(&client, out, wait, r, line).await
        }
        ResourceCommand::DriftCheck { resource, wait } => {
            let client = ctx.client()?;
            let job = client.drift_check_resource(&resource).await?;
            if !wait {
                let line = format!("Drift check queued: job {}", job.id);
                return out.done(
                    &job,
                    &line,
                    &[format!("  follow it: heimdall job log {} --follow", job.id)],
                );
            }
            let ended = wait::until_job_ends(&client, job.id, std::time::Duration::from_secs(600)).await?;
            let detail = client.get_resource(&resource).await?;
            if out.is_json() {
                output::json(&serde_json::json!({ "job": ended, "resource": detail.resource }))?;
            }
            match (ended.status, detail.resource.drifted_at) {
                (heimdall_wire::JobStatus::Completed, None) => {
                    if !out.is_json() {
                        println!(
                            "✓ No drift: {} matches revision {}",
                            detail.resource.name, ended.request.revision
                        );
                    }
                    Ok(())
                }
                (heimdall_wire::JobStatus::Completed, Some(since)) => Err(CliError::local(format!(
                    "{} drifted (since {}): see `heimdall job log {}`",
                    detail.resource.name,
                    timestamp(since),
                    ended.id
                ))),
                (status, _) => Err(CliError::local(format!(
                    "the drift check {status}: {}",
                    ended.reason.as_deref().unwrap_or("no reason given")
                ))),
            }
        }
        ResourceCommand::Delete { resource, yes, wait } => {
            let client = ctx.client()?;
            if !yes {
                confirm_delete(&client, out, &resource).await?;
            }
            let r = client.delete_resource(&resource).await?;
            let line = match r.status {
                ResourceStatus::Deleted => format!("Resource deleted: {} ({})", r.name, r.id),
                status => format!("Resource deletion queued: {} ({}) ({status})", r.name, r.id),
            };
            done_then_wait(&client, out, wait, r, line).await
        }
        ResourceCommand::Abandon { resource } => {
            let r = ctx.client()?.abandon_resource(&resource).await?;
            let extra = [format!(
                "  Nothing was destroyed; its state stays where it was. `heimdall terraform export {}` writes the root module",
                r.id
            )];
            out.done(&r, &format!("Resource abandoned: {} ({})", r.name, r.id), &extra)
        }
    }
}

/// Prints what the API answered, then waits if asked. With `--wait` in
/// JSON mode only the final Resource is printed.
async fn done_then_wait(client: &Client, out: &Out, wait: WaitArgs, r: Resource, line: String) -> Result<()> {
    if !(wait.wait && out.is_json()) {
        let mut extra = Vec::new();
        if r.status == ResourceStatus::PendingApproval && !wait.wait {
            extra.push(format!(
                "  Revision {} waits for approval by someone else: heimdall resource approve {} --revision {}",
                r.revision, r.id, r.revision
            ));
        }
        out.done(&r, &line, &extra)?;
    }
    if !wait.wait {
        return Ok(());
    }
    let settled = wait::until_settled(client, out, r, wait.timeout).await?;
    wait::report(out, &settled)
}

/// `--input JSON` or `--input-file FILE`; clap makes sure there is exactly one.
fn read_input(args: &InputArgs) -> Result<serde_json::Value> {
    match (&args.input, &args.input_file) {
        (Some(text), _) => parse_json(text).map_err(|why| CliError::usage(format!("--input {why}"))),
        (None, Some(path)) => read_json_file("--input-file", path),
        (None, None) => Err(CliError::usage("give the input with --input JSON or --input-file FILE")),
    }
}

/// Names of catalog entries, for readable columns. Best effort: on any
/// error the table shows ids.
async fn catalog_names(client: &Client, kinds: &[CatalogKind]) -> HashMap<CatalogId, String> {
    let mut names = HashMap::new();
    for kind in kinds {
        if let Ok(entries) = client.list_catalog(*kind, None).await {
            names.extend(entries.into_iter().map(|e| (e.id, e.name)));
        }
    }
    names
}

/// `TYPE vN`, and the version a new request gets when the Resource is
/// on an older one. Best effort: the id when the schema is not listed.
fn schema_label(schemas: &[ResourceSchema], r: &Resource) -> String {
    let Some(on) = schemas.iter().find(|s| s.id == r.schema_id) else {
        return r.schema_id.to_string();
    };
    match heimdall_core::resources::is_outdated(r, schemas)
        .then(|| heimdall_core::schemas::newer_version(schemas, on))
        .flatten()
    {
        Some(newer) => format!("{} v{} (v{} out)", on.type_name, on.version, newer.version),
        None => format!("{} v{}", on.type_name, on.version),
    }
}

fn name_of(names: &HashMap<CatalogId, String>, id: CatalogId) -> String {
    names.get(&id).cloned().unwrap_or_else(|| id.to_string())
}

/// One row per output; strings as they are, anything else as JSON.
fn output_rows(outputs: &serde_json::Value) -> Vec<Vec<String>> {
    let show = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match outputs {
        serde_json::Value::Object(map) => map.iter().map(|(k, v)| vec![k.clone(), show(v)]).collect(),
        serde_json::Value::Null => Vec::new(),
        other => vec![vec![String::new(), show(other)]],
    }
}

/// A revision, its plan (if its plan job reported one) and that job.
#[derive(Debug, serde::Serialize)]
struct ShownPlan {
    resource: String,
    revision: i64,
    state: RevisionState,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<heimdall_core::plan::RevisionPlan>,
    #[serde(skip_serializing_if = "Option::is_none")]
    job: Option<heimdall_wire::Job>,
}

async fn plan_of(client: &Client, resource: &str, revision: Option<i64>) -> Result<ShownPlan> {
    let detail = client.get_resource(resource).await?;
    let chosen = match revision {
        Some(n) => detail.revisions.iter().find(|r| r.number == n),
        None => detail.revisions.iter().rev().find(|r| r.state == RevisionState::PendingApproval),
    };
    let Some(chosen) = chosen else {
        let which = revision
            .map_or_else(|| "no revision waits for approval".to_owned(), |n| format!("no revision {n}"));
        let message = format!("{}: {which}", detail.resource.name);
        return Err(CliError::Sdk(heimdall_sdk::Error::Api(heimdall_core::ApiError::new(
            heimdall_core::ErrorCode::NotFound,
            message,
        ))));
    };
    let query =
        heimdall_sdk::JobQuery { resource: Some(detail.resource.id.to_string()), ..Default::default() };
    let jobs = client.list_jobs(&query).await?;
    let job = jobs
        .into_iter()
        .rev()
        .find(|j| j.operation == heimdall_wire::JobOperation::Plan && j.request.revision == chosen.number);
    Ok(ShownPlan {
        resource: detail.resource.name.clone(),
        revision: chosen.number,
        state: chosen.state,
        plan: chosen.plan.clone(),
        job,
    })
}

/// The plan, as an approver reads it, and the command that approves it.
fn plan_text(
    resource: &str,
    number: i64,
    state: RevisionState,
    plan: Option<&heimdall_core::plan::RevisionPlan>,
) -> String {
    let Some(plan) = plan else {
        return format!("Revision {number} has no plan yet: its plan job has not finished.\n");
    };
    let s = &plan.summary;
    let mut text = format!(
        "Plan {} for revision {}: {} to add, {} to change, {} to destroy, {} to import.\n",
        plan.sha256, number, s.add, s.change, s.remove, s.import
    );
    for change in &s.changes {
        text.push_str(&format!("  {change}\n"));
    }
    if state == RevisionState::PendingApproval {
        text.push_str(&format!(
            "Approve exactly this plan: heimdall resource approve {resource} --revision {number} --plan {}\n",
            heimdall_core::plan::short(&plan.sha256)
        ));
    }
    text
}

fn show_plan(out: &Out, shown: &ShownPlan) -> Result<()> {
    if out.is_json() {
        return output::json(shown);
    }
    let mut text = plan_text(&shown.resource, shown.revision, shown.state, shown.plan.as_ref());
    if let (None, Some(job)) = (&shown.plan, &shown.job) {
        text.push_str(&format!(
            "Plan job {} is {}{}.\n",
            job.id,
            job.status,
            job.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default()
        ));
    }
    out.text(&text)
}

/// Without --plan: the pending plan shown, and confirmed on a terminal;
/// elsewhere nothing is named and the API says which plan to name.
async fn confirm_plan(client: &Client, out: &Out, resource: &str, revision: i64) -> Result<Option<String>> {
    use std::io::IsTerminal;
    if out.is_json() || !std::io::stdin().is_terminal() {
        return Ok(None);
    }
    let shown = plan_of(client, resource, Some(revision)).await?;
    let Some(plan) = &shown.plan else { return Ok(None) };
    show_plan(out, &shown)?;
    eprint!("Approve plan {}? [y/N] ", heimdall_core::plan::short(&plan.sha256));
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).map_err(|e| CliError::usage(e.to_string()))?;
    if !matches!(answer.trim(), "y" | "Y" | "yes") {
        return Err(CliError::usage("not approved"));
    }
    Ok(Some(plan.sha256.clone()))
}

/// On a terminal, says what Terraform will destroy and asks; elsewhere
/// (a script, `--output json`) nothing is asked.
async fn confirm_delete(client: &Client, out: &Out, resource: &str) -> Result<()> {
    use std::io::IsTerminal;
    if out.is_json() || !std::io::stdin().is_terminal() {
        return Ok(());
    }
    let r = client.get_resource(resource).await?.resource;
    eprint!(
        "Destroy Resource {} ({}, {})? Terraform destroys everything it manages for it. [y/N] ",
        r.name, r.id, r.status
    );
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).map_err(|e| CliError::usage(e.to_string()))?;
    if !matches!(answer.trim(), "y" | "Y" | "yes") {
        return Err(CliError::usage("not deleted (nothing was changed)"));
    }
    Ok(())
}

fn revision_row(rev: &Revision) -> Vec<String> {
    vec![
        rev.number.to_string(),
        rev.schema_version.to_string(),
        rev.state.to_string(),
        rev.hash.chars().take(12).collect(),
        rev.requested_by.clone(),
        timestamp(rev.requested_at),
        rev.decided_by.clone().unwrap_or_default(),
    ]
}

fn new_resource(
    new: NewResourceArgs,
    input: serde_json::Value,
    region: Option<String>,
    imports: Vec<heimdall_wire::ImportTarget>,
) -> CreateResource {
    let NewResourceArgs { component, schema, environment, name } = new;
    CreateResource { component, schema, environment, name, input, region, imports }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outputs_are_rows() {
        let rows = output_rows(&json!({ "arn": "arn:x", "key": "<sensitive>", "n": 3 }));
        assert_eq!(rows, [vec!["arn", "arn:x"], vec!["key", "<sensitive>"], vec!["n", "3"]]);
        assert!(output_rows(&json!({})).is_empty());
        assert!(output_rows(&serde_json::Value::Null).is_empty());
    }

    #[test]
    fn bad_inline_input_is_a_usage_error_without_the_text() {
        let args = InputArgs { input: Some(r#"{"bucket": "s3cr3t-name""#.into()), input_file: None };
        let err = read_input(&args).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::exit::USAGE);
        assert!(!err.to_string().contains("s3cr3t"), "{err}");
        assert!(err.to_string().starts_with("--input is not valid JSON"), "{err}");
    }
}
