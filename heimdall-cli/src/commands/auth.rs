//! `login` (with the profile's client certificate), `logout`, `whoami`,
//! `profile list`.

use std::io::{BufRead, IsTerminal, Write};

use heimdall_core::{ErrorCode, Redacted};
use heimdall_sdk::Client;
use serde::Serialize;
use zeroize::Zeroize;

use super::Context;
use crate::args::LoginArgs;
use crate::config::{self, Config, Profile};
use crate::error::{CliError, Result};
use crate::identity;
use crate::output::{self, timestamp};

pub const DEFAULT_PROFILE: &str = "default";

pub async fn login(ctx: &Context, args: LoginArgs) -> Result<()> {
    // Validate before asking for anything.
    let api_url = ctx
        .api_url
        .clone()
        .ok_or_else(|| CliError::usage("login needs the API's URL: heimdall login --api-url URL"))?;
    let name = ctx.profile.clone().unwrap_or_else(|| DEFAULT_PROFILE.to_owned());
    config::validate_profile_name(&name)?;
    let dir = ctx.config_dir()?;

    // The token is a credential: from the environment or standard input,
    // never the command line.
    let token = match std::env::var(super::TOKEN_ENV).ok().filter(|t| !t.trim().is_empty()) {
        Some(token) => Redacted::new(token.trim().to_owned()),
        None => read_token_from_stdin()?,
    };
    if token.expose().is_empty() {
        return Err(CliError::usage("the token is empty"));
    }
    let ca = match (&args.ca_file, &args.ca_sha256) {
        (Some(path), _) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| CliError::local(format!("cannot read --ca-file {}: {e}", path.display())))?,
        ),
        (None, Some(pin)) => Some(Client::fetch_pinned_ca(&api_url, pin).await?),
        (None, None) => super::ca_from_env()?,
    };
    let client = super::connect(&api_url, token.expose(), ca.as_deref(), ctx.timeouts()?)?;
    let me = client.whoami().await?;

    let mut config = Config::load(&dir)?;
    config.profiles.insert(name.clone(), Profile { api_url: api_url.clone(), token, ca });
    config.current_profile = Some(name.clone());
    let path = config.save(&dir)?;

    // The client certificate for Agents' local APIs: a new key every time
    // (logging in again renews it).
    let certificate = if args.no_certificate {
        Certificate::Skipped
    } else {
        match identity::issue(&client, &dir, &name, args.new_key).await {
            Ok(issued) => Certificate::Issued(issued),
            Err(err) if err.code() == Some(ErrorCode::Unavailable) => Certificate::Unavailable,
            Err(err) => {
                return Err(CliError::local(format!(
                    "logged in (profile {name:?} saved), but no client certificate was issued: {err}; \
                     run `heimdall login` again, or add --no-certificate"
                )))
            }
        }
    };

    #[derive(Serialize)]
    struct CertificateJson<'a> {
        sha256: &'a str,
        not_after: String,
        dir: String,
    }
    #[derive(Serialize)]
    struct LoggedIn<'a> {
        profile: &'a str,
        api_url: &'a str,
        #[serde(flatten)]
        who: &'a heimdall_wire::WhoAmI,
        certificate: Option<CertificateJson<'a>>,
    }
    let cert_dir = identity::profile_dir(&dir, &name);
    let line = format!(
        "Logged in to {api_url} as {} ({} of {})",
        me.member.email, me.member.role, me.organization.name
    );
    let mut extra = vec![format!("  Profile {name:?} saved in {} and made current.", path.display())];
    match &certificate {
        Certificate::Issued(issued) => {
            extra.push(format!("✓ Client certificate issued (valid until {})", timestamp(issued.not_after)));
            extra.push(format!(
                "  Key and certificate in {} (the key was made here and never leaves this machine).",
                cert_dir.display()
            ));
        }
        Certificate::Unavailable => output::warn(
            &ctx.out,
            "this API issues no client certificates (it runs without --ca-dir), so `heimdall secret set` \
             and `secret get` cannot reach Agents with this profile",
        ),
        Certificate::Skipped => {}
    }
    let json = LoggedIn {
        profile: &name,
        api_url: &api_url,
        who: &me,
        certificate: match &certificate {
            Certificate::Issued(issued) => Some(CertificateJson {
                sha256: issued.sha256.as_str(),
                not_after: timestamp(issued.not_after),
                dir: cert_dir.display().to_string(),
            }),
            _ => None,
        },
    };
    ctx.out.done(&json, &line, &extra)
}

/// What became of the client certificate at login.
enum Certificate {
    Issued(heimdall_wire::IssuedCertificate),
    /// The API has no CA.
    Unavailable,
    /// `--no-certificate`.
    Skipped,
}

fn read_token_from_stdin() -> Result<Redacted<String>> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("Paste the API token (input is not hidden): ");
        let _ = std::io::stderr().flush();
    }
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .map_err(|err| CliError::local(format!("cannot read the token from standard input: {err}")))?;
    let token = Redacted::new(line.trim().to_owned());
    // `line` holds the token too.
    line.zeroize();
    Ok(token)
}

pub fn logout(ctx: &Context) -> Result<()> {
    let dir = ctx.config_dir()?;
    let mut config = Config::load(&dir)?;
    let name = match ctx.profile.clone().or_else(|| config.current_profile.clone()) {
        Some(name) => name,
        None => return Err(CliError::not_logged_in("not logged in: there is no profile to log out of")),
    };
    if config.profiles.remove(&name).is_none() {
        return Err(CliError::Coded(heimdall_core::ApiError::not_found(format!("profile {name:?}"))));
    }
    if config.current_profile.as_deref() == Some(name.as_str()) {
        config.current_profile = None;
    }
    let path = config.save(&dir)?;
    if config::validate_profile_name(&name).is_ok() {
        identity::remove(&dir, &name)?;
    }
    let line = format!("Logged out: profile {name:?} removed from {}", path.display());
    let hint = "  The token itself stays valid until revoked (`heimdall token revoke ID`).".to_owned();
    ctx.out.done(&serde_json::json!({ "profile": name, "logged_out": true }), &line, &[hint])
}

pub async fn whoami(ctx: &Context) -> Result<()> {
    let client = ctx.client()?;
    let me = client.whoami().await?;
    ctx.out.record(
        &me,
        &[
            ("EMAIL", me.member.email.clone()),
            ("ROLE", me.member.role.to_string()),
            ("MEMBER ID", me.member.id.to_string()),
            ("ORGANIZATION", me.organization.name.clone()),
            ("ORGANIZATION ID", me.organization.id.to_string()),
            ("MEMBER SINCE", timestamp(me.member.created_at)),
            ("API URL", client.base_url().trim_end_matches('/').to_owned()),
        ],
    )
}

pub fn profile_list(ctx: &Context) -> Result<()> {
    let dir = ctx.config_dir()?;
    let config = Config::load(&dir)?;
    #[derive(Serialize)]
    struct Row<'a> {
        name: &'a str,
        api_url: &'a str,
        current: bool,
    }
    let rows: Vec<Row<'_>> = config
        .profiles
        .iter()
        .map(|(name, profile)| Row {
            name,
            api_url: &profile.api_url,
            current: config.current_profile.as_deref() == Some(name.as_str()),
        })
        .collect();
    ctx.out.list(&rows, &["CURRENT", "NAME", "API URL"], |row| {
        vec![if row.current { "*" } else { "" }.to_owned(), row.name.to_owned(), row.api_url.to_owned()]
    })?;
    if rows.is_empty() {
        output::warn(&ctx.out, "no profiles yet: run `heimdall login --api-url URL` or `heimdall dev`");
    }
    Ok(())
}
