//! `secret set|get|deactivate`: values, which only Agents hold.
//!
//! `set` checks the value first (not empty, UTF-8, at most 1 MiB), then
//! asks the API for a version number and one signed write grant per Agent
//! that holds the environment, then sends the value with its grant to each
//! of those Agents' local APIs. `get` asks the holders in order until one
//! answers. Both authenticate to Agents with the profile's client
//! certificate (`crate::identity`).
//!
//! Architecture Invariant: a value is never echoed (not in an error, not
//! in a prompt, not in a log), never passed on a command line, and every
//! buffer that held it is zeroized.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;

use heimdall_core::wire::AgentLocation;
use heimdall_core::{ApiError, ErrorCode};
use heimdall_sdk::AgentClient;
use serde::Serialize;
use zeroize::Zeroizing;

use super::Context;
use crate::error::{CliError, Result};

/// The largest value an Agent stores (its `MAX_VALUE_LEN`).
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;

/// `secret set NAME --environment E [--from-file PATH] [--agent-url URL]`.
pub async fn set(
    ctx: &Context,
    secret: &str,
    environment: &str,
    from_file: Option<&Path>,
    agent_url: Option<&str>,
) -> Result<()> {
    // Everything that can be checked here is checked before the API is
    // asked for a version: bad input creates no version.
    let client = ctx.client()?;
    let (identity, timeouts) = (ctx.identity()?, ctx.timeouts()?);
    let value = read_value(secret, environment, from_file)?;
    let holders = client.secret_holders(secret, environment).await?;
    if agent_url.is_some() && holders.len() > 1 {
        return Err(CliError::usage(format!(
            "--agent-url names one Agent, but {} Agents hold {environment}: {}; leave --agent-url out",
            holders.len(),
            names(&holders)
        )));
    }
    if agent_url.is_none() {
        if let Some(unreported) = holders.iter().find(|h| h.url.is_none()) {
            return Err(no_url(unreported));
        }
    }

    let created = client.create_version(secret, environment, Some(&identity)).await?;
    if agent_url.is_some() && created.holders.len() != 1 {
        return Err(CliError::usage(format!(
            "--agent-url names one Agent, but {} Agents hold {environment}; version {} was created and \
             holds no value: run `heimdall secret set` again without --agent-url",
            created.holders.len(),
            created.version
        )));
    }
    let mut stored_on = Vec::new();
    let mut failures: Vec<(String, CliError)> = Vec::new();
    for holder in &created.holders {
        let location = &holder.location;
        let url = match agent_url.or(location.url.as_deref()) {
            Some(url) => url,
            None => {
                failures.push((location.agent.clone(), no_url(location)));
                continue;
            }
        };
        let agent = AgentClient::for_holder(location, url, &identity).and_then(|a| a.with_timeouts(timeouts));
        let sent = match agent {
            Ok(agent) => agent
                .put_value(
                    &created.secret,
                    &created.environment,
                    created.version,
                    holder.grant.expose(),
                    &value,
                )
                .await
                .map(drop),
            Err(err) => Err(err),
        };
        match sent {
            Ok(()) => {
                if !ctx.out.is_json() {
                    let line = format!(
                        "✓ {} version {} stored in {} on {}\n",
                        super::secrets::shown(&created.secret),
                        created.version,
                        created.environment,
                        location.agent
                    );
                    let mut stdout = std::io::stdout().lock();
                    stdout.write_all(line.as_bytes())?;
                    stdout.flush()?;
                }
                stored_on.push(location.agent.clone());
            }
            Err(err) => failures.push((location.agent.clone(), CliError::Sdk(err))),
        }
    }
    drop(value);

    if ctx.out.is_json() {
        #[derive(Serialize)]
        struct Stored<'a> {
            secret: &'a str,
            environment: &'a str,
            version: i64,
            stored_on: &'a [String],
        }
        crate::output::json(&Stored {
            secret: &created.secret,
            environment: &created.environment,
            version: created.version,
            stored_on: &stored_on,
        })?;
    }
    if failures.is_empty() {
        return Ok(());
    }
    let total = created.holders.len();
    let why: Vec<String> = failures.iter().map(|(agent, err)| format!("{agent}: {err}")).collect();
    let message = format!(
        "{} version {} was stored on {} of {total} Agents holding {}; not on {}",
        super::secrets::shown(&created.secret),
        created.version,
        stored_on.len(),
        created.environment,
        why.join("; ")
    );
    // The first failure decides the exit status.
    Err(match failures[0].1.code() {
        Some(code) => CliError::Coded(ApiError::new(code, message)),
        None => CliError::local(message),
    })
}

/// `secret get NAME --environment E [--version N] [--agent-url URL]`.
pub async fn get(
    ctx: &Context,
    secret: &str,
    environment: &str,
    version: Option<i64>,
    agent_url: Option<&str>,
) -> Result<()> {
    let (mut answers, _) = ask_holders(ctx, environment, agent_url, Ask::One { secret, version }).await?;
    let answer = answers.pop().ok_or_else(|| CliError::local("the Agent answered with no value"))?;
    print_value(ctx, answer)
}

/// What to ask an Agent that holds the environment for.
#[derive(Clone, Copy, Debug)]
pub enum Ask<'a> {
    /// One secret, at `version` or its latest.
    One { secret: &'a str, version: Option<i64> },
    /// The latest of each, all or none, every read recorded in one commit (`heimdall run`).
    Many(&'a [String]),
}

/// Asks the Agents holding `environment`, in order, until one answers. Who
/// is expected at each URL comes from the API: the Agent's id (its
/// certificate's URI SAN) and its certificates; a host name proves
/// nothing. With the API unreachable, from what it said last
/// (`crate::holders`), with a warning. An Agent's refusal is final; only
/// an Agent that cannot be reached is skipped for the next.
pub async fn ask_holders(
    ctx: &Context,
    environment: &str,
    agent_url: Option<&str>,
    ask: Ask<'_>,
) -> Result<(Vec<heimdall_core::wire::ValueAnswer>, AgentClient)> {
    let ((identity, profile_dir), timeouts) = (ctx.identity_and_dir()?, ctx.timeouts()?);
    let secret = match ask {
        Ask::One { secret, .. } => secret,
        Ask::Many(secrets) => secrets.first().map_or("", String::as_str),
    };
    let holders = match ctx.client()?.secret_holders(secret, environment).await {
        Ok(holders) => {
            crate::holders::remember(&profile_dir, environment, &holders, time::OffsetDateTime::now_utc());
            holders
        }
        Err(heimdall_sdk::Error::Transport(why)) => match crate::holders::recall(&profile_dir, environment) {
            Some(learned) => {
                eprintln!(
                    "warning: the API is unreachable ({why}); reading from the Agents it named for {environment} \
                     at {}",
                    crate::output::timestamp(learned.at)
                );
                learned.holders
            }
            None => return Err(heimdall_sdk::Error::Transport(why).into()),
        },
        Err(err) => return Err(err.into()),
    };
    if holders.is_empty() {
        return Err(CliError::Coded(ApiError::new(
            ErrorCode::NoAgent,
            format!(
                "no Agent holds the values of {environment}: an owner runs \
                 `heimdall environment assign-agent {environment} AGENT`"
            ),
        )));
    }
    let targets: Vec<(&AgentLocation, String)> = match agent_url {
        Some(url) if holders.len() == 1 => vec![(&holders[0], url.to_owned())],
        Some(_) => {
            return Err(CliError::usage(format!(
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

    let mut unreachable: Vec<(String, heimdall_sdk::Error)> = Vec::new();
    for (holder, url) in &targets {
        let agent = &holder.agent;
        // A client that cannot be made for this holder: skipped, like one
        // that cannot be reached.
        let client =
            match AgentClient::for_holder(holder, url, &identity).and_then(|c| c.with_timeouts(timeouts)) {
                Ok(client) => client,
                Err(err) => {
                    unreachable.push((agent.clone(), err));
                    continue;
                }
            };
        let asked = async {
            match ask {
                Ask::One { secret, version } => {
                    Ok(vec![client.get_value(secret, environment, version).await?])
                }
                Ask::Many(secrets) => client.get_values(environment, secrets).await,
            }
        };
        match asked.await {
            Ok(answers) => return Ok((answers, client)),
            // A typed answer is the Agent's decision (FORBIDDEN,
            // VERSION_DEACTIVATED, AUDIT_UNAVAILABLE, POLICY_STALE, …):
            // asking another Agent would only ask again.
            Err(heimdall_sdk::Error::Api(refusal)) => return Err(from_agent(agent, refusal)),
            Err(err) => unreachable.push((agent.clone(), err)),
        }
    }
    if unreachable.len() == 1 {
        return Err(unreachable.remove(0).1.into());
    }
    let why: Vec<String> = unreachable.iter().map(|(agent, err)| format!("{agent}: {err}")).collect();
    Err(CliError::local(format!("no Agent holding {environment} answered: {}", why.join("; "))))
}

/// The value on stdout exactly as stored (a newline after it only for a
/// person at a terminal), or `{"name","environment","version","value"}`.
fn print_value(ctx: &Context, answer: heimdall_core::wire::ValueAnswer) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    if ctx.out.is_json() {
        let mut text = Zeroizing::new(
            serde_json::to_vec_pretty(&answer)
                .map_err(|_| CliError::local("cannot render the answer as JSON"))?,
        );
        text.push(b'\n');
        stdout.write_all(&text)?;
    } else {
        stdout.write_all(answer.value.expose().as_bytes())?;
        if std::io::stdout().is_terminal() {
            stdout.write_all(b"\n")?;
        }
    }
    stdout.flush()?;
    Ok(())
}

/// `secret deactivate NAME --environment E --version N`.
pub async fn deactivate(ctx: &Context, secret: &str, environment: &str, version: i64) -> Result<()> {
    let deactivated = ctx.client()?.deactivate_version(secret, environment, version).await?;
    ctx.out.done(
        &deactivated,
        &format!(
            "{secret} version {} deactivated in {environment}; Agents replace it with a tombstone on their \
             next sync",
            deactivated.version
        ),
        &[],
    )
}

/// An Agent's refusal, with its code, naming the Agent.
fn from_agent(agent: &str, mut refusal: ApiError) -> CliError {
    refusal.message = format!("{} (agent {agent})", refusal.message);
    CliError::Coded(refusal)
}

fn no_url(location: &AgentLocation) -> CliError {
    CliError::Coded(ApiError::new(
        ErrorCode::Unavailable,
        format!(
            "agent {} has not reported its local API URL yet; has it synced? (or pass --agent-url)",
            location.agent
        ),
    ))
}

fn names(holders: &[AgentLocation]) -> String {
    holders.iter().map(|h| h.agent.as_str()).collect::<Vec<_>>().join(", ")
}

/// The value to store: `--from-file`, else standard input (a prompt that
/// does not echo on a terminal; otherwise every byte, as is). Refused when
/// empty, not UTF-8, or over [`MAX_VALUE_BYTES`].
fn read_value(secret: &str, environment: &str, from_file: Option<&Path>) -> Result<Zeroizing<String>> {
    let bytes = match from_file {
        Some(path) if path.as_os_str() != "-" => {
            let file = std::fs::File::open(path).map_err(|err| {
                CliError::usage(format!("--from-file {}: cannot read it: {err}", path.display()))
            })?;
            read_capped(file).map_err(|err| {
                CliError::usage(format!("--from-file {}: cannot read it: {err}", path.display()))
            })?
        }
        _ if from_file.is_none() && std::io::stdin().is_terminal() => {
            let prompt = format!("Value of {secret} in {environment} (not shown): ");
            let typed = rpassword::prompt_password(prompt)
                .map_err(|err| CliError::local(format!("cannot read the value from the terminal: {err}")))?;
            Zeroizing::new(typed.into_bytes())
        }
        _ => read_capped(std::io::stdin().lock())
            .map_err(|err| CliError::local(format!("cannot read the value from standard input: {err}")))?,
    };
    check_value(bytes)
}

/// Every byte of `reader`, up to one past the limit (enough to refuse),
/// into one buffer allocated once (no stray copies from regrowth).
fn read_capped(reader: impl Read) -> std::io::Result<Zeroizing<Vec<u8>>> {
    let mut buf = Zeroizing::new(Vec::with_capacity(MAX_VALUE_BYTES + 64));
    reader.take(MAX_VALUE_BYTES as u64 + 1).read_to_end(&mut buf)?;
    Ok(buf)
}

fn check_value(mut bytes: Zeroizing<Vec<u8>>) -> Result<Zeroizing<String>> {
    if bytes.is_empty() {
        return Err(CliError::Coded(ApiError::invalid_input(
            "the value is empty; nothing was stored (pipe it in, e.g. with printf, or use --from-file)",
        )));
    }
    if bytes.len() > MAX_VALUE_BYTES {
        return Err(CliError::Coded(ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("the value is over {MAX_VALUE_BYTES} bytes (1 MiB); nothing was stored"),
        )));
    }
    match String::from_utf8(std::mem::take(&mut *bytes)) {
        Ok(text) => Ok(Zeroizing::new(text)),
        Err(err) => {
            // Give the bytes back to be zeroized; say where, not what.
            let at = err.utf8_error().valid_up_to();
            drop(Zeroizing::new(err.into_bytes()));
            Err(CliError::Coded(ApiError::invalid_input(format!(
                "the value is not UTF-8 text (byte {at} is not); base64 it first, e.g. \
                 `base64 < FILE | heimdall secret set …`; nothing was stored"
            ))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit;

    fn check(bytes: &[u8]) -> Result<Zeroizing<String>> {
        check_value(Zeroizing::new(bytes.to_vec()))
    }

    #[test]
    fn values_are_taken_byte_for_byte() {
        assert_eq!(check(b"s3cret\n").unwrap().as_str(), "s3cret\n", "no trimming");
        assert_eq!(check(b" spaced ").unwrap().as_str(), " spaced ");
        assert_eq!(check("ñandú".as_bytes()).unwrap().as_str(), "ñandú");
        let big = vec![b'a'; MAX_VALUE_BYTES];
        assert_eq!(check(&big).unwrap().len(), MAX_VALUE_BYTES, "exactly 1 MiB is fine");
    }

    #[test]
    fn empty_binary_and_oversized_values_are_refused_without_echo() {
        let err = check(b"").unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::InvalidInput));
        assert!(err.to_string().contains("nothing was stored"), "{err}");

        let err = check(b"hunter2\xff\xfe").unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::InvalidInput));
        let text = err.to_string();
        assert!(text.contains("base64") && text.contains("byte 7"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        assert_eq!(err.exit_code(), exit::INVALID_INPUT);

        let err = check(&vec![b'a'; MAX_VALUE_BYTES + 1]).unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::PayloadTooLarge));
    }

    #[test]
    fn reading_stops_one_byte_past_the_limit() {
        let source = std::io::repeat(b'x').take(3 * MAX_VALUE_BYTES as u64);
        let read = read_capped(source).unwrap();
        assert_eq!(read.len(), MAX_VALUE_BYTES + 1);
        let read = read_capped(&b"a\r\n\0b"[..]).unwrap();
        assert_eq!(read.as_slice(), b"a\r\n\0b");
    }
}
