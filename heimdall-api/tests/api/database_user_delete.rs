//! `database user delete` through the real routes, the time driven by a
//! `ManualClock`: the user rotates no more, a rotation in flight is fenced,
//! the drop is offered to one Agent after the grace (for the member who
//! deleted it), and once it is reported the user is gone and its secret
//! deleting. Every refusal changes nothing.

use std::sync::Arc;

use heimdall_api::testing::{TestApi, TestDatabase};
use heimdall_core::clock::{Clock, ManualClock};
use reqwest::Method;
use serde_json::json;
use time::Duration;

use crate::databases::{claim, holds, report};
use crate::support::{enroll_agent, world, Client};

crate::on_every_backend!(a_deleted_service_user_is_dropped_after_its_grace_then_forgotten);

async fn a_deleted_service_user_is_dropped_after_its_grace_then_forgotten(database: TestDatabase) {
    let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
    let api = TestApi::with_clock(database, clock.clone()).await;
    let c = Client::new(&api);
    let owner = api.owner_token.clone();
    world(&c, &owner).await;
    let admin = c.add_member(&owner, "di@example.com", "admin").await;
    let member = c.add_member(&owner, "mo@example.com", "member").await;
    let (a1, _) = enroll_agent(&c, &api, &owner, "a1").await;
    let (a2, _) = enroll_agent(&c, &api, &owner, "a2").await;
    for agent in ["a1", "a2"] {
        c.post("/v1/environments/dev/agents", &owner, json!({ "agent": agent })).await.expect(201);
    }
    c.post("/v1/secrets", &owner, json!({ "name": "orders-admin" })).await.expect(201);
    c.post(
        "/v1/databases",
        &owner,
        json!({ "name": "orders", "engine": "postgres", "host": "db.internal", "port": 5432,
                "database": "orders", "environment": "dev", "admin_secret": "orders-admin" }),
    )
    .await
    .expect(201);
    let user = json!({ "name": "app", "rotate_every": "1d", "grace": "1h",
                       "grants": "SELECT ON ALL TABLES IN SCHEMA public" });
    c.post("/v1/databases/orders/users", &owner, user).await.expect(201);
    let (_, created) = claim(&a1, &api).await;
    let (status, _) = report(&a1, &api, &created, json!({ "outcome": "done", "login": "app_a" })).await;
    assert_eq!(status, 200);

    // A rotation is in flight when the deletion comes.
    c.post("/v1/databases/orders/users/app/rotate", &owner, json!({})).await.expect(202);
    holds(&a1, &api, 1).await;
    let (_, rotation) = claim(&a1, &api).await;
    assert_eq!(rotation["kind"], "rotate", "{rotation}");

    // Refused, nothing changed.
    let path = "/v1/databases/orders/users/app";
    c.call(Method::DELETE, path, &member, None).await.expect_error(403, "FORBIDDEN");
    c.call(Method::DELETE, &format!("{path}?grace=1y"), &owner, None)
        .await
        .expect_error(422, "INVALID_INPUT");
    c.call(Method::DELETE, &format!("{path}?gracee=1h"), &owner, None).await.expect_error(400, "BAD_REQUEST");
    c.call(Method::DELETE, "/v1/databases/orders/users/nope", &owner, None)
        .await
        .expect_error(404, "NOT_FOUND");
    let unchanged = c.get(path, &owner).await.expect(200);
    assert!(unchanged.get("drop_after").is_none(), "{unchanged}");

    // Deleted by the admin: nothing rotates, the rotation in flight is fenced.
    let now = clock.now();
    let deleting = c.call(Method::DELETE, &format!("{path}?grace=10m"), &admin, None).await.expect(202);
    let drop_after = time::OffsetDateTime::parse(
        deleting["drop_after"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert!((drop_after - (now + Duration::minutes(10))).abs() < Duration::seconds(1), "{deleting}");
    assert_eq!(deleting["deleted_by"], "di@example.com");
    let (status, fenced) = report(&a1, &api, &rotation, json!({ "outcome": "done", "login": "app_b" })).await;
    assert_eq!((status, fenced["error"]["code"].as_str()), (409, Some("CONFLICT")), "{fenced}");
    c.post("/v1/databases/orders/users/app/rotate", &owner, json!({})).await.expect_error(409, "CONFLICT");
    let again = c.call(Method::DELETE, path, &owner, None).await.expect_error(409, "CONFLICT");
    assert!(again["error"]["message"].as_str().unwrap().contains("already being deleted"), "{again}");
    c.call(Method::DELETE, "/v1/databases/orders", &owner, None).await.expect_error(409, "NOT_EMPTY");
    assert_eq!(claim(&a1, &api).await.0, 204, "nothing is due during the grace");

    // After the grace: one Agent drops, for the member who deleted it.
    clock.advance(Duration::minutes(10));
    let (status, drop) = claim(&a2, &api).await;
    assert_eq!(status, 200, "{drop}");
    assert_eq!(drop["kind"], "drop", "{drop}");
    assert!(drop.get("version").is_none(), "{drop}");
    assert_eq!(drop["on_behalf_of"]["email"], "di@example.com", "{drop}");
    assert_eq!(claim(&a1, &api).await.0, 204, "leased to a2");
    let (status, _) =
        report(&a2, &api, &drop, json!({ "outcome": "failed", "reason": "role app owns table t" })).await;
    assert_eq!(status, 200);
    let failed = c.get(path, &owner).await.expect(200);
    assert_eq!(failed["last_error"], "role app owns table t", "{failed}");
    clock.advance(Duration::seconds(61));
    let (_, drop) = claim(&a1, &api).await;
    assert_eq!(drop["kind"], "drop", "offered again after a failure: {drop}");
    let (status, _) = report(&a1, &api, &drop, json!({ "outcome": "done", "login": "app_a, app_b" })).await;
    assert_eq!(status, 200);

    // Gone: the user, and its secret is deleting; the database may go.
    c.get(path, &owner).await.expect_error(404, "NOT_FOUND");
    let secret = c.get("/v1/secrets/db-orders-app", &owner).await.expect(200);
    let lifecycle = secret["secret"]["status"].as_str().or(secret["status"].as_str());
    assert!(matches!(lifecycle, Some("deleting" | "deleted")), "{secret}");
    let events = c.get("/v1/events?limit=100", &owner).await.expect(200);
    let actions: Vec<&str> = events.as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    for action in ["database.user_deletion_requested", "database.user_deleted", "secret.deletion_started"] {
        assert!(actions.contains(&action), "{action}: {actions:?}");
    }
    c.call(Method::DELETE, "/v1/databases/orders", &owner, None).await.expect(204);
}
