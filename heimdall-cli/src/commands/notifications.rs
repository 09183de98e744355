//! `notification create|list|delete|deliveries`.

use heimdall_core::notify::{Channel, Delivery};

use super::Context;
use crate::args::NotificationCommand;
use crate::error::Result;
use crate::output::timestamp;

pub async fn run(ctx: &Context, cmd: NotificationCommand) -> Result<()> {
    let (client, out) = (ctx.client()?, &ctx.out);
    match cmd {
        NotificationCommand::Create { name, webhook } => {
            let created = client.create_channel(&name, &webhook).await?;
            let line =
                format!("Notification channel created: {} → {}", created.channel.name, created.channel.url);
            let extra = [
                format!("Signing secret (shown once): {}", created.secret),
                "Each POST carries X-Heimdall-Timestamp and X-Heimdall-Signature: sha256=HMAC-SHA256(secret, \
                 \"<timestamp>.<body>\") in hex."
                    .to_owned(),
            ];
            out.done(&created, &line, &extra)
        }
        NotificationCommand::List => {
            let channels = client.list_channels().await?;
            out.list(&channels, &["ID", "NAME", "WEBHOOK", "CREATED BY", "CREATED AT"], |c: &Channel| {
                vec![
                    c.id.clone(),
                    c.name.clone(),
                    c.url.clone(),
                    c.created_by.clone(),
                    timestamp(c.created_at),
                ]
            })
        }
        NotificationCommand::Update { channel, name, webhook } => {
            let change = heimdall_wire::UpdateChannel { name, webhook };
            let updated = client.update_channel(&channel, &change).await?;
            let message = format!("Notification channel updated: {} → {}", updated.name, updated.url);
            out.done(&updated, &message, &[])
        }
        NotificationCommand::Delete { channel } => {
            let deleted = client.delete_channel(&channel).await?;
            out.done(&deleted, &format!("Notification channel deleted: {}", deleted.name), &[])
        }
        NotificationCommand::Deliveries { limit } => {
            let deliveries = client.list_deliveries(limit).await?;
            let headers = ["CREATED AT", "CHANNEL", "EVENT", "STATUS", "ATTEMPTS", "LAST RESULT", "NEXT TRY"];
            out.list(&deliveries, &headers, |d: &Delivery| {
                vec![
                    timestamp(d.created_at),
                    d.channel.clone(),
                    d.action.clone(),
                    d.status.clone(),
                    d.attempts.to_string(),
                    d.last_result.clone().unwrap_or_else(|| "-".into()),
                    d.next_attempt_at.map_or_else(|| "-".into(), timestamp),
                ]
            })
        }
    }
}
