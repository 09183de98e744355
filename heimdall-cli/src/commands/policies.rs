//! `policy create|list|show|update|versions|delete`.

use heimdall_wire::{CreatePolicy, Policy, PolicyVersion, UpdatePolicy};

use super::{read_file_or_stdin, Context};
use crate::args::PolicyCommand;
use crate::error::{CliError, Result};
use crate::output::timestamp;

pub async fn run(ctx: &Context, cmd: PolicyCommand) -> Result<()> {
    let out = &ctx.out;
    match cmd {
        PolicyCommand::Create { name, file, description } => {
            // Read the file before resolving credentials: a typo in the path
            // should not cost a round trip.
            let text = read_file_or_stdin(&file)?;
            if text.trim().is_empty() {
                return Err(CliError::usage(format!("{} is empty: nothing to create", file.display())));
            }
            let client = ctx.client()?;
            let policy = client.create_policy(&CreatePolicy { name, description, text }).await?;
            out.done(&policy, &format!("Policy created: {} ({})", policy.name, policy.id), &[])
        }
        PolicyCommand::List => {
            let policies = ctx.client()?.list_policies().await?;
            out.list(&policies, &["ID", "NAME", "DESCRIPTION", "CREATED BY", "CREATED AT"], |p: &Policy| {
                vec![
                    p.id.to_string(),
                    p.name.clone(),
                    p.description.clone(),
                    p.created_by.clone(),
                    timestamp(p.created_at),
                ]
            })
        }
        PolicyCommand::Show { policy } => {
            let p = ctx.client()?.get_policy(&policy).await?;
            out.record(
                &p,
                &[
                    ("ID", p.id.to_string()),
                    ("NAME", p.name.clone()),
                    ("DESCRIPTION", p.description.clone()),
                    ("VERSION", p.version.to_string()),
                    ("CREATED BY", p.created_by.clone()),
                    ("CREATED AT", timestamp(p.created_at)),
                    ("UPDATED BY", p.updated_by.clone().unwrap_or_default()),
                    ("UPDATED AT", p.updated_at.map(timestamp).unwrap_or_default()),
                ],
            )?;
            let mut text = format!("\n{}", p.text.trim_end());
            text.push('\n');
            out.text(&text)
        }
        PolicyCommand::Update { policy, file, description, expected_version } => {
            let text = match &file {
                Some(file) => {
                    let text = read_file_or_stdin(file)?;
                    if text.trim().is_empty() {
                        return Err(CliError::usage(format!(
                            "{} is empty: delete the policy instead",
                            file.display()
                        )));
                    }
                    Some(text)
                }
                None => None,
            };
            let client = ctx.client()?;
            let before = client.get_policy(&policy).await?;
            let change = UpdatePolicy { text, description, expected_version };
            let p = client.update_policy(&before.id.to_string(), &change).await?;
            let message = if p.version == before.version {
                format!("Policy unchanged: {} (version {})", p.name, p.version)
            } else {
                format!("Policy updated: {} (version {})", p.name, p.version)
            };
            out.done(&p, &message, &[])
        }
        PolicyCommand::Versions { policy } => {
            let versions = ctx.client()?.policy_versions(&policy).await?;
            out.list(
                &versions,
                &["VERSION", "WRITTEN BY", "WRITTEN AT", "DESCRIPTION"],
                |v: &PolicyVersion| {
                    vec![
                        v.version.to_string(),
                        v.written_by.clone(),
                        timestamp(v.written_at),
                        v.description.clone(),
                    ]
                },
            )
        }
        PolicyCommand::Delete { policy } => {
            // The API answers 204: show what is being deleted from a lookup.
            let client = ctx.client()?;
            let p = client.get_policy(&policy).await?;
            client.delete_policy(&p.id.to_string()).await?;
            out.done(&p, &format!("Policy deleted: {} ({})", p.name, p.id), &[])
        }
    }
}
