//! `POST /v1/resources/{key}/abandon`: Heimdall lets a Resource go with
//! no job at all; it stays listed as `abandoned`, takes no more changes,
//! and its name is free for a Resource that takes the object up again.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::json;

use crate::support::{request_recibos, world, Client};

crate::on_every_backend!(an_abandoned_resource_is_let_go_with_no_job_and_its_name_is_free);

async fn an_abandoned_resource_is_let_go_with_no_job_and_its_name_is_free(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    let w = world(&c, owner).await;
    let member = c.add_member(owner, "bo@example.com", "member").await;
    let old = request_recibos(&c, owner, &w, "dev").await;
    let old_id = old["id"].as_str().unwrap().to_owned();

    c.post("/v1/resources/recibos/abandon", &member, json!(null)).await.expect_error(403, "FORBIDDEN");
    let abandoned = c.post("/v1/resources/recibos/abandon", owner, json!(null)).await.expect(200);
    assert_eq!(abandoned["status"], "abandoned", "{abandoned}");
    let jobs = c.get(&format!("/v1/jobs?resource={old_id}"), owner).await.expect(200);
    let jobs = jobs.as_array().unwrap();
    assert_eq!(jobs.len(), 1, "no job was queued: {jobs:?}");
    assert_eq!(
        (jobs[0]["operation"].as_str(), jobs[0]["status"].as_str()),
        (Some("apply"), Some("cancelled"))
    );
    let events = c.get("/v1/events?action=resource.abandoned", owner).await.expect(200);
    assert_eq!(events[0]["target_name"], "recibos", "{events}");

    // No more changes; asking again is refused; delete answers it as it is.
    c.post(&format!("/v1/resources/{old_id}/abandon"), owner, json!(null))
        .await
        .expect_error(409, "CONFLICT");
    let change = json!({ "input": { "bucket": "checkout-recibos", "versioning": true } });
    c.call(Method::PATCH, &format!("/v1/resources/{old_id}"), owner, Some(change))
        .await
        .expect_error(409, "CONFLICT");
    let deleted = c.call(Method::DELETE, &format!("/v1/resources/{old_id}"), owner, None).await.expect(200);
    assert_eq!(deleted["status"], "abandoned");

    // The name is free; by name, the managed one is meant.
    let new = request_recibos(&c, owner, &w, "dev").await;
    let shown = c.get("/v1/resources/recibos", owner).await.expect(200);
    assert_eq!(shown["resource"]["id"], new["id"], "{shown}");
    let listed = c.get("/v1/resources?status=abandoned", owner).await.expect(200);
    let ids: Vec<&str> = listed.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [old_id.as_str()], "it stays listed, with its history");
}
