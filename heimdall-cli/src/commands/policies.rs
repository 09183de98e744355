//! `policy create|list|show|delete`.

use heimdall_core::wire::{CreatePolicy, Policy};

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
        PolicyCommand::Show { id } => {
            let p = ctx.client()?.get_policy(id).await?;
            out.record(
                &p,
                &[
                    ("ID", p.id.to_string()),
                    ("NAME", p.name.clone()),
                    ("DESCRIPTION", p.description.clone()),
                    ("CREATED BY", p.created_by.clone()),
                    ("CREATED AT", timestamp(p.created_at)),
                ],
            )?;
            let mut text = format!("\n{}", p.text.trim_end());
            text.push('\n');
            out.text(&text)
        }
        PolicyCommand::Delete { id } => {
            // The API answers 204: show what is being deleted from a lookup.
            let client = ctx.client()?;
            let p = client.get_policy(id).await?;
            client.delete_policy(id).await?;
            out.done(&p, &format!("Policy deleted: {} ({})", p.name, p.id), &[])
        }
    }
}
