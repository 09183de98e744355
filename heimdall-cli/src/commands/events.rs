//! `event list`: the organization's audit feed.

use heimdall_sdk::EventQuery;
use heimdall_wire::AuditEvent;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::Context;
use crate::args::EventCommand;
use crate::error::{CliError, Result};
use crate::output::timestamp;

pub async fn run(ctx: &Context, cmd: EventCommand) -> Result<()> {
    match cmd {
        EventCommand::List { limit, before, action } => {
            let before = before
                .map(|text| {
                    OffsetDateTime::parse(text.trim(), &Rfc3339).map_err(|_| {
                        CliError::usage("--before takes an RFC 3339 time, e.g. 2025-01-31T12:00:00Z")
                    })
                })
                .transpose()?;
            let client = ctx.client()?;
            let events = client.list_events(&EventQuery { limit, before, action }).await?;
            ctx.out.list(&events, &["AT", "ACTOR", "ACTION", "TARGET"], |e: &AuditEvent| {
                vec![timestamp(e.at), e.actor.clone(), e.action.clone(), target(e)]
            })
        }
    }
}

/// `kind name (id)` when the target still has a name, else `kind:id`.
fn target(e: &AuditEvent) -> String {
    match (&e.target_name, e.target.split_once(':')) {
        (Some(name), Some((kind, id))) => format!("{kind} {name} ({id})"),
        _ => e.target.clone(),
    }
}
