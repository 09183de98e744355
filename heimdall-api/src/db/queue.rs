//! The job queue: claims under a lease, heartbeats, logs, the end of an
//! attempt and the reaper. Decisions come from `heimdall_core::queue`; the
//! Resource follows through `resources::settle`.

use async_trait::async_trait;
use heimdall_core::audit::AuditAction;
use heimdall_core::drift;
use heimdall_core::ids::EventId;
use heimdall_core::ids::{JobId, LeaseId, OrgId, ResourceId};
use heimdall_core::infra::{Job, JobOperation, JobStatus};
use heimdall_core::ports::{JobOutcome, JobQueue, NewEvent, StoreError, StoreResult};
use heimdall_core::queue::{self, ReapDecision};
use heimdall_core::state_lock::{self, Attempt};
use sqlx::{Any, Transaction};
use time::OffsetDateTime;

use super::events::insert_event;
use super::infra_rows::*;
use super::sql::{db_err, from_micros, parse_id, to_micros, SqlStore};
use super::{claim_sql, expired_sql};

/// A plan job's plan, kept on its revision while that still waits for
/// approval (a superseded revision's plan is no longer to be read).
async fn record_plan(
    tx: &mut Transaction<'_, Any>,
    job: &Job,
    outputs: &serde_json::Value,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let Some(plan) = heimdall_core::plan::from_report(outputs) else {
        // Nothing to approve then: the revision waits, with no plan.
        tracing::warn!(job = %job.id, "a plan job reported no plan (sha256 and summary)");
        return Ok(());
    };
    let updated = sqlx::query(
        "UPDATE resource_revisions SET plan = $1 WHERE resource_id = $2 AND number = $3 AND state = 'pending_approval'",
    )
    .bind(json_text(&plan)?)
    .bind(job.resource_id.to_string())
    .bind(job.request.revision)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    if updated.rows_affected() == 0 {
        return Ok(());
    }
    let detail = serde_json::json!({ "job": job.id, "revision": job.request.revision, "plan": plan.sha256,
                                     "add": plan.summary.add, "change": plan.summary.change, "remove": plan.summary.remove });
    insert_event(tx, job.org_id, resource_event(job, AuditAction::ResourcePlanned, detail, now)).await
}

/// An audit event about `job`'s Resource, by the Agent that ran it.
fn resource_event(
    job: &Job,
    action: AuditAction,
    detail: serde_json::Value,
    now: OffsetDateTime,
) -> NewEvent {
    NewEvent {
        id: EventId::from_uuid(uuid::Uuid::new_v4()),
        at: now,
        actor: format!("agent:{}", job.agent.as_deref().unwrap_or("unknown")),
        action,
        target: format!("resource:{}", job.resource_id),
        detail,
    }
}

/// The apply of `job`'s approved plan found it stale: if its revision is
/// still the Resource's newest, that revision waits for approval again,
/// without a plan, and a new plan job is queued for it.
async fn replan(tx: &mut Transaction<'_, Any>, job: &Job, now: OffsetDateTime) -> StoreResult<()> {
    let (current,): (i64,) = sqlx::query_as("SELECT revision FROM resources WHERE id = $1")
        .bind(job.resource_id.to_string())
        .fetch_one(&mut **tx)
        .await
        .map_err(db_err)?;
    if current != job.request.revision {
        return Ok(());
    }
    sqlx::query(
        "UPDATE resource_revisions SET state = 'pending_approval', plan = NULL, decided_by = NULL, decided_at = NULL,
                decision_reason = NULL
         WHERE resource_id = $1 AND number = $2",
    )
    .bind(job.resource_id.to_string())
    .bind(job.request.revision)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    let again = heimdall_core::plan::replan(job, JobId::from_uuid(uuid::Uuid::new_v4()), now);
    insert_job(tx, &again).await?;
    let detail = serde_json::json!({ "job": job.id, "revision": job.request.revision, "plan": job.request.plan_sha256,
                                     "replan_job": again.id });
    insert_event(tx, job.org_id, resource_event(job, AuditAction::ResourcePlanStale, detail, now)).await
}

/// What a completed job does to the Resource's drift mark
/// (`heimdall_core::drift::after`), with its audit event, in the job's
/// transaction.
async fn mark_drift(
    tx: &mut Transaction<'_, Any>,
    job: &Job,
    outputs: &serde_json::Value,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let (since, current_revision, status): (Option<i64>, i64, String) =
        sqlx::query_as("SELECT drifted_at, revision, status FROM resources WHERE id = $1")
            .bind(job.resource_id.to_string())
            .fetch_one(&mut **tx)
            .await
            .map_err(db_err)?;
    let finished = drift::Finished {
        operation: job.operation,
        revision: job.request.revision,
        current_revision,
        current_status: parse_enum(&status)?,
        outputs,
    };
    let (value, action) = match drift::after(since.map(from_micros), finished, now) {
        drift::Mark::Keep => return Ok(()),
        drift::Mark::Set(at) => (Some(to_micros(at)), AuditAction::ResourceDrifted),
        drift::Mark::Clear => (None, AuditAction::ResourceDriftCleared),
    };
    sqlx::query("UPDATE resources SET drifted_at = $1 WHERE id = $2")
        .bind(value)
        .bind(job.resource_id.to_string())
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    let detail =
        serde_json::json!({ "job": job.id, "operation": job.operation, "revision": job.request.revision });
    insert_event(tx, job.org_id, resource_event(job, action, detail, now)).await
}

/// A job held under `lease` that is still running and not expired at `now`.
/// A job that ended failed (no try left, or not retryable): an audit
/// event `job.failed`, which the organization's channel carries.
async fn record_failure(
    tx: &mut Transaction<'_, Any>,
    job: &Job,
    reason: Option<&str>,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let event = NewEvent {
        id: EventId::from_uuid(uuid::Uuid::new_v4()),
        at: now,
        actor: format!("agent:{}", job.agent.as_deref().unwrap_or("unknown")),
        action: AuditAction::JobFailed,
        target: format!("job:{}", job.id),
        detail: serde_json::json!({
            "resource": job.resource_id,
            "resource_name": job.request.resource_name,
            "operation": job.operation,
            "revision": job.request.revision,
            "attempts": job.attempts,
            "reason": reason,
        }),
    };
    insert_event(tx, job.org_id, event).await
}

async fn leased_job(
    tx: &mut Transaction<'_, Any>,
    job: JobId,
    lease: LeaseId,
    now: OffsetDateTime,
) -> StoreResult<Job> {
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT id FROM jobs WHERE id = $1 AND lease_id = $2 AND status = 'running' AND lease_expires_at >= $3",
    )
    .bind(job.to_string())
    .bind(lease.to_string())
    .bind(to_micros(now))
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?;
    if row.is_none() {
        return Err(StoreError::Fenced);
    }
    fetch_job(tx, job).await
}

#[async_trait]
impl JobQueue for SqlStore {
    async fn claim(
        &self,
        org: OrgId,
        agent: &str,
        lock_holder: Option<&str>,
        lease: LeaseId,
        now: OffsetDateTime,
    ) -> StoreResult<Option<Job>> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let claimed: Option<(String,)> = match sqlx::query_as(claim_sql(self.backend))
            .bind(org.to_string())
            .bind(lease.to_string())
            .bind(to_micros(queue::lease_until(now)))
            .bind(agent.to_owned())
            .bind(to_micros(now))
            .fetch_optional(&mut *tx)
            .await
        {
            Ok(row) => row,
            // Another claimer started a job of the same Resource first.
            Err(e) if super::sql::is_unique_violation(&e) => return Ok(None),
            Err(e) => return Err(db_err(e)),
        };
        let Some((id,)) = claimed else {
            return Ok(None);
        };
        let job = fetch_job(&mut tx, parse_id(&id)?).await?;
        sqlx::query(
            "INSERT INTO job_attempts (job_id, attempt, agent, lock_holder, started_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(id)
        .bind(job.attempts)
        .bind(agent.to_owned())
        .bind(lock_holder.map(str::to_owned))
        .bind(to_micros(now))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if let Some(status) = queue::resource_status_for(job.operation, JobStatus::Running) {
            set_resource_status(&mut tx, job.resource_id, status, None, now).await?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(Some(job))
    }

    async fn heartbeat(
        &self,
        job: JobId,
        lease: LeaseId,
        state_lock_id: Option<&str>,
        now: OffsetDateTime,
    ) -> StoreResult<OffsetDateTime> {
        let until = queue::lease_until(now);
        let updated = sqlx::query(
            "UPDATE jobs SET lease_expires_at = $1, state_lock_id = COALESCE($5, state_lock_id)
             WHERE id = $2 AND lease_id = $3 AND status = 'running' AND lease_expires_at >= $4",
        )
        .bind(to_micros(until))
        .bind(job.to_string())
        .bind(lease.to_string())
        .bind(to_micros(now))
        .bind(state_lock_id.map(str::to_owned))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        if updated.rows_affected() == 1 {
            Ok(until)
        } else {
            Err(StoreError::Fenced)
        }
    }

    async fn append_log(&self, job: JobId, lease: LeaseId, chunk: &str) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        append_in(&mut tx, job, lease, chunk).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn finish(
        &self,
        job: JobId,
        lease: LeaseId,
        outcome: JobOutcome,
        now: OffsetDateTime,
    ) -> StoreResult<Job> {
        self.finish_with_log(job, lease, "", outcome, now).await
    }

    async fn finish_with_log(
        &self,
        job: JobId,
        lease: LeaseId,
        log_tail: &str,
        outcome: JobOutcome,
        now: OffsetDateTime,
    ) -> StoreResult<Job> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        if !log_tail.is_empty() {
            append_in(&mut tx, job, lease, log_tail).await?;
        }
        let held = leased_job(&mut tx, job, lease, now).await?;
        let stale_plan = matches!(outcome, JobOutcome::StalePlan { .. });
        let (status, reason, outputs) = match outcome {
            JobOutcome::Completed { outputs } => (JobStatus::Completed, None, Some(outputs)),
            JobOutcome::Failed { reason, retryable } => {
                (queue::after_failure(held.attempts, held.max_attempts, retryable), Some(reason), None)
            }
            JobOutcome::StalePlan { reason } => (JobStatus::Failed, Some(reason), None),
        };
        let finished = (status != JobStatus::Queued).then_some(to_micros(now));
        let attempt_outcome = if status == JobStatus::Completed { "completed" } else { "failed" };
        end_attempt(&mut tx, &held, attempt_outcome, now).await?;
        sqlx::query(
            "UPDATE jobs SET status = $1, reason = $2, finished_at = $3, lease_id = NULL, lease_expires_at = NULL WHERE id = $4",
        )
        .bind(status.as_str())
        .bind(reason.clone())
        .bind(finished)
        .bind(job.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        // Only an apply of an approved plan can find its plan stale.
        if stale_plan && held.request.plan_sha256.is_some() {
            replan(&mut tx, &held, now).await?;
        }
        if let Some(resource_status) = queue::resource_status_for(held.operation, status) {
            settle_resource_status(&mut tx, held.resource_id, resource_status, reason.as_deref(), now)
                .await?;
        }
        if let Some(outputs) = &outputs {
            mark_drift(&mut tx, &held, outputs, now).await?;
        }
        if let (Some(outputs), JobOperation::Plan) = (&outputs, held.operation) {
            record_plan(&mut tx, &held, outputs, now).await?;
        }
        if status == JobStatus::Failed {
            record_failure(&mut tx, &held, reason.as_deref(), now).await?;
        }
        if let (Some(outputs), JobOperation::Apply | JobOperation::Import) = (outputs, held.operation) {
            sqlx::query("UPDATE resources SET outputs = $1 WHERE id = $2")
                .bind(json_text(&outputs)?)
                .bind(held.resource_id.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        let job = fetch_job(&mut tx, job).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(job)
    }

    async fn dead_attempts(&self, resource: ResourceId) -> StoreResult<Vec<Attempt>> {
        let mut rows: Vec<(i64, Option<String>, i64, Option<i64>)> = sqlx::query_as(
            // Only those since the Resource's last completed run that took
            // the lock (every operation but a drift check): that run could
            // not have taken it while a dead attempt's lock was there.
            "SELECT a.attempt, a.lock_holder, a.started_at, a.ended_at FROM job_attempts a JOIN jobs j ON j.id = a.job_id
             WHERE j.resource_id = $1 AND a.outcome = 'lease_expired'
               AND a.started_at > COALESCE((SELECT max(b.ended_at) FROM job_attempts b JOIN jobs k ON k.id = b.job_id
                                            WHERE k.resource_id = $1 AND b.outcome = 'completed'
                                              AND k.operation <> 'drift_check'), -1)
             ORDER BY a.started_at DESC LIMIT $2",
        )
        .bind(resource.to_string())
        .bind(state_lock::DEAD_ATTEMPTS_KEPT)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.reverse();
        Ok(rows
            .into_iter()
            .map(|(attempt, lock_holder, started_at, ended_at)| Attempt {
                attempt,
                started_at: from_micros(started_at),
                ended_at: ended_at.map(from_micros),
                lock_holder,
            })
            .collect())
    }

    async fn count_active_jobs(&self) -> StoreResult<Vec<(JobOperation, JobStatus, i64)>> {
        let rows: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT operation, status, COUNT(*) FROM jobs WHERE status IN ('queued', 'running') GROUP BY operation, status",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter()
            .map(|(op, status, count)| Ok((parse_enum(&op)?, parse_enum(&status)?, count)))
            .collect()
    }

    async fn reap(&self, now: OffsetDateTime) -> StoreResult<Vec<(JobId, ReapDecision)>> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let expired: Vec<(String,)> = sqlx::query_as(expired_sql(self.backend))
            .bind(to_micros(now))
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
        let mut decisions = Vec::with_capacity(expired.len());
        for (id,) in expired {
            let job = fetch_job(&mut tx, parse_id(&id)?).await?;
            let expired_at = job.lease_expires_at.unwrap_or(now);
            let decision = queue::reap_decision(job.attempts, job.max_attempts, expired_at);
            end_attempt(&mut tx, &job, "lease_expired", expired_at).await?;
            let (status, reason) = match &decision {
                ReapDecision::Requeue => (JobStatus::Queued, None),
                ReapDecision::Fail(reason) => (JobStatus::Failed, Some(reason.clone())),
            };
            sqlx::query(
                "UPDATE jobs SET status = $1, reason = $2, finished_at = $3, lease_id = NULL, lease_expires_at = NULL WHERE id = $4",
            )
            .bind(status.as_str())
            .bind(reason.clone())
            .bind((status == JobStatus::Failed).then_some(to_micros(now)))
            .bind(id.clone())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            if let Some(resource_status) = queue::resource_status_for(job.operation, status) {
                settle_resource_status(&mut tx, job.resource_id, resource_status, reason.as_deref(), now)
                    .await?;
            }
            if status == JobStatus::Failed {
                record_failure(&mut tx, &job, reason.as_deref(), now).await?;
            }
            decisions.push((job.id, decision));
        }
        tx.commit().await.map_err(db_err)?;
        Ok(decisions)
    }
}

/// Records how the current attempt of `job` ended, in the caller's
/// transaction.
async fn end_attempt(
    tx: &mut Transaction<'_, Any>,
    job: &Job,
    outcome: &str,
    at: OffsetDateTime,
) -> StoreResult<()> {
    sqlx::query("UPDATE job_attempts SET ended_at = $1, outcome = $2 WHERE job_id = $3 AND attempt = $4")
        .bind(to_micros(at))
        .bind(outcome.to_owned())
        .bind(job.id.to_string())
        .bind(job.attempts)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Appends `chunk` to the job's log in the caller's transaction, if the
/// caller holds the job's lease (capped at 1 MiB, with a truncation marker).
async fn append_in(
    tx: &mut Transaction<'_, Any>,
    job: JobId,
    lease: LeaseId,
    chunk: &str,
) -> StoreResult<()> {
    let row: Option<(i64, i64)> = sqlx::query_as(
        "SELECT l.bytes, l.truncated FROM job_logs l JOIN jobs j ON j.id = l.job_id
         WHERE j.id = $1 AND j.lease_id = $2 AND j.status = 'running'",
    )
    .bind(job.to_string())
    .bind(lease.to_string())
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?;
    let (bytes, truncated) = row.ok_or(StoreError::Fenced)?;
    let (taken, now_truncated) =
        queue::log_append(usize::try_from(bytes).unwrap_or(usize::MAX), truncated != 0, chunk);
    if taken.is_empty() && !now_truncated {
        return Ok(());
    }
    let mut text = taken.to_owned();
    if now_truncated {
        text.push_str(queue::TRUNCATION_MARKER);
    }
    sqlx::query(
        "UPDATE job_logs SET content = content || $1, bytes = bytes + $2, truncated = $3 WHERE job_id = $4",
    )
    .bind(text)
    .bind(i64::try_from(taken.len()).unwrap_or(i64::MAX))
    .bind(i64::from(now_truncated || truncated != 0))
    .bind(job.to_string())
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}
