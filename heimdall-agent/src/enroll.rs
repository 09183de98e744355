//! Enrollment: generate the Agent's key here, send only a CSR, store the
//! certificate the API signed. The private key never leaves this machine.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use heimdall_core::wire::{Enroll, Enrolled, ErrorBody};
use rcgen::{CertificateParams, KeyPair};

use crate::config::{AgentConfig, Modules, StateConfig, TerraformPin};
use crate::terraform;

/// What `heimdall-agent enroll` was told besides the token.
#[derive(Debug)]
pub struct EnrollOptions {
    pub api: String,
    pub data: PathBuf,
    pub terraform: PathBuf,
    pub allowed_modules: Vec<String>,
    pub state: StateConfig,
    pub concurrency: usize,
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    f.write_all(bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Writes `bytes` to `path` whole or not at all (a temporary file, then a
/// rename), replacing what was there.
pub(crate) fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    write_file(&tmp, bytes, mode)?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot replace {}: {e}", path.display()))
}

pub async fn enroll(token: &str, options: EnrollOptions) -> Result<(Enrolled, PathBuf), String> {
    let data = &options.data;
    std::fs::create_dir_all(data).map_err(|e| format!("cannot create {}: {e}", data.display()))?;
    let key_path = data.join("agent.key");
    if key_path.exists() {
        return Err(format!(
            "{} already holds an enrolled Agent; use another --data directory",
            data.display()
        ));
    }
    let (version, sha256) = terraform::identify(&options.terraform).await?;

    let key = KeyPair::generate().map_err(|e| format!("cannot generate a key: {e}"))?;
    let csr = CertificateParams::default()
        .serialize_request(&key)
        .and_then(|c| c.pem())
        .map_err(|e| format!("cannot build the certificate request: {e}"))?;
    let url = format!("{}/v1/agents/enroll", options.api.trim_end_matches('/'));
    let resp = reqwest::Client::new()
        .post(&url)
        .json(&Enroll { token: token.to_owned(), csr_pem: csr })
        .send()
        .await
        .map_err(|e| format!("cannot reach the API: {}", e.without_url()))?;
    let status = resp.status();
    let bytes = resp.bytes().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        let err = serde_json::from_slice::<ErrorBody>(&bytes)
            .map(|b| format!("{}: {}", b.error.code, b.error.message))
            .unwrap_or_else(|_| format!("HTTP {status}"));
        return Err(format!("enrollment refused: {err}"));
    }
    let enrolled: Enrolled =
        serde_json::from_slice(&bytes).map_err(|e| format!("unexpected response: {e}"))?;

    let mut key_pem = key.serialize_pem();
    let written = write_file(&key_path, key_pem.as_bytes(), 0o600);
    zeroize::Zeroize::zeroize(&mut key_pem);
    written?;
    write_file(&data.join("agent.pem"), enrolled.certificate_pem.as_bytes(), 0o644)?;
    write_file(&data.join("ca.pem"), enrolled.ca_pem.as_bytes(), 0o644)?;
    let config = AgentConfig {
        api_url: enrolled.agent_api_url.clone(),
        cert: data.join("agent.pem"),
        key: key_path,
        ca: data.join("ca.pem"),
        work_dir: data.join("work"),
        concurrency: options.concurrency,
        terraform: TerraformPin { path: options.terraform.clone(), version, sha256 },
        modules: Modules { allowed_sources: options.allowed_modules },
        state: options.state,
        values: None,
        local_api: None,
    };
    let text = toml::to_string_pretty(&config).map_err(|e| e.to_string())?;
    let config_path = data.join("agent.toml");
    let header = "# Heimdall Agent configuration, written by `heimdall-agent enroll`.\n\
                  # terraform.sha256 pins the executable: a job refuses to run if it changes.\n\
                  # modules.allowed_sources are globs; a schema's module outside them never runs.\n\n";
    write_file(&config_path, format!("{header}{text}").as_bytes(), 0o644)?;
    Ok((enrolled, config_path))
}
