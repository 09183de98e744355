//! Infrastructure Manager over HTTP: schemas, accounts, resources,
//! approvals, deletes, and the queue as people see it.

use heimdall_api::testing::{TestApi, TestDatabase};
use heimdall_core::ids::LeaseId;
use heimdall_core::ports::{JobOutcome, JobQueue};
use reqwest::Method;
use serde_json::{json, Value};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::support::{world, Client};

crate::on_every_backend!(
    seed_transcript_queues_an_apply,
    schema_violations_store_nothing,
    no_cloud_account_refuses_before_anything_is_stored,
    approvals,
    delete_cancels_queued_apply_and_keeps_the_resource_listed,
    delete_after_a_run_queues_a_real_destroy,
    retry_and_roles,
    bad_input_on_infra_endpoints,
    secret_inputs_are_checked_before_anything_is_stored,
    an_import_queues_an_import_job_and_bad_targets_store_nothing,
    drift_checks_mark_and_clear_without_moving_the_status,
);

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

async fn seed_transcript_queues_an_apply(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;

    let created = c
        .post(
            "/v1/resources",
            owner,
            json!({ "component": w.component, "schema": w.schema, "environment": w.dev, "name": "recibos",
                    "input": { "bucket": "checkout-recibos" } }),
        )
        .await
        .expect(201);
    assert_eq!(created["status"], "queued");
    assert_eq!(created["revision"], 1);
    let rid = id(&created);

    let jobs = c.get(&format!("/v1/jobs?component={}&resource={rid}", w.component), owner).await.expect(200);
    let jobs = jobs.as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!((jobs[0]["operation"].as_str(), jobs[0]["status"].as_str()), (Some("apply"), Some("queued")));
    assert_eq!((jobs[0]["attempts"].as_i64(), jobs[0]["max_attempts"].as_i64()), (Some(0), Some(3)));
    // The frozen request: effective input (defaults laid under), module,
    // account reference, state key. No credential anywhere.
    let request = &jobs[0]["request"];
    assert_eq!(
        request["effective_input"],
        json!({ "bucket": "checkout-recibos", "versioning": false, "tags": { "env": "dev" } })
    );
    assert_eq!(request["module"]["source"], "./modules/bucket");
    assert_eq!(request["state_key"], format!("heimdall/{rid}.tfstate"));
    assert_eq!(request["region"], "eu-west-1");
    assert_eq!(request["account"]["auth"]["kind"], "oidc");
    assert_eq!(request["account"]["id"], w.account);

    // Revisions are listed with their hash.
    let detail = c.get(&format!("/v1/resources/{rid}"), owner).await.expect(200);
    assert_eq!(detail["revisions"][0]["number"], 1);
    assert_eq!(detail["revisions"][0]["hash"].as_str().unwrap().len(), 64);
    assert_eq!(detail["revisions"][0]["state"], "not_required");

    // A change is revision 2, cancels the still-queued apply of revision 1.
    let changed = c
        .call(
            Method::PATCH,
            &format!("/v1/resources/{rid}"),
            owner,
            Some(json!({ "input": { "bucket": "checkout-recibos", "tier": "glacier" } })),
        )
        .await
        .expect(200);
    assert_eq!(changed["revision"], 2);
    let jobs = c.get(&format!("/v1/jobs?resource={rid}"), owner).await.expect(200);
    let statuses: Vec<(&str, i64)> = jobs
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["status"].as_str().unwrap(), j["request"]["revision"].as_i64().unwrap()))
        .collect();
    assert_eq!(statuses, [("cancelled", 1), ("queued", 2)]);
    // The same name in the same component and environment is taken.
    c.post(
        "/v1/resources",
        owner,
        json!({ "component": w.component, "schema": "s3-bucket", "environment": "dev", "name": "recibos", "input": { "bucket": "abc" } }),
    )
    .await
    .expect_error(409, "ALREADY_EXISTS");
    // Lists filter by component, environment and status.
    let listed = c
        .get(&format!("/v1/resources?component={}&environment=dev&status=queued", w.component), owner)
        .await
        .expect(200);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let none = c.get("/v1/resources?status=provisioned", owner).await.expect(200);
    assert!(none.as_array().unwrap().is_empty());
}

async fn schema_violations_store_nothing(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let marker = "LEAK-7f3a";
    let inputs = [
        (json!({ "bucket": format!("NOPE {marker}") }), "/bucket", "pattern"),
        (json!({ "bucket": "ok-bucket", "tier": marker }), "/tier", "enum"),
        (json!({ "bucket": "ok-bucket", "versioning": marker }), "/versioning", "type"),
        (json!({ "bucket": "ok-bucket", "extra": marker }), "/extra", "additionalProperties"),
        (json!({ "bucket": "ok-bucket", "tags": { "team": { "x": marker } } }), "/tags/team", "type"),
        (json!({ "bucket": "ok-bucket", "replicas": [marker, marker, marker] }), "/replicas", "maxItems"),
        (json!({ "tier": "standard", "note": marker }), "/bucket", "required"),
        (json!(marker), "/", "type"),
    ];
    for (input, path, rule) in inputs {
        let body = json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "r1", "input": input });
        let reply = c.post("/v1/resources", owner, body).await;
        assert!(!reply.text.contains(marker), "the refusal echoed the input: {}", reply.text);
        let err = reply.expect_error(422, "SCHEMA_VIOLATION");
        let fields = err["error"]["fields"].as_array().unwrap();
        assert!(fields.iter().any(|f| f["path"] == path && f["rule"] == rule), "{path} {rule}: {fields:?}");
    }
    assert!(c.get("/v1/resources", owner).await.expect(200).as_array().unwrap().is_empty());
    assert!(c.get("/v1/jobs", owner).await.expect(200).as_array().unwrap().is_empty());
    let events = c.get("/v1/events?action=resource.", owner).await.expect(200);
    assert!(events.as_array().unwrap().is_empty());
}

async fn no_cloud_account_refuses_before_anything_is_stored(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    // prod has no account linked anywhere.
    for schema in [&w.schema, &w.approval_schema] {
        let body = json!({ "component": w.component, "schema": schema, "environment": w.prod, "name": "r", "input": { "bucket": "abc" } });
        c.post("/v1/resources", owner, body).await.expect_error(422, "NO_CLOUD_ACCOUNT");
    }
    assert!(c.get("/v1/resources", owner).await.expect(200).as_array().unwrap().is_empty());
    assert!(c.get("/v1/jobs", owner).await.expect(200).as_array().unwrap().is_empty());
    // Linking at the domain for prod makes it resolve.
    c.post(
        &format!("/v1/cloud-accounts/{}/links", w.account),
        owner,
        json!({ "scope": "domain", "scope_id": "payments", "environment": "prod" }),
    )
    .await
    .expect(201);
    let body = json!({ "component": w.component, "schema": w.schema, "environment": w.prod, "name": "r", "input": { "bucket": "abc" } });
    c.post("/v1/resources", owner, body).await.expect(201);
}

async fn approvals(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let admin = c.add_member(owner, "admin@example.com", "admin").await;
    let member = c.add_member(owner, "member@example.com", "member").await;

    let created = c
        .post(
            "/v1/resources",
            &admin,
            json!({ "component": w.component, "schema": w.approval_schema, "environment": "dev", "name": "vault", "input": { "bucket": "vault-1" } }),
        )
        .await
        .expect(201);
    assert_eq!(created["status"], "pending_approval");
    let rid = id(&created);
    let queued = c.get("/v1/jobs", owner).await.expect(200);
    let operations: Vec<&str> =
        queued.as_array().unwrap().iter().map(|j| j["operation"].as_str().unwrap()).collect();
    assert_eq!(operations, ["plan"], "only a plan runs while pending");

    // The requester never approves or refuses, whatever their role.
    c.post(&format!("/v1/resources/{rid}/approve"), &admin, json!({ "revision": 1 }))
        .await
        .expect_error(403, "SELF_APPROVAL");
    c.post(&format!("/v1/resources/{rid}/refuse"), &admin, json!({ "revision": 1 }))
        .await
        .expect_error(403, "SELF_APPROVAL");
    // A member may not approve at all.
    c.post(&format!("/v1/resources/{rid}/approve"), &member, json!({ "revision": 1 }))
        .await
        .expect_error(403, "FORBIDDEN");

    // A change while pending supersedes revision 1.
    c.call(
        Method::PATCH,
        &format!("/v1/resources/{rid}"),
        &admin,
        Some(json!({ "input": { "bucket": "vault-2" } })),
    )
    .await
    .expect(200);
    c.post(&format!("/v1/resources/{rid}/approve"), owner, json!({ "revision": 1 }))
        .await
        .expect_error(409, "STALE_REVISION");
    c.post(&format!("/v1/resources/{rid}/approve"), owner, json!({ "revision": 3 }))
        .await
        .expect_error(409, "STALE_REVISION");
    // Before its plan is in, and then naming another plan: STALE_PLAN.
    c.post(&format!("/v1/resources/{rid}/approve"), owner, json!({ "revision": 2, "plan": "ab".repeat(32) }))
        .await
        .expect_error(409, "STALE_PLAN");
    let sha = crate::support::run_plan_job(&api, &rid).await;
    let detail = c.get(&format!("/v1/resources/{rid}"), owner).await.expect(200);
    assert_eq!(detail["revisions"][1]["plan"]["sha256"], sha.as_str(), "{detail}");
    c.post(&format!("/v1/resources/{rid}/approve"), owner, json!({ "revision": 2, "plan": "ab".repeat(32) }))
        .await
        .expect_error(409, "STALE_PLAN");
    let approved = c
        .post(
            &format!("/v1/resources/{rid}/approve"),
            owner,
            json!({ "revision": 2, "plan": sha, "reason": "looks fine" }),
        )
        .await
        .expect(200);
    assert_eq!(approved["status"], "queued");
    let jobs = c.get(&format!("/v1/jobs?resource={rid}"), owner).await.expect(200);
    let by_state: Vec<(&str, &str)> = jobs
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["operation"].as_str().unwrap(), j["status"].as_str().unwrap()))
        .collect();
    assert_eq!(by_state, [("plan", "cancelled"), ("plan", "completed"), ("apply", "queued")], "{jobs}");
    let apply = &jobs[2]["request"];
    assert_eq!(apply["effective_input"]["bucket"], "vault-2");
    assert_eq!(apply["plan_sha256"], sha.as_str(), "the apply runs exactly the approved plan");
    // Approving again: nothing is pending.
    c.post(&format!("/v1/resources/{rid}/approve"), owner, json!({ "revision": 2 }))
        .await
        .expect_error(409, "STALE_REVISION");
    let detail = c.get(&format!("/v1/resources/{rid}"), owner).await.expect(200);
    let states: Vec<&str> =
        detail["revisions"].as_array().unwrap().iter().map(|r| r["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["superseded", "approved"]);
    assert_eq!(detail["revisions"][1]["decided_by"], "owner@example.com");

    // A refused create stays listed as refused and queues nothing.
    let other = c
        .post(
            "/v1/resources",
            &admin,
            json!({ "component": w.component, "schema": "guarded-bucket", "environment": "dev", "name": "other", "input": { "bucket": "other-1" } }),
        )
        .await
        .expect(201);
    let refused = c
        .post(
            &format!("/v1/resources/{}/refuse", id(&other)),
            owner,
            json!({ "revision": 1, "reason": "no" }),
        )
        .await
        .expect(200);
    assert_eq!(refused["status"], "refused");
    let jobs = c.get(&format!("/v1/jobs?resource={}", id(&other)), owner).await.expect(200);
    let applies = jobs.as_array().unwrap().iter().filter(|j| j["operation"] != "plan").count();
    assert_eq!(applies, 0, "a refused create queues no apply: {jobs}");
}

async fn delete_cancels_queued_apply_and_keeps_the_resource_listed(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let created = c
        .post("/v1/resources", owner, json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "tmp", "input": { "bucket": "tmp-1" } }))
        .await
        .expect(201);
    let rid = id(&created);
    let deleted = c.call(Method::DELETE, &format!("/v1/resources/{rid}"), owner, None).await.expect(200);
    assert_eq!(deleted["status"], "deleted");
    let jobs = c.get(&format!("/v1/jobs?resource={rid}"), owner).await.expect(200);
    assert_eq!(jobs[0]["status"], "cancelled");
    assert_eq!(jobs.as_array().unwrap().len(), 1, "nothing ever ran, so nothing to destroy");
    // The queue has nothing to give an Agent.
    let org = api.bootstrapped.organization.id;
    assert!(api
        .store
        .claim(org, "agent-1", None, LeaseId::from_uuid(Uuid::new_v4()), OffsetDateTime::now_utc())
        .await
        .unwrap()
        .is_none());
    // Still listed, as history; the name is free again.
    let listed = c.get("/v1/resources", owner).await.expect(200);
    assert_eq!(listed[0]["status"], "deleted");
    c.post("/v1/resources", owner, json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "tmp", "input": { "bucket": "tmp-2" } }))
        .await
        .expect(201);
}

async fn delete_after_a_run_queues_a_real_destroy(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let org = api.bootstrapped.organization.id;
    let created = c
        .post("/v1/resources", owner, json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "kept", "input": { "bucket": "kept-1" } }))
        .await
        .expect(201);
    let rid = id(&created);
    let now = OffsetDateTime::now_utc();
    let lease = LeaseId::from_uuid(Uuid::new_v4());
    let job = api.store.claim(org, "agent-1", None, lease, now).await.unwrap().unwrap();
    assert_eq!(
        c.get(&format!("/v1/resources/{rid}"), owner).await.expect(200)["resource"]["status"],
        "applying"
    );
    api.store
        .finish(
            job.id,
            lease,
            JobOutcome::Completed { outputs: json!({ "arn": "arn:x", "key": "<sensitive>" }) },
            now,
        )
        .await
        .unwrap();
    let detail = c.get(&format!("/v1/resources/{rid}"), owner).await.expect(200);
    assert_eq!(detail["resource"]["status"], "provisioned");
    assert_eq!(detail["resource"]["outputs"]["key"], "<sensitive>");

    // A change queues an apply; the delete cancels it and queues a destroy.
    c.call(
        Method::PATCH,
        &format!("/v1/resources/{rid}"),
        owner,
        Some(json!({ "input": { "bucket": "kept-2" } })),
    )
    .await
    .expect(200);
    let deleting = c.call(Method::DELETE, &format!("/v1/resources/{rid}"), owner, None).await.expect(202);
    assert_eq!(deleting["status"], "deleting");
    let jobs = c.get(&format!("/v1/jobs?resource={rid}"), owner).await.expect(200);
    let ops: Vec<(&str, &str)> = jobs
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["operation"].as_str().unwrap(), j["status"].as_str().unwrap()))
        .collect();
    assert_eq!(ops, [("apply", "completed"), ("apply", "cancelled"), ("destroy", "queued")]);

    let lease = LeaseId::from_uuid(Uuid::new_v4());
    let destroy = api.store.claim(org, "agent-1", None, lease, now).await.unwrap().unwrap();
    assert_eq!(destroy.request.operation.as_str(), "destroy");
    assert_eq!(
        destroy.request.effective_input["bucket"], "kept-2",
        "destroy uses the newest applied-or-approved input"
    );
    api.store.finish(destroy.id, lease, JobOutcome::Completed { outputs: json!({}) }, now).await.unwrap();
    let listed = c.get("/v1/resources?status=deleted", owner).await.expect(200);
    assert_eq!(listed.as_array().unwrap().len(), 1);
}

async fn retry_and_roles(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let member = c.add_member(owner, "member@example.com", "member").await;
    let org = api.bootstrapped.organization.id;

    // Members read Resources and jobs but do not create them or see accounts.
    let body = json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "r", "input": { "bucket": "abc" } });
    c.post("/v1/resources", &member, body.clone()).await.expect_error(403, "FORBIDDEN");
    c.get("/v1/cloud-accounts", &member).await.expect_error(403, "FORBIDDEN");
    c.get(&format!("/v1/cloud-accounts/{}", w.account), &member).await.expect_error(403, "FORBIDDEN");
    c.post("/v1/schemas", &member, json!({ "type": "x", "input_schema": {} }))
        .await
        .expect_error(403, "FORBIDDEN");

    let rid = id(&c.post("/v1/resources", owner, body).await.expect(201));
    c.get("/v1/resources", &member).await.expect(200);
    c.get("/v1/jobs", &member).await.expect(200);
    c.call(reqwest::Method::POST, &format!("/v1/resources/{rid}/retry"), owner, None)
        .await
        .expect_error(409, "CONFLICT");

    // Three failed attempts, then the Resource is failed with the reason.
    let now = OffsetDateTime::now_utc();
    for attempt in 1..=3 {
        let lease = LeaseId::from_uuid(Uuid::new_v4());
        let job = api.store.claim(org, "agent-1", None, lease, now).await.unwrap().expect("queued again");
        assert_eq!(job.attempts, attempt);
        api.store
            .finish(
                job.id,
                lease,
                JobOutcome::Failed { reason: format!("boom {attempt}"), retryable: true },
                now,
            )
            .await
            .unwrap();
    }
    let jobs = c.get(&format!("/v1/jobs?resource={rid}"), owner).await.expect(200);
    assert_eq!((jobs[0]["status"].as_str(), jobs[0]["attempts"].as_i64()), (Some("failed"), Some(3)));
    let detail = c.get(&format!("/v1/resources/{rid}"), owner).await.expect(200);
    assert_eq!(
        (detail["resource"]["status"].as_str(), detail["resource"]["reason"].as_str()),
        (Some("failed"), Some("boom 3"))
    );
    c.call(reqwest::Method::POST, &format!("/v1/resources/{rid}/retry"), &member, None)
        .await
        .expect_error(403, "FORBIDDEN");
    let retried =
        c.call(reqwest::Method::POST, &format!("/v1/resources/{rid}/retry"), owner, None).await.expect(202);
    assert_eq!(retried["status"], "queued");
    assert_eq!(
        c.get(&format!("/v1/jobs?resource={rid}"), owner).await.expect(200).as_array().unwrap().len(),
        2
    );
}

async fn bad_input_on_infra_endpoints(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let cases: Vec<(String, Value, u16, &str)> = vec![
        (
            "/v1/schemas".into(),
            json!({ "type": "x", "input_schema": { "type": "nope" } }),
            422,
            "INVALID_INPUT",
        ),
        (
            "/v1/schemas".into(),
            json!({ "type": "x", "input_schema": { "type": "string", "pattern": "(" } }),
            422,
            "INVALID_INPUT",
        ),
        (
            "/v1/schemas".into(),
            json!({ "type": "x", "input_schema": {}, "defaults": { "qa": {} } }),
            422,
            "INVALID_INPUT",
        ),
        (
            "/v1/schemas".into(),
            json!({ "type": "x", "input_schema": {}, "defaults": { "dev": 3 } }),
            422,
            "INVALID_INPUT",
        ),
        ("/v1/schemas".into(), json!({ "type": "x", "input_schema": {}, "owner": "me" }), 400, "BAD_REQUEST"),
        ("/v1/schemas".into(), json!({ "type": "X Y", "input_schema": {} }), 422, "INVALID_INPUT"),
        (
            "/v1/cloud-accounts".into(),
            json!({ "name": "a", "provider": "ibm", "region": "x", "state_bucket": "abc", "auth": { "kind": "oidc", "role_arn": "r" } }),
            400,
            "BAD_REQUEST",
        ),
        (
            "/v1/cloud-accounts".into(),
            json!({ "name": "a", "provider": "aws", "region": "x", "state_bucket": "abc", "auth": { "kind": "password", "password": "p" } }),
            400,
            "BAD_REQUEST",
        ),
        (
            "/v1/cloud-accounts".into(),
            json!({ "name": "a", "provider": "aws", "region": "x", "state_bucket": "abc", "auth": { "kind": "static", "secret": "n", "access_key": "AKIA" } }),
            400,
            "BAD_REQUEST",
        ),
        (
            "/v1/cloud-accounts".into(),
            json!({ "name": "a", "provider": "aws", "region": "EU", "state_bucket": "abc", "auth": { "kind": "oidc", "role_arn": "r" } }),
            422,
            "INVALID_INPUT",
        ),
        (
            "/v1/cloud-accounts".into(),
            json!({ "name": "a", "provider": "aws", "region": "eu", "state_bucket": "A_B", "auth": { "kind": "oidc", "role_arn": "r" } }),
            422,
            "INVALID_INPUT",
        ),
        (
            "/v1/cloud-accounts".into(),
            json!({ "name": "aws-dev", "provider": "aws", "region": "eu", "state_bucket": "abc", "auth": { "kind": "oidc", "role_arn": "r" } }),
            409,
            "ALREADY_EXISTS",
        ),
        (
            format!("/v1/cloud-accounts/{}/links", w.account),
            json!({ "scope": "system", "environment": "dev" }),
            422,
            "INVALID_INPUT",
        ),
        (
            format!("/v1/cloud-accounts/{}/links", w.account),
            json!({ "scope": "organization", "environment": "qa" }),
            404,
            "NOT_FOUND",
        ),
        (
            "/v1/cloud-accounts/nope/links".into(),
            json!({ "scope": "organization", "environment": "dev" }),
            404,
            "NOT_FOUND",
        ),
        (
            "/v1/resources".into(),
            json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "Bad Name", "input": {} }),
            422,
            "INVALID_INPUT",
        ),
        (
            "/v1/resources".into(),
            json!({ "component": "nope", "schema": w.schema, "environment": "dev", "name": "a", "input": {} }),
            404,
            "NOT_FOUND",
        ),
        (
            "/v1/resources".into(),
            json!({ "component": w.component, "schema": "nope", "environment": "dev", "name": "a", "input": {} }),
            404,
            "NOT_FOUND",
        ),
        (
            "/v1/resources".into(),
            json!({ "component": w.component, "schema": w.schema, "environment": "qa", "name": "a", "input": {} }),
            404,
            "NOT_FOUND",
        ),
        (
            "/v1/resources".into(),
            json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "a", "input": { "bucket": "abc" }, "region": "Mars 1" }),
            422,
            "INVALID_INPUT",
        ),
        (
            "/v1/resources".into(),
            json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "a", "input": { "bucket": "abc" }, "priority": 1 }),
            400,
            "BAD_REQUEST",
        ),
        (
            "/v1/resources".into(),
            json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "a" }),
            400,
            "BAD_REQUEST",
        ),
    ];
    for (path, body, status, code) in cases {
        c.post(&path, owner, body.clone()).await.expect_error(status, code);
    }
    assert_eq!(c.get("/v1/schemas", owner).await.expect(200).as_array().unwrap().len(), 2);
    assert_eq!(c.get("/v1/cloud-accounts", owner).await.expect(200).as_array().unwrap().len(), 1);
    assert!(c.get("/v1/resources", owner).await.expect(200).as_array().unwrap().is_empty());
    // A new version of a type gets the next number and its own id.
    let v2 =
        c.post("/v1/schemas", owner, json!({ "type": "s3-bucket", "input_schema": {} })).await.expect(201);
    assert_eq!(v2["version"], 2);
    assert_eq!(c.get("/v1/schemas/s3-bucket", owner).await.expect(200)["version"], 2);
    assert_eq!(c.get(&format!("/v1/schemas/{}", w.schema), owner).await.expect(200)["version"], 1);
}

crate::on_every_backend!(approval_edge_cases);
crate::on_every_backend!(resource_lists_come_in_full_pages_even_when_a_forbid_hides_some);

/// Pages of `GET /v1/resources`: oldest first, full even when a `forbid`
/// hides some Resources (the API reads on until the page is full), and
/// put together, the whole list the caller may see, each Resource once.
async fn resource_lists_come_in_full_pages_even_when_a_forbid_hides_some(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    let w = world(&c, owner).await;
    c.post(
        &format!("/v1/cloud-accounts/{}/links", w.account),
        owner,
        json!({ "scope": "organization", "environment": "prod" }),
    )
    .await
    .expect(201);
    for i in 0..25 {
        let env = if i % 2 == 0 { "dev" } else { "prod" };
        let body = json!({ "component": w.component, "schema": w.schema, "environment": env,
                           "name": format!("r{i:02}"), "input": { "bucket": format!("bucket-{i:02}") } });
        c.post("/v1/resources", owner, body).await.expect(201);
    }
    let admin = c.add_member(owner, "admin@example.com", "admin").await;
    let text = r#"forbid (principal, action == Heimdall::Action::"resource.read", resource) when { context.environment == "prod" } unless { principal.role == "owner" };"#;
    c.post("/v1/policies", owner, json!({ "name": "no-prod", "text": text })).await.expect(201);

    let pages = |token: String, limit: u32| {
        let c = &c;
        async move {
            let (mut sizes, mut names, mut after) = (Vec::new(), Vec::new(), None::<String>);
            loop {
                let mut path = format!("/v1/resources?limit={limit}");
                if let Some(a) = &after {
                    path.push_str(&format!("&after={a}"));
                }
                let reply = c.get(&path, &token).await;
                assert_eq!(reply.status.as_u16(), 200, "{}", reply.text);
                let page = reply.body.as_array().unwrap().clone();
                sizes.push(page.len());
                names.extend(page.iter().map(|r| r["name"].as_str().unwrap().to_owned()));
                match reply.next_after {
                    Some(next) if sizes.len() < 20 => after = Some(next),
                    _ => break,
                }
            }
            (sizes, names)
        }
    };
    let (sizes, names) = pages(owner.clone(), 10).await;
    assert_eq!(sizes, [10, 10, 5]);
    let all: Vec<String> = (0..25).map(|i| format!("r{i:02}")).collect();
    assert_eq!(names, all, "oldest first, each once");
    let (sizes, names) = pages(admin.clone(), 5).await;
    assert_eq!(sizes, [5, 5, 3], "prod hidden, pages still full");
    let dev: Vec<String> = (0..25).step_by(2).map(|i| format!("r{i:02}")).collect();
    assert_eq!(names, dev);
    // Without a limit: the first 100; a cursor this API did not give is refused.
    assert_eq!(c.get("/v1/resources", owner).await.expect(200).as_array().unwrap().len(), 25);
    c.get("/v1/resources?after=eyJ4IjoxfQ", owner).await.expect_error(422, "INVALID_INPUT");
    c.get("/v1/resources?limit=0", owner).await.expect_error(422, "INVALID_INPUT");
}

async fn approval_edge_cases(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let admin = c.add_member(owner, "admin@example.com", "admin").await;
    let org = api.bootstrapped.organization.id;
    let create = |name: &str| json!({ "component": w.component, "schema": w.approval_schema, "environment": "dev", "name": name, "input": { "bucket": format!("{name}-1") } });

    // A refused change does not strand the approved revision still queued.
    let books = id(&c.post("/v1/resources", &admin, create("books")).await.expect(201));
    let sha = crate::support::run_plan_job(&api, &books).await;
    c.post(&format!("/v1/resources/{books}/approve"), owner, json!({ "revision": 1, "plan": sha }))
        .await
        .expect(200);
    c.call(
        Method::PATCH,
        &format!("/v1/resources/{books}"),
        &admin,
        Some(json!({ "input": { "bucket": "books-2" } })),
    )
    .await
    .expect(200);
    let refused =
        c.post(&format!("/v1/resources/{books}/refuse"), owner, json!({ "revision": 2 })).await.expect(200);
    assert_eq!(refused["status"], "queued", "revision 1's apply is still queued: {refused}");
    let jobs = c.get(&format!("/v1/jobs?resource={books}"), owner).await.expect(200);
    let apply = jobs.as_array().unwrap().iter().find(|j| j["operation"] == "apply").unwrap();
    assert_eq!((apply["status"].as_str(), apply["request"]["revision"].as_i64()), (Some("queued"), Some(1)));

    // A change pending approval keeps showing as pending when an earlier apply finishes.
    let ledger = id(&c.post("/v1/resources", &admin, create("ledger")).await.expect(201));
    let sha = crate::support::run_plan_job(&api, &ledger).await;
    c.post(&format!("/v1/resources/{ledger}/approve"), owner, json!({ "revision": 1, "plan": sha }))
        .await
        .expect(200);
    let now = OffsetDateTime::now_utc();
    let mut claimed = Vec::new();
    loop {
        let lease = LeaseId::from_uuid(Uuid::new_v4());
        match api.store.claim(org, "agent", None, lease, now).await.unwrap() {
            Some(job) => claimed.push((job, lease)),
            None => break,
        }
    }
    let (job, lease) =
        claimed.into_iter().find(|(j, _)| j.resource_id.to_string() == ledger).expect("ledger's apply");
    c.call(
        Method::PATCH,
        &format!("/v1/resources/{ledger}"),
        owner,
        Some(json!({ "input": { "bucket": "ledger-2" } })),
    )
    .await
    .expect(200);
    api.store.finish(job.id, lease, JobOutcome::Completed { outputs: json!({}) }, now).await.unwrap();
    let r = c.get(&format!("/v1/resources/{ledger}"), owner).await.expect(200);
    assert_eq!(
        (r["resource"]["revision"].as_i64(), r["resource"]["status"].as_str()),
        (Some(2), Some("pending_approval")),
        "{r}"
    );
    let listed = c.get("/v1/resources?status=pending_approval", owner).await.expect(200);
    assert!(listed.as_array().unwrap().iter().any(|x| x["id"] == ledger));

    // Jobs by name skip deleted Resources that shared the name.
    let body = |bucket: &str| json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "scratch", "input": { "bucket": bucket } });
    let first = id(&c.post("/v1/resources", owner, body("scratch-1")).await.expect(201));
    c.call(Method::DELETE, &format!("/v1/resources/{first}"), owner, None).await.expect(200);
    let second = id(&c.post("/v1/resources", owner, body("scratch-2")).await.expect(201));
    let jobs = c.get("/v1/jobs?resource=scratch", owner).await.expect(200);
    assert_eq!(jobs[0]["resource_id"], second);
}

/// A property marked `x-heimdall-secret` takes a secret's name. The API
/// checks, before it stores anything, that the secret exists, is an
/// organization secret and that the requester may read it in the
/// Resource's environment; the job carries the name, never a value.
async fn secret_inputs_are_checked_before_anything_is_stored(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let admin = c.add_member(owner, "ana@example.com", "admin").await;
    c.post(
        "/v1/schemas",
        owner,
        json!({ "type": "database", "module": { "source": "./modules/db", "version": "1.0.0" },
            "input_schema": { "type": "object", "required": ["name", "admin_password"],
                "properties": { "name": { "type": "string" },
                    "admin_password": { "type": "string", "x-heimdall-secret": true } } } }),
    )
    .await
    .expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "orders-admin" })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "guarded", "components": [w.component] })).await.expect(201);
    c.personal_secret(owner, "mine").await;
    let domain = c.get("/v1/domains/payments", owner).await.expect(200)["id"].as_str().unwrap().to_owned();
    let forbid = format!(
        r#"forbid (principal, action == Heimdall::Action::"secret.read", resource in Heimdall::Domain::"{domain}") unless {{ principal.role == "owner" }};"#
    );
    c.post("/v1/policies", owner, json!({ "name": "guarded-read", "text": forbid })).await.expect(201);
    let body = |name: &str, secret: &str| {
        json!({ "component": w.component, "schema": "database", "environment": "dev", "name": name,
            "input": { "name": name, "admin_password": secret } })
    };

    c.post("/v1/resources", &admin, body("a", "nope")).await.expect_error(404, "NOT_FOUND");
    let reply = c.post("/v1/resources", &admin, body("b", "Not A Name LEAK-91c")).await;
    assert!(!reply.text.contains("LEAK-91c"), "the refusal echoed the input: {}", reply.text);
    let err = reply.expect_error(422, "SCHEMA_VIOLATION");
    assert_eq!(err["error"]["fields"][0]["path"], "/admin_password", "{err}");
    assert_eq!(err["error"]["fields"][0]["rule"], "x-heimdall-secret", "{err}");
    c.post("/v1/resources", &admin, body("c", "guarded")).await.expect_error(403, "FORBIDDEN");
    c.post("/v1/resources", owner, body("d", "mine")).await.expect_error(403, "FORBIDDEN");
    assert!(c.get("/v1/resources", owner).await.expect(200).as_array().unwrap().is_empty());
    assert!(c.get("/v1/jobs", owner).await.expect(200).as_array().unwrap().is_empty());

    let rid = id(&c.post("/v1/resources", &admin, body("orders", "orders-admin")).await.expect(201));
    let jobs = c.get(&format!("/v1/jobs?resource={rid}"), owner).await.expect(200);
    let request = &jobs[0]["request"];
    assert_eq!(request["secret_inputs"], json!([{ "variable": "admin_password", "secret": "orders-admin" }]));
    assert_eq!(request["effective_input"]["admin_password"], "orders-admin");

    // A change is checked the same way, and a refused one leaves revision 1.
    let patch = json!({ "input": { "name": "orders", "admin_password": "guarded" } });
    c.call(Method::PATCH, &format!("/v1/resources/{rid}"), &admin, Some(patch))
        .await
        .expect_error(403, "FORBIDDEN");
    let detail = c.get(&format!("/v1/resources/{rid}"), owner).await.expect(200);
    assert_eq!(detail["revisions"].as_array().unwrap().len(), 1, "{detail}");
    assert_eq!(
        c.get(&format!("/v1/jobs?resource={rid}"), owner).await.expect(200).as_array().unwrap().len(),
        1
    );
}

/// `imports` on a create: each target checked before anything is stored;
/// a good one queues an `import` job that carries them.
async fn an_import_queues_an_import_job_and_bad_targets_store_nothing(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let body = |imports: Value| {
        json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "legacy",
            "input": { "bucket": "legacy-logs" }, "imports": imports })
    };
    for bad in [
        json!([{ "address": "aws_s3_bucket", "id": "legacy-logs" }]),
        json!([{ "address": "aws_s3_bucket.this", "id": "" }]),
        json!([{ "address": "a.b", "id": "1" }, { "address": "a.b", "id": "2" }]),
    ] {
        c.post("/v1/resources", owner, body(bad)).await.expect_error(422, "INVALID_INPUT");
    }
    c.post("/v1/resources", owner, body(json!([{ "address": "a.b", "id": "1", "extra": 1 }])))
        .await
        .expect_error(400, "BAD_REQUEST");
    assert!(c.get("/v1/resources", owner).await.expect(200).as_array().unwrap().is_empty());
    assert!(c.get("/v1/jobs", owner).await.expect(200).as_array().unwrap().is_empty());

    let imports = json!([{ "address": "aws_s3_bucket.this", "id": "legacy-logs" }]);
    let rid = id(&c.post("/v1/resources", owner, body(imports.clone())).await.expect(201));
    let jobs = c.get(&format!("/v1/jobs?resource={rid}"), owner).await.expect(200);
    assert_eq!(jobs[0]["operation"], "import");
    assert_eq!(jobs[0]["request"]["imports"], imports);
    let detail = c.get(&format!("/v1/resources/{rid}"), owner).await.expect(200);
    assert_eq!(detail["revisions"][0]["imports"], imports);
    let events = c.get("/v1/events?action=resource.import_requested", owner).await.expect(200);
    assert_eq!(events.as_array().unwrap().len(), 1, "{events}");
}

/// A drift check is a job of its own: it moves no status; its report
/// marks the Resource (once, with an event); an apply clears the mark.
async fn drift_checks_mark_and_clear_without_moving_the_status(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let org = api.bootstrapped.organization.id;
    let body = json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "r", "input": { "bucket": "abc" } });
    let rid = id(&c.post("/v1/resources", owner, body).await.expect(201));
    // Not before it is provisioned, and not while a job works on it.
    c.call(Method::POST, &format!("/v1/resources/{rid}/drift-check"), owner, None)
        .await
        .expect_error(409, "CONFLICT");
    let run = |outputs: Value| async {
        let lease = LeaseId::from_uuid(Uuid::new_v4());
        let now = OffsetDateTime::now_utc();
        let job = api.store.claim(org, "agent-1", None, lease, now).await.unwrap().expect("a queued job");
        api.store.finish(job.id, lease, JobOutcome::Completed { outputs }, now).await.unwrap();
        job
    };
    run(json!({ "id": "x" })).await;
    for (found, marked) in [(false, false), (true, true), (true, true)] {
        let job =
            c.call(Method::POST, &format!("/v1/resources/{rid}/drift-check"), owner, None).await.expect(202);
        assert_eq!(job["operation"], "drift_check");
        let detail = c.get(&format!("/v1/resources/{rid}"), owner).await.expect(200);
        assert_eq!(detail["resource"]["status"], "provisioned", "a queued check moves no status");
        let ran = run(json!({ "drifted": found })).await;
        assert_eq!(ran.operation.as_str(), "drift_check");
        let detail = c.get(&format!("/v1/resources/{rid}"), owner).await.expect(200);
        assert_eq!(detail["resource"]["drifted_at"].is_string(), marked, "{detail}");
        assert_eq!(detail["resource"]["status"], "provisioned");
        assert_eq!(detail["resource"]["outputs"], json!({ "id": "x" }), "a check's report is not outputs");
    }
    let events = c.get("/v1/events?action=resource.drifted", owner).await.expect(200);
    assert_eq!(events.as_array().unwrap().len(), 1, "marked once: {events}");
    // An apply of the revision clears it.
    c.call(
        Method::PATCH,
        &format!("/v1/resources/{rid}"),
        owner,
        Some(json!({ "input": { "bucket": "abc" } })),
    )
    .await
    .expect(200);
    run(json!({ "id": "x" })).await;
    let detail = c.get(&format!("/v1/resources/{rid}"), owner).await.expect(200);
    assert!(detail["resource"].get("drifted_at").is_none(), "{detail}");
    let events = c.get("/v1/events?action=resource.drift_cleared", owner).await.expect(200);
    assert_eq!(events.as_array().unwrap().len(), 1, "{events}");
}
