//! A `forbid` applies wherever what it names is: catalog-scoped policies
//! reach secrets through their Components, and leaving the environment out
//! of a request filters what an environment-scoped `forbid` forbids
//! instead of skipping it. On both backends, through the real server.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::{json, Value};

use crate::on_every_backend;
use crate::support::{world, Client};

on_every_backend!(
    catalog_scoped_forbids_reach_secrets,
    leaving_out_the_environment_filters,
    a_forbid_naming_one_resource_hides_it_from_lists_among_look_alikes
);

/// Enrolls an Agent holding dev and prod; its mTLS client.
async fn holding_agent(c: &Client, api: &TestApi, owner: &str) -> reqwest::Client {
    let (edge, _) = crate::support::enroll_agent(c, api, owner, "edge-1").await;
    for env in ["dev", "prod"] {
        c.post(&format!("/v1/environments/{env}/agents"), owner, json!({ "agent": "edge-1" }))
            .await
            .expect(201);
    }
    edge
}

async fn policy(c: &Client, owner: &str, name: &str, text: &str) {
    c.post("/v1/policies", owner, json!({ "name": name, "text": text })).await.expect(201);
}

async fn catalog_scoped_forbids_reach_secrets(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let admin = c.add_member(owner, "ana@example.com", "admin").await;
    holding_agent(&c, &api, owner).await;
    c.post("/v1/secrets", owner, json!({ "name": "linked", "components": [w.component] })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "loose" })).await.expect(201);
    let domain = c.get("/v1/domains/payments", owner).await.expect(200)["id"].as_str().unwrap().to_owned();
    policy(
        &c,
        owner,
        "payments-secrets-owner-only",
        &format!(
            r#"forbid (principal, action in [Heimdall::Action::"secret.read", Heimdall::Action::"secret.write", Heimdall::Action::"secret.access_log"], resource in Heimdall::Domain::"{domain}") unless {{ principal.role == "owner" }};"#
        ),
    )
    .await;
    // The secret linked under the domain is forbidden to the admin on every
    // route; the one linked nowhere is not.
    c.get("/v1/secrets/linked", &admin).await.expect_error(403, "FORBIDDEN");
    c.get("/v1/secrets/linked/holders?environment=dev", &admin).await.expect_error(403, "FORBIDDEN");
    c.get("/v1/secrets/linked/access-log", &admin).await.expect_error(403, "FORBIDDEN");
    c.post("/v1/secrets/linked/versions", &admin, json!({ "environment": "dev" }))
        .await
        .expect_error(403, "FORBIDDEN");
    c.call(Method::PATCH, "/v1/secrets/linked", &admin, Some(json!({ "description": "x" })))
        .await
        .expect_error(403, "FORBIDDEN");
    let listed = c.get("/v1/secrets", &admin).await.expect(200);
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["loose"]);
    c.get("/v1/secrets/loose", &admin).await.expect(200);
    c.post("/v1/secrets/loose/versions", &admin, json!({ "environment": "dev" })).await.expect(201);
    // Linking a secret under the domain is writing there: refused too.
    c.call(Method::PATCH, "/v1/secrets/loose", &admin, Some(json!({ "components": [w.component] })))
        .await
        .expect_error(403, "FORBIDDEN");
    c.post("/v1/secrets", &admin, json!({ "name": "new", "components": [w.component] }))
        .await
        .expect_error(403, "FORBIDDEN");
    // The owner is exempt.
    c.get("/v1/secrets/linked", owner).await.expect(200);
    assert_eq!(c.get("/v1/secrets", owner).await.expect(200).as_array().unwrap().len(), 2);

    // Resources and jobs under the domain, likewise, in lists too.
    let body = json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "r1", "input": { "bucket": "abc" } });
    let rid = c.post("/v1/resources", owner, body).await.expect(201)["id"].as_str().unwrap().to_owned();
    policy(
        &c,
        owner,
        "payments-infra-owner-only",
        &format!(
            r#"forbid (principal, action in [Heimdall::Action::"resource.read", Heimdall::Action::"job.read"], resource in Heimdall::Domain::"{domain}") unless {{ principal.role == "owner" }};"#
        ),
    )
    .await;
    c.get(&format!("/v1/resources/{rid}"), &admin).await.expect_error(403, "FORBIDDEN");
    assert!(c.get("/v1/resources", &admin).await.expect(200).as_array().unwrap().is_empty());
    assert!(c.get("/v1/jobs", &admin).await.expect(200).as_array().unwrap().is_empty());
    let jobs = c.get(&format!("/v1/jobs?resource={rid}"), owner).await.expect(200);
    let job = jobs[0]["id"].as_str().unwrap().to_owned();
    c.get(&format!("/v1/jobs/{job}"), &admin).await.expect_error(403, "FORBIDDEN");
    c.get(&format!("/v1/jobs/{job}/log"), &admin).await.expect_error(403, "FORBIDDEN");
    c.get(&format!("/v1/jobs/{job}"), owner).await.expect(200);
    assert_eq!(c.get("/v1/resources", owner).await.expect(200).as_array().unwrap().len(), 1);
}

async fn leaving_out_the_environment_filters(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let admin = c.add_member(owner, "ana@example.com", "admin").await;
    let edge = holding_agent(&c, &api, owner).await;
    c.post("/v1/secrets", owner, json!({ "name": "db" })).await.expect(201);
    for env in ["dev", "prod"] {
        c.post("/v1/secrets/db/versions", owner, json!({ "environment": env })).await.expect(201);
    }
    // One read reported in each environment.
    let (dev, prod) = (w.dev.clone(), w.prod.clone());
    let record = |seq: i64, env: &str| {
        json!({ "seq": seq, "accessor": "ana@example.com", "at": "2026-01-01T00:00:00Z", "secret": "db",
                "environment": env, "version": 1, "from": "10.0.0.1" })
    };
    let resp = edge
        .post(format!("{}/v1/agent/sync", api.agent_url))
        .json(&json!({ "records": [record(1, &dev), record(2, &prod)] }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let envs = |v: &Value, key: &str| -> Vec<String> {
        let mut e: Vec<String> =
            v.as_array().unwrap().iter().map(|x| x[key].as_str().unwrap().to_owned()).collect();
        e.sort();
        e
    };
    assert_eq!(
        envs(&c.get("/v1/secrets/db/access-log", &admin).await.expect(200), "environment"),
        ["dev", "prod"]
    );

    policy(
        &c,
        owner,
        "no-prod-for-admins",
        r#"forbid (principal, action in [Heimdall::Action::"secret.read", Heimdall::Action::"secret.access_log", Heimdall::Action::"resource.read"], resource) when { context.environment == "prod" } unless { principal.role == "owner" };"#,
    )
    .await;
    // Asked with prod: refused. Asked without an environment: prod's part
    // is filtered out, never served.
    c.get("/v1/secrets/db/access-log?environment=prod", &admin).await.expect_error(403, "FORBIDDEN");
    assert_eq!(envs(&c.get("/v1/secrets/db/access-log", &admin).await.expect(200), "environment"), ["dev"]);
    let shown = c.get("/v1/secrets/db", &admin).await.expect(200);
    let versions: Vec<&str> =
        shown["versions"].as_array().unwrap().iter().map(|v| v["environment_id"].as_str().unwrap()).collect();
    assert_eq!(versions, [dev.as_str()], "{shown}");
    // The owner still sees both.
    assert_eq!(c.get("/v1/secrets/db", owner).await.expect(200)["versions"].as_array().unwrap().len(), 2);
    assert_eq!(
        envs(&c.get("/v1/secrets/db/access-log", owner).await.expect(200), "environment"),
        ["dev", "prod"]
    );

    // Resource lists are decided per Resource, in its environment.
    c.post(
        &format!("/v1/cloud-accounts/{}/links", w.account),
        owner,
        json!({ "scope": "organization", "environment": "prod" }),
    )
    .await
    .expect(201);
    for (name, env) in [("in-dev", "dev"), ("in-prod", "prod")] {
        let body = json!({ "component": w.component, "schema": w.schema, "environment": env, "name": name, "input": { "bucket": "abc" } });
        c.post("/v1/resources", owner, body).await.expect(201);
    }
    let listed = c.get("/v1/resources", &admin).await.expect(200);
    assert_eq!(envs(&listed, "name"), ["in-dev"]);
    assert_eq!(c.get("/v1/resources", owner).await.expect(200).as_array().unwrap().len(), 2);
}

/// A list decides a page's look-alike items once (the same Component,
/// environment and attributes), so a `forbid` that names one of them by
/// id must still hide exactly that one, from the Resource list and from
/// the job list, and from a secret list likewise.
async fn a_forbid_naming_one_resource_hides_it_from_lists_among_look_alikes(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    let admin = c.add_member(owner, "ana@example.com", "admin").await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let body = json!({ "component": w.component, "schema": w.schema, "environment": "dev",
                           "name": format!("twin-{i}"), "input": { "bucket": format!("twin-bucket-{i}") } });
        ids.push(c.post("/v1/resources", owner, body).await.expect(201)["id"].as_str().unwrap().to_owned());
    }
    for name in ["a", "b", "c"] {
        c.post("/v1/secrets", owner, json!({ "name": name, "components": [w.component] })).await.expect(201);
    }
    let hidden_secret =
        c.get("/v1/secrets/b", owner).await.expect(200)["secret"]["id"].as_str().unwrap().to_owned();
    let (one, two) = (&ids[1], &ids[3]);
    policy(
        &c,
        owner,
        "hide-two",
        &format!(
            r#"forbid (principal, action in [Heimdall::Action::"resource.read", Heimdall::Action::"job.read"], resource) when {{ resource == Heimdall::Resource::"{one}" || resource in Heimdall::Resource::"{two}" }} unless {{ principal.role == "owner" }};"#
        ),
    )
    .await;
    policy(
        &c,
        owner,
        "hide-b",
        &format!(
            r#"forbid (principal, action == Heimdall::Action::"secret.read", resource == Heimdall::Secret::"{hidden_secret}") unless {{ principal.role == "owner" }};"#
        ),
    )
    .await;
    let listed = |v: Value, key: &str| -> Vec<String> {
        v.as_array().unwrap().iter().map(|e| e[key].as_str().unwrap().to_owned()).collect()
    };
    let visible: Vec<String> = ids.iter().filter(|id| *id != one && *id != two).cloned().collect();
    assert_eq!(listed(c.get("/v1/resources", &admin).await.expect(200), "id"), visible);
    assert_eq!(listed(c.get("/v1/resources?limit=2", &admin).await.expect(200), "id"), visible[..2]);
    assert_eq!(listed(c.get("/v1/resources", owner).await.expect(200), "id"), ids);
    c.get(&format!("/v1/resources/{one}"), &admin).await.expect_error(403, "FORBIDDEN");
    // Each Resource's job is a Job under it: `resource in` the second one
    // reaches its job, `resource ==` the first one does not.
    let jobs = listed(c.get("/v1/jobs", &admin).await.expect(200), "resource_id");
    let under: Vec<String> = ids.iter().filter(|id| *id != two).cloned().collect();
    assert_eq!(jobs, under, "every job but the one under the second named Resource, in order");
    assert_eq!(listed(c.get("/v1/secrets", &admin).await.expect(200), "name"), ["a", "c"]);
    assert_eq!(listed(c.get("/v1/secrets", owner).await.expect(200), "name"), ["a", "b", "c"]);
}
