//! The dev Agent: whether one can run, its enrollment (once), its settings
//! (`heimdall-agent configure` on every start: the Agent owns `agent.toml`)
//! and its start. Its Terraform is `--terraform`, else `$HEIMDALL_TERRAFORM`,
//! else `./.venv/bin/terraform` (what `scripts/install-test-tools.sh`
//! installs in the Heimdall repository), else `terraform` on `PATH`; it runs
//! modules whose source matches `--allow-module` (default `<current
//! dir>/**`). With no Terraform or no `heimdall-agent`, the API runs alone.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use heimdall_core::Redacted;
use heimdall_sdk::Client;
use serde_json::Value;
use tokio::process::Command;

use super::supervisor::{self, tail_block, Service};
use super::{client_addr, is_executable, locate_binary, on_path, Dev, LOG_FILE, STATE_DIR};
use crate::args::DevArgs;
use crate::error::{CliError, Result};

pub(super) const AGENT_BINARY: &str = "heimdall-agent";
/// The dev Agent's name in the organization.
pub(super) const AGENT_NAME: &str = "dev";
pub(super) const AGENT_LOG_FILE: &str = "agent.log";
/// How often the dev Agent syncs: reads reach `secret access-log` quickly.
pub(super) const DEV_SYNC_SECONDS: u64 = 2;
const TERRAFORM_ENV: &str = "HEIMDALL_TERRAFORM";
pub(super) const INSTALL_TERRAFORM: &str = "run `bash scripts/install-test-tools.sh` in the Heimdall \
    repository (it installs terraform in ./.venv), or put any terraform on PATH (or pass --terraform \
    PATH), then restart `heimdall dev`";

/// Why there is no Agent, and what to do about it.
#[derive(Debug)]
pub(super) struct Off {
    pub why: String,
    pub fix: String,
}

fn off(why: impl Into<String>, fix: impl Into<String>) -> Off {
    Off { why: why.into(), fix: fix.into() }
}

pub(super) fn log_fix(log_path: &Path) -> String {
    format!("see {}, then restart `heimdall dev`", log_path.display())
}

type OrOff<T> = std::result::Result<T, Off>;

/// What to do about the Agent, decided before anything starts: run this
/// binary, enrolled first (with this Terraform and these module globs) if
/// it never was; or not.
pub(super) type Plan = OrOff<(PathBuf, Option<(PathBuf, Vec<String>)>)>;

/// The Agent as it is after start-up.
pub(super) enum AgentState {
    /// `config`: its settings, as `heimdall-agent configure --json` printed them.
    Running {
        service: Box<Service>,
        config_file: PathBuf,
        config: Value,
        enrolled_now: bool,
    },
    Off(Off),
}

impl AgentState {
    /// Where the running Agent serves values (`configure` always sets it).
    pub(super) fn local_api_url(&self) -> Option<&str> {
        match self {
            AgentState::Running { config, .. } => config["local_api"]["url"].as_str(),
            AgentState::Off(_) => None,
        }
    }
}

pub(super) fn plan(args: &DevArgs, data: &Path, cwd: &Path) -> Result<Plan> {
    let (dir, config_file) = (data.join("agent"), data.join("agent/agent.toml"));
    let Some(binary) = locate_binary(AGENT_BINARY) else {
        let why = format!("cannot find the `{AGENT_BINARY}` binary next to `heimdall` or on PATH");
        let fix = "build it with `cargo build -p heimdall-agent` (it lands next to `heimdall`), then \
                   restart `heimdall dev`";
        return Ok(Err(off(why, fix)));
    };
    if config_file.exists() {
        if args.terraform.is_some() || !args.allow_modules.is_empty() {
            let (config_file, dir) = (config_file.display(), dir.display());
            eprintln!(
                "warning: --terraform and --allow-module count only when the Agent is enrolled, and it \
                 already is: edit {config_file} (the terraform pin is its sha256), or remove {dir} to enroll \
                 it again"
            );
        }
        return Ok(Ok((binary, None)));
    }
    if dir.join("agent.key").exists() {
        let why = format!("{} holds an enrollment that did not finish (no agent.toml)", dir.display());
        return Ok(Err(off(
            why,
            format!("remove {} and restart `heimdall dev` to enroll the Agent again", dir.display()),
        )));
    }
    let env = std::env::var_os(TERRAFORM_ENV).filter(|v| !v.is_empty());
    let Some(terraform) = find_terraform(args.terraform.as_deref(), env, cwd, std::env::var_os("PATH"))?
    else {
        let why = "no terraform found (looked for --terraform, $HEIMDALL_TERRAFORM, ./.venv/bin/terraform, \
                   then terraform on PATH)";
        return Ok(Err(off(why, INSTALL_TERRAFORM)));
    };
    let modules =
        if args.allow_modules.is_empty() { vec![module_glob(cwd)] } else { args.allow_modules.clone() };
    Ok(Ok((binary, Some((terraform, modules)))))
}

/// The flag, else the environment variable, else `./.venv/bin/terraform`,
/// else `terraform` on `PATH`. A path asked for by name that is not there
/// is an error; finding none by looking is not.
fn find_terraform(
    flag: Option<&Path>,
    env: Option<OsString>,
    cwd: &Path,
    path: Option<OsString>,
) -> Result<Option<PathBuf>> {
    let Some((named, from)) =
        flag.map(|p| (p.into(), "--terraform")).or(env.map(|p| (PathBuf::from(p), TERRAFORM_ENV)))
    else {
        let venv = Some(cwd.join(".venv/bin/terraform")).filter(|venv| is_executable(venv));
        return Ok(venv.or_else(|| on_path("terraform", path, cwd)));
    };
    let found = match named.components().count() {
        1 => on_path(&named.to_string_lossy(), path, cwd),
        _ => Some(cwd.join(&named)).filter(|p| is_executable(p)),
    };
    found
        .map(Some)
        .ok_or_else(|| CliError::usage(format!("{from} {}: not an executable file", named.display())))
}

/// Every local module under `dir`: `<dir>/**`, with glob characters in `dir` taken literally.
fn module_glob(dir: &Path) -> String {
    let mut glob = String::new();
    for c in dir.to_string_lossy().trim_end_matches('/').chars() {
        match c {
            '*' | '?' | '[' | ']' | '{' | '}' => glob.extend(['[', c, ']']),
            '\\' => glob.push_str("\\\\"),
            c => glob.push(c),
        }
    }
    glob + "/**"
}

/// Enrolls the Agent if it never was, configures it for this start, runs
/// it, and waits until it reaches the API. Nothing here stops the API:
/// any trouble becomes [`AgentState::Off`] (printed in the banner) or a warning.
pub(super) async fn start(plan: Plan, client: &Client, dev: &Dev) -> AgentState {
    let started = async {
        let (binary, enroll_with) = plan?;
        let (config_file, log) = (dev.data.join("agent/agent.toml"), dev.data.join(AGENT_LOG_FILE));
        let enrolled_now = enroll_with.is_some();
        if let Some((terraform, modules)) = enroll_with {
            enroll(&binary, client, dev, &terraform, &modules).await?;
        }
        let config = configure(&binary, dev, &config_file, !enrolled_now).await?;
        let mut command = Command::new(&binary);
        command.args(["run", "--config"]).arg(&config_file);
        terraform_env(&mut command, config["terraform"]["path"].as_str().map(Path::new), &dev.cwd);
        let since = time::OffsetDateTime::now_utc() - time::Duration::milliseconds(1);
        let mut service =
            Service::spawn(AGENT_BINARY, command, &log).map_err(|err| off(err.to_string(), log_fix(&log)))?;
        // An error drops the service, which kills what is left of it.
        if !supervisor::wait_until_connected(client, &mut service, &dev.data.join("agent"), since).await? {
            let (secs, log) = (supervisor::AGENT_READY.as_secs(), log.display());
            eprintln!(
                "warning: the Agent has not reached the API within {secs}s; it keeps trying (log: {log})"
            );
        }
        Ok(AgentState::Running { service: Box::new(service), config_file, config, enrolled_now })
    };
    started.await.unwrap_or_else(AgentState::Off)
}

/// `heimdall-agent enroll` with a registration token made here (passed in
/// the environment, never on the command line), state on local disk.
async fn enroll(
    binary: &Path,
    client: &Client,
    dev: &Dev,
    terraform: &Path,
    modules: &[String],
) -> OrOff<()> {
    let (agent_dir, state_dir) = (dev.data.join("agent"), dev.data.join(STATE_DIR));
    let fix = format!("remove {} if it exists, then restart `heimdall dev`", agent_dir.display());
    let created = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&state_dir);
    created.map_err(|err| off(format!("cannot create {}: {err}", state_dir.display()), &fix))?;
    let registration = client.create_agent_registration(AGENT_NAME).await;
    let why = |err| format!("cannot make its registration token: {err}");
    let registration = registration.map_err(|err| off(why(err), log_fix(&dev.data.join(LOG_FILE))))?;
    let token = Redacted::new(registration.token.clone());
    let ca_sha256 = registration.ca_sha256.clone().unwrap_or_default();
    drop(registration);
    let mut command = Command::new(binary);
    command.args(["enroll", "--api", &dev.api_url, "--ca-sha256", &ca_sha256, "--data"]).arg(&agent_dir);
    command.arg("--terraform").arg(terraform).arg("--local-state").arg(&state_dir);
    for glob in modules {
        command.args(["--allow-module", glob]);
    }
    terraform_env(&mut command, Some(terraform), &dev.cwd);
    command.env("HEIMDALL_REGISTRATION_TOKEN", token.expose());
    agent_command(command, "enroll", &dev.data, |why, _| off(why, &fix)).await.map(drop)
}

/// `heimdall-agent configure`, on every start: the Agent channel of this
/// run, the value store under the data directory (its master key made once)
/// and the local API. Returns the settings as they now are; with `notes`,
/// says on stderr what changed.
async fn configure(binary: &Path, dev: &Dev, config_file: &Path, notes: bool) -> OrOff<Value> {
    let (db, key, local_api) = (dev.data.join("agent-values.db"), dev.data.join("master.key"), dev.local_api);
    let mut command = Command::new(binary);
    command.args(["configure", "--json", "--config"]).arg(config_file).args(["--api-url", &dev.agent_url]);
    command.arg("--sqlite").arg(&db).arg("--master-key-file").arg(&key).arg("--create-master-key");
    command.args([
        "--sync-seconds",
        &DEV_SYNC_SECONDS.to_string(),
        "--local-api-listen",
        &local_api.to_string(),
    ]);
    // The Agent adds the URL's host to the names its certificate holds.
    command.args(["--local-api-url", &format!("https://{}", client_addr(local_api))]);
    let stdout = agent_command(command, "configure", &dev.data, |whole, error| {
        let why = error.unwrap_or(whole);
        let fix = if why.contains("is gone") {
            format!("put {} back, or remove {} to start with no values", key.display(), db.display())
        } else {
            format!("fix {}", config_file.display())
        };
        off(why, fix + ", then restart `heimdall dev`")
    });
    let done: Value = serde_json::from_str(&stdout.await?).map_err(|err| {
        off(
            format!("`{AGENT_BINARY} configure --json` printed no JSON ({err})"),
            log_fix(&dev.data.join(AGENT_LOG_FILE)),
        )
    })?;
    if notes {
        for key in done["changed"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            eprintln!("note: {key} updated in {}", config_file.display());
        }
    }
    Ok(done["config"].clone())
}

/// Runs `heimdall-agent <what>` to the end and appends its output to the
/// Agent's log (it names the Agent and its files, never a secret); returns
/// its stdout. A failure goes to `failed` whole (headline and last lines)
/// and as the `error:` line the Agent ends with.
async fn agent_command(
    mut command: Command,
    what: &str,
    data: &Path,
    failed: impl Fn(String, Option<String>) -> Off,
) -> OrOff<String> {
    let output = command.env("NO_COLOR", "1").stdin(Stdio::null()).kill_on_drop(true).output().await;
    let program = Path::new(command.as_std().get_program()).display().to_string();
    let output = output.map_err(|err| failed(format!("cannot run {program}: {err}"), None))?;
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let lines: Vec<String> = stdout.lines().chain(stderr.lines()).map(str::to_owned).collect();
    let log = data.join(AGENT_LOG_FILE);
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(&log) {
        for line in &lines {
            let _ = writeln!(file, "{line}");
        }
    }
    if output.status.success() {
        return Ok(stdout.into_owned());
    }
    let error = lines.iter().rev().find_map(|line| line.strip_prefix("error: ")).map(str::to_owned);
    let tail = tail_block(lines.into_iter(), Some(&log));
    Err(failed(format!("`{AGENT_BINARY} {what}` failed ({}){tail}", output.status), error))
}

/// Terraform's environment for the Agent: no update checks, and the CLI
/// configuration of the virtualenv the terraform comes from (the Heimdall
/// repository's `.venv/terraformrc` keeps provider installs offline), if any.
fn terraform_env(command: &mut Command, terraform: Option<&Path>, cwd: &Path) {
    command.env("CHECKPOINT_DISABLE", "1");
    let venv =
        terraform.and_then(|t| t.parent()?.parent()).filter(|v| v.file_name().is_some_and(|n| n == ".venv"));
    let mut rcs = venv.map(|v| v.join("terraformrc")).into_iter().chain([cwd.join(".venv/terraformrc")]);
    if let Some(rc) = rcs.find(|rc| rc.is_file()) {
        command.env("TF_CLI_CONFIG_FILE", rc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn terraform_is_looked_for_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let (cwd, bin, other) =
            (tmp.path().join("repo"), tmp.path().join("bin"), tmp.path().join("other/tf"));
        std::fs::create_dir_all(&cwd).unwrap();
        let find = |flag: Option<&Path>, env: Option<&str>| {
            find_terraform(flag, env.map(OsString::from), &cwd, Some(bin.clone().into()))
                .map_err(|e| e.to_string())
        };
        // Nothing anywhere: none, and no error; then PATH; then ./.venv/bin/terraform before PATH.
        assert_eq!(find(None, None), Ok(None));
        executable(&bin.join("terraform"));
        assert_eq!(find(None, None), Ok(Some(bin.join("terraform"))));
        executable(&cwd.join(".venv/bin/terraform"));
        assert_eq!(find(None, None), Ok(Some(cwd.join(".venv/bin/terraform"))));
        // The environment before that, the flag before everything (relative to the current
        // directory); a bare name is looked up on PATH.
        executable(&cwd.join("tools/tf"));
        executable(&other);
        assert_eq!(find(None, Some("tools/tf")), Ok(Some(cwd.join("tools/tf"))));
        assert_eq!(find(Some(&other), Some("tools/tf")), Ok(Some(other.clone())));
        assert_eq!(find(Some(Path::new("terraform")), None), Ok(Some(bin.join("terraform"))));
        // Named but not there: a usage error naming where it came from.
        let err = find_terraform(None, Some("./nope".into()), &cwd, None).unwrap_err();
        assert!(
            err.exit_code() == crate::error::exit::USAGE && err.to_string().contains(TERRAFORM_ENV),
            "{err}"
        );
        assert!(find(Some(Path::new("tf-1.9")), None).is_err_and(|e| e.starts_with("--terraform tf-1.9:")));
    }

    #[test]
    fn the_default_allowlist_is_everything_under_the_directory() {
        let glob = |dir: &str| module_glob(Path::new(dir));
        assert_eq!([glob("/home/ana/infra"), glob("/")], ["/home/ana/infra/**", "/**"]);
        assert_eq!(glob("/srv/a*b/[x]{y}"), "/srv/a[*]b/[[]x[]][{]y[}]/**");
    }

    #[test]
    fn terraform_gets_the_cli_configuration_of_its_virtualenv() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, elsewhere, usr) =
            (tmp.path().join("repo"), tmp.path().join("elsewhere"), Path::new("/usr/bin/terraform"));
        executable(&repo.join(".venv/bin/terraform"));
        std::fs::write(repo.join(".venv/terraformrc"), "disable_checkpoint = true\n").unwrap();
        let env_of = |terraform: &Path, cwd: &Path, key: &str| {
            let mut command = Command::new("true");
            terraform_env(&mut command, Some(terraform), cwd);
            let value =
                command.as_std().get_envs().find(|(k, _)| *k == key).and_then(|(_, v)| v.map(PathBuf::from));
            value
        };
        let (venv_terraform, rc) = (repo.join(".venv/bin/terraform"), Some(repo.join(".venv/terraformrc")));
        assert_eq!(env_of(&venv_terraform, &elsewhere, "TF_CLI_CONFIG_FILE"), rc, "beside the terraform");
        assert_eq!(env_of(&venv_terraform, &elsewhere, "CHECKPOINT_DISABLE"), Some("1".into()));
        assert_eq!(env_of(usr, &repo, "TF_CLI_CONFIG_FILE"), rc, "in ./.venv");
        assert_eq!(env_of(usr, &elsewhere, "TF_CLI_CONFIG_FILE"), None);
    }
}
