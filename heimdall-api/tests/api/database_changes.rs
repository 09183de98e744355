//! A registered database changes in place (where it is, how its admin
//! connection is secured, which secret holds the admin login), checked as
//! at registration; it goes only once it has no service users. Every
//! refusal stores nothing.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{enroll_agent, world, Client};

crate::on_every_backend!(a_database_is_changed_in_place_and_deleted_once_it_has_no_users);

async fn a_database_is_changed_in_place_and_deleted_once_it_has_no_users(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.clone();
    world(&c, &owner).await;
    let member = c.add_member(&owner, "bo@example.com", "member").await;
    enroll_agent(&c, &api, &owner, "a1").await;
    c.post("/v1/environments/dev/agents", &owner, json!({ "agent": "a1" })).await.expect(201);
    for secret in ["orders-admin", "orders-admin-2"] {
        c.post("/v1/secrets", &owner, json!({ "name": secret })).await.expect(201);
    }
    for name in ["orders", "scratch"] {
        let body = json!({ "name": name, "engine": "postgres", "host": "db.internal", "port": 5432,
                           "database": "orders", "environment": "dev", "admin_secret": "orders-admin" });
        c.post("/v1/databases", &owner, body).await.expect(201);
    }
    let patch = |body: Value, token: &str| {
        let (token, c) = (token.to_owned(), &c);
        async move { c.call(Method::PATCH, "/v1/databases/orders", &token, Some(body)).await }
    };
    let orders = || async {
        let all = c.get("/v1/databases", &owner).await.expect(200);
        all.as_array().unwrap().iter().find(|d| d["name"] == "orders").cloned()
    };

    let changed =
        patch(json!({ "host": "db2.internal", "port": 6432, "admin_secret": "orders-admin-2" }), &owner)
            .await
            .expect(200);
    assert_eq!(
        (changed["host"].as_str(), changed["port"].as_i64(), changed["admin_secret"].as_str()),
        (Some("db2.internal"), Some(6432), Some("orders-admin-2")),
        "{changed}"
    );
    let events = c.get("/v1/events?action=database.updated", &owner).await.expect(200);
    assert_eq!(events[0]["detail"]["changed"], json!(["admin_secret", "host", "port"]), "{events}");

    // Refused, nothing stored.
    patch(json!({ "tls": "disable" }), &owner).await.expect_error(422, "INVALID_INPUT");
    patch(json!({ "ca_pem": "not a certificate" }), &owner).await.expect_error(422, "INVALID_INPUT");
    patch(json!({ "port": 0 }), &owner).await.expect_error(422, "INVALID_INPUT");
    patch(json!({ "admin_secret": "nope" }), &owner).await.expect_error(404, "NOT_FOUND");
    patch(json!({ "environment": "prod" }), &owner).await.expect_error(400, "BAD_REQUEST");
    patch(json!({ "host": "db3.internal" }), &member).await.expect_error(403, "FORBIDDEN");
    let now = orders().await.unwrap();
    assert_eq!(
        (now["host"].as_str(), now["tls"].as_str()),
        (Some("db2.internal"), Some("verify-full")),
        "{now}"
    );

    // Deleted only without service users.
    let user = json!({ "name": "app", "rotate_every": "30d", "grace": "1h" });
    c.post("/v1/databases/orders/users", &owner, user).await.expect(201);
    let in_use =
        c.call(Method::DELETE, "/v1/databases/orders", &owner, None).await.expect_error(409, "NOT_EMPTY");
    assert!(in_use["error"]["message"].as_str().unwrap().contains("1 service user"), "{in_use}");
    c.call(Method::DELETE, "/v1/databases/scratch", &member, None).await.expect_error(403, "FORBIDDEN");
    c.call(Method::DELETE, "/v1/databases/scratch", &owner, None).await.expect(204);
    let left = c.get("/v1/databases", &owner).await.expect(200);
    assert_eq!(left.as_array().unwrap().len(), 1, "{left}");
    assert!(orders().await.is_some());
    let events = c.get("/v1/events?action=database.deleted", &owner).await.expect(200);
    assert_eq!(events[0]["detail"]["name"], "scratch");
}
