//! `token list|create|revoke`: the caller's own API tokens.

use heimdall_wire::TokenInfo;

use super::Context;
use crate::args::TokenCommand;
use crate::error::Result;
use crate::output::{self, optional_timestamp, timestamp};

pub async fn run(ctx: &Context, cmd: TokenCommand) -> Result<()> {
    let client = ctx.client()?;
    let out = &ctx.out;
    match cmd {
        TokenCommand::List => {
            let tokens = client.list_tokens().await?;
            out.list(&tokens, &["ID", "NAME", "CREATED AT", "REVOKED AT"], |t: &TokenInfo| {
                vec![
                    t.id.to_string(),
                    t.name.clone(),
                    timestamp(t.created_at),
                    optional_timestamp(t.revoked_at),
                ]
            })
        }
        TokenCommand::Create { name } => {
            let created = client.create_token(&name).await?;
            out.done(
                &created,
                &format!("Token created: {} ({})", created.info.name, created.info.id),
                &[format!("Token: {}", created.token)],
            )?;
            output::warn(out, "this token will not be shown again; store it now");
            Ok(())
        }
        TokenCommand::Revoke { id } => {
            let info = client.revoke_token(id).await?;
            out.done(&info, &format!("Token revoked: {} ({})", info.name, info.id), &[])
        }
    }
}
