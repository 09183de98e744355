//! Running pinned Terraform for one job: checks, a working directory with
//! a root module that calls the schema's module, init/plan/apply (or
//! destroy), output streamed to the job log, outputs read back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use heimdall_core::credentials::{Credentials, EnvValue};
use heimdall_core::infra::{JobOperation, JobRequest, ModuleRef};
use heimdall_core::root_module::{
    backend_block, module_call, output_blocks, tfvars, StateSettings, SECRET_VAR_PREFIX, SENSITIVE,
};
use heimdall_core::runner::{check_run, job_env, with_job, Modules, Pin, REGION_VARIABLE};
use heimdall_core::state_lock::{self, Attempt, LockInfo, Takeover};
use heimdall_core::ErrorCode;
use heimdall_core::{Redacted, Sha256Hex};
use time::OffsetDateTime;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::config::{AgentConfig, StateConfig};
use crate::files::FileError;

/// Why a job did not complete.
#[derive(Debug)]
pub struct RunFailure {
    pub code: Option<ErrorCode>,
    pub reason: String,
    pub retryable: bool,
}

impl RunFailure {
    fn refused(code: ErrorCode, reason: impl Into<String>) -> Self {
        Self { code: Some(code), reason: reason.into(), retryable: false }
    }

    fn failed(reason: impl Into<String>) -> Self {
        Self { code: None, reason: reason.into(), retryable: true }
    }
}

/// Terraform could not be run, or the files around a run could not be
/// written or read. A run that ran and failed is a [`RunFailure`] with
/// Terraform's own reason; these are retried like one.
#[derive(Debug, thiserror::Error)]
pub enum TerraformError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("cannot run {}: {source}", path.display())]
    Spawn {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The child's standard output or error was not piped.
    #[error("terraform's {0} is not readable")]
    NoPipe(&'static str),
    #[error("waiting for terraform: {0}")]
    Wait(std::io::Error),
    #[error("{what}: {source}")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("the module is not installed at {}", .0.display())]
    ModuleNotInstalled(PathBuf),
    /// `enroll` was pointed at a file that is not there.
    #[error("{0}\nInstall Terraform first (for tests here: bash scripts/install-test-tools.sh) and pass --terraform PATH")]
    NotInstalled(FileError),
    #[error("{} does not look like terraform (`version -json` failed)", .0.display())]
    NotTerraform(PathBuf),
    /// The plan kept next to the state: where, and what Terraform said.
    #[error("{what} {key}: {why}")]
    Plan { what: &'static str, key: String, why: String },
}

impl From<TerraformError> for RunFailure {
    fn from(e: TerraformError) -> Self {
        RunFailure::failed(e.to_string())
    }
}

pub async fn sha256_file(path: &Path) -> Result<Sha256Hex, FileError> {
    let bytes = tokio::fs::read(path).await.map_err(FileError::on("read", path))?;
    Ok(Sha256Hex::of(&bytes))
}

/// A file's identity as the kernel keeps it: any write, rename over it or
/// `touch` changes one of these (the change time cannot be set back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

fn stamp(path: &Path) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(FileStamp {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
    })
}

/// The SHA-256 of the pinned Terraform, measured again whenever the file
/// changed: a real `terraform` is ~100 MB, and hashing it before every
/// job would add a fifth of a second to each.
async fn pinned_sha256(path: &Path) -> Result<Sha256Hex, FileError> {
    static MEASURED: std::sync::Mutex<Option<(std::path::PathBuf, FileStamp, Sha256Hex)>> =
        std::sync::Mutex::new(None);
    let before = stamp(path);
    if let Some(before) = before {
        let cached = MEASURED.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some((p, at, sha)) = cached {
            if p == path && at == before {
                return Ok(sha);
            }
        }
    }
    let sha = sha256_file(path).await?;
    // Kept only if nothing changed while it was read.
    if let (Some(before), Some(after)) = (before, stamp(path)) {
        if before == after {
            *MEASURED.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((path.to_owned(), before, sha.clone()));
        }
    }
    Ok(sha)
}

/// The version and SHA-256 of a terraform executable (for `enroll`).
pub async fn identify(path: &Path) -> Result<(String, Sha256Hex), TerraformError> {
    let sha = sha256_file(path).await.map_err(TerraformError::NotInstalled)?;
    let env = job_env(std::env::vars_os(), &[], None, &std::env::temp_dir(), None);
    let out = command(path, &std::env::temp_dir(), &env)
        .args(["version", "-json"])
        .output()
        .await
        .map_err(|source| TerraformError::Spawn { path: path.to_owned(), source })?;
    let version = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v["terraform_version"].as_str().map(str::to_owned))
        .ok_or_else(|| TerraformError::NotTerraform(path.to_owned()))?;
    Ok((version, sha))
}

/// The checks made before anything runs (`heimdall_core::runner::check_run`
/// on the executable's measured SHA-256), and the module the job runs; a
/// refusal is not retried.
pub async fn preflight(config: &AgentConfig, request: &JobRequest) -> Result<ModuleRef, RunFailure> {
    let pin = Pin {
        path: &config.terraform.path,
        version: &config.terraform.version,
        sha256: &config.terraform.sha256,
    };
    let measured = pinned_sha256(&config.terraform.path)
        .await
        .map_err(|e| RunFailure::refused(ErrorCode::TerraformChecksumMismatch, e.to_string()))?;
    let modules =
        Modules { allowed_sources: &config.modules.allowed_sources, by_type: &config.modules.by_type };
    check_run(pin, &measured, modules, request).map_err(|e| RunFailure::refused(e.code, e.message))
}

/// Writes the root module for a job into `dir`; with `region`, the module
/// call also sets [`REGION_VARIABLE`] (for modules that declare it).
pub fn write_root_module(
    dir: &Path,
    request: &JobRequest,
    module: &ModuleRef,
    state: &StateConfig,
    secret_vars: &[&str],
    region: Option<&str>,
    keyed: bool,
) -> Result<(), FileError> {
    let local = state.local_dir.as_ref().map(|d| d.display().to_string());
    let settings =
        StateSettings { local_dir: local.as_deref(), s3_endpoint: state.s3_endpoint.as_deref(), keyed };
    let main = format!(
        "terraform {{\n{}}}\n\n{}",
        backend_block(request, settings),
        module_call(request, module, secret_vars, region)
    );
    crate::files::write(&dir.join("main.tf"), main)?;
    crate::files::write(&dir.join("terraform.tfvars.json"), tfvars(request))
}

/// The module's outputs (name → sensitive), read from its source after
/// `init` placed it (`.terraform/modules/modules.json`).
/// The module's `output` blocks, and whether each is sensitive.
pub fn module_outputs(dir: &Path, source: &str) -> Result<BTreeMap<String, bool>, TerraformError> {
    Ok(module_blocks(&installed_module(dir, source)?, "output")?)
}

/// Whether the module declares `variable "name"`. It may be asked after an
/// `init` that failed on the module's arguments: the module is installed
/// by then, though the manifest is not written.
pub fn module_declares_variable(dir: &Path, source: &str, name: &str) -> bool {
    installed_module(dir, source)
        .and_then(|module| Ok(module_blocks(&module, "variable")?))
        .is_ok_and(|vars| vars.contains_key(name))
}

/// Where `terraform init` put the module `resource`: the manifest's
/// directory, else a local source's own directory, else Terraform's
/// download directory (with the source's `//subdir`).
fn installed_module(dir: &Path, source: &str) -> Result<PathBuf, TerraformError> {
    let from_manifest = std::fs::read_to_string(dir.join(".terraform/modules/modules.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|manifest| {
            let modules = manifest["Modules"].as_array()?.clone();
            let found = modules.into_iter().find(|m| m["Key"] == "resource")?;
            found["Dir"].as_str().map(PathBuf::from)
        });
    let module = match from_manifest {
        Some(found) => found,
        None if source.starts_with("./") || source.starts_with("../") || source.starts_with('/') => {
            PathBuf::from(source)
        }
        None => {
            let without_query = source.split('?').next().unwrap_or(source);
            let after_scheme = without_query.split_once("://").map_or(without_query, |(_, rest)| rest);
            let subdir = after_scheme.split_once("//").map(|(_, sub)| sub);
            let downloaded = PathBuf::from(".terraform/modules/resource");
            subdir.map_or(downloaded.clone(), |sub| downloaded.join(sub))
        }
    };
    let module = if module.is_absolute() { module } else { dir.join(module) };
    if module.is_dir() {
        Ok(module)
    } else {
        Err(TerraformError::ModuleNotInstalled(module))
    }
}

/// The `kind` blocks (`output`, `variable`) of the module in `module_dir`
/// by name, each with whether it says `sensitive = true`.
fn module_blocks(module_dir: &Path, kind: &str) -> Result<BTreeMap<String, bool>, FileError> {
    let mut outputs = BTreeMap::new();
    let list = FileError::on("list", module_dir);
    for entry in std::fs::read_dir(module_dir).map_err(list)? {
        let path = entry.map_err(FileError::on("list", module_dir))?.path();
        if path.extension().is_some_and(|e| e == "tf") {
            let text = crate::files::read_text(&path)?;
            scan_blocks(&text, kind, &mut outputs);
        }
    }
    Ok(outputs)
}

fn scan_blocks(text: &str, kind: &str, outputs: &mut BTreeMap<String, bool>) {
    let opening = format!("{kind} \"");
    let mut rest = text;
    while let Some(at) = rest.find(&opening) {
        let after = &rest[at + opening.len()..];
        let Some(end) = after.find('"') else { break };
        let name = after[..end].to_owned();
        let Some(open) = after.find('{') else { break };
        let mut depth = 0usize;
        let mut close = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let body = &after[open..close];
        let sensitive = body.lines().any(|l| {
            let l: String = l.chars().filter(|c| !c.is_whitespace()).collect();
            l.starts_with("sensitive=true")
        });
        outputs.insert(name, sensitive);
        rest = &after[close.min(after.len())..];
    }
}

pub fn write_outputs(dir: &Path, outputs: &BTreeMap<String, bool>) -> Result<(), FileError> {
    crate::files::write(&dir.join("outputs.tf"), output_blocks(outputs))
}

/// `terraform output -json` → outputs with sensitive values replaced.
pub fn redact_outputs(json: &[u8]) -> Result<serde_json::Value, TerraformError> {
    let parsed: BTreeMap<String, serde_json::Value> = serde_json::from_slice(json)
        .map_err(|source| TerraformError::Json { what: "terraform's outputs", source })?;
    let mut out = serde_json::Map::new();
    for (name, o) in parsed {
        let value = if o["sensitive"].as_bool().unwrap_or(true) {
            serde_json::json!(SENSITIVE)
        } else {
            o["value"].clone()
        };
        out.insert(name, value);
    }
    Ok(serde_json::Value::Object(out))
}

/// What to do with a command's standard output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stdout {
    /// Send each line to the job log.
    Log,
    /// Terraform's machine-readable UI (`-json`): log each message's
    /// human text, keep the `outputs` message, and turn error diagnostics
    /// into `Error:` lines for the failure reason.
    JsonUi,
    /// [`Stdout::JsonUi`] for a plan: keep what it would do instead
    /// ([`heimdall_core::import::PlanSummary`], as JSON).
    PlanSummary,
}

/// A terraform command in `dir` with [`job_env`] and nothing else.
fn command(terraform: &Path, dir: &Path, env: &[(std::ffi::OsString, std::ffi::OsString)]) -> Command {
    let mut command = Command::new(terraform);
    command.current_dir(dir).env_clear().envs(env.iter().map(|(k, v)| (k, v))).stdin(Stdio::null());
    command
}

/// A terraform command in `dir` with [`job_env`] and nothing else, under
/// the guard that stops it with the Agent ([`crate::jobs::terraform_guard`]):
/// keep the returned child's standard input for as long as it runs.
fn guarded(terraform: &Path, dir: &Path, env: &[(std::ffi::OsString, std::ffi::OsString)]) -> Command {
    let mut command = crate::jobs::terraform_guard::command(terraform);
    command.current_dir(dir).env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    command
}

/// Runs one terraform command in `dir`, sending its output to `log`.
/// Returns (success, the `outputs` message if any, stderr tail + errors).
pub async fn run(
    terraform: &Path,
    dir: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    args: &[&str],
    log: &mpsc::UnboundedSender<String>,
    mode: Stdout,
) -> Result<(bool, Vec<u8>, String), TerraformError> {
    let _ = log.send(format!("$ terraform {}\n", args.join(" ")));
    let (mut child, _guard_pipe) = spawn_piped(terraform, dir, env, args)?;
    let stdout = child.stdout.take().ok_or(TerraformError::NoPipe("standard output"))?;
    let stderr = child.stderr.take().ok_or(TerraformError::NoPipe("standard error"))?;
    let log_err = log.clone();
    let err_task = tokio::spawn(async move {
        let mut tail = String::new();
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = log_err.send(format!("{line}\n"));
            tail.push_str(&line);
            tail.push('\n');
            if tail.len() > 8192 {
                tail.drain(..tail.len() - 8192);
            }
        }
        tail
    });
    let mut captured = Vec::new();
    let mut errors = String::new();
    let mut planned = heimdall_core::import::PlanSummary::default();
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if mode == Stdout::Log {
            let _ = log.send(format!("{line}\n"));
            continue;
        }
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            let _ = log.send(format!("{line}\n"));
            continue;
        };
        if let Some(text) = message["@message"].as_str() {
            let _ = log.send(format!("{text}\n"));
        }
        match message["type"].as_str() {
            Some("outputs") => captured = message["outputs"].to_string().into_bytes(),
            Some("planned_change") if mode == Stdout::PlanSummary => {
                let action = message["change"]["action"].as_str().unwrap_or_default();
                if !matches!(action, "noop" | "read" | "import" | "move") {
                    let address = message["change"]["resource"]["addr"].as_str().unwrap_or("?");
                    planned.changes.push(format!("{address} {action}"));
                }
            }
            Some("change_summary") if mode == Stdout::PlanSummary => {
                let count = |key: &str| message["changes"][key].as_u64().unwrap_or(0);
                (planned.add, planned.change, planned.remove, planned.import) =
                    (count("add"), count("change"), count("remove"), count("import"));
            }
            Some("diagnostic") if message["diagnostic"]["severity"] == "error" => {
                let d = &message["diagnostic"];
                let detail = d["detail"].as_str().unwrap_or_default();
                let _ = log.send(format!("{detail}\n"));
                errors.push_str(&format!(
                    "Error: {}\n\n{}\n",
                    d["summary"].as_str().unwrap_or("error"),
                    detail
                ));
            }
            _ => {}
        }
    }
    let status = child.wait().await.map_err(TerraformError::Wait)?;
    let tail = err_task.await.unwrap_or_default();
    if mode == Stdout::PlanSummary {
        captured = serde_json::to_vec(&planned)
            .map_err(|source| TerraformError::Json { what: "the plan's summary", source })?;
    }
    Ok((status.success(), captured, format!("{tail}{errors}")))
}

/// A `plan -json` (its messages in the job log), and what it would do.
async fn plan_summary(
    tf: &Path,
    dir: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    args: &[&str],
    log: &mpsc::UnboundedSender<String>,
) -> Result<heimdall_core::import::PlanSummary, RunFailure> {
    let (ok, summary, tail) = run(tf, dir, env, args, log, Stdout::PlanSummary).await?;
    if !ok {
        return Err(RunFailure::failed(format!("terraform plan failed: {}", error_summary(&tail))));
    }
    let summary = serde_json::from_slice(&summary)
        .map_err(|source| TerraformError::Json { what: "the plan's summary", source })?;
    Ok(summary)
}

/// A drift check: a refreshing plan of the applied revision, never applied
/// and without the state lock (it writes nothing); reports whether it
/// would change anything (`heimdall_core::drift::report`). The plan is in
/// the job log.
async fn drift_plan(
    tf: &Path,
    dir: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    log: &mpsc::UnboundedSender<String>,
) -> Result<serde_json::Value, RunFailure> {
    let args = ["plan", "-input=false", "-lock=false", "-refresh=true", "-json"];
    let summary = plan_summary(tf, dir, env, &args, log).await?;
    let drifted = summary.changes_anything();
    let _ = log.send(if drifted {
        format!("Drift: {}\n", summary.changes.join(", "))
    } else {
        "No drift: what exists matches the applied revision.\n".to_owned()
    });
    Ok(heimdall_core::drift::report(drifted))
}

/// The plan file of an import job, in its directory.
const IMPORT_PLAN: &str = "heimdall-import.tfplan";

/// A plan for approval (or the approved one), in the job's directory.
const APPROVAL_PLAN: &str = "heimdall-approval.tfplan";

/// A plan job: `plan -out`, its summary (addresses, actions, counts; no
/// values), the file kept next to the state and its SHA-256, reported to
/// the API (`heimdall_core::plan`). Applies nothing. A plan that imports
/// must change nothing else (`IMPORT_WOULD_CHANGE`), as an import job.
async fn saved_plan(
    tf: &Path,
    dir: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    state: &StateConfig,
    request: &JobRequest,
    backend_file: Option<&str>,
    log: &mpsc::UnboundedSender<String>,
) -> Result<serde_json::Value, RunFailure> {
    let out = format!("-out={APPROVAL_PLAN}");
    let args = ["plan", "-input=false", "-lock-timeout=10s", "-json", out.as_str()];
    let summary = plan_summary(tf, dir, env, &args, log).await?;
    if !request.imports.is_empty() {
        heimdall_core::import::verdict(&summary).map_err(|e| RunFailure::refused(e.code, e.message))?;
    }
    let bytes = crate::files::read(&dir.join(APPROVAL_PLAN)).map_err(TerraformError::from)?;
    let sha256 = heimdall_core::plan::hex_sha256(&bytes);
    let store =
        crate::jobs::plan_files::PlanStore::open(tf, dir, env, state, request, backend_file, log).await?;
    let key = store.key();
    let _ = log.send(format!("Keeping the plan next to the state, at {key}\n"));
    store.put(&bytes, log).await?;
    let _ = log.send(format!(
        "Plan {}: {} to add, {} to change, {} to destroy; kept at {key}. Approve it with --plan {}\n",
        sha256,
        summary.add,
        summary.change,
        summary.remove,
        heimdall_core::plan::short(&sha256)
    ));
    Ok(heimdall_core::plan::report(&heimdall_core::plan::RevisionPlan { sha256, summary }))
}

/// The approved plan file, fetched from next to the state into the job's
/// directory, refused unless it hashes to what the approver named.
#[allow(clippy::too_many_arguments)]
async fn approved_plan(
    tf: &Path,
    dir: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    state: &StateConfig,
    request: &JobRequest,
    backend_file: Option<&str>,
    approved: &str,
    log: &mpsc::UnboundedSender<String>,
) -> Result<(), RunFailure> {
    let store =
        crate::jobs::plan_files::PlanStore::open(tf, dir, env, state, request, backend_file, log).await?;
    let key = store.key();
    let bytes = store.get().await?;
    let found = Sha256Hex::of(&bytes);
    if Sha256Hex::parse(approved).ok().as_ref() != Some(&found) {
        return Err(RunFailure::refused(
            ErrorCode::StalePlan,
            format!("the plan at {key} is {found}, not the approved {approved}: a newer plan replaced it; nothing was applied"),
        ));
    }
    crate::files::write(&dir.join(APPROVAL_PLAN), bytes).map_err(TerraformError::from)?;
    let _ = log.send(format!("Applying the approved plan {approved}\n"));
    Ok(())
}

/// An import's plan (`imports.tf` in place), saved for the apply only if
/// it changes nothing (`heimdall_core::import::verdict`). Otherwise the
/// objects go into the state one by one (`terraform import`, which
/// changes nothing that exists) and the job fails `IMPORT_WOULD_CHANGE`;
/// the plan is in the job log.
async fn import_plan(
    tf: &Path,
    dir: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    request: &JobRequest,
    log: &mpsc::UnboundedSender<String>,
) -> Result<(), RunFailure> {
    let plan_out = format!("-out={IMPORT_PLAN}");
    let args = ["plan", "-input=false", "-lock-timeout=10s", "-json", plan_out.as_str()];
    let summary = plan_summary(tf, dir, env, &args, log).await?;
    let Err(refused) = heimdall_core::import::verdict(&summary) else { return Ok(()) };
    // Keep the objects under management without changing them: the legacy
    // import writes the state only. Without the import blocks, which it
    // would refuse alongside.
    let imports = dir.join("imports.tf");
    std::fs::remove_file(&imports)
        .map_err(FileError::on("remove", &imports))
        .map_err(TerraformError::from)?;
    for target in &request.imports {
        let to = format!("module.{}.{}", heimdall_core::root_module::MODULE_NAME, target.address);
        let args =
            ["import", "-input=false", "-no-color", "-lock-timeout=10s", to.as_str(), target.id.as_str()];
        let (ok, _, tail) = run(tf, dir, env, &args, log, Stdout::Log).await?;
        if !ok {
            let _ = log.send(format!("could not keep {to} in the state: {}\n", error_summary(&tail)));
        }
    }
    Err(RunFailure::refused(refused.code, refused.message))
}

/// Asks for the state lock without waiting; the refusal describes the
/// lock and its holder. `None` when nobody holds it.
/// Runs one terraform command in `dir` and returns what it printed, none
/// of it logged: for output that may hold sensitive values.
pub(crate) async fn quiet(
    terraform: &Path,
    dir: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    args: &[&str],
) -> Result<std::process::Output, TerraformError> {
    let (child, _guard_pipe) = spawn_piped(terraform, dir, env, args)?;
    child.wait_with_output().await.map_err(TerraformError::Wait)
}

/// Terraform started under its guard with its output piped, and the
/// guard's pipe apart: whoever holds it keeps the run alive, and dropping
/// it stops Terraform (`wait_with_output` would close it first).
fn spawn_piped(
    terraform: &Path,
    dir: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    args: &[&str],
) -> Result<(tokio::process::Child, Option<tokio::process::ChildStdin>), TerraformError> {
    let mut child = guarded(terraform, dir, env)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| TerraformError::Spawn { path: terraform.to_owned(), source })?;
    let guard_pipe = child.stdin.take();
    Ok((child, guard_pipe))
}

async fn probe_lock(
    terraform: &Path,
    dir: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> Option<LockInfo> {
    let args =
        ["plan", "-input=false", "-no-color", "-lock-timeout=0s", "-refresh=false", "-detailed-exitcode"];
    let out = quiet(terraform, dir, env, &args).await.ok()?;
    LockInfo::from_terraform_error(&String::from_utf8_lossy(&out.stderr))
        .or_else(|| LockInfo::from_terraform_error(&String::from_utf8_lossy(&out.stdout)))
}

/// A later attempt of a job: the lock on the state, if a dead attempt
/// left it, is forced (exactly that lock, `state_lock::takeover`); any
/// other lock is left, and the run then fails on it as Terraform would.
async fn take_over_dead_lock(
    terraform: &Path,
    dir: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    reported: Option<&str>,
    earlier: &[Attempt],
    log: &mpsc::UnboundedSender<String>,
) -> Result<(), RunFailure> {
    let Some(found) = probe_lock(terraform, dir, env).await else {
        return Ok(());
    };
    match state_lock::takeover(&found, reported, earlier, OffsetDateTime::now_utc()) {
        Takeover::Leave { why } => {
            let _ = log.send(format!("Leaving the state lock {}: {why}\n", found.id));
        }
        Takeover::Force { id, why } => {
            let _ = log.send(format!("Taking over the state lock {id}, {why}\n"));
            let args = ["force-unlock", "-force", "-no-color", id.as_str()];
            let (ok, _, tail) = run(terraform, dir, env, &args, log, Stdout::Log).await?;
            if !ok {
                let _ =
                    log.send(format!("force-unlock did not apply ({}); continuing\n", error_summary(&tail)));
            }
        }
    }
    Ok(())
}

/// Terraform's errors, one per `Error:` block: its title and its last
/// unindented line (the message), e.g. "Resource precondition failed:
/// the bucket name is taken". Box-drawing characters are dropped.
pub fn error_summary(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(|l| l.strip_prefix("│ ").or_else(|| l.strip_prefix(['│', '╷', '╵'])).unwrap_or(l).trim_end())
        .collect();
    let mut errors = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(title) = lines[i].trim().strip_prefix("Error: ") else {
            i += 1;
            continue;
        };
        let mut detail = None;
        i += 1;
        while i < lines.len() && !lines[i].trim().starts_with("Error: ") {
            let line = lines[i];
            if !line.trim().is_empty() && !line.starts_with(char::is_whitespace) {
                detail = Some(line.trim());
            }
            i += 1;
        }
        errors.push(match detail {
            Some(d) => format!("{title}: {d}"),
            None => title.to_owned(),
        });
    }
    let summary = if errors.is_empty() {
        stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("terraform failed").trim().to_owned()
    } else {
        errors.join("; ")
    };
    summary.chars().take(1000).collect()
}

/// Writes a static credential's files into the job's directory (0600, in a
/// 0700 directory) and points Terraform's environment at them, without the
/// Agent's own credentials.
fn with_credentials(
    mut env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    dir: &Path,
    credentials: &Credentials,
) -> Result<Vec<(std::ffi::OsString, std::ffi::OsString)>, FileError> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    for (path, bytes) in &credentials.files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(FileError::on("create", parent))?;
        }
        // The error names the job's directory, not the credential's file.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(FileError::on("write a credential file in", dir))?;
        file.write_all(bytes.expose()).map_err(FileError::on("write a credential file in", dir))?;
    }
    if let Some(config) = credentials.root_config {
        crate::files::write(&dir.join("heimdall-credentials.tf"), config)?;
    }
    env.retain(|(name, _)| !credentials.unset.iter().any(|u| name == u));
    for (name, value) in &credentials.env {
        let value: std::ffi::OsString = match value {
            EnvValue::Text(text) => text.into(),
            EnvValue::File(path) => dir.join(path).into_os_string(),
        };
        env.retain(|(n, _)| n != name);
        env.push(((*name).into(), value));
    }
    Ok(env)
}

/// Secret inputs' values for the root module, in a file Terraform reads
/// beside it (mode 0600, deleted with the job's directory).
fn write_secret_inputs(dir: &Path, inputs: &[(String, Redacted<String>)]) -> Result<(), FileError> {
    if inputs.is_empty() {
        return Ok(());
    }
    let values: serde_json::Map<String, serde_json::Value> = inputs
        .iter()
        .map(|(variable, value)| (format!("{SECRET_VAR_PREFIX}{variable}"), value.expose().clone().into()))
        .collect();
    let text = zeroize::Zeroizing::new(serde_json::Value::Object(values).to_string());
    crate::files::write_private(&dir.join("heimdall-secrets.auto.tfvars.json"), text.as_bytes())
}

/// How long each part of a run took (the `job phases` log line, which
/// `benches/agent.sh` reads): writing the job's files, `init`, the lock
/// of a dead attempt, the `apply` (plan and apply in one run), and the
/// outputs. A phase a run did not reach stays zero.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phases {
    pub files: std::time::Duration,
    pub init: std::time::Duration,
    pub takeover: std::time::Duration,
    pub apply: std::time::Duration,
    pub outputs: std::time::Duration,
}

/// The time since `mark`, and `mark` moved to now.
fn lap(mark: &mut std::time::Instant) -> std::time::Duration {
    let now = std::time::Instant::now();
    let took = now - *mark;
    *mark = now;
    took
}

/// One run of a job, as preflight settled it.
#[derive(Debug)]
pub struct JobRun<'a> {
    pub request: &'a JobRequest,
    /// The module `heimdall_core::runner::check_run` chose.
    pub module: &'a ModuleRef,
    /// The account's credential files, if it has some.
    pub credentials: Option<&'a Credentials>,
    /// Secrets' values for module variables, by variable.
    pub secret_inputs: &'a [(String, Redacted<String>)],
    /// A lock a dead earlier attempt of this job reported.
    pub stale_lock: Option<&'a str>,
    /// The attempts of the Resource's jobs whose Agent died: a lock one of
    /// them made is forced, no other.
    pub dead_attempts: &'a [Attempt],
    /// This attempt's number.
    pub attempt: i64,
}

/// Runs the whole job in `dir`.
pub async fn execute(
    config: &AgentConfig,
    dir: &Path,
    job: &JobRun<'_>,
    log: &mpsc::UnboundedSender<String>,
    lock_id: &tokio::sync::watch::Sender<Option<String>>,
    phases: &mut Phases,
) -> Result<serde_json::Value, RunFailure> {
    let mut mark = std::time::Instant::now();
    let JobRun { request, module, credentials, secret_inputs, stale_lock, dead_attempts, attempt } = *job;
    let this_attempt = Attempt {
        attempt,
        started_at: OffsetDateTime::now_utc(),
        ended_at: None,
        lock_holder: crate::channel::lock_holder(),
    };
    let secret_vars: Vec<&str> = secret_inputs.iter().map(|(v, _)| v.as_str()).collect();
    let tf = &config.terraform.path;
    let refused = config.values.as_ref().and_then(|v| v.master_key_env.as_deref());
    let (pass, rc) = (&config.terraform.pass_env, config.terraform.cli_config.as_deref());
    let env = with_job(job_env(std::env::vars_os(), pass, refused, dir, rc), request);
    let env = match credentials {
        Some(credentials) => with_credentials(env, dir, credentials).map_err(TerraformError::from)?,
        None => env,
    };
    write_secret_inputs(dir, secret_inputs).map_err(TerraformError::from)?;
    let keyed = credentials.and_then(|c| c.backend_config);
    write_root_module(dir, request, module, &config.state, &secret_vars, None, keyed.is_some())
        .map_err(TerraformError::from)?;
    // An import, or the plan of one waiting for approval.
    if !request.imports.is_empty() && matches!(request.operation, JobOperation::Import | JobOperation::Plan) {
        crate::files::write(&dir.join("imports.tf"), heimdall_core::import::import_blocks(&request.imports))
            .map_err(TerraformError::from)?;
    }
    let step = |ok: bool, tail: &str, what: &str| match (ok, LockInfo::from_terraform_error(tail)) {
        (true, _) => Ok(()),
        // Someone else's lock (a dead attempt's was forced above): say whose.
        (false, Some(lock)) => Err(RunFailure::failed(format!(
            "terraform {what} failed: the state is locked by {} (lock {}, {}), not by an attempt of this job",
            lock.who, lock.id, lock.operation
        ))),
        (false, None) => Err(RunFailure::failed(format!("terraform {what} failed: {}", error_summary(tail)))),
    };
    // A backend key goes by file: its path in argv, never the key.
    let backend_file = keyed.map(|path| format!("-backend-config={}", dir.join(path).display()));
    let init: Vec<&str> =
        ["init", "-input=false", "-no-color"].into_iter().chain(backend_file.as_deref()).collect();
    phases.files = lap(&mut mark);
    let (mut ok, _, mut tail) = run(tf, dir, &env, &init, log, Stdout::Log).await?;
    // The module is installed now (init installs modules before it checks
    // their arguments): one that declares the region variable gets it, and
    // an init that failed for the lack of it runs again.
    let source = module.source.as_str();
    if module_declares_variable(dir, source, REGION_VARIABLE) {
        write_root_module(
            dir,
            request,
            module,
            &config.state,
            &secret_vars,
            Some(&request.region),
            keyed.is_some(),
        )
        .map_err(TerraformError::from)?;
        if !ok {
            (ok, _, tail) = run(tf, dir, &env, &init, log, Stdout::Log).await?;
        }
    }
    step(ok, &tail, "init")?;
    let outputs = module_outputs(dir, source)?;
    write_outputs(dir, &outputs).map_err(TerraformError::from)?;
    phases.init = lap(&mut mark);
    // A drift check takes no lock, so it never waits on one.
    let died = stale_lock.is_some() || !dead_attempts.is_empty();
    if died && request.operation != JobOperation::DriftCheck {
        take_over_dead_lock(tf, dir, &env, stale_lock, dead_attempts, log).await?;
    }
    phases.takeover = lap(&mut mark);
    // One `apply -json`: it plans (the plan is in the log), applies, and
    // reports the outputs — the same two Terraform runs as a bare
    // `init && apply`, so Heimdall adds next to nothing to a job. An
    // import plans first and applies that plan only if it changes nothing.
    let mut apply_args = vec!["apply", "-input=false", "-auto-approve", "-lock-timeout=10s", "-json"];
    match (request.operation, request.plan_sha256.as_deref()) {
        (JobOperation::DriftCheck, _) => return drift_plan(tf, dir, &env, log).await,
        (JobOperation::Plan, _) => {
            let keyed = backend_file.as_deref();
            return saved_plan(tf, dir, &env, &config.state, request, keyed, log).await;
        }
        // Exactly the plan the approver read, imports and all.
        (JobOperation::Apply | JobOperation::Import, Some(approved)) => {
            let keyed = backend_file.as_deref();
            approved_plan(tf, dir, &env, &config.state, request, keyed, approved, log).await?;
            apply_args = vec!["apply", "-input=false", "-lock-timeout=10s", "-json", APPROVAL_PLAN];
        }
        (JobOperation::Destroy, _) => apply_args.push("-destroy"),
        (JobOperation::Import, None) => {
            import_plan(tf, dir, &env, request, log).await?;
            apply_args.push(IMPORT_PLAN);
        }
        (JobOperation::Apply, None) => {}
    }
    let apply = run(tf, dir, &env, &apply_args, log, Stdout::JsonUi);
    tokio::pin!(apply);
    // An apply that is still running after a moment holds the state lock
    // for a while: learn its ID (a probe is refused with the lock's info)
    // so the heartbeat can report it, and a later attempt can take over
    // exactly that lock if this Agent dies.
    let (ok, outputs_json, tail) = tokio::select! {
        r = &mut apply => r,
        () = tokio::time::sleep(std::time::Duration::from_secs(2)) => {
            // Reported only if this attempt made it: a lock it is waiting
            // for is someone else's, never to be forced for this job.
            match probe_lock(tf, dir, &env).await {
                Some(found) if state_lock::made_by(&found, &this_attempt, OffsetDateTime::now_utc()) => {
                    let _ = lock_id.send(Some(found.id));
                }
                Some(found) => {
                    let _ = log.send(format!("Waiting on the state lock {} held by {}\n", found.id, found.who));
                }
                None => {}
            }
            apply.await
        }
    }?;
    phases.apply = lap(&mut mark);
    if !ok && request.plan_sha256.is_some() && heimdall_core::plan::is_stale(&tail) {
        return Err(RunFailure::refused(
            ErrorCode::StalePlan,
            "the state changed since the approved plan was made, so Terraform refused it; nothing was applied, and a new plan is made for approval",
        ));
    }
    step(ok, &tail, "apply")?;
    if request.operation == JobOperation::Destroy || outputs_json.is_empty() {
        return Ok(serde_json::json!({}));
    }
    let outputs = redact_outputs(&outputs_json).map_err(RunFailure::from);
    phases.outputs = lap(&mut mark);
    outputs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_outputs_and_sensitivity() {
        let tf = r#"
output "id" {
  value = terraform_data.this.id
}
output "secret" {
  value     = "x"
  sensitive = true
}
output "nested" { value = { a = { b = 1 } } }
"#;
        let mut outs = BTreeMap::new();
        scan_blocks(tf, "output", &mut outs);
        assert_eq!(
            outs,
            BTreeMap::from([("id".into(), false), ("nested".into(), false), ("secret".into(), true)])
        );
    }

    #[test]
    fn redacts_sensitive_outputs() {
        let json = br#"{"id":{"sensitive":false,"type":"string","value":"abc"},"key":{"sensitive":true,"type":"string","value":"hunter2"}}"#;
        let out = redact_outputs(json).unwrap();
        assert_eq!(out, serde_json::json!({"id": "abc", "key": "<sensitive>"}));
        assert!(!out.to_string().contains("hunter2"));
    }

    #[test]
    fn error_summary_keeps_title_and_message() {
        let stderr = "\n│ Error: Resource precondition failed\n│ \n│   on main.tf line 54:\n│   54:   condition = !var.fail\n│ \n│ heimdall fixture: failing on purpose.\n╵\n";
        assert_eq!(
            error_summary(stderr),
            "Resource precondition failed: heimdall fixture: failing on purpose."
        );
        assert_eq!(error_summary("boom\n"), "boom");
    }
}
