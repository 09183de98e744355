//! `certificate list|revoke`: what the installation CA issued.

use heimdall_core::secrets::{CertificateKind, IssuedCertificateInfo};

use super::Context;
use crate::args::CertificateCommand;
use crate::error::Result;
use crate::output::{optional_timestamp, timestamp};

pub async fn run(ctx: &Context, cmd: CertificateCommand) -> Result<()> {
    let client = ctx.client()?;
    match cmd {
        CertificateCommand::List => {
            let certificates = client.list_certificates().await?;
            ctx.out.list(
                &certificates,
                &["SHA256", "KIND", "SUBJECT", "ISSUED AT", "NOT AFTER", "REVOKED AT"],
                |c: &IssuedCertificateInfo| {
                    vec![
                        c.sha256.to_string(),
                        kind(c.kind).to_owned(),
                        c.subject.clone(),
                        timestamp(c.created_at),
                        timestamp(c.not_after),
                        optional_timestamp(c.revoked_at),
                    ]
                },
            )
        }
        CertificateCommand::Revoke { sha256 } => {
            let revoked = client.revoke_certificate(&sha256).await?;
            let effect = match revoked.kind {
                CertificateKind::Member => "Agents refuse it from their next sync",
                CertificateKind::AgentServer => {
                    "clients refuse it now; the Agent gets a new one at its next sync"
                }
            };
            ctx.out.done(
                &revoked,
                &format!(
                    "Certificate revoked: {} ({} {}); {effect}",
                    revoked.sha256,
                    kind(revoked.kind),
                    revoked.subject
                ),
                &[],
            )
        }
    }
}

fn kind(kind: CertificateKind) -> &'static str {
    match kind {
        CertificateKind::Member => "member",
        CertificateKind::AgentServer => "agent-local-api",
    }
}
