//! What `heimdall dev` prints once it runs: the banner and the tour, or
//! with `--output json` the same facts as one object. What the Agent runs
//! comes from the settings `heimdall-agent dev-setup` printed; the tour is
//! the README's, the block `tests/e2e.rs` runs against `heimdall dev`.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

use super::agent::{AgentState, Running, AGENT_LOG_FILE, AGENT_NAME};
use super::{Dev, DEV_PROFILE, LOG_FILE};
use crate::error::Result;
use crate::output::timestamp;

pub(super) fn print(dev: &Dev, agent: &AgentState, json: bool) -> Result<()> {
    let (me, certificate) = (&dev.me, dev.certificate.as_ref());
    let data = &dev.data;
    let (log, agent_log) = (data.join(LOG_FILE), data.join(AGENT_LOG_FILE));
    let key_dir = crate::identity::profile_dir(&dev.config_dir, DEV_PROFILE);
    if json {
        return crate::output::json(&json!({
            "api_url": dev.api_url,
            "agent_api_url": dev.agent_url,
            "data_dir": data,
            "log_file": log,
            "profile": DEV_PROFILE,
            "config_file": dev.config_file,
            "organization": me.organization,
            "member": me.member,
            "agent": describe(agent, data),
            "agent_local_api_url": agent.as_ref().ok().map(|a| &a.config["local_api"]["url"]),
            "console_url": console_url(&dev.api_url),
            "metrics": dev.metrics.map(|(api, agent)| json!({
                "api": format!("http://{api}/metrics"),
                "agent": format!("http://{agent}/metrics"),
            })),
            "first_run": dev.first_run,
            "certificate": certificate.map(|c| json!({
                "sha256": c.sha256,
                "not_after": timestamp(c.not_after),
                "dir": key_dir,
            })),
        }));
    }
    let certificate = certificate.map_or(String::new(), |c| {
        let until = timestamp(c.not_after);
        format!(
            "✓ Client certificate for \"{DEV_PROFILE}\" valid until {until} (key in {})\n",
            key_dir.display()
        )
    });
    let running = agent.is_ok();
    let shown = running || agent_log.exists();
    let agent_log = if shown { format!("Agent log: {}\n", agent_log.display()) } else { String::new() };
    let text = format!(
        "✓ Heimdall API running at {api_url} (SQLite in {data})\n\
         ✓ Console at {console} (`heimdall console` opens it signed in; or the token in {token_file})\n\
         ✓ Profile \"{DEV_PROFILE}\" is current: {email}, {role} of organization {org}\n\
         {certificate}\
         {agent_status}\
         {metrics}\
         \n\
         {tour}\
         \n\
         API log: {log}\n\
         {agent_log}\
         Press Ctrl-C to stop (the data stays; run `heimdall dev` again to carry on).\n",
        api_url = dev.api_url,
        console = console_url(&dev.api_url),
        token_file = data.join("owner.token").display(),
        data = data.display(),
        email = me.member.email,
        role = me.member.role,
        org = me.organization.name,
        agent_status = agent_banner(agent),
        metrics = dev.metrics.map_or(String::new(), |(api, agent)| {
            let agent =
                if running { format!(", the Agent's at http://{agent}/metrics") } else { String::new() };
            format!("✓ Metrics (Prometheus): the API's at http://{api}/metrics{agent}\n")
        }),
        tour = if dev.first_run { tour(running) } else { carry_on() },
        log = log.display(),
    );
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    Ok(stdout.flush()?)
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or("?").to_owned()
}

/// The Agent's lines of the banner: what it runs, or why there is none.
fn agent_banner(agent: &AgentState) -> String {
    let Running { config_file, config, enrolled_now, .. } = match agent {
        Ok(running) => running,
        Err(off) => {
            return format!(
                "! No Agent: {}.\n\
                 \x20 Resources can be requested, but their jobs stay queued until an Agent runs.\n\
                 \x20 To run one: {}.\n",
                off.why, off.fix
            )
        }
    };
    let terraform =
        format!("{} ({})", text(&config["terraform"]["version"]), text(&config["terraform"]["path"]));
    let modules = config["modules"]["allowed_sources"].as_array().map(|globs| globs.iter().map(text));
    let modules = modules.map(|globs| globs.collect::<Vec<_>>().join(", ")).filter(|m| !m.is_empty());
    format!(
        "✓ Agent \"{AGENT_NAME}\" {state}: Terraform {terraform}; modules allowed: {modules}\n\
         \x20 (state in {state_dir}; settings in {config})\n\
         ✓ Agent local API at {url} (values encrypted in {db})\n",
        modules = modules.as_deref().unwrap_or("none"),
        state = if *enrolled_now { "enrolled and running" } else { "running" },
        state_dir = text(&config["state"]["local_dir"]),
        config = config_file.display(),
        url = text(&config["local_api"]["url"]),
        db = text(&config["values"]["sqlite_path"]),
    )
}

/// The Agent in `--output json`.
fn describe(agent: &AgentState, data: &Path) -> Value {
    match agent {
        Ok(Running { config_file, config, enrolled_now, .. }) => json!({
            "running": true,
            "name": AGENT_NAME,
            "enrolled_now": enrolled_now,
            "config_file": config_file,
            "log_file": data.join(AGENT_LOG_FILE),
            "settings": config,
        }),
        Err(off) => json!({ "running": false, "reason": off.why, "fix": off.fix }),
    }
}

/// The Console, served by the API under `/console/`.
fn console_url(api_url: &str) -> String {
    format!("{}/console/", api_url.trim_end_matches('/'))
}

/// What a restart shows instead of the first run's tour (whose `create`
/// lines would now answer ALREADY_EXISTS).
fn carry_on() -> String {
    "Carry on where you left off, in another terminal:\n  \
     heimdall domain list\n  \
     heimdall resource list\n  \
     heimdall secret list\n  \
     heimdall event list --limit 5\n\
     (The first run's tour is in README.md, \"A short tour\"; remove the data directory to start over.)\n"
        .to_owned()
}

/// The README's tour: every line with an Agent to run its Resources and
/// hold its values; without one, the few that need none.
fn tour(agent_running: bool) -> String {
    if !agent_running {
        return "Try, in another terminal:\n  heimdall whoami\n  heimdall domain create payments\n  \
                heimdall event list\n"
            .to_owned();
    }
    let lines: String = readme_tour().map(|line| format!("  {line}\n")).collect();
    format!(
        "Try, in another terminal, from the Heimdall repository (the tour of its README, which\n\
         says what each line shows; it uses the repository's example schema and offline module):\n{lines}"
    )
}

/// The README has the tour between these markers; `tests/e2e.rs` checks
/// that the banner shows each of its lines, and runs them against `heimdall dev`.
const README: &str = include_str!("../../../README.md");

fn readme_tour() -> impl Iterator<Item = &'static str> {
    let block =
        README.split_once("<!-- tour:start").and_then(|(_, rest)| rest.split_once("<!-- tour:end -->"));
    let lines = block.map_or("", |(block, _)| block).lines().map(str::trim);
    lines.filter(|line| line.starts_with("heimdall ") || line.contains("| heimdall "))
}
