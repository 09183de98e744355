//! The secrets a job runs with: its account's static credential and the
//! secrets its input names, read from this Agent's own store the way every
//! read is: decided as a read by the member the job acts for
//! (`heimdall_core::on_behalf`), then recorded before it is used (the
//! accessor in the access log is `agent <name> for <email>`), and a federated account's temporary
//! credentials from the claim. `heimdall_core::credentials` says what
//! Terraform gets.

use std::sync::Arc;

use heimdall_core::clock::Clock;
use heimdall_core::credentials::{self, Credentials};
use heimdall_core::ids::AgentId;
use heimdall_core::infra::{AccountAuth, Job};
use heimdall_core::{ApiError, ErrorCode, Redacted};
use heimdall_wire::JobCredentials;
use time::OffsetDateTime;
use zeroize::Zeroizing;

use crate::access::SharedPolicy;
use crate::jobs::terraform::RunFailure;
use crate::values::recorder::Recorder;
use crate::values::store::{ServedRead, ValueStoreError, Vault};

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

/// What a job runs with besides its request: its account's credentials
/// (none when the Agent's own serve, for an API from before federation),
/// and the values of the secrets its input names, by module variable.
#[derive(Debug, Default)]
pub struct JobSecrets {
    pub credentials: Option<Credentials>,
    pub inputs: Vec<(String, Redacted<String>)>,
}

/// For an `oidc` account what the API obtained with the job's identity
/// token (`federated`, from the claim); for a static one its secret's
/// value; and each secret input's value. A refusal is final (`NOT_FOUND`,
/// `VERSION_DEACTIVATED`, `FORBIDDEN`, `INVALID_INPUT`): Terraform never
/// starts. A store or recorder that fails is retried.
pub async fn for_job(
    source: Option<&CredentialSource>,
    job: &Job,
    federated: Option<&JobCredentials>,
    place: credentials::JobPlace<'_>,
) -> Result<JobSecrets, RunFailure> {
    let account = &job.request.account;
    let credentials = match (&account.auth, federated) {
        (AccountAuth::Oidc { .. }, Some(federated)) => {
            Some(credentials::federated(federated, account.provider, &account.auth, place).map_err(refused)?)
        }
        // An API from before federation: the Agent's own credentials, as then.
        (AccountAuth::Oidc { .. }, None) => None,
        (AccountAuth::Static { secret }, _) => {
            let value = read_for_job(source, job, secret).await?;
            Some(credentials::for_provider(job.request.account.provider, secret, &value).map_err(refused)?)
        }
    };
    let mut inputs = Vec::new();
    for input in &job.request.secret_inputs {
        let value = read_for_job(source, job, &input.secret).await?;
        let text = String::from_utf8(value.to_vec()).map_err(|_| {
            refused(ApiError::new(
                ErrorCode::InvalidInput,
                format!(
                    "secret {} is not UTF-8 text, so it cannot be the input {}",
                    input.secret, input.variable
                ),
            ))
        })?;
        inputs.push((input.variable.clone(), Redacted::new(text)));
    }
    Ok(JobSecrets { credentials, inputs })
}

fn refused(e: ApiError) -> RunFailure {
    RunFailure { code: Some(e.code), reason: e.message, retryable: false }
}

/// The latest value of `secret` in the job's environment, read as every
/// read is: decided as a read by the member the job acts for (an
/// organization secret she may read there, by the last sync's policies; a
/// sync asked for first if that refuses), then recorded as `agent <name>
/// for <email>` before it is used.
async fn read_for_job(
    source: Option<&CredentialSource>,
    job: &Job,
    secret: &str,
) -> Result<Zeroizing<Vec<u8>>, RunFailure> {
    let Some(source) = source else {
        return Err(refused(ApiError::new(
            ErrorCode::NotFound,
            format!("the job needs secret {secret}, but this Agent keeps no values ([values] in agent.toml)"),
        )));
    };
    let Some(environment) = job.request.environment_id else {
        return Err(refused(ApiError::new(
            ErrorCode::NotFound,
            "the job names no environment to read its secrets in",
        )));
    };
    // Used for the member the job acts for, as her read, with policies at
    // least as new as the job (a snapshot from before it was queued, or
    // read back from disk, is refreshed first); a secret created a moment
    // ago, or a policy changed since, may be newer: a sync before refusing.
    let on_behalf = job.request.requested_by.as_ref();
    let what = format!("job {}", job.id);
    let decide = |snapshot: &crate::access::PolicySnapshot| {
        snapshot.may_use(on_behalf, &what, secret, environment, source.clock.now())
    };
    let than = match source.policy.current() {
        Some(snapshot) if snapshot.answered_since(job.queued_at) && decide(&snapshot).is_ok() => None,
        Some(snapshot) => Some(snapshot.received_at()),
        None => Some(OffsetDateTime::UNIX_EPOCH),
    };
    if let Some(than) = than {
        let Some(snapshot) = source.policy.refresh(than, REFRESH_WAIT).await else {
            let reason = "this Agent has not synced with the API yet; the job is retried".to_owned();
            return Err(RunFailure { code: Some(ErrorCode::PolicyStale), reason, retryable: true });
        };
        decide(&snapshot).map_err(|e| RunFailure {
            retryable: e.code == ErrorCode::PolicyStale,
            code: Some(e.code),
            reason: e.message,
        })?;
    }
    let unavailable = |e: ValueStoreError| RunFailure {
        code: Some(ErrorCode::Unavailable),
        reason: e.to_string(),
        retryable: true,
    };
    let found = match source.vault.latest_value(job.org_id, secret, environment).await {
        Ok(found) => found,
        Err(ValueStoreError::Deactivated { version, .. }) => {
            return Err(refused(ApiError::new(
                ErrorCode::VersionDeactivated,
                format!("the latest version ({version}) of secret {secret} was deactivated; set a new one"),
            )))
        }
        Err(e @ ValueStoreError::Undecryptable { .. }) => {
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
    let part = format!("agent {}", job.agent.as_deref().unwrap_or("?"));
    let record = ServedRead {
        // Decided above: `on_behalf` is some.
        accessor: on_behalf.map_or(part.clone(), |who| heimdall_core::on_behalf::accessor(&part, who)),
        at_micros: i64::try_from(now.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX),
        secret: secret.to_owned(),
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
    tracing::info!(job = %job.id, secret = %secret, version, "secret read for the job");
    Ok(value)
}
