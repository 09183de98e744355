//! `heimdall-agent token create|list|revoke`: program tokens, made by
//! whoever runs the Agent, kept by it ([`crate::program_tokens`]).

use std::path::PathBuf;

use heimdall_core::program::{self, ProgramScope, Verb};
use serde_json::json;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::program_tokens::{NewToken, TokenFile};
use crate::setup::SetupError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum VerbArg {
    Read,
    Write,
    Delete,
}

impl From<VerbArg> for Verb {
    fn from(verb: VerbArg) -> Self {
        match verb {
            VerbArg::Read => Verb::Read,
            VerbArg::Write => Verb::Write,
            VerbArg::Delete => Verb::Delete,
        }
    }
}

#[derive(clap::Subcommand, Debug)]
pub enum TokenCommand {
    /// Make a token for one program: it reads (and, with its verbs, writes
    /// or deletes) the secrets --secret names in one environment through
    /// this Agent's local API. Printed once; only its hash is kept.
    Create {
        #[arg(long, env = "HEIMDALL_AGENT_CONFIG")]
        config: PathBuf,
        /// The program's name, as access records show it (`program NAME@AGENT`).
        #[arg(long)]
        name: String,
        /// The one environment it reaches.
        #[arg(long)]
        environment: String,
        /// A secret name or glob (`billing-*`); repeatable.
        #[arg(long = "secret", required = true)]
        secrets: Vec<String>,
        /// What it may do (repeatable): read; write (a new version, numbered
        /// by the API); delete (every version in the environment).
        #[arg(long = "verb", value_enum, default_values_t = [VerbArg::Read])]
        verbs: Vec<VerbArg>,
        /// Lifetime: 90d, 12h, or never.
        #[arg(long, default_value = "90d")]
        expires: String,
        #[arg(long)]
        json: bool,
    },
    /// List this Agent's tokens (never the tokens themselves).
    List {
        #[arg(long, env = "HEIMDALL_AGENT_CONFIG")]
        config: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a live token by id or name: refused from the Agent's next request.
    Revoke {
        #[arg(long, env = "HEIMDALL_AGENT_CONFIG")]
        config: PathBuf,
        id_or_name: String,
        #[arg(long)]
        json: bool,
    },
}

pub fn main(command: TokenCommand) -> Result<(), SetupError> {
    let config = match &command {
        TokenCommand::Create { config, .. } | TokenCommand::List { config, .. } => config,
        TokenCommand::Revoke { config, .. } => config,
    };
    let prepared = crate::runtime::prepare(config)?;
    let runtime = tokio::runtime::Runtime::new().map_err(SetupError::io("start the runtime"))?;
    let own = runtime.block_on(crate::runtime::open_own(prepared))?;
    let file = TokenFile::new(&own.dir, own.agent, own.vault.clone(), crate::alerts::Alerts::default());
    runtime.block_on(file.load_floor())?;
    let channel = own.channel;
    let now = OffsetDateTime::now_utc();
    match command {
        TokenCommand::Create { name, environment, secrets, verbs, expires, json, .. } => {
            let lifetime = program::parse_expires(&expires).map_err(|e| SetupError::Usage(e.message))?;
            let mut unique: Vec<Verb> = Vec::new();
            for verb in verbs.into_iter().map(Verb::from) {
                if !unique.contains(&verb) {
                    unique.push(verb);
                }
            }
            let verbs = unique;
            let new = NewToken { name, environment, secrets, verbs, expires_at: lifetime.map(|l| now + l) };
            // Registered with the API first (its id and scope, never the
            // token): refused there, nothing is kept here.
            let register = |asked| async move {
                channel.register_program_token(&asked).await.map_err(|e| match e {
                    crate::channel::ChannelError::Api(e) => format!("{}: {}", e.code, e.message),
                    other => format!("the API could not register the token (it must be reachable): {other}"),
                })
            };
            let (token, scope) = runtime.block_on(file.create(new, now, register))?;
            if json {
                let mut shown = described(&scope, now);
                shown["token"] = json!(token.as_str());
                println!("{shown}");
            } else {
                eprintln!(
                    "✓ Token for program {} ({}): reads {} in {}, {}. Shown once; only its hash is kept:",
                    scope.name,
                    scope.id,
                    scope.secrets.join(", "),
                    scope.environment,
                    scope.expires_at.map_or("never expires".into(), |at| format!("expires {}", stamp(at)))
                );
                println!("{}", token.as_str());
            }
        }
        TokenCommand::List { json, .. } => {
            let scopes = file.list()?;
            if json {
                println!("{}", json!(scopes.iter().map(|s| described(s, now)).collect::<Vec<_>>()));
            } else {
                let mut rows =
                    vec![["ID", "NAME", "ENVIRONMENT", "SECRETS", "VERBS", "EXPIRES", "STATE"]
                        .map(String::from)];
                for s in &scopes {
                    let verbs: Vec<&str> = s.verbs.iter().map(|v| v.as_str()).collect();
                    let expires = s.expires_at.map_or("never".into(), stamp);
                    let (secrets, state) = (s.secrets.join(","), state(s, now).to_owned());
                    rows.push([
                        s.id.clone(),
                        s.name.clone(),
                        s.environment.clone(),
                        secrets,
                        verbs.join(","),
                        expires,
                        state,
                    ]);
                }
                print_table(&rows);
            }
        }
        TokenCommand::Revoke { id_or_name, json, .. } => {
            let revoked = runtime.block_on(file.revoke(&id_or_name, now))?;
            // Told to the API now; if it cannot be reached, the running
            // Agent's next sync tells it.
            let told = runtime.block_on(channel.revoke_program_token(&revoked.id));
            if let Err(e) = &told {
                eprintln!(
                    "warning: revoked here, but the API was not told ({e}); the Agent's next sync tells it"
                );
            }
            if json {
                let mut shown = described(&revoked, now);
                shown["api_told"] = json!(told.is_ok());
                println!("{shown}");
            } else {
                println!("✓ Revoked the token of program {} ({})", revoked.name, revoked.id);
            }
        }
    }
    Ok(())
}

/// Columns two spaces apart, as the `heimdall` CLI prints its tables.
fn print_table(rows: &[[String; 7]]) {
    let mut widths = [0usize; 7];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in rows {
        let cells: Vec<String> =
            row.iter().zip(widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        println!("{}", cells.join("  ").trim_end());
    }
}

fn stamp(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).unwrap_or_default()
}

fn state(scope: &ProgramScope, now: OffsetDateTime) -> &'static str {
    match (scope.revoked_at, program::check_alive(scope, now)) {
        (Some(_), _) => "revoked",
        (None, Err(_)) => "expired",
        (None, Ok(())) => "live",
    }
}

/// A scope as `--json` shows it: everything but the token's hash.
fn described(scope: &ProgramScope, now: OffsetDateTime) -> serde_json::Value {
    json!({
        "id": scope.id,
        "name": scope.name,
        "environment": scope.environment,
        "environment_id": scope.environment_id,
        "secrets": scope.secrets,
        "verbs": scope.verbs,
        "created_at": stamp(scope.created_at),
        "expires_at": scope.expires_at.map(stamp),
        "revoked_at": scope.revoked_at.map(stamp),
        "state": state(scope, now),
    })
}
