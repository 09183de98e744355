//! Plan files awaiting approval (`heimdall_core::plan`), kept next to the
//! Resource's state: in the account's S3 bucket, GCS bucket or Azure
//! container, or in the Agent's local state directory. Terraform itself
//! carries them: a root module with only the Resource's backend at the
//! plan's key (`heimdall_core::root_module::plan_holder`) and `state
//! push`/`state pull` of a state whose one output is the plan
//! (`heimdall_core::plan::holder_state`). So the plan goes where the state
//! goes, with the job's own credentials, endpoint and proxy, under the
//! backend's native lock, on every backend Terraform supports. A plan can
//! hold sensitive values, so it never goes to the API or the job log; only
//! its SHA-256 and summary do.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use heimdall_core::infra::JobRequest;
use heimdall_core::root_module::{plan_holder, StateSettings};
use tokio::sync::mpsc;

use crate::config::StateConfig;
use crate::files::FileError;
use crate::jobs::terraform::{Stdout, TerraformError};

/// The holder's working directory, inside the job's.
const HOLDER_DIR: &str = "plan-holder";
/// The state `put` pushes; deleted once pushed.
const HOLDER_STATE: &str = "plan.tfstate";

/// One job's way to its Resource's plan file.
#[derive(Debug)]
pub struct PlanStore<'a> {
    terraform: &'a Path,
    dir: PathBuf,
    env: &'a [(OsString, OsString)],
    /// Where the plan is, for messages.
    key: String,
}

impl<'a> PlanStore<'a> {
    /// The holder for `request`'s plan, initialised in the job's directory
    /// `job_dir` with Terraform's own environment `env` (the job's
    /// credentials, never the Agent's when the job has its own) and the
    /// backend key file the job's `init` takes, if any.
    pub async fn open(
        terraform: &'a Path,
        job_dir: &Path,
        env: &'a [(OsString, OsString)],
        state: &StateConfig,
        request: &JobRequest,
        backend_file: Option<&str>,
        log: &mpsc::UnboundedSender<String>,
    ) -> Result<Self, TerraformError> {
        let dir = job_dir.join(HOLDER_DIR);
        std::fs::create_dir_all(&dir).map_err(FileError::on("create", &dir))?;
        let local = state.local_dir.as_ref().map(|d| d.display().to_string());
        let settings = StateSettings {
            local_dir: local.as_deref(),
            s3_endpoint: state.s3_endpoint.as_deref(),
            keyed: backend_file.is_some(),
        };
        crate::files::write(&dir.join("main.tf"), plan_holder(request, settings))?;
        let init: Vec<&str> = ["init", "-input=false", "-no-color"].into_iter().chain(backend_file).collect();
        let (ok, _, tail) =
            crate::jobs::terraform::run(terraform, &dir, env, &init, log, Stdout::Log).await?;
        let key = match &local {
            Some(local) => format!("{local}/{}.tfplan", request.resource_id),
            None => heimdall_core::plan::plan_key(request.resource_id),
        };
        if !ok {
            let why = tail.trim().to_owned();
            return Err(TerraformError::Plan {
                what: "terraform init failed for the plan's place",
                key,
                why,
            });
        }
        Ok(Self { terraform, dir, env, key })
    }

    /// Where the plan is kept (a key in the account's store, or a path).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Keeps `plan` there, over any earlier plan, under the backend's lock.
    pub async fn put(&self, plan: &[u8], log: &mpsc::UnboundedSender<String>) -> Result<(), TerraformError> {
        let path = self.dir.join(HOLDER_STATE);
        crate::files::write_private(&path, &heimdall_core::plan::holder_state(plan))?;
        let args = ["state", "push", "-force", "-lock-timeout=10s", HOLDER_STATE];
        let pushed =
            crate::jobs::terraform::run(self.terraform, &self.dir, self.env, &args, log, Stdout::Log).await;
        let _ = std::fs::remove_file(&path);
        if let (false, _, tail) = pushed? {
            return Err(self.failed("cannot keep the plan at", tail.trim()));
        }
        // Read back: what is kept is what the approver will be shown.
        let kept = self.get().await?;
        if heimdall_core::plan::hex_sha256(&kept) != heimdall_core::plan::hex_sha256(plan) {
            return Err(
                self.failed("cannot keep the plan at", "the plan read back is not the plan that was kept")
            );
        }
        Ok(())
    }

    /// The plan kept there. Nothing of it reaches the log.
    pub async fn get(&self) -> Result<Vec<u8>, TerraformError> {
        let out =
            crate::jobs::terraform::quiet(self.terraform, &self.dir, self.env, &["state", "pull"]).await?;
        if !out.status.success() {
            return Err(self.failed("cannot read the plan at", String::from_utf8_lossy(&out.stderr).trim()));
        }
        heimdall_core::plan::from_holder_state(&out.stdout).map_err(|why| self.failed("the plan at", &why))
    }

    fn failed(&self, what: &'static str, why: &str) -> TerraformError {
        TerraformError::Plan { what, key: self.key.clone(), why: why.to_owned() }
    }
}
