//! The audit feed names its targets as they are now, beside the ids it
//! keeps: after a rename the event shows the new name; a target that is
//! gone keeps its id alone.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{world, Client};

crate::on_every_backend!(events_name_their_targets_beside_the_ids);

async fn events_name_their_targets_beside_the_ids(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.clone();
    let w = world(&c, &owner).await;
    let secret = c.post("/v1/secrets", &owner, json!({ "name": "db-password" })).await.expect(201);
    c.add_member(&owner, "ana@example.com", "admin").await;
    c.post(
        "/v1/resources",
        &owner,
        json!({ "component": w.component, "schema": w.schema, "environment": "dev", "name": "logs",
                "input": { "bucket": "acme-logs" } }),
    )
    .await
    .expect(201);
    c.call(Method::PATCH, "/v1/domains/payments", &owner, Some(json!({ "name": "money" }))).await.expect(200);

    let events = c.get("/v1/events?limit=100", &owner).await.expect(200);
    let named = |action: &str| -> Vec<(String, Option<String>)> {
        events
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["action"] == action)
            .map(|e| (e["target"].as_str().unwrap().to_owned(), e["target_name"].as_str().map(str::to_owned)))
            .collect()
    };
    let id = |v: &Value| v["id"].as_str().unwrap().to_owned();
    assert_eq!(
        named("secret.created"),
        [(format!("secret:{}", id(&secret)), Some("db-password".to_owned()))]
    );
    assert_eq!(named("member.added")[0].1.as_deref(), Some("ana@example.com"));
    assert_eq!(named("component.created")[0].1.as_deref(), Some("receipts"));
    assert_eq!(named("environment.created").len(), 2);
    let resource = named("resource.created");
    assert!(
        !resource.is_empty() && resource.iter().all(|(_, name)| name.as_deref() == Some("logs")),
        "{events}"
    );
    // The name as it is now: the domain was renamed after it was made.
    assert_eq!(named("domain.created")[0].1.as_deref(), Some("money"));
    assert_eq!(named("domain.renamed")[0].1.as_deref(), Some("money"));

    // Gone: the id alone.
    c.call(Method::DELETE, "/v1/members/ana@example.com", &owner, None).await.expect(200);
    let events = c.get("/v1/events?action=member.", &owner).await.expect(200);
    let added = events.as_array().unwrap().iter().find(|e| e["action"] == "member.added").unwrap();
    assert!(added.get("target_name").is_none(), "{added}");
    assert!(added["target"].as_str().unwrap().starts_with("member:"));
}
