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

use heimdall_core::{ApiError, ErrorCode};
pub use heimdall_sdk::flows::Ask;
use heimdall_sdk::flows::{self, AgentOptions};
use heimdall_sdk::AgentClient;
use serde::Serialize;
use zeroize::Zeroizing;

use super::Context;
use crate::error::{CliError, Result};

/// The largest value an Agent stores (its `MAX_VALUE_LEN`).
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;

/// What `secret set` was asked.
pub struct NewValue<'a> {
    pub secret: &'a str,
    pub environment: &'a str,
    pub from_file: Option<&'a Path>,
    pub agent_url: Option<&'a str>,
    pub keep_previous: Option<&'a str>,
}

/// `secret set NAME --environment E [--from-file PATH] [--agent-url URL]
/// [--keep-previous PERIOD]`: `heimdall_sdk::flows::write_value`, one line
/// per Agent that stored it.
pub async fn set(ctx: &Context, write: NewValue<'_>) -> Result<()> {
    let NewValue { secret, environment, from_file, agent_url, keep_previous } = write;
    // Everything that can be checked here is checked before the API is
    // asked for a version: bad input creates no version.
    if let Some(keep) = keep_previous {
        heimdall_core::retention::parse_keep_previous(keep).map_err(CliError::Coded)?;
    }
    let client = ctx.client()?;
    let (identity, timeouts) = (ctx.identity()?, ctx.timeouts()?);
    let value = read_value(secret, environment, from_file)?;
    let options = AgentOptions { agent_url, timeouts: Some(timeouts), memory: None };
    let stored =
        flows::write_value(&client, &identity, (secret, environment), &value, keep_previous, options).await;
    drop(value);
    let stored = stored.map_err(usage_or_sdk)?;
    let shown = super::secrets::shown(&stored.secret);
    if ctx.out.is_json() {
        #[derive(Serialize)]
        struct Stored<'a> {
            secret: &'a str,
            environment: &'a str,
            version: i64,
            stored_on: &'a [String],
        }
        crate::output::json(&Stored {
            secret: &stored.secret,
            environment: &stored.environment,
            version: stored.version,
            stored_on: &stored.stored_on,
        })?;
    } else {
        let mut stdout = std::io::stdout().lock();
        for agent in &stored.stored_on {
            let line =
                format!("✓ {shown} version {} stored in {} on {agent}\n", stored.version, stored.environment);
            stdout.write_all(line.as_bytes())?;
        }
        stdout.flush()?;
    }
    if stored.failed.is_empty() {
        return Ok(());
    }
    let total = stored.stored_on.len() + stored.failed.len();
    let why: Vec<String> = stored.failed.iter().map(|(agent, err)| format!("{agent}: {err}")).collect();
    let message = format!(
        "{shown} version {} was stored on {} of {total} Agents holding {}; not on {}",
        stored.version,
        stored.stored_on.len(),
        stored.environment,
        why.join("; ")
    );
    // An Agent that could not be reached answered no code: the write is
    // then `UNAVAILABLE` there, so scripts and `--output json` can tell.
    let code = stored.failed[0].1.code().unwrap_or(ErrorCode::Unavailable);
    Err(CliError::Coded(ApiError::new(code, message)))
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

/// `heimdall_sdk::flows::read_values` with the profile's identity, and the
/// holders the API named last for when it cannot be reached (with a
/// warning).
pub async fn ask_holders(
    ctx: &Context,
    environment: &str,
    agent_url: Option<&str>,
    ask: Ask<'_>,
) -> Result<(Vec<heimdall_wire::ValueAnswer>, AgentClient)> {
    let ((identity, profile_dir), timeouts) = (ctx.identity_and_dir()?, ctx.timeouts()?);
    let memory = flows::HoldersFile::new(profile_dir);
    let options = AgentOptions { agent_url, timeouts: Some(timeouts), memory: Some(&memory) };
    let read = flows::read_values(&ctx.client()?, &identity, environment, ask, options)
        .await
        .map_err(usage_or_sdk)?;
    if let Some(at) = read.holders_from {
        eprintln!(
            "warning: the API is unreachable; reading from the Agents it named for {environment} at {}",
            crate::output::timestamp(at)
        );
    }
    Ok((read.answers, read.client))
}

/// The SDK's `Invalid` for flags that do not fit together is a usage error.
fn usage_or_sdk(err: heimdall_sdk::Error) -> CliError {
    match err {
        heimdall_sdk::Error::Invalid(why) if why.starts_with("--") => CliError::usage(why),
        other => CliError::Sdk(other),
    }
}

/// The value on stdout exactly as stored (a newline after it only for a
/// person at a terminal), or `{"name","environment","version","value"}`.
fn print_value(ctx: &Context, answer: heimdall_wire::ValueAnswer) -> Result<()> {
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
