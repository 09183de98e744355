//! Enrollment: generate the Agent's key here, send only a CSR, store the
//! certificate the API signed. The private key never leaves this machine.

use std::path::{Path, PathBuf};

use heimdall_wire::{Enroll, Enrolled, ErrorBody};
use rcgen::{CertificateParams, KeyPair};
use zeroize::Zeroizing;

use crate::config::{AgentConfig, Modules, StateConfig, TerraformPin};
use crate::jobs::terraform;
use crate::setup::SetupError;

/// The registration token comes from here, or from standard input; never argv.
pub const REGISTRATION_TOKEN_ENV: &str = "HEIMDALL_REGISTRATION_TOKEN";

/// The registration token: `HEIMDALL_REGISTRATION_TOKEN`, removed from the
/// environment once read (so `terraform version`, run by enroll, does not
/// inherit it), else one line of standard input. Call before threads start.
pub fn take_registration_token() -> Result<Zeroizing<String>, SetupError> {
    let token = match std::env::var_os(REGISTRATION_TOKEN_ENV) {
        Some(value) => {
            std::env::remove_var(REGISTRATION_TOKEN_ENV);
            let text = value.into_string();
            Zeroizing::new(
                text.map_err(|_| SetupError::Usage(format!("{REGISTRATION_TOKEN_ENV} is not text")))?,
            )
        }
        None => {
            let mut line = Zeroizing::new(String::new());
            std::io::stdin().read_line(&mut line).map_err(SetupError::io("read standard input"))?;
            line
        }
    };
    let token = Zeroizing::new(token.trim().to_owned());
    if token.is_empty() {
        return Err(SetupError::Usage(format!(
            "no registration token: set {REGISTRATION_TOKEN_ENV} or pipe it on standard input"
        )));
    }
    Ok(token)
}

/// Where to look for Terraform when `--terraform` is not given.
pub const TERRAFORM_ENV: &str = "HEIMDALL_TERRAFORM";

/// The Terraform to pin: `flag`, else `$HEIMDALL_TERRAFORM` (`env`), else
/// the first of `candidates` that is executable, else `terraform` on `path`.
/// A bare name is looked up on `path`; a relative path is taken from `cwd`.
/// A path asked for by name that is not there is an error; finding none by
/// looking is `Ok(None)`.
pub fn locate_terraform(
    flag: Option<&Path>,
    env: Option<std::ffi::OsString>,
    candidates: &[PathBuf],
    cwd: &Path,
    path: Option<std::ffi::OsString>,
) -> Result<Option<PathBuf>, SetupError> {
    let on_path = |name: &str| {
        let dirs: Vec<PathBuf> =
            path.as_ref().map(|p| std::env::split_paths(p).collect()).unwrap_or_default();
        dirs.into_iter().map(|dir| cwd.join(dir).join(name)).find(|p| is_executable(p))
    };
    let env = env.filter(|v| !v.is_empty()).map(PathBuf::from);
    let Some((named, from)) =
        flag.map(|p| (p.to_path_buf(), "--terraform")).or(env.map(|p| (p, TERRAFORM_ENV)))
    else {
        let found = candidates.iter().map(|c| cwd.join(c)).find(|c| is_executable(c));
        return Ok(found.or_else(|| on_path("terraform")));
    };
    let found = match named.components().count() {
        1 => on_path(&named.to_string_lossy()),
        _ => Some(cwd.join(&named)).filter(|p| is_executable(p)),
    };
    let missing = || SetupError::NoTerraform(format!("{from} {}: not an executable file", named.display()));
    found.map(Some).ok_or_else(missing)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// No Terraform anywhere it was looked for, and what to do about it.
pub fn no_terraform(looked: &str) -> SetupError {
    SetupError::NoTerraform(format!(
        "no terraform found (looked for --terraform, ${TERRAFORM_ENV}, {looked}terraform on PATH); install \
         Terraform (in the Heimdall repository: bash scripts/install-test-tools.sh) or pass --terraform PATH"
    ))
}

/// `heimdall-agent enroll`'s flags.
#[derive(Debug, clap::Args)]
pub struct EnrollArgs {
    /// The API's URL (the one people use).
    #[arg(long, env = "HEIMDALL_API_URL")]
    api: String,
    /// The SHA-256 of the installation CA, as `heimdall agent token create`
    /// printed it: the API is trusted only if its chain holds that CA.
    #[arg(long)]
    ca_sha256: Option<String>,
    /// Where the key, certificate and agent.toml go.
    #[arg(long)]
    data: PathBuf,
    /// The terraform executable to pin (its SHA-256 is recorded);
    /// default: $HEIMDALL_TERRAFORM, else terraform on PATH.
    #[arg(long)]
    terraform: Option<PathBuf>,
    /// Module sources this Agent runs (glob; repeatable).
    #[arg(long = "allow-module")]
    allow_module: Vec<String>,
    /// S3 endpoint override for S3-compatible state stores.
    #[arg(long)]
    s3_endpoint: Option<String>,
    /// Keep state on local disk under this directory instead of S3.
    #[arg(long)]
    local_state: Option<PathBuf>,
    #[arg(long, default_value_t = 2)]
    concurrency: usize,
}

/// `heimdall-agent enroll`: the token from the environment or standard
/// input, Terraform located and pinned, then [`enroll`].
pub fn main(args: EnrollArgs) -> Result<(), SetupError> {
    let EnrollArgs { api, ca_sha256, data, terraform, allow_module, s3_endpoint, local_state, concurrency } =
        args;
    let token = take_registration_token()?;
    // The pin names an absolute path: `run` may start elsewhere.
    let cwd = std::env::current_dir().map_err(SetupError::io("tell the current directory"))?;
    let (env, path) = (std::env::var_os(TERRAFORM_ENV), std::env::var_os("PATH"));
    let terraform =
        locate_terraform(terraform.as_deref(), env, &[], &cwd, path)?.ok_or_else(|| no_terraform(""))?;
    let options = EnrollOptions {
        api,
        ca_sha256,
        data,
        terraform,
        allowed_modules: allow_module,
        state: StateConfig { s3_endpoint, local_dir: local_state },
        concurrency,
    };
    let runtime = tokio::runtime::Runtime::new().map_err(SetupError::io("start the runtime"))?;
    let (enrolled, config_path) = runtime.block_on(enroll(&token, options))?;
    println!("✓ Agent enrolled: {} ({})", enrolled.agent.name, enrolled.agent.id);
    println!("✓ Configuration: {}", config_path.display());
    println!("Next: heimdall-agent run --config {}", config_path.display());
    Ok(())
}

/// What `heimdall-agent enroll` was told besides the token.
#[derive(Debug)]
pub struct EnrollOptions {
    pub api: String,
    /// The installation CA's SHA-256 (from `heimdall agent token create`).
    pub ca_sha256: Option<String>,
    pub data: PathBuf,
    pub terraform: PathBuf,
    pub allowed_modules: Vec<String>,
    pub state: StateConfig,
    pub concurrency: usize,
}

/// The HTTP client for enrollment. With a CA fingerprint, the API is
/// trusted only if the chain it presents holds that CA; without one, an
/// `https://` API must have a certificate the system trusts. Plain HTTP
/// (the token would travel in clear) only to this machine.
fn enrollment_client(
    api: &str,
    ca_sha256: Option<&str>,
) -> Result<(reqwest::Client, Option<heimdall_tls::verify::PinnedRoot>), SetupError> {
    let url = reqwest::Url::parse(api).map_err(|e| SetupError::Usage(format!("--api is not a URL: {e}")))?;
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    let loopback = host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if url.scheme() != "https" && !(url.scheme() == "http" && loopback) {
        return Err(SetupError::Usage(
            "--api must be an https:// URL (plain HTTP only to this machine): the token is a credential"
                .into(),
        ));
    }
    let builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
    let Some(pin) = ca_sha256 else {
        return builder.build().map(|c| (c, None)).map_err(|e| SetupError::Tls(e.to_string()));
    };
    let pinned_root = || {
        heimdall_tls::verify::PinnedRoot::new(pin)
            .map_err(|why| SetupError::Usage(format!("--ca-sha256: {why}")))
    };
    let pinned = pinned_root()?;
    let verifier = std::sync::Arc::new(pinned_root()?);
    let tls = heimdall_tls::verify::client_config(verifier, None)?;
    let client = builder.use_preconfigured_tls(tls).build().map_err(|e| SetupError::Tls(e.to_string()))?;
    Ok((client, Some(pinned)))
}

pub async fn enroll(token: &str, options: EnrollOptions) -> Result<(Enrolled, PathBuf), SetupError> {
    let data = &options.data;
    std::fs::create_dir_all(data).map_err(crate::files::FileError::on("create", data))?;
    let key_path = data.join("agent.key");
    if key_path.exists() {
        return Err(SetupError::Occupied(format!(
            "{} already holds an enrolled Agent; use another --data directory",
            data.display()
        )));
    }
    let (version, sha256) = terraform::identify(&options.terraform).await?;

    let key = KeyPair::generate().map_err(|e| SetupError::Tls(format!("cannot generate a key: {e}")))?;
    let csr = CertificateParams::default()
        .serialize_request(&key)
        .and_then(|c| c.pem())
        .map_err(|e| SetupError::Tls(format!("cannot build the certificate request: {e}")))?;
    let (http, pin) = enrollment_client(&options.api, options.ca_sha256.as_deref())?;
    let base = options.api.trim_end_matches('/');
    // With a fingerprint, the API's CA is checked before the token is sent.
    if let Some(pin) = &pin {
        let ca: heimdall_wire::CaCertificate = http
            .get(format!("{base}/v1/ca"))
            .send()
            .await
            .map_err(unreachable)?
            .json()
            .await
            .map_err(|e| SetupError::Unexpected(format!("no CA certificate: {e}")))?;
        if !pin.matches_pem(&ca.certificate) {
            return Err(SetupError::Tls(
                "the API's CA does not have the fingerprint given with --ca-sha256; the token was not sent"
                    .into(),
            ));
        }
    }
    let url = format!("{base}/v1/agents/enroll");
    let resp = http
        .post(&url)
        .json(&Enroll { token: token.to_owned(), csr_pem: csr })
        .send()
        .await
        .map_err(unreachable)?;
    let status = resp.status();
    let bytes = resp.bytes().await.map_err(unreachable)?;
    if !status.is_success() {
        let (code, message) = serde_json::from_slice::<ErrorBody>(&bytes)
            .map(|b| (b.error.code.to_string(), b.error.message))
            .unwrap_or_else(|_| (format!("HTTP {status}"), "no error body".to_owned()));
        return Err(SetupError::Refused { asked: "enrollment", code, message });
    }
    let enrolled: Enrolled =
        serde_json::from_slice(&bytes).map_err(|e| SetupError::Unexpected(e.to_string()))?;
    // The CA this Agent will trust from now on must be the one it pinned.
    if let Some(pin) = &pin {
        if !pin.matches_pem(&enrolled.ca_pem) {
            return Err(SetupError::Tls(
                "the API's CA does not have the fingerprint given with --ca-sha256; nothing was written"
                    .into(),
            ));
        }
    }

    let mut key_pem = key.serialize_pem();
    let written = crate::files::write_new(&key_path, key_pem.as_bytes(), 0o600);
    zeroize::Zeroize::zeroize(&mut key_pem);
    written?;
    crate::files::write_new(&data.join("agent.pem"), enrolled.certificate_pem.as_bytes(), 0o644)?;
    crate::files::write_new(&data.join("ca.pem"), enrolled.ca_pem.as_bytes(), 0o644)?;
    let config = AgentConfig {
        api_url: enrolled.agent_api_url.clone(),
        cert: data.join("agent.pem"),
        key: key_path,
        ca: data.join("ca.pem"),
        work_dir: data.join("work"),
        concurrency: options.concurrency,
        terraform: TerraformPin {
            path: options.terraform.clone(),
            version,
            sha256,
            pass_env: Vec::new(),
            cli_config: None,
        },
        modules: Modules { allowed_sources: options.allowed_modules, by_type: Default::default() },
        state: options.state,
        federation: Default::default(),
        values: None,
        local_api: None,
        metrics: None,
    };
    let config_path = data.join("agent.toml");
    crate::files::write_new(&config_path, config.render()?.as_bytes(), 0o644)?;
    Ok((enrolled, config_path))
}

/// The request did not reach the API, or its answer did not arrive; the
/// URL (which may carry a token in other requests) is left out.
fn unreachable(e: reqwest::Error) -> SetupError {
    SetupError::Unreachable(crate::channel::chain(&e.without_url()))
}
