//! `agent token create|list|revoke`: the Agents that run jobs, and the
//! one-time tokens that enroll them.

use heimdall_wire::{Agent, Verb};

use super::Context;
use crate::args::{AgentCommand, AgentTokenCommand, ProgramVerbArg};
use crate::error::{CliError, Result};
use crate::output::{self, optional_timestamp, timestamp};

pub async fn run(ctx: &Context, cmd: AgentCommand) -> Result<()> {
    let client = ctx.client()?;
    let out = &ctx.out;
    match cmd {
        AgentCommand::Token(AgentTokenCommand::Create { name }) => {
            let registration = client.create_agent_registration(&name).await?;
            let expires_at = timestamp(registration.expires_at);
            let api_url = client.base_url().trim_end_matches('/');
            let fingerprint =
                registration.ca_sha256.as_ref().map_or("<the CA's SHA-256>", |sha| sha.as_str());
            out.done(
                &registration,
                &format!("Agent registration created: {} (expires at {expires_at})", registration.name),
                &[
                    format!("Token: {}", registration.token),
                    format!("Installation CA SHA-256: {fingerprint}"),
                    String::new(),
                    "On the Agent's machine, enroll it with (the token on standard input, never the command line):"
                        .to_owned(),
                    format!("  {}", enroll_command(api_url, fingerprint)),
                    "where <dir> will hold its key and agent.toml, and each --allow-module (repeatable) is a"
                        .to_owned(),
                    "glob of module sources it may run, e.g. 'git::https://github.com/acme/terraform-*'."
                        .to_owned(),
                    "It runs `terraform` from its PATH unless you add --terraform PATH.".to_owned(),
                ],
            )?;
            output::warn(
                out,
                &format!(
                    "this token is shown once and enrolls one Agent until it expires at {expires_at}; \
                     use it now or store it safely"
                ),
            );
            Ok(())
        }
        AgentCommand::List => {
            let agents = client.list_agents().await?;
            out.list(&agents, &["ID", "NAME", "STATUS", "LAST SEEN", "ENROLLED AT"], |a: &Agent| {
                vec![
                    a.id.to_string(),
                    a.name.clone(),
                    status(a).to_owned(),
                    optional_timestamp(a.last_seen_at),
                    timestamp(a.created_at),
                ]
            })
        }
        AgentCommand::Show { agent } => {
            let detail = client.get_agent(&agent).await?;
            let a = &detail.agent;
            out.record(
                &detail,
                &[
                    ("ID", a.id.to_string()),
                    ("NAME", a.name.clone()),
                    ("STATUS", status(a).to_owned()),
                    ("LAST SEEN", optional_timestamp(a.last_seen_at)),
                    ("ENROLLED AT", timestamp(a.created_at)),
                    ("LOCAL API", a.local_url.clone().unwrap_or_else(|| "-".into())),
                    (
                        "APPROVED NAMES",
                        if detail.names.is_empty() {
                            "-".into()
                        } else {
                            detail.names.iter().map(|n| n.name.as_str()).collect::<Vec<_>>().join(", ")
                        },
                    ),
                ],
            )?;
            if detail.holdings.is_empty() {
                out.text("\nholds no secret values (as of its last sync)\n")?;
            } else {
                out.section(
                    &HOLDING_COLUMNS.map(|c| if c == "AGENT" { "SECRET" } else { c }),
                    detail.holdings.iter().map(|h| holding_row(&h.secret, h)).collect(),
                )?;
            }
            if detail.behind.is_empty() {
                return Ok(());
            }
            out.text("\nLacks (fetching each current version from another holder):")?;
            out.section(
                &BEHIND_COLUMNS.map(|c| if c == "AGENT" { "SECRET" } else { c }),
                detail.behind.iter().map(|b| behind_row(&b.secret, b)).collect(),
            )
        }
        AgentCommand::AllowName { agent, name } => {
            let approved = client.allow_agent_name(&agent, &name).await?;
            out.done(
                &approved,
                &format!("{agent} may carry {} in its local API certificate", approved.name),
                &["It asks for a new certificate when its [local_api] names list it (restart, or at renewal).".to_owned()],
            )
        }
        AgentCommand::DisallowName { agent, name } => {
            client.disallow_agent_name(&agent, &name).await?;
            let done = serde_json::json!({ "agent": agent, "name": name });
            out.done(
                &done,
                &format!("Withdrawn: {agent} no longer carries {name}; certificates with it are revoked"),
                &[],
            )
        }
        AgentCommand::AllowPrograms { agent, environment, secret, verbs } => {
            let verbs: Vec<Verb> = verbs
                .into_iter()
                .map(|v| match v {
                    ProgramVerbArg::Write => Verb::Write,
                    ProgramVerbArg::Delete => Verb::Delete,
                })
                .collect();
            let allowed = client.allow_programs(&agent, &environment, &secret, &verbs).await?;
            let verbs: Vec<&str> = allowed.verbs.iter().map(|v| v.as_str()).collect();
            out.done(
                &allowed,
                &format!(
                    "Programs of {agent} may {} {} in {}",
                    verbs.join(" and "),
                    allowed.secret,
                    allowed.environment
                ),
                &[],
            )
        }
        AgentCommand::DisallowPrograms { agent, environment, secret } => {
            client.disallow_programs(&agent, &environment, &secret).await?;
            let done = serde_json::json!({ "agent": agent, "environment": environment, "secret": secret });
            out.done(
                &done,
                &format!(
                    "Withdrawn: programs of {agent} no longer write or delete {secret} in {environment}"
                ),
                &[],
            )
        }
        AgentCommand::Programs { agent } => {
            let allowances = client.program_allowances(&agent).await?;
            let tokens = client.program_tokens(&agent).await?;
            if out.is_json() {
                return out.record(&serde_json::json!({ "allowances": allowances, "tokens": tokens }), &[]);
            }
            if allowances.is_empty() {
                out.text(&format!("No allowance: the programs of {agent} only read.\n"))?;
            }
            let verbs = |v: &[Verb]| v.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(",");
            out.section(
                &["ENVIRONMENT", "SECRET", "VERBS", "ALLOWED BY", "ALLOWED AT"],
                allowances
                    .iter()
                    .map(|a| {
                        vec![
                            a.environment.clone(),
                            a.secret.clone(),
                            verbs(&a.verbs),
                            a.created_by.clone(),
                            timestamp(a.created_at),
                        ]
                    })
                    .collect(),
            )?;
            let now = time::OffsetDateTime::now_utc();
            out.section(
                &["TOKEN ID", "PROGRAM", "ENVIRONMENT", "SECRETS", "VERBS", "STATE"],
                tokens
                    .iter()
                    .map(|t| {
                        let state = match (t.revoked_at, t.is_live(now)) {
                            (Some(_), _) => "revoked",
                            (None, false) => "expired",
                            (None, true) => "live",
                        };
                        vec![
                            t.id.clone(),
                            t.name.clone(),
                            t.environment.clone(),
                            t.secrets.join(","),
                            verbs(&t.verbs),
                            state.to_owned(),
                        ]
                    })
                    .collect(),
            )
        }
        AgentCommand::Forget { agent, confirm_store_destroyed } => {
            if !confirm_store_destroyed {
                return Err(CliError::usage(
                    "agent forget says the Agent's value store is destroyed: add --confirm-store-destroyed",
                ));
            }
            let detail = client.forget_agent(&agent).await?;
            let line = format!(
                "Agent forgotten: {} ({}); what it held no longer holds up a delete",
                detail.agent.name, detail.agent.id
            );
            out.done(&detail, &line, &[])
        }
        AgentCommand::Revoke { agent } => {
            let agent = client.revoke_agent(&agent).await?;
            out.done(
                &agent,
                &format!(
                    "Agent revoked: {} ({}); its certificate is refused from now on",
                    agent.name, agent.id
                ),
                &[],
            )
        }
    }
}

/// The columns of [`holding_row`], for a secret's holders (an Agent's
/// holdings put `SECRET` first).
pub(super) const HOLDING_COLUMNS: [&str; 6] =
    ["AGENT", "ENVIRONMENT", "VERSION", "STATE", "HELD SINCE", "REPORTED AT"];

/// One version an Agent's inventory listed, after `first` (the secret, or the Agent).
pub(super) fn holding_row(first: &str, h: &heimdall_core::ports::Holding) -> Vec<String> {
    let state = if h.deactivated { "tombstone" } else { "value" };
    vec![
        first.to_owned(),
        h.environment.clone(),
        h.version.to_string(),
        state.to_owned(),
        optional_timestamp(h.held_since),
        timestamp(h.reported_at),
    ]
}

/// The columns of [`behind_row`].
pub(super) const BEHIND_COLUMNS: [&str; 6] = ["AGENT", "ENVIRONMENT", "HOLDS", "CURRENT", "SINCE", "STATE"];

/// One current version a holder lacks, after `first` (the secret, or the Agent).
pub(super) fn behind_row(first: &str, b: &heimdall_wire::HolderBehind) -> Vec<String> {
    vec![
        first.to_owned(),
        b.environment.clone(),
        b.held.map_or_else(|| "-".to_owned(), |v| v.to_string()),
        b.current.to_string(),
        timestamp(b.since),
        if b.lagging { "lagging" } else { "catching up" }.to_owned(),
    ]
}

fn status(agent: &Agent) -> &'static str {
    if agent.revoked_at.is_some() {
        "revoked"
    } else {
        "active"
    }
}

/// The next command, for the person who runs the Agent; `<dir>` and
/// `<glob>` are theirs to choose. The Agent trusts the API only if its
/// chain holds the CA with this fingerprint.
fn enroll_command(api_url: &str, ca_sha256: &str) -> String {
    format!(
        "heimdall-agent enroll --api {api_url} --ca-sha256 {ca_sha256} --data <dir> --allow-module '<glob>'"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enroll_command_names_the_api_and_pins_its_ca_but_never_holds_the_token() {
        let command = enroll_command("https://heimdall.example.com", "ab12");
        assert_eq!(
            command,
            "heimdall-agent enroll --api https://heimdall.example.com --ca-sha256 ab12 --data <dir> \
             --allow-module '<glob>'"
        );
        assert!(!command.contains("--token"));
    }
}
