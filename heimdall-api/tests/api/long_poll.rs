//! `GET /v1/resources/{key}?changed_from=…`: a client following a job
//! hears of each change of status as it happens, not on its next poll.

use std::time::{Duration, Instant};

use heimdall_api::testing::{TestApi, TestDatabase};
use heimdall_core::ids::LeaseId;
use heimdall_core::ports::{JobOutcome, JobQueue};
use serde_json::json;
use uuid::Uuid;

use crate::support::{world, Client};

crate::on_every_backend!(a_long_poll_answers_when_the_status_changes);

async fn a_long_poll_answers_when_the_status_changes(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.clone();
    let w = world(&c, &owner).await;
    let created = c
        .post(
            "/v1/resources",
            &owner,
            json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "logs",
                    "input": { "bucket": "acme-logs" } }),
        )
        .await
        .expect(201);
    assert_eq!(created["status"], "queued");
    let id = created["id"].as_str().unwrap().to_owned();

    // Nothing moves: the answer comes when the wait is over, unchanged.
    let began = Instant::now();
    let same =
        c.get(&format!("/v1/resources/{id}?changed_from=queued&wait_seconds=1"), &owner).await.expect(200);
    assert_eq!(same["resource"]["status"], "queued");
    assert!(began.elapsed() >= Duration::from_millis(900), "answered before the wait: {:?}", began.elapsed());

    // A status other than the one named: at once.
    let began = Instant::now();
    let now =
        c.get(&format!("/v1/resources/{id}?changed_from=applying&wait_seconds=30"), &owner).await.expect(200);
    assert_eq!(now["resource"]["status"], "queued");
    assert!(began.elapsed() < Duration::from_secs(5), "{:?}", began.elapsed());

    // The job is claimed, then finishes, while a long poll is out: each
    // answer carries the change, long before its 30 s are up.
    let org = api.bootstrapped.organization.id;
    let waiting = {
        let c = Client::new(&api);
        let (owner, id) = (owner.clone(), id.clone());
        tokio::spawn(async move {
            let began = Instant::now();
            let reply =
                c.get(&format!("/v1/resources/{id}?changed_from=queued&wait_seconds=30"), &owner).await;
            (reply.expect(200), began.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let lease = LeaseId::from_uuid(Uuid::new_v4());
    let job =
        api.store.claim(org, "agent-1", None, lease, time::OffsetDateTime::now_utc()).await.unwrap().unwrap();
    let (moved, took) = waiting.await.unwrap();
    assert_eq!(moved["resource"]["status"], "applying");
    assert!(took < Duration::from_secs(10), "the long poll waited past the change: {took:?}");

    let waiting = {
        let c = Client::new(&api);
        let (owner, id) = (owner.clone(), id.clone());
        tokio::spawn(async move {
            c.get(&format!("/v1/resources/{id}?changed_from=applying&wait_seconds=30"), &owner)
                .await
                .expect(200)
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let outputs = json!({ "arn": "arn:aws:s3:::acme-logs" });
    api.store
        .finish(job.id, lease, JobOutcome::Completed { outputs }, time::OffsetDateTime::now_utc())
        .await
        .unwrap();
    let settled = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("answered").unwrap();
    assert_eq!(settled["resource"]["status"], "provisioned");

    // Refused, never held: a wait without a status, or out of range.
    for query in
        ["wait_seconds=5", "changed_from=queued&wait_seconds=0", "changed_from=queued&wait_seconds=31"]
    {
        c.get(&format!("/v1/resources/{id}?{query}"), &owner).await.expect_error(422, "INVALID_INPUT");
    }
    c.get(&format!("/v1/resources/{id}?changed_from=sideways"), &owner)
        .await
        .expect_error(400, "BAD_REQUEST");
}
