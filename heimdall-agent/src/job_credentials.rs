//! A job's static cloud credential: the value its account names, read from
//! this Agent's own store the way every read is (decided, then recorded
//! before it is used), and turned by `heimdall_core::credentials` into the
//! files Terraform reads. The accessor in the access log is `agent <name>`.

use std::sync::Arc;

use heimdall_core::clock::Clock;
use heimdall_core::credentials::{self, Credentials};
use heimdall_core::ids::AgentId;
use heimdall_core::infra::{AccountAuth, Job};
use heimdall_core::wire::JobCredentials;
use heimdall_core::{ApiError, ErrorCode};
use time::OffsetDateTime;

use crate::access::SharedPolicy;
use crate::recorder::Recorder;
use crate::store::{ServedRead, StoreError, Vault};
use crate::terraform::RunFailure;

/// Where a read for a job is recorded from: the Agent itself.
const SOURCE: &str = "127.0.0.1";

/// What reading credentials for jobs takes; `None` on an Agent without `[values]`.
#[derive(Clone, Debug)]
pub struct CredentialSource {
    pub vault: Arc<Vault>,
    pub recorder: Recorder,
    pub policy: SharedPolicy,
    pub agent: AgentId,
    pub clock: Arc<dyn Clock>,
}

/// How long a job waits for the sync it asked for.
const REFRESH_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The credentials `job` runs with: for an `oidc` account what the API
/// obtained with the job's identity token (`federated`, from the claim);
/// for a static one its secret's value, read for it here. A refusal is
/// final (`NOT_FOUND`, `VERSION_DEACTIVATED`, `FORBIDDEN`, `INVALID_INPUT`):
/// Terraform never starts. A store or recorder that fails is retried.
pub async fn for_job(
    source: Option<&CredentialSource>,
    job: &Job,
    federated: Option<&JobCredentials>,
) -> Result<Option<Credentials>, RunFailure> {
    let refused = |e: ApiError| RunFailure { code: Some(e.code), reason: e.message, retryable: false };
    let secret = match (&job.request.account.auth, federated) {
        (AccountAuth::Oidc { .. }, Some(federated)) => {
            return credentials::federated(federated).map(Some).map_err(refused);
        }
        // An API from before federation: the Agent's own credentials, as then.
        (AccountAuth::Oidc { .. }, None) => return Ok(None),
        (AccountAuth::Static { secret }, _) => secret,
    };
    let Some(source) = source else {
        return Err(refused(ApiError::new(
            ErrorCode::NotFound,
            format!(
                "account {} uses secret {secret}, but this Agent keeps no values ([values] in agent.toml)",
                job.request.account.id
            ),
        )));
    };
    let Some(environment) = job.request.environment_id else {
        return Err(refused(ApiError::new(
            ErrorCode::NotFound,
            "the job names no environment to read its credential in",
        )));
    };
    // A secret created a moment ago may be newer than the last sync: ask
    // for one before refusing.
    let than = match source.policy.current() {
        Some(snapshot) if snapshot.credential(secret).is_ok() => None,
        Some(snapshot) => Some(snapshot.received_at()),
        None => Some(OffsetDateTime::UNIX_EPOCH),
    };
    if let Some(than) = than {
        let Some(snapshot) = source.policy.refresh(than, REFRESH_WAIT).await else {
            let reason = "this Agent has not synced with the API yet; the job is retried".to_owned();
            return Err(RunFailure { code: Some(ErrorCode::PolicyStale), reason, retryable: true });
        };
        snapshot.credential(secret).map_err(refused)?;
    }
    let unavailable = |e: StoreError| RunFailure {
        code: Some(ErrorCode::Unavailable),
        reason: e.to_string(),
        retryable: true,
    };
    let found = match source.vault.latest_value(job.org_id, secret, environment).await {
        Ok(found) => found,
        Err(StoreError::Deactivated { version, .. }) => {
            return Err(refused(ApiError::new(
                ErrorCode::VersionDeactivated,
                format!("the latest version ({version}) of secret {secret} was deactivated; set a new one"),
            )))
        }
        Err(e @ StoreError::Undecryptable { .. }) => {
            return Err(refused(ApiError::new(ErrorCode::Internal, e.to_string())))
        }
        Err(e) => return Err(unavailable(e)),
    };
    let env_name = job.request.environment.as_deref().unwrap_or("its environment");
    let Some((version, value)) = found else {
        return Err(refused(ApiError::new(
            ErrorCode::NotFound,
            format!("secret {secret} has no value on this Agent in {env_name}; `heimdall secret set` it"),
        )));
    };
    let now = source.clock.now();
    let record = ServedRead {
        accessor: format!("agent {}", job.agent.as_deref().unwrap_or("?")),
        at_micros: i64::try_from(now.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX),
        secret: secret.clone(),
        environment,
        version,
        source: SOURCE.into(),
        served_by: source.agent,
    };
    // Durable first: a credential is used only once its read is recorded.
    source.recorder.record(record).await.map_err(|e| RunFailure {
        code: Some(ErrorCode::AuditUnavailable),
        reason: format!("the read of secret {secret} could not be recorded, so it was not used: {e}"),
        retryable: true,
    })?;
    tracing::info!(job = %job.id, secret = %secret, version, "static credential read for the job");
    credentials::for_provider(job.request.account.provider, secret, &value).map(Some).map_err(refused)
}
