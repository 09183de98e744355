//! `member list|add|show|set-role|remove`.

use heimdall_wire::{Member, Role};

use super::Context;
use crate::args::MemberCommand;
use crate::error::Result;
use crate::output::{self, timestamp};

const HEADERS: &[&str] = &["ID", "EMAIL", "ROLE", "CREATED AT"];

fn row(m: &Member) -> Vec<String> {
    vec![m.id.to_string(), m.email.clone(), m.role.to_string(), timestamp(m.created_at)]
}

pub async fn run(ctx: &Context, cmd: MemberCommand) -> Result<()> {
    let client = ctx.client()?;
    let out = &ctx.out;
    match cmd {
        MemberCommand::List => {
            let members = client.list_members().await?;
            out.list(&members, HEADERS, row)
        }
        MemberCommand::Add { email, role } => {
            let role = Role::from(role);
            let added = client.add_member(&email, role).await?;
            let m = &added.member;
            out.done(
                &added,
                &format!("Member added: {} ({}) as {}", m.email, m.id, m.role),
                &[format!("Token: {}", added.token)],
            )?;
            output::warn(
                out,
                &format!(
                    "this token will not be shown again; hand it to {} over a safe channel \
                     (they log in with `{}`, the token on standard input)",
                    m.email,
                    ctx.login_command()?
                ),
            );
            Ok(())
        }
        MemberCommand::Show { member } => {
            let m = client.get_member(&member).await?;
            out.record(
                &m,
                &[
                    ("ID", m.id.to_string()),
                    ("EMAIL", m.email.clone()),
                    ("ROLE", m.role.to_string()),
                    ("CREATED AT", timestamp(m.created_at)),
                ],
            )
        }
        MemberCommand::SetRole { member, role } => {
            let m = client.change_role(&member, Role::from(role)).await?;
            out.done(&m, &format!("Role changed: {} ({}) is now {}", m.email, m.id, m.role), &[])
        }
        MemberCommand::Remove { member } => {
            let m = client.remove_member(&member).await?;
            out.done(&m, &format!("Member removed: {} ({}); their tokens are revoked", m.email, m.id), &[])
        }
    }
}
