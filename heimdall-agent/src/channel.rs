//! The Agent's side of the channel: HTTPS with its client certificate to
//! the API's mTLS listener, trusting only the installation CA. The Agent
//! only dials out.

use std::sync::Arc;
use std::time::Duration;

use heimdall_core::ids::{JobId, LeaseId};
use heimdall_core::{ApiError, ErrorCode};
use heimdall_wire::{
    Claim, ClaimedJob, ErrorBody, FinishJob, FinishOutcome, Heartbeat, LeaseExtended, LogChunk,
};
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::config::AgentConfig;

#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("{0}")]
    Api(ApiError),
    #[error("cannot reach the API: {0}")]
    Transport(String),
    #[error("{0}")]
    Setup(String),
    /// The CA or the Agent's certificate cannot make a TLS client.
    #[error(transparent)]
    Tls(#[from] heimdall_tls::TlsSetupError),
}

impl ChannelError {
    /// The API refused because our lease is gone: stop working on the job.
    pub fn is_fenced(&self) -> bool {
        matches!(self, ChannelError::Api(e) if e.code == ErrorCode::Conflict)
    }
}

#[derive(Clone, Debug)]
pub struct Channel {
    http: reqwest::Client,
    base: String,
}

impl Channel {
    /// HTTPS to the API's Agent listener with this Agent's client
    /// certificate, trusting only the installation CA, and only a server
    /// whose certificate names `urn:heimdall:api`: an enrolled Agent gets a
    /// CA-signed certificate for any host name it asks, never that.
    pub fn new(config: &AgentConfig) -> Result<Self, ChannelError> {
        let read = |p: &std::path::Path| {
            std::fs::read_to_string(p)
                .map_err(|e| ChannelError::Setup(format!("cannot read {}: {e}", p.display())))
        };
        let cert_pem = read(&config.cert)?;
        let key_pem = zeroize::Zeroizing::new(read(&config.key)?);
        let roots = heimdall_tls::verify::roots(&read(&config.ca)?)?;
        let verifier =
            heimdall_tls::verify::ExpectIdentity::new(roots, heimdall_tls::identity::API_URI, None)?;
        let tls = heimdall_tls::verify::client_config(Arc::new(verifier), Some((&cert_pem, &key_pem)))
            .map_err(|e| ChannelError::Setup(format!("agent certificate or key is not valid: {e}")))?;
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(90))
            .build()
            .map_err(|e| ChannelError::Setup(e.to_string()))?;
        Ok(Self { http, base: config.api_url.trim_end_matches('/').to_owned() })
    }

    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<Option<T>, ChannelError> {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .json(body)
            .send()
            .await
            .map_err(|e| ChannelError::Transport(chain(&e.without_url())))?;
        let status = resp.status();
        if status == StatusCode::NO_CONTENT {
            return Ok(None);
        }
        let bytes = resp.bytes().await.map_err(|e| ChannelError::Transport(e.to_string()))?;
        if status.is_success() {
            return serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| ChannelError::Transport(format!("unexpected response: {e}")));
        }
        let err = serde_json::from_slice::<ErrorBody>(&bytes)
            .map(|b| b.error)
            .unwrap_or_else(|_| ApiError::new(ErrorCode::Internal, format!("HTTP {status}")));
        Err(ChannelError::Api(err))
    }

    /// Asks the API to number a version for a program whose token this
    /// Agent accepted; the answer carries the grant to store it here.
    pub async fn program_version(
        &self,
        request: &heimdall_wire::ProgramVersionRequest,
    ) -> Result<heimdall_wire::ProgramVersion, ChannelError> {
        self.post("/v1/agent/program-versions", request)
            .await?
            .ok_or_else(|| ChannelError::Transport("empty version response".into()))
    }

    /// Asks the API to start a deletion for a program whose token this
    /// Agent accepted.
    pub async fn program_deletion(
        &self,
        request: &heimdall_wire::ProgramDeletionRequest,
    ) -> Result<heimdall_wire::ProgramDeletion, ChannelError> {
        self.post("/v1/agent/program-deletions", request)
            .await?
            .ok_or_else(|| ChannelError::Transport("empty deletion response".into()))
    }

    /// Registers a program token this Agent made (its id and scope, never
    /// the token); the answer names its environment by id.
    pub async fn register_program_token(
        &self,
        request: &heimdall_wire::RegisterProgramToken,
    ) -> Result<heimdall_core::program::RegisteredToken, ChannelError> {
        self.post("/v1/agent/program-tokens", request)
            .await?
            .ok_or_else(|| ChannelError::Transport("empty registration response".into()))
    }

    /// Tells the API a program token was revoked here.
    pub async fn revoke_program_token(&self, id: &str) -> Result<(), ChannelError> {
        self.post::<_, serde_json::Value>(
            &format!("/v1/agent/program-tokens/{id}/revoke"),
            &serde_json::json!({}),
        )
        .await
        .map(|_| ())
    }

    /// The first database task due in an environment this Agent holds,
    /// leased to it; `None` when nothing is due.
    pub async fn claim_database_task(&self) -> Result<Option<heimdall_wire::DatabaseTask>, ChannelError> {
        self.post("/v1/agent/database-tasks/claim", &serde_json::json!({})).await
    }

    /// How a database task ended.
    pub async fn report_database_task(
        &self,
        user: heimdall_core::ids::ServiceUserId,
        report: &heimdall_wire::DatabaseTaskReport,
    ) -> Result<(), ChannelError> {
        self.post::<_, serde_json::Value>(&format!("/v1/agent/database-tasks/{user}/report"), report)
            .await
            .map(|_| ())
    }

    /// Long-polls for a job; `None` when nothing came within `wait`.
    pub async fn claim(&self, wait: Duration) -> Result<Option<ClaimedJob>, ChannelError> {
        let body =
            Claim { wait_seconds: u32::try_from(wait.as_secs()).unwrap_or(30), lock_holder: lock_holder() };
        self.post("/v1/agent/claim", &body).await
    }

    /// Reports access records and the store's inventory; receives roles,
    /// policies, assignments and deactivations. Never carries a value.
    pub async fn sync(
        &self,
        request: &heimdall_wire::SyncRequest,
    ) -> Result<heimdall_wire::SyncResponse, ChannelError> {
        self.post("/v1/agent/sync", request)
            .await?
            .ok_or_else(|| ChannelError::Transport("empty sync response".into()))
    }

    /// Asks the CA for the local API's certificate (a CSR for a key made here).
    pub async fn server_certificate(
        &self,
        request: &heimdall_wire::ServerCertificateRequest,
    ) -> Result<heimdall_wire::IssuedCertificate, ChannelError> {
        self.post("/v1/agent/server-certificate", request)
            .await?
            .ok_or_else(|| ChannelError::Transport("empty certificate response".into()))
    }

    pub async fn heartbeat(
        &self,
        job: JobId,
        lease: LeaseId,
        state_lock_id: Option<String>,
    ) -> Result<LeaseExtended, ChannelError> {
        self.post(&format!("/v1/agent/jobs/{job}/heartbeat"), &Heartbeat { lease, state_lock_id })
            .await?
            .ok_or_else(|| ChannelError::Transport("empty heartbeat response".into()))
    }

    pub async fn log(&self, job: JobId, lease: LeaseId, chunk: String) -> Result<(), ChannelError> {
        self.post::<_, serde_json::Value>(&format!("/v1/agent/jobs/{job}/log"), &LogChunk { lease, chunk })
            .await
            .map(|_| ())
    }

    pub async fn finish(
        &self,
        job: JobId,
        lease: LeaseId,
        outcome: FinishOutcome,
        log_tail: String,
    ) -> Result<(), ChannelError> {
        self.post::<_, serde_json::Value>(
            &format!("/v1/agent/jobs/{job}/finish"),
            &FinishJob { lease, outcome, log_tail },
        )
        .await
        .map(|_| ())
    }
}

pub use heimdall_core::error::chain;

/// How Terraform names this process in a state lock (`Who`): `user@host`,
/// found as Go's `os/user.Current` and `os.Hostname` find them (the
/// account's name in /etc/passwd, else `$USER`; the kernel's host name).
/// `None` where there is no /proc: then only a reported lock is taken over.
pub fn lock_holder() -> Option<String> {
    static HOLDER: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    HOLDER
        .get_or_init(|| {
            use std::os::unix::fs::MetadataExt;
            let uid = std::fs::metadata("/proc/self").ok()?.uid().to_string();
            let user = std::fs::read_to_string("/etc/passwd")
                .ok()
                .and_then(|passwd| {
                    passwd.lines().find_map(|line| {
                        let mut fields = line.split(':');
                        let name = fields.next()?;
                        (fields.nth(1)? == uid).then(|| name.to_owned())
                    })
                })
                .or_else(|| std::env::var("USER").ok())
                .unwrap_or_default();
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
            Some(format!("{user}@{}", host.trim()))
        })
        .clone()
}
