//! The job queue, in the style of River's and Oban's rescuer tests: rows
//! that look like a crash, and what the reaper decides; fencing of stale
//! lease holders; the log cap; concurrent claimers.

use std::collections::HashSet;

use heimdall_api::testing::{TestApi, TestDatabase};
use heimdall_core::ids::{LeaseId, OrgId};
use heimdall_core::infra::{Job, JobStatus};
use heimdall_core::ports::{EventStore, InfraStore, JobOutcome, JobQueue, ResourceRecordStore, StoreError};
use heimdall_core::queue::{ReapDecision, LEASE, MAX_LOG_BYTES, TRUNCATION_MARKER};
use serde_json::json;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::support::{world, Client};

crate::on_every_backend!(
    reaper_requeues_then_fails_after_the_last_attempt,
    stale_lease_holders_are_fenced_out,
    one_running_job_per_resource,
    job_log_is_capped_with_a_marker,
    concurrent_claimers_never_share_a_job,
);

fn lease() -> LeaseId {
    LeaseId::from_uuid(Uuid::new_v4())
}

/// An API with `n` queued apply jobs, one per Resource.
async fn with_jobs(db: TestDatabase, n: usize) -> (TestApi, OrgId) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.clone();
    let w = world(&c, &owner).await;
    for i in 0..n {
        c.post(
            "/v1/resources",
            &owner,
            json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": format!("r{i}"),
                    "input": { "bucket": format!("bucket-{i}") } }),
        )
        .await
        .expect(201);
    }
    let org = api.bootstrapped.organization.id;
    (api, org)
}

async fn job(api: &TestApi, org: OrgId, job: &Job) -> Job {
    api.store.get_job(org, job.id).await.unwrap()
}

async fn reaper_requeues_then_fails_after_the_last_attempt(db: TestDatabase) {
    let (api, org) = with_jobs(db, 1).await;
    let t0 = OffsetDateTime::now_utc();
    let mut now = t0;
    let mut expiries = Vec::new();
    for attempt in 1..=3 {
        let holder = format!("heimdall@host-{attempt}");
        let claimed = api
            .store
            .claim(org, &format!("agent-{attempt}"), Some(&holder), lease(), now)
            .await
            .unwrap()
            .expect("claimable");
        assert_eq!(claimed.attempts, attempt);
        // What a new attempt learns of the dead ones: each one's span (to
        // its lease's end) and its Agent's lock holder, not its own.
        let earlier = api.store.dead_attempts(claimed.resource_id).await.unwrap();
        let spans: Vec<_> = earlier
            .iter()
            .map(|a| (a.attempt, a.lock_holder.clone().unwrap(), a.ended_at.unwrap()))
            .collect();
        let expected: Vec<_> = expiries
            .iter()
            .enumerate()
            .map(|(i, end)| (i as i64 + 1, format!("heimdall@host-{}", i + 1), *end))
            .collect();
        assert_eq!(spans, expected);
        expiries.push(claimed.lease_expires_at.unwrap());
        assert_eq!(claimed.status, JobStatus::Running);
        // Not yet expired: the reaper leaves it alone.
        assert!(api.store.reap(now + LEASE - Duration::seconds(1)).await.unwrap().is_empty());
        // The Agent died: no heartbeat, the lease runs out.
        now += LEASE + Duration::seconds(1);
        let decisions = api.store.reap(now).await.unwrap();
        assert_eq!(decisions.len(), 1);
        let after = job(&api, org, &claimed).await;
        if attempt < 3 {
            assert_eq!(decisions[0].1, ReapDecision::Requeue);
            assert_eq!((after.status, after.attempts), (JobStatus::Queued, attempt));
            let resource = api.store.get_resource(org, after.resource_id).await.unwrap();
            assert_eq!(resource.status.as_str(), "queued");
        } else {
            assert!(matches!(&decisions[0].1, ReapDecision::Fail(r) if r.contains("3/3")), "{decisions:?}");
            assert_eq!(after.status, JobStatus::Failed);
            assert!(after.reason.as_deref().unwrap().contains("lease expired"));
            let resource = api.store.get_resource(org, after.resource_id).await.unwrap();
            assert_eq!(resource.status.as_str(), "failed");
            assert!(resource.reason.unwrap().contains("3/3"));
            // The next job of this Resource still learns of all three.
            assert_eq!(api.store.dead_attempts(after.resource_id).await.unwrap().len(), 3);
        }
    }
    // Failed for good: one `job.failed` event (what the notification channel carries).
    let failed = api
        .store
        .list_events(
            org,
            &heimdall_core::ports::EventQuery {
                limit: 10,
                before: None,
                action_prefix: Some("job.failed".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].actor, "agent:agent-3");
    assert!(failed[0].detail["reason"].as_str().is_some_and(|r| r.contains("3/3")), "{:?}", failed[0].detail);
    assert_eq!(failed[0].detail["attempts"], 3);
    // Nothing left to claim or reap.
    assert!(api.store.claim(org, "agent-9", None, lease(), now).await.unwrap().is_none());
    assert!(api.store.reap(now + Duration::hours(1)).await.unwrap().is_empty());
}

async fn stale_lease_holders_are_fenced_out(db: TestDatabase) {
    let (api, org) = with_jobs(db, 1).await;
    let now = OffsetDateTime::now_utc();
    let first = lease();
    let claimed = api.store.claim(org, "agent-a", None, first, now).await.unwrap().unwrap();

    // Heartbeats extend the lease; a wrong lease is refused.
    let until =
        api.store.heartbeat(claimed.id, first, Some("lock-a"), now + Duration::seconds(10)).await.unwrap();
    assert_eq!(until, now + Duration::seconds(10) + LEASE);
    assert!(matches!(api.store.heartbeat(claimed.id, lease(), None, now).await, Err(StoreError::Fenced)));

    // agent-a goes silent; its lease expires and the reaper requeues.
    let later = until + Duration::seconds(1);
    assert!(
        matches!(api.store.heartbeat(claimed.id, first, None, later).await, Err(StoreError::Fenced)),
        "an expired lease cannot be revived"
    );
    api.store.reap(later).await.unwrap();
    let second = lease();
    let again = api.store.claim(org, "agent-b", None, second, later).await.unwrap().unwrap();
    assert_eq!((again.id, again.attempts, again.agent.as_deref()), (claimed.id, 2, Some("agent-b")));
    // The new holder learns which lock the dead attempt held.
    assert_eq!(again.state_lock_id.as_deref(), Some("lock-a"));

    // agent-a wakes up: it can neither log nor complete.
    assert!(matches!(api.store.append_log(claimed.id, first, "late output").await, Err(StoreError::Fenced)));
    let stale =
        api.store.finish(claimed.id, first, JobOutcome::Completed { outputs: json!({}) }, later).await;
    assert!(matches!(stale, Err(StoreError::Fenced)));
    assert_eq!(job(&api, org, &claimed).await.status, JobStatus::Running);

    // agent-b finishes.
    api.store.append_log(claimed.id, second, "apply complete\n").await.unwrap();
    let done = api
        .store
        .finish(claimed.id, second, JobOutcome::Completed { outputs: json!({ "id": "x" }) }, later)
        .await
        .unwrap();
    assert_eq!(done.status, JobStatus::Completed);
    let (log, truncated) = api.store.job_log(org, claimed.id).await.unwrap();
    assert_eq!((log.as_str(), truncated), ("apply complete\n", false));
    assert!(!log.contains("late output"));
    // Finishing twice is fenced too.
    assert!(matches!(
        api.store.finish(claimed.id, second, JobOutcome::Completed { outputs: json!({}) }, later).await,
        Err(StoreError::Fenced)
    ));
}

async fn one_running_job_per_resource(db: TestDatabase) {
    let (api, org) = with_jobs(db, 1).await;
    let c = Client::new(&api);
    let now = OffsetDateTime::now_utc();
    let l = lease();
    let running = api.store.claim(org, "agent-a", None, l, now).await.unwrap().unwrap();
    // A change queues revision 2 while revision 1 runs; it must wait.
    let rid = running.resource_id;
    c.call(
        reqwest::Method::PATCH,
        &format!("/v1/resources/{rid}"),
        &api.owner_token,
        Some(json!({ "input": { "bucket": "bucket-new" } })),
    )
    .await
    .expect(200);
    assert!(api.store.claim(org, "agent-b", None, lease(), now).await.unwrap().is_none());
    // A failed run with attempts left goes back to the queue, behind nothing.
    api.store
        .finish(running.id, l, JobOutcome::Failed { reason: "x".into(), retryable: false }, now)
        .await
        .unwrap();
    let next = api.store.claim(org, "agent-b", None, lease(), now).await.unwrap().unwrap();
    assert_eq!(next.request.revision, 2);
}

async fn job_log_is_capped_with_a_marker(db: TestDatabase) {
    let (api, org) = with_jobs(db, 1).await;
    let now = OffsetDateTime::now_utc();
    let l = lease();
    let claimed = api.store.claim(org, "agent-a", None, l, now).await.unwrap().unwrap();
    let chunk = "x".repeat(256 * 1024);
    for _ in 0..5 {
        api.store.append_log(claimed.id, l, &chunk).await.unwrap();
    }
    let (log, truncated) = api.store.job_log(org, claimed.id).await.unwrap();
    assert!(truncated);
    assert_eq!(log.len(), MAX_LOG_BYTES + TRUNCATION_MARKER.len());
    assert!(log.ends_with(TRUNCATION_MARKER));
    assert_eq!(log.matches("truncated").count(), 1);
}

async fn concurrent_claimers_never_share_a_job(db: TestDatabase) {
    const JOBS: usize = 24;
    let (api, org) = with_jobs(db, JOBS).await;
    let now = OffsetDateTime::now_utc();
    let mut tasks = Vec::new();
    for agent in 0..6 {
        let store = api.store.clone();
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(job) = store
                .claim(org, &format!("agent-{agent}"), None, LeaseId::from_uuid(Uuid::new_v4()), now)
                .await
                .unwrap()
            {
                got.push(job.id);
            }
            got
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let unique: HashSet<_> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "a job was claimed twice");
    assert_eq!(all.len(), JOBS, "every job was claimed exactly once");
}
