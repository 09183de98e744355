//! `heimdall console`: the web Console, signed in as the profile's member
//! with a one-time link (`heimdall_core::console`). The profile's token
//! never reaches the browser; the link's code is in the URL's fragment
//! (never sent to a server), works once, and ends within a minute.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Context;
use crate::args::ConsoleArgs;
use crate::error::{CliError, Result};
use crate::output::{self, timestamp};

pub async fn run(ctx: &Context, args: ConsoleArgs) -> Result<()> {
    let client = ctx.client()?;
    let link = client.create_console_sign_in_link().await?;
    let url = format!("{}{}", client.base_url().trim_end_matches('/'), link.path);
    let opened = if args.no_open { None } else { open_in_browser(&ctx.config_dir()?, &url) };
    if ctx.out.is_json() {
        return output::json(&serde_json::json!({
            "url": url,
            "expires_at": timestamp(link.expires_at),
            "opened": opened.is_some(),
        }));
    }
    match opened {
        Some(how) => {
            println!(
                "✓ Opened the Console ({how}), signed in as you; the session lasts 12 hours in that tab."
            )
        }
        None => {
            println!("{url}");
            eprintln!(
                "Open this within a minute (until {}): it signs in once, as you, for 12 hours in that tab.",
                timestamp(link.expires_at)
            );
        }
    }
    Ok(())
}

/// Opens `url` in the desktop's browser, if there is a desktop: through a
/// file of this user's (0600) that redirects to it, so that the link is in
/// no process's arguments. What opened it, or `None`.
fn open_in_browser(config_dir: &Path, url: &str) -> Option<String> {
    let opener = opener()?;
    let page = config_dir.join("console-sign-in.html");
    write_redirect(&page, url).ok()?;
    let started = Command::new(&opener)
        .arg(&page)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    drop(started);
    Some(opener.display().to_string())
}

/// `$BROWSER`, else the platform's opener, when a desktop is there to show it.
fn opener() -> Option<PathBuf> {
    if let Some(browser) = std::env::var_os("BROWSER").filter(|b| !b.is_empty()) {
        return Some(PathBuf::from(browser));
    }
    if cfg!(target_os = "macos") {
        return Some(PathBuf::from("open"));
    }
    let desktop =
        ["DISPLAY", "WAYLAND_DISPLAY"].iter().any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()));
    let xdg = Path::new("/usr/bin/xdg-open");
    (desktop && xdg.exists()).then(|| xdg.to_path_buf())
}

/// A page that sends the browser on to `url` at once (no script: the
/// browser's own redirect), readable by this user only.
fn write_redirect(page: &Path, url: &str) -> Result<()> {
    let escaped = url.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;");
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><meta name=\"referrer\" content=\"no-referrer\">\
         <meta http-equiv=\"refresh\" content=\"0; url={escaped}\"><title>Heimdall Console</title>\n"
    );
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(page)
        .map_err(|e| CliError::local(format!("cannot write {}: {e}", page.display())))?;
    // A file left by an older run keeps its mode on open: make it ours alone.
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(|e| CliError::local(format!("cannot restrict {}: {e}", page.display())))?;
    file.write_all(html.as_bytes())
        .map_err(|e| CliError::local(format!("cannot write {}: {e}", page.display())))
}
