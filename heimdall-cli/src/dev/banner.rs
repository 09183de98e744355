//! What `heimdall dev` prints once it runs: the banner and its tours, or
//! with `--output json` the same facts as one object. What the Agent runs
//! comes from the settings `heimdall-agent dev-setup` printed.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

use super::agent::{AgentState, AGENT_LOG_FILE, AGENT_NAME};
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
            "agent_local_api_url": agent.local_api_url(),
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
    let running = matches!(agent, AgentState::Running { .. });
    let (infra, secrets) = match agent {
        AgentState::Running { config, .. } => (
            infra_tour(&dev.cwd, &text(&config["state"]["local_dir"])),
            secrets_tour(&text(&config["local_api"]["url"]), &config["values"]["sync_seconds"]),
        ),
        AgentState::Off(_) => (String::new(), String::new()),
    };
    let shown = running || agent_log.exists();
    let agent_log = if shown { format!("Agent log: {}\n", agent_log.display()) } else { String::new() };
    let text = format!(
        "✓ Heimdall API running at {api_url} (SQLite in {data})\n\
         ✓ Profile \"{DEV_PROFILE}\" is current: {email}, {role} of organization {org}\n\
         {certificate}\
         {agent_status}\
         \n\
         Try, in another terminal:\n\
         \x20 heimdall whoami\n\
         \x20 heimdall domain create payments\n\
         \x20 heimdall system create checkout --domain payments\n\
         \x20 heimdall component create api --system checkout\n\
         \x20 heimdall environment create prod\n\
         \x20 heimdall member add ana@example.com --role admin\n\
         \x20 heimdall event list\n\
         {infra}\
         {secrets}\
         \n\
         API log: {log}\n\
         {agent_log}\
         Press Ctrl-C to stop (the data stays; run `heimdall dev` again to carry on).\n",
        api_url = dev.api_url,
        data = data.display(),
        email = me.member.email,
        role = me.member.role,
        org = me.organization.name,
        agent_status = agent_banner(agent),
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
    let (config_file, config, enrolled_now) = match agent {
        AgentState::Running { config_file, config, enrolled_now, .. } => (config_file, config, *enrolled_now),
        AgentState::Off(off) => {
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
    let modules: Vec<&str> = config["modules"]["allowed_sources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let modules = if modules.is_empty() { "none".to_owned() } else { modules.join(", ") };
    format!(
        "✓ Agent \"{AGENT_NAME}\" {state}: Terraform {terraform}; modules allowed: {modules}\n\
         \x20 (state in {state_dir}; settings in {config})\n\
         ✓ Agent local API at {url} (values encrypted in {db})\n",
        state = if enrolled_now { "enrolled and running" } else { "running" },
        state_dir = text(&config["state"]["local_dir"]),
        config = config_file.display(),
        url = text(&config["local_api"]["url"]),
        db = text(&config["values"]["sqlite_path"]),
    )
}

/// The Agent in `--output json`.
fn describe(agent: &AgentState, data: &Path) -> Value {
    match agent {
        AgentState::Running { config_file, config, enrolled_now, .. } => json!({
            "running": true,
            "name": AGENT_NAME,
            "enrolled_now": enrolled_now,
            "config_file": config_file,
            "log_file": data.join(AGENT_LOG_FILE),
            "settings": config,
        }),
        AgentState::Off(off) => json!({ "running": false, "reason": off.why, "fix": off.fix }),
    }
}

/// The Resource half of the banner's "Try": the Agent needs a cloud account
/// linked for the environment even though, in dev, it keeps state on disk.
/// Uses the repository's example schema and offline module when `heimdall
/// dev` runs in the Heimdall repository.
fn infra_tour(cwd: &Path, state_dir: &str) -> String {
    let (schema, module) =
        (cwd.join("examples/schemas/bucket.json"), cwd.join("tests/fixtures/modules/bucket"));
    let (schema, module, kind, name, input) = if schema.is_file() && module.join("main.tf").is_file() {
        (
            schema.display().to_string(),
            module.display().to_string(),
            "bucket",
            "receipts",
            r#"{"bucket":"acme-receipts"}"#,
        )
    } else {
        ("<schema.json>".to_owned(), format!("{}/<module dir>", cwd.display()), "<type>", "<name>", "<json>")
    };
    format!(
        "\n\
         Then a Resource, applied by the Agent (state in {state}; in dev the account's bucket is never\n\
         used and its keys are placeholders, but every Resource needs an account linked for its environment):\n\
         \x20 heimdall environment create dev\n\
         \x20 heimdall environment assign-agent dev {AGENT_NAME}\n\
         \x20 heimdall secret create aws-dev\n\
         \x20 printf '{{\"access_key_id\":\"dev\",\"secret_access_key\":\"dev\"}}' | heimdall secret set aws-dev --environment dev\n\
         \x20 heimdall cloud-account create local --provider aws --region us-east-1 --state-bucket local-state --auth static --secret aws-dev\n\
         \x20 heimdall cloud-account link local --scope organization --environment dev\n\
         \x20 heimdall schema create --type {kind} --input-schema {schema} --module-source {module} --module-version 1.0.0\n\
         \x20 heimdall resource create --component api --schema {kind} --environment dev --name {name} --input '{input}' --wait\n",
        state = state_dir,
    )
}

/// The secret half of the banner's "Try": the value goes to the Agent's
/// local API and is read back from it; the API only numbers versions and
/// keeps the trail.
fn secrets_tour(local_api_url: &str, sync_seconds: &Value) -> String {
    format!(
        "\n\
         Then a secret, whose value only the Agent holds (its local API: {local_api_url}):\n\
         \x20 heimdall secret create db-password\n\
         \x20 printf 's3cret-value' | heimdall secret set db-password --environment dev\n\
         \x20 heimdall secret get db-password --environment dev\n\
         \x20 heimdall secret access-log db-password   # reads arrive with the Agent's next sync ({sync_seconds} s)\n"
    )
}
