//! The Agent channel's job use cases, run once for every adapter: which
//! Agent a peer's certificate is, and the leased attempt it works on
//! (heartbeat, log, finish), each refused once the lease is gone. The
//! claim's wait and the federation's credentials are the adapter's (a
//! wake-up and calls to a cloud); what a claim and an attempt that gets no
//! credentials do to the queue are here.

use time::OffsetDateTime;

use crate::error::{ApiError, ErrorCode};
use crate::ids::{AgentId, JobId, LeaseId};
use crate::infra::{Agent, Job};
use crate::ports::{AgentStore, InfraStore, JobOutcome, JobQueue, StoreError, FENCED};
use crate::Sha256Hex;

/// Most characters of a failure's reason kept with the job.
pub const MAX_REASON_CHARS: usize = 4000;

/// The Agent whose client certificate the peer presented: its id (the
/// certificate's URI SAN) and the certificate's digest, both as issued.
#[derive(Clone, Debug)]
pub struct Peer {
    pub id: AgentId,
    pub cert_sha256: Sha256Hex,
}

/// The Agent `peer` is, revoked or not: the one enrolled under its id
/// with exactly that certificate. Anything else is `UNAUTHENTICATED`.
pub async fn enrolled<S: AgentStore + ?Sized>(store: &S, peer: &Peer) -> Result<Agent, ApiError> {
    let unknown = || ApiError::new(ErrorCode::Unauthenticated, "this Agent certificate is unknown");
    let agent = store.get_agent(peer.id).await.map_err(|e| match e {
        StoreError::NotFound(_) => unknown(),
        other => other.into(),
    })?;
    if agent.cert_sha256 != peer.cert_sha256 {
        return Err(unknown());
    }
    Ok(agent)
}

/// What a revoked Agent is told: stop at once.
pub fn revoked(agent: &Agent) -> ApiError {
    ApiError::new(
        ErrorCode::AgentRevoked,
        format!("Agent {} was revoked: it runs no job and serves no secret", agent.name),
    )
}

/// The Agent `peer` is, if it is enrolled and not revoked.
pub async fn serving<S: AgentStore + ?Sized>(store: &S, peer: &Peer) -> Result<Agent, ApiError> {
    let agent = enrolled(store, peer).await?;
    if agent.revoked_at.is_some() {
        return Err(revoked(&agent));
    }
    Ok(agent)
}

/// The serving Agent `peer` is, marked seen at `now`.
pub async fn seen<S: AgentStore + ?Sized>(
    store: &S,
    peer: &Peer,
    now: OffsetDateTime,
) -> Result<Agent, ApiError> {
    let agent = serving(store, peer).await?;
    store.touch_agent(agent.id, now).await?;
    Ok(Agent { last_seen_at: Some(now), ..agent })
}

/// A lease that is gone is `CONFLICT`: the Agent stops working on the job.
fn fenced(e: StoreError) -> ApiError {
    match e {
        StoreError::Fenced => ApiError::new(ErrorCode::Conflict, FENCED),
        other => other.into(),
    }
}

/// The job `key` names in the serving Agent's organization.
async fn owned_job<S: AgentStore + InfraStore + ?Sized>(
    store: &S,
    peer: &Peer,
    key: &str,
) -> Result<(Agent, JobId), ApiError> {
    let agent = serving(store, peer).await?;
    let id: JobId = key.parse().map_err(|_| ApiError::not_found("job"))?;
    store.get_job(agent.org_id, id).await?;
    Ok((agent, id))
}

/// Keeps the lease on job `key` alive (and records the state lock the
/// attempt holds); until when.
pub async fn heartbeat<S: AgentStore + InfraStore + JobQueue + ?Sized>(
    store: &S,
    peer: &Peer,
    (key, lease): (&str, LeaseId),
    state_lock_id: Option<&str>,
    now: OffsetDateTime,
) -> Result<OffsetDateTime, ApiError> {
    let (_, job) = owned_job(store, peer, key).await?;
    store.heartbeat(job, lease, state_lock_id, now).await.map_err(fenced)
}

/// Appends `chunk` to the log of job `key`, under its lease.
pub async fn append_log<S: AgentStore + InfraStore + JobQueue + ?Sized>(
    store: &S,
    peer: &Peer,
    (key, lease): (&str, LeaseId),
    chunk: &str,
) -> Result<(), ApiError> {
    let (_, job) = owned_job(store, peer, key).await?;
    store.append_log(job, lease, chunk).await.map_err(fenced)
}

/// How an Agent says an attempt ended.
#[derive(Clone, Debug)]
pub enum Reported {
    Completed {
        outputs: serde_json::Value,
    },
    /// `code`: the error the Agent refused the run with, if it did.
    Failed {
        reason: String,
        code: Option<ErrorCode>,
        retryable: bool,
    },
}

/// What the queue does with a reported end: a reason kept to
/// [`MAX_REASON_CHARS`] and led by the Agent's code; `STALE_PLAN` (the
/// state moved under an approved plan) sends the revision back for a new
/// plan and approval.
pub fn outcome(reported: Reported) -> JobOutcome {
    match reported {
        Reported::Completed { outputs } => JobOutcome::Completed { outputs },
        Reported::Failed { reason, code, retryable } => {
            let reason: String = reason.chars().take(MAX_REASON_CHARS).collect();
            match code {
                Some(ErrorCode::StalePlan) => {
                    JobOutcome::StalePlan { reason: format!("{}: {reason}", ErrorCode::StalePlan) }
                }
                Some(code) => JobOutcome::Failed { reason: format!("{code}: {reason}"), retryable },
                None => JobOutcome::Failed { reason, retryable },
            }
        }
    }
}

/// Ends the leased attempt of job `key` as reported, its `log_tail`
/// appended first; the job as it ended (queued again when a retry may
/// help and attempts remain).
pub async fn finish<S: AgentStore + InfraStore + JobQueue + ?Sized>(
    store: &S,
    peer: &Peer,
    (key, lease): (&str, LeaseId),
    (log_tail, reported): (&str, Reported),
    now: OffsetDateTime,
) -> Result<(Agent, Job), ApiError> {
    let (agent, job) = owned_job(store, peer, key).await?;
    let ended = store.finish_with_log(job, lease, log_tail, outcome(reported), now).await.map_err(fenced)?;
    Ok((agent, ended))
}

/// A job claimed, with what the attempt must know of those before it.
#[derive(Clone, Debug)]
pub struct Claimed {
    pub job: Job,
    pub lease: LeaseId,
    /// The state lock an earlier attempt of this job held, if any.
    pub stale_lock_id: Option<String>,
    /// Earlier jobs of the Resource that ran out of attempts: their locks too.
    pub dead_attempts: Vec<crate::state_lock::Attempt>,
}

/// Leases the next queued job of the Agent's organization under `lease`,
/// if there is one.
pub async fn claim<S: JobQueue + ?Sized>(
    store: &S,
    agent: &Agent,
    lock_holder: Option<&str>,
    lease: LeaseId,
    now: OffsetDateTime,
) -> Result<Option<Job>, ApiError> {
    Ok(store.claim(agent.org_id, &agent.name, lock_holder, lease, now).await?)
}

/// A claimed job the Agent can run: the locks earlier attempts may have
/// left (`state_lock`).
pub async fn runnable<S: JobQueue + ?Sized>(
    store: &S,
    job: Job,
    lease: LeaseId,
) -> Result<Claimed, ApiError> {
    let stale_lock_id = if job.attempts > 1 { job.state_lock_id.clone() } else { None };
    let dead_attempts = store.dead_attempts(job.resource_id).await?;
    Ok(Claimed { job, lease, stale_lock_id, dead_attempts })
}

/// Ends an attempt that got no credentials, as a run that failed would;
/// the job as it ended.
pub async fn without_credentials<S: JobQueue + ?Sized>(
    store: &S,
    (job, lease): (JobId, LeaseId),
    (reason, retryable): (String, bool),
    now: OffsetDateTime,
) -> Result<Job, ApiError> {
    Ok(store.finish(job, lease, JobOutcome::Failed { reason, retryable }, now).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reported_failure_keeps_its_code_a_bounded_reason_and_a_stale_plan_goes_back() {
        let failed = |code| Reported::Failed { reason: "x".repeat(5000), code, retryable: true };
        match outcome(failed(None)) {
            JobOutcome::Failed { reason, retryable } => {
                assert_eq!((reason.len(), retryable), (MAX_REASON_CHARS, true))
            }
            other => panic!("{other:?}"),
        }
        match outcome(failed(Some(ErrorCode::ModuleNotAllowed))) {
            JobOutcome::Failed { reason, .. } => assert!(reason.starts_with("MODULE_NOT_ALLOWED: x")),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(outcome(failed(Some(ErrorCode::StalePlan))), JobOutcome::StalePlan { reason } if reason.starts_with("STALE_PLAN: "))
        );
        let done = outcome(Reported::Completed { outputs: serde_json::json!({ "a": 1 }) });
        assert!(matches!(done, JobOutcome::Completed { .. }));
    }
}
