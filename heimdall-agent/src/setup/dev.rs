//! `heimdall-agent dev-setup`: the Agent of `heimdall dev`, made ready to
//! run under one data directory. It enrolls once (with the registration
//! token `heimdall dev` made, read as `enroll` reads it), then sets this
//! start's settings through [`configure`](crate::setup::configure), so that
//! `agent.toml` is only ever written by the Agent. `heimdall dev` then runs
//! `heimdall-agent run` on it.
//!
//! Under `--data`: `agent/` (key, certificate and `agent.toml`; its
//! `agent.toml` means "enrolled"), `state/` (Terraform state on local disk:
//! no bucket needed), `agent-values.db` (the encrypted value store) and
//! `master.key` (made once, mode 0600).
//!
//! Terraform is `--terraform`, else `$HEIMDALL_TERRAFORM`, else
//! `./.venv/bin/terraform` (what `scripts/install-test-tools.sh` installs in
//! the Heimdall repository), else `terraform` on `PATH`. The CLI
//! configuration of the virtualenv it comes from (`.venv/terraformrc`,
//! which keeps provider installs offline) is Terraform's, if there is one.
//! Modules allowed: `--allow-module`, else everything under the current
//! directory.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::{AgentConfig, StateConfig};
use crate::setup::configure::{self, Configured, Settings};
use crate::setup::enroll::{self, EnrollOptions};
use crate::setup::SetupError;

/// What `dev-setup` prints after its `error:` line when it finds no
/// Terraform; `heimdall dev` shows a `fix:` line as the way out.
const INSTALL_TERRAFORM: &str = "run `bash scripts/install-test-tools.sh` in the Heimdall repository (it \
    installs terraform in ./.venv), or put any terraform on PATH (or pass --terraform PATH), then restart \
    `heimdall dev`";

#[derive(Clone, Debug, clap::Args)]
pub struct DevSetup {
    /// `heimdall dev`'s data directory.
    #[arg(long)]
    pub data: PathBuf,
    /// The API's URL (the one people use), for enrollment.
    #[arg(long)]
    pub api: String,
    /// The SHA-256 of the installation CA (as for `enroll`).
    #[arg(long)]
    pub ca_sha256: Option<String>,
    /// The API's Agent channel of this run.
    #[arg(long)]
    pub agent_api: String,
    /// Where the local API listens.
    #[arg(long)]
    pub local_api_listen: String,
    /// The URL people use for the local API.
    #[arg(long)]
    pub local_api_url: String,
    /// How often access records reach the API: short, so that reads show
    /// in `secret access-log` quickly.
    #[arg(long, default_value_t = 2)]
    pub sync_seconds: u64,
    /// The terraform executable to pin at enrollment.
    #[arg(long)]
    pub terraform: Option<PathBuf>,
    /// Module sources to allow at enrollment (glob; repeatable).
    #[arg(long = "allow-module")]
    pub allow_modules: Vec<String>,
    /// Serve the Agent's metrics on this address; without it, none.
    #[arg(long)]
    pub metrics_listen: Option<String>,
}

/// What `dev-setup` did, and the settings as they now are.
#[derive(Debug, Serialize)]
pub struct Ready {
    pub enrolled_now: bool,
    /// The Agent's id (from its certificate's URI SAN): who to wait for.
    pub agent_id: heimdall_core::ids::AgentId,
    /// For the person running `heimdall dev` (what changed, what was ignored).
    pub notes: Vec<String>,
    #[serde(flatten)]
    pub configured: Configured,
}

/// `heimdall-agent dev-setup`: prints [`Ready`] as JSON, or the error
/// (and, when there is no Terraform, a `fix:` line saying how to get one).
pub fn main(options: &DevSetup) -> std::process::ExitCode {
    // One thread: the token is taken out of the environment with nothing
    // else running.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
    let ready = runtime.map_err(SetupError::io("start the runtime")).and_then(|rt| {
        let cwd = std::env::current_dir().map_err(SetupError::io("tell the current directory"))?;
        rt.block_on(setup(options, enroll::take_registration_token, &cwd))
    });
    let printed = ready.and_then(|ready| {
        let json = serde_json::to_string_pretty(&ready)
            .map_err(|e| SetupError::Io { action: "print the result", source: e.into() })?;
        println!("{json}");
        Ok(())
    });
    match printed {
        Ok(()) => return std::process::ExitCode::SUCCESS,
        Err(SetupError::NoTerraform(message)) => eprintln!("error: {message}\nfix: {INSTALL_TERRAFORM}"),
        Err(e) => eprintln!("error: {e}"),
    }
    std::process::ExitCode::FAILURE
}

/// Enrolls (once) and configures the dev Agent. `token` is asked for only
/// when the Agent enrolls now; `cwd` is where `heimdall dev` runs.
pub async fn setup(
    options: &DevSetup,
    token: impl FnOnce() -> Result<zeroize::Zeroizing<String>, SetupError>,
    cwd: &Path,
) -> Result<Ready, SetupError> {
    let (agent_dir, state_dir) = (options.data.join("agent"), options.data.join("state"));
    let config_file = agent_dir.join("agent.toml");
    let enrolled_now = !config_file.exists();
    let mut notes = Vec::new();
    if enrolled_now {
        enroll_once(options, token, cwd, &agent_dir, &state_dir).await?;
    } else if options.terraform.is_some() || !options.allow_modules.is_empty() {
        notes.push(format!(
            "--terraform and --allow-module count only when the Agent is enrolled, and it already is: \
             edit {} (the terraform pin is its sha256), or remove {} to enroll it again",
            config_file.display(),
            agent_dir.display()
        ));
    }
    let loaded = AgentConfig::load(&config_file)?;
    let (agent_id, terraform) = (loaded.agent_id()?, loaded.terraform.path);
    let settings = Settings {
        api_url: Some(options.agent_api.clone()),
        sqlite: Some(options.data.join("agent-values.db")),
        master_key_file: Some(options.data.join("master.key")),
        create_master_key: true,
        sync_seconds: Some(options.sync_seconds),
        // Trying things out: a requested rotation happens within seconds.
        database_poll_seconds: Some(options.sync_seconds),
        local_api_listen: Some(options.local_api_listen.clone()),
        // The Agent adds the URL's host to the names its certificate holds.
        local_api_url: Some(options.local_api_url.clone()),
        local_api_names: Vec::new(),
        terraform_cli_config: virtualenv_cli_config(&terraform, cwd),
        no_metrics: options.metrics_listen.is_none(),
        metrics_listen: options.metrics_listen.clone(),
        ..Settings::default()
    };
    let configured = configure::configure(&config_file, &settings).map_err(|why| match why {
        // Its message says how to fix it.
        gone @ SetupError::MasterKeyGone { .. } => gone,
        other => SetupError::Usage(format!("{other}; fix {}", config_file.display())),
    })?;
    if !enrolled_now {
        let file = config_file.display();
        notes.extend(configured.changed.iter().map(|key| format!("{key} updated in {file}")));
    }
    Ok(Ready { enrolled_now, agent_id, notes, configured })
}

async fn enroll_once(
    options: &DevSetup,
    token: impl FnOnce() -> Result<zeroize::Zeroizing<String>, SetupError>,
    cwd: &Path,
    agent_dir: &Path,
    state_dir: &Path,
) -> Result<(), SetupError> {
    if agent_dir.join("agent.key").exists() {
        return Err(SetupError::Occupied(format!(
            "{0} holds an enrollment that did not finish (no agent.toml); remove {0} to enroll the Agent again",
            agent_dir.display()
        )));
    }
    let venv = [PathBuf::from(".venv/bin/terraform")];
    let env = std::env::var_os(enroll::TERRAFORM_ENV);
    let path = std::env::var_os("PATH");
    let terraform = enroll::locate_terraform(options.terraform.as_deref(), env, &venv, cwd, path)?
        .ok_or_else(|| enroll::no_terraform("./.venv/bin/terraform, "))?;
    let token = token()?;
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state_dir)
        .map_err(crate::files::FileError::on("create", state_dir))?;
    let allowed_modules = match options.allow_modules.as_slice() {
        [] => vec![heimdall_core::runner::modules_under(&cwd.to_string_lossy())],
        globs => globs.to_vec(),
    };
    let options = EnrollOptions {
        api: options.api.clone(),
        ca_sha256: options.ca_sha256.clone(),
        data: agent_dir.to_owned(),
        terraform,
        allowed_modules,
        state: StateConfig { s3_endpoint: None, local_dir: Some(state_dir.to_owned()) },
        concurrency: 2,
    };
    enroll::enroll(&token, options).await.map(drop)
}

/// The `terraformrc` of the virtualenv `terraform` comes from, else the
/// one in `./.venv`, if either is there.
fn virtualenv_cli_config(terraform: &Path, cwd: &Path) -> Option<PathBuf> {
    let venv = terraform.parent()?.parent().filter(|v| v.file_name().is_some_and(|n| n == ".venv"));
    let mut rcs = venv.map(|v| v.join("terraformrc")).into_iter().chain([cwd.join(".venv/terraformrc")]);
    rcs.find(|rc| rc.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setup::enroll::locate_terraform;
    use std::ffi::OsString;
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
        let venv = [PathBuf::from(".venv/bin/terraform")];
        let find = |flag: Option<&Path>, env: Option<&str>| {
            locate_terraform(flag, env.map(OsString::from), &venv, &cwd, Some(bin.clone().into()))
        };
        // Nothing anywhere: none, and no error; then PATH; then ./.venv/bin/terraform before PATH.
        assert_eq!(find(None, None).unwrap(), None);
        executable(&bin.join("terraform"));
        assert_eq!(find(None, None).unwrap(), Some(bin.join("terraform")));
        executable(&cwd.join(".venv/bin/terraform"));
        assert_eq!(find(None, None).unwrap(), Some(cwd.join(".venv/bin/terraform")));
        // The environment before that, the flag before everything (relative to the current
        // directory); a bare name is looked up on PATH; an empty variable is no variable.
        executable(&cwd.join("tools/tf"));
        executable(&other);
        assert_eq!(find(None, Some("tools/tf")).unwrap(), Some(cwd.join("tools/tf")));
        assert_eq!(find(None, Some("")).unwrap(), Some(cwd.join(".venv/bin/terraform")));
        assert_eq!(find(Some(&other), Some("tools/tf")).unwrap(), Some(other.clone()));
        assert_eq!(find(Some(Path::new("terraform")), None).unwrap(), Some(bin.join("terraform")));
        // Named but not there: an error naming where it came from.
        let err = find(None, Some("./nope")).unwrap_err();
        assert!(
            matches!(&err, SetupError::NoTerraform(why) if why.starts_with("HEIMDALL_TERRAFORM ./nope: not an executable file")),
            "{err:?}"
        );
        let err = find(Some(Path::new("tf-1.9")), None).unwrap_err();
        assert!(err.to_string().starts_with("--terraform tf-1.9:"), "{err}");
    }

    #[test]
    fn terraform_gets_the_cli_configuration_of_its_virtualenv() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, elsewhere, usr) =
            (tmp.path().join("repo"), tmp.path().join("elsewhere"), Path::new("/usr/bin/terraform"));
        executable(&repo.join(".venv/bin/terraform"));
        std::fs::write(repo.join(".venv/terraformrc"), "disable_checkpoint = true\n").unwrap();
        let rc = Some(repo.join(".venv/terraformrc"));
        let venv_terraform = repo.join(".venv/bin/terraform");
        assert_eq!(virtualenv_cli_config(&venv_terraform, &elsewhere), rc, "beside the terraform");
        assert_eq!(virtualenv_cli_config(usr, &repo), rc, "in ./.venv");
        assert_eq!(virtualenv_cli_config(usr, &elsewhere), None);
    }

    #[tokio::test]
    async fn a_terraform_that_is_not_there_is_said_before_the_token_is_read() {
        let tmp = tempfile::tempdir().unwrap();
        let options = DevSetup {
            data: tmp.path().join("data"),
            api: "https://127.0.0.1:1".into(),
            ca_sha256: None,
            agent_api: "https://127.0.0.1:2".into(),
            local_api_listen: "127.0.0.1:3".into(),
            local_api_url: "https://127.0.0.1:3".into(),
            sync_seconds: 2,
            terraform: Some(tmp.path().join("missing-terraform")),
            allow_modules: Vec::new(),
            metrics_listen: None,
        };
        let token = || -> Result<zeroize::Zeroizing<String>, SetupError> { panic!("the token was read") };
        let err = setup(&options, token, tmp.path()).await.unwrap_err();
        assert!(
            matches!(&err, SetupError::NoTerraform(why) if why.contains("not an executable file")),
            "{err:?}"
        );
        assert!(!tmp.path().join("data/agent").exists(), "nothing was written");
    }
}
