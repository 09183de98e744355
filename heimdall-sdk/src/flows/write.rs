//! Writing a value: numbered by the API, stored by every holder.
use super::{client_for, names, no_url, AgentOptions};
use crate::{Client, Error, Identity, Result};

/// Where [`write_value`] stored a version.
#[derive(Debug)]
pub struct Stored {
    pub secret: String,
    pub environment: String,
    pub version: i64,
    /// The Agents that stored it, by name, in the order they did.
    pub stored_on: Vec<String>,
    /// The Agents that did not, with why.
    pub failed: Vec<(String, Error)>,
}

/// Writes `value` as the next version of `secret` in `environment`, as the
/// person of `identity`: checked against every holder first (a URL for
/// each, `agent_url` only with one), then numbered by the API, then sent
/// with its grant to each holder. A version is numbered once every check
/// passed; the outcome names the Agents that stored it and those that did
/// not (the caller decides whether that is a failure). `keep_previous`:
/// how long the version it replaces stays readable
/// ([`Client::create_version_keeping`]).
pub async fn write_value(
    api: &Client,
    identity: &Identity,
    (secret, environment): (&str, &str),
    value: &str,
    keep_previous: Option<&str>,
    options: AgentOptions<'_>,
) -> Result<Stored> {
    let holders = api.secret_holders(secret, environment).await?;
    if options.agent_url.is_some() && holders.len() > 1 {
        return Err(Error::Invalid(format!(
            "--agent-url names one Agent, but {} Agents hold {environment}: {}; leave --agent-url out",
            holders.len(),
            names(&holders)
        )));
    }
    if options.agent_url.is_none() {
        if let Some(unreported) = holders.iter().find(|h| h.url.is_none()) {
            return Err(no_url(unreported));
        }
    }
    let created = api.create_version_keeping(secret, environment, Some(identity), keep_previous).await?;
    if options.agent_url.is_some() && created.holders.len() != 1 {
        return Err(Error::Invalid(format!(
            "--agent-url names one Agent, but {} Agents hold {environment}; version {} was created and holds no \
             value: write it again without --agent-url",
            created.holders.len(),
            created.version
        )));
    }
    let mut stored = Stored {
        secret: created.secret.clone(),
        environment: created.environment.clone(),
        version: created.version,
        stored_on: Vec::new(),
        failed: Vec::new(),
    };
    for holder in &created.holders {
        let location = &holder.location;
        let Some(url) = options.agent_url.or(location.url.as_deref()) else {
            stored.failed.push((location.agent.clone(), no_url(location)));
            continue;
        };
        let sent = match client_for(location, url, identity, options.timeouts) {
            Ok(agent) => agent
                .put_value(
                    &created.secret,
                    &created.environment,
                    created.version,
                    holder.grant.expose(),
                    value,
                )
                .await
                .map(drop),
            Err(err) => Err(err),
        };
        match sent {
            Ok(()) => stored.stored_on.push(location.agent.clone()),
            Err(err) => stored.failed.push((location.agent.clone(), err)),
        }
    }
    Ok(stored)
}
