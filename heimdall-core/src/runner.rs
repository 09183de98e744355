//! What an Agent agrees to run, decided before anything runs: the pinned
//! Terraform, a module from its allowlist, input keys Terraform accepts,
//! and the environment Terraform gets (the job's region included). The Agent measures (hashes the
//! executable, reads its environment) and applies; the rules are here.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use globset::{Glob, GlobSetBuilder};

use crate::error::{ApiError, ErrorCode};
use crate::infra::{JobRequest, ModuleRef, Provider};
use crate::sha256::Sha256Hex;

/// The Agent's pin: the executable it agreed to run.
#[derive(Clone, Copy, Debug)]
pub struct Pin<'a> {
    pub path: &'a Path,
    pub version: &'a str,
    /// The SHA-256 written at enrollment.
    pub sha256: &'a Sha256Hex,
}

/// Modules the Agent's operator maps to schema types, for schemas that
/// name none.
pub type ModulesByType = BTreeMap<String, ModuleRef>;

/// Whether `request` may run here, and the module it runs: the executable
/// at the pin's path hashes to `measured_sha256`; the module is the
/// schema's, else the one `by_type` maps its type to; its source, without
/// its query string, matches `allowed_sources` (globs), so a `?ref=` cannot
/// widen a glob; a git source's `ref` is the module's version (added when
/// the source has none); and every input key is one a module can take.
/// Refusals are final (`TERRAFORM_CHECKSUM_MISMATCH`, `MODULE_NOT_ALLOWED`,
/// `SCHEMA_VIOLATION`): nothing was run.
pub fn check_run(
    pin: Pin<'_>,
    measured_sha256: &Sha256Hex,
    modules: Modules<'_>,
    request: &JobRequest,
) -> Result<ModuleRef, ApiError> {
    if measured_sha256 != pin.sha256 {
        return Err(ApiError::new(
            ErrorCode::TerraformChecksumMismatch,
            format!(
                "{} has SHA-256 {measured_sha256}, but the Agent pins {} (terraform {}); nothing was run",
                pin.path.display(),
                pin.sha256,
                pin.version
            ),
        ));
    }
    let not_allowed = |why: String| ApiError::new(ErrorCode::ModuleNotAllowed, why);
    let module = match (&request.module, request.schema_type.as_deref()) {
        (Some(module), _) => module.clone(),
        (None, Some(kind)) => modules.by_type.get(kind).cloned().ok_or_else(|| {
            not_allowed(format!(
                "the schema {kind} names no module and this Agent maps none to it ([modules.by_type] in agent.toml); nothing was run"
            ))
        })?,
        (None, None) => return Err(not_allowed("the schema names no module; nothing was run".into())),
    };
    let base = module.source.split_once('?').map_or(module.source.as_str(), |(base, _)| base);
    let mut set = GlobSetBuilder::new();
    for pattern in modules.allowed_sources {
        set.add(Glob::new(pattern).map_err(|e| not_allowed(format!("bad allowlist glob: {e}")))?);
    }
    let set = set.build().map_err(|e| not_allowed(e.to_string()))?;
    if !set.is_match(base) {
        return Err(not_allowed(format!(
            "module source {base} is not in this Agent's modules.allowed_sources; nothing was run"
        )));
    }
    check_input_keys(&request.effective_input)?;
    at_its_version(module)
}

/// The allowlist glob for every module under the directory `dir`, in the
/// glob dialect [`check_run`] matches with (`dir`'s own glob characters
/// taken literally).
pub fn modules_under(dir: &str) -> String {
    format!("{}/**", globset::escape(dir.trim_end_matches('/')))
}

/// The module as Terraform must fetch it: a git source at its version
/// (`?ref=<version>` added; another `ref` refused), anything else as is
/// (registry sources take `version` in the module block). The Agent runs
/// this and `terraform export` writes it.
pub fn at_its_version(module: ModuleRef) -> Result<ModuleRef, ApiError> {
    let (base, query) = module.source.split_once('?').unwrap_or((module.source.as_str(), ""));
    if !is_git_source(base) {
        return Ok(module);
    }
    let refs: Vec<&str> = query.split('&').filter_map(|pair| pair.strip_prefix("ref=")).collect();
    match refs.as_slice() {
        [] => {
            let joiner = if query.is_empty() { "?" } else { "&" };
            let source = format!("{}{joiner}ref={}", module.source, module.version);
            Ok(ModuleRef { source, version: module.version })
        }
        [one] if *one == module.version => Ok(module),
        _ => Err(ApiError::new(
            ErrorCode::ModuleNotAllowed,
            format!(
                "module source {} asks for another ref than its version {}; nothing was run",
                module.source, module.version
            ),
        )),
    }
}

/// What the Agent's operator allows: source globs, and modules by type.
#[derive(Clone, Copy, Debug)]
pub struct Modules<'a> {
    pub allowed_sources: &'a [String],
    pub by_type: &'a ModulesByType,
}

/// Sources Terraform fetches with git, where `?ref=` picks the revision.
fn is_git_source(source: &str) -> bool {
    ["git::", "git@", "github.com/", "bitbucket.org/"].iter().any(|p| source.starts_with(p))
}

/// Every input key becomes a module argument: it must be a Terraform
/// variable name, and not one Heimdall sets itself (`heimdall_*`). The API
/// checks this when a Resource is requested, the Agent again before it runs.
pub fn check_input_keys(input: &serde_json::Value) -> Result<(), ApiError> {
    let keys = input.as_object().map(|o| o.keys().collect::<Vec<_>>()).unwrap_or_default();
    if let Some(key) = keys.iter().find(|k| !is_identifier(k)) {
        return Err(ApiError::new(
            ErrorCode::SchemaViolation,
            format!("input key {key:?} is not a valid Terraform variable name"),
        ));
    }
    if let Some(key) = keys.iter().find(|k| k.starts_with(RESERVED_PREFIX)) {
        return Err(ApiError::new(
            ErrorCode::SchemaViolation,
            format!("input key {key:?} is Heimdall's to set ({RESERVED_PREFIX}* names are reserved)"),
        ));
    }
    Ok(())
}

/// A Terraform variable name.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// What Terraform's environment may hold of the Agent's, besides `PATH`
/// and `TF_*`: the cloud credentials the job runs with (today the Agent's
/// own AWS ones; the job's own come with OIDC federation), proxies and CA
/// bundles. Nothing else: not the master key's variable, not a token.
pub const PASSED_ENV: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_CA_BUNDLE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL_STS",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Terraform's whole environment, from the Agent's (`vars`): `PATH`,
/// `HOME` (the job's directory), `TF_*` but `TF_VAR_*`, what
/// [`PASSED_ENV`] and the operator's `[terraform] pass_env` name, and the
/// automation switches. `refused` (the master key's variable) never
/// passes, whatever lists it. The Agent's `[terraform] cli_config`, when
/// set, is `TF_CLI_CONFIG_FILE`, over the Agent's own.
pub fn job_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    pass_env: &[String],
    refused: Option<&str>,
    home: &Path,
    cli_config: Option<&Path>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vars
        .into_iter()
        .filter(|(name, _)| {
            let Some(name) = name.to_str() else { return false };
            if Some(name) == refused || name == "HOME" {
                return false;
            }
            name == "PATH"
                || (name.starts_with("TF_") && !name.starts_with("TF_VAR_"))
                || PASSED_ENV.contains(&name)
                || pass_env.iter().any(|p| p == name)
        })
        .collect();
    env.push(("HOME".into(), home.as_os_str().to_owned()));
    for (name, value) in [("TF_IN_AUTOMATION", "1"), ("TF_INPUT", "0"), ("CHECKPOINT_DISABLE", "1")] {
        set(&mut env, name, value.into());
    }
    if let Some(file) = cli_config {
        set(&mut env, "TF_CLI_CONFIG_FILE", file.as_os_str().to_owned());
    }
    env
}

/// The variable a module declares to be told the region its job runs in.
pub const REGION_VARIABLE: &str = "heimdall_region";

/// Input keys Heimdall sets itself: a request may not.
const RESERVED_PREFIX: &str = "heimdall_";

/// What the job itself adds to Terraform's environment: for AWS, the
/// region it runs in (the Resource's, else its account's), over whatever
/// the Agent's own environment says.
pub fn with_job(mut env: Vec<(OsString, OsString)>, request: &JobRequest) -> Vec<(OsString, OsString)> {
    if request.account.provider == Provider::Aws {
        for name in ["AWS_REGION", "AWS_DEFAULT_REGION"] {
            set(&mut env, name, request.region.clone().into());
        }
    }
    env
}

fn set(env: &mut Vec<(OsString, OsString)>, name: &str, value: OsString) {
    env.retain(|(n, _)| n != name);
    env.push((name.into(), value));
}

#[cfg(test)]
mod tests;
