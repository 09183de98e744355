//! Configuration as code on the SDK's declarative layer
//! (`heimdall_sdk::config`): `plan` shows the diff, `apply` runs it after
//! asking, `export-config` writes what the organization has.

use std::io::IsTerminal;
use std::path::Path;

use heimdall_core::ApiError;
use heimdall_sdk::config::{self, Change, Config, Plan, PlanOptions};
use heimdall_sdk::Client;
use serde::Serialize;

use super::Context;
use crate::args::{ApplyArgs, PlanArgs};
use crate::error::{CliError, Result};
use crate::output::{json, Out};

/// `heimdall plan -f FILE [--prune] [--detailed-exitcode]`.
pub async fn plan(ctx: &Context, args: PlanArgs) -> Result<()> {
    let client = ctx.client()?;
    let plan = planned(&client, &args.file, args.prune).await?;
    show(&ctx.out, &plan)?;
    if args.detailed_exitcode && !plan.is_empty() {
        return Err(CliError::Status(2));
    }
    Ok(())
}

/// `heimdall apply -f FILE [--prune] [--auto-approve]`.
pub async fn apply(ctx: &Context, args: ApplyArgs) -> Result<()> {
    let from_stdin = args.file.as_os_str() == "-";
    let asks = !args.auto_approve;
    if asks && (from_stdin || !std::io::stdin().is_terminal()) {
        return Err(CliError::usage(
            "apply asks before it changes anything, on a terminal: pass --auto-approve to apply without asking",
        ));
    }
    let client = ctx.client()?;
    let plan = planned(&client, &args.file, args.prune).await?;
    if plan.is_empty() {
        return show(&ctx.out, &plan);
    }
    if asks {
        show(&ctx.out, &plan)?;
        eprint!("Apply these {} changes? Only 'yes' applies: ", plan.changes.len());
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer).map_err(|e| CliError::local(e.to_string()))?;
        if answer.trim() != "yes" {
            return Err(CliError::usage("not applied (nothing was changed)"));
        }
    }
    let total = plan.changes.len();
    let mut step = 0;
    let progress = |change: &Change| {
        step += 1;
        if !ctx.out.is_json() {
            eprintln!("[{step}/{total}] {}", change.to_string().lines().next().unwrap_or_default());
        }
    };
    match config::apply(&client, &plan, progress).await {
        Ok(applied) => report(&ctx.out, &applied),
        Err(refused) => {
            // What ran stays, and what the API showed once is printed now
            // or never: the report comes before the error, in JSON too.
            if ctx.out.is_json() {
                report(&ctx.out, &refused.applied)?;
            } else {
                let failed = refused.failed.to_string();
                let failed = failed.lines().next().unwrap_or_default();
                eprintln!(
                    "stopped at {failed}: {} of {total} changes were applied before it; `heimdall plan` shows what is left",
                    refused.applied.done.len()
                );
                report_shown_once(&ctx.out, &refused.applied)?;
            }
            Err(refused.error.into())
        }
    }
}

/// `heimdall export-config`: YAML (or JSON with `--output json`) that
/// `apply -f` reads back as no change.
pub async fn export(ctx: &Context) -> Result<()> {
    let current = config::current(&ctx.client()?).await?;
    if ctx.out.is_json() {
        return json(&current);
    }
    let mut text = current.to_yaml().map_err(|e| CliError::local(e.to_string()))?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    ctx.out.text(&format!(
        "# heimdall export-config: `heimdall plan -f FILE` compares an organization with it\n{text}"
    ))
}

/// The file against the organization: whoever applies is never pruned.
async fn planned(client: &Client, file: &Path, prune: bool) -> Result<Plan> {
    let text = super::read_file_or_stdin(file)?;
    let desired = Config::parse(&text)
        .map_err(|e| CliError::Coded(ApiError::invalid_input(format!("{}: {e}", file.display()))))?;
    let me = client.whoami().await?;
    let current = config::current(client).await?;
    let options = PlanOptions { prune, keep_member: Some(me.member.email) };
    config::plan(&desired, &current, &options)
        .map_err(|e| CliError::Coded(ApiError::invalid_input(format!("{}: {e}", file.display()))))
}

/// The plan: `+`, `~`, `-` lines with their fields, and a count; or JSON.
fn show(out: &Out, plan: &Plan) -> Result<()> {
    if out.is_json() {
        return json(plan);
    }
    if plan.is_empty() {
        return out.text(&format!(
            "No changes: the organization is as the file says ({} objects).\n",
            plan.unchanged
        ));
    }
    let mut text: String = plan.changes.iter().map(|c| format!("{c}\n")).collect();
    let (create, update, delete) = plan.counts();
    text.push_str(&format!("\nPlan: {create} to create, {update} to update, {delete} to delete.\n"));
    out.text(&text)
}

#[derive(Serialize)]
struct Report<'a> {
    applied: &'a [Change],
    shown_once: Vec<Shown<'a>>,
}

/// A credential the API showed once: `what` it is for, and its `value`.
#[derive(Serialize)]
struct Shown<'a> {
    what: &'a str,
    value: &'a str,
}

fn report(out: &Out, applied: &config::Applied) -> Result<()> {
    if out.is_json() {
        let shown_once =
            applied.shown_once.iter().map(|s| Shown { what: &s.what, value: s.value.expose() }).collect();
        return json(&Report { applied: &applied.done, shown_once });
    }
    report_shown_once(out, applied)?;
    out.text(&format!("✓ Applied {} changes.\n", applied.done.len()))
}

/// What the API shows once (a new member's token, a new channel's signing
/// secret), once: it is not kept anywhere.
fn report_shown_once(out: &Out, applied: &config::Applied) -> Result<()> {
    if out.is_json() || applied.shown_once.is_empty() {
        return Ok(());
    }
    let lines: String = applied
        .shown_once
        .iter()
        .map(|s| format!("{}: {} (shown once: hand it over a safe channel)\n", s.what, s.value.expose()))
        .collect();
    out.text(&lines)
}
