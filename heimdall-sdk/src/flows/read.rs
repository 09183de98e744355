//! Reading values: the holders in order, failover, the API-down fallback.

use heimdall_wire::{AgentLocation, ValueAnswer};
use time::OffsetDateTime;

use super::{client_for, names, no_agent, no_url, AgentOptions};
use crate::{AgentClient, Client, Error, ErrorCode, Identity, Result};

/// What to read.
#[derive(Clone, Copy, Debug)]
pub enum Ask<'a> {
    /// One secret, at `version` or its latest.
    One { secret: &'a str, version: Option<i64> },
    /// The latest of each, all or none, every read recorded in one commit
    /// (what `heimdall run` reads).
    Many(&'a [String]),
}

/// What [`read_values`] got, and from where.
#[derive(Debug)]
pub struct Read {
    pub answers: Vec<ValueAnswer>,
    /// The Agent that answered, by name.
    pub agent: String,
    /// A client for it, as the read used (for more of the same: a watch).
    pub client: AgentClient,
    /// When the API named the holders read from, if it could not be
    /// reached now and [`AgentOptions::memory`] was used.
    pub holders_from: Option<OffsetDateTime>,
}

/// Reads from the Agents holding `environment`, in order, until one
/// answers: an Agent's refusal (its typed error) is final, naming the
/// Agent; one that cannot be reached, or that lacks the current version
/// (`VERSION_NOT_HELD`), passes to the next. With the API
/// unreachable, from the holders it named last (`options.memory`).
pub async fn read_values(
    api: &Client,
    identity: &Identity,
    environment: &str,
    ask: Ask<'_>,
    options: AgentOptions<'_>,
) -> Result<Read> {
    let secret = match ask {
        Ask::One { secret, .. } => secret,
        Ask::Many(secrets) => secrets.first().map_or("", String::as_str),
    };
    let (holders, holders_from) = match api.secret_holders(secret, environment).await {
        Ok(holders) => {
            if let Some(memory) = options.memory {
                memory.remember(environment, &holders, OffsetDateTime::now_utc());
            }
            (holders, None)
        }
        Err(Error::Transport(why)) => match options.memory.and_then(|m| m.recall(environment)) {
            Some((at, holders)) => (holders, Some(at)),
            None => return Err(Error::Transport(why)),
        },
        Err(err) => return Err(err),
    };
    if holders.is_empty() {
        return Err(no_agent(environment));
    }
    let targets: Vec<(&AgentLocation, String)> = match options.agent_url {
        Some(url) if holders.len() == 1 => vec![(&holders[0], url.to_owned())],
        Some(_) => {
            return Err(Error::Invalid(format!(
                "--agent-url names one Agent, but {} Agents hold {environment}: {}; leave --agent-url out",
                holders.len(),
                names(&holders)
            )))
        }
        None => {
            let reported: Vec<(&AgentLocation, String)> =
                holders.iter().filter_map(|h| Some((h, h.url.clone()?))).collect();
            if reported.is_empty() {
                return Err(no_url(&holders[0]));
            }
            reported
        }
    };
    let mut unreachable: Vec<(String, Error)> = Vec::new();
    let mut not_held: Option<heimdall_core::ApiError> = None;
    for (holder, url) in &targets {
        let agent = holder.agent.clone();
        // A client that cannot be made for this holder: skipped, like one
        // that cannot be reached.
        let client = match client_for(holder, url, identity, options.timeouts) {
            Ok(client) => client,
            Err(err) => {
                unreachable.push((agent, err));
                continue;
            }
        };
        let asked = match ask {
            Ask::One { secret, version } => {
                client.get_value(secret, environment, version).await.map(|a| vec![a])
            }
            Ask::Many(secrets) => client.get_values(environment, secrets).await,
        };
        match asked {
            Ok(answers) => return Ok(Read { answers, agent, client, holders_from }),
            // It lacks the current version (a write it missed): another
            // holder may have it; never an older value instead.
            Err(Error::Api(mut lacking)) if lacking.code == ErrorCode::VersionNotHeld => {
                lacking.message = format!("{} (agent {agent})", lacking.message);
                not_held.get_or_insert(lacking);
            }
            // The Agent's decision (FORBIDDEN, VERSION_DEACTIVATED,
            // AUDIT_UNAVAILABLE, POLICY_STALE, …): another would only ask again.
            Err(Error::Api(mut refusal)) => {
                refusal.message = format!("{} (agent {agent})", refusal.message);
                return Err(Error::Api(refusal));
            }
            Err(err) => unreachable.push((agent, err)),
        }
    }
    // No holder reachable had the current version: say so, not "unreachable".
    if let Some(lacking) = not_held {
        return Err(Error::Api(lacking));
    }
    if unreachable.len() == 1 {
        return Err(unreachable.remove(0).1);
    }
    let why: Vec<String> = unreachable.iter().map(|(agent, err)| format!("{agent}: {err}")).collect();
    Err(Error::Transport(format!("no Agent holding {environment} answered: {}", why.join("; "))))
}
