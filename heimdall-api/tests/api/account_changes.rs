//! What was registered can be changed and removed: a cloud account's
//! region, credentials and drift schedule change in place; where it keeps
//! state cannot move while a Resource keeps state there; a link goes
//! only when no Resource of its environment uses the account; an account
//! goes only when nothing links or uses it. Every refusal stores nothing.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::json;

use crate::support::{world, Client};

crate::on_every_backend!(
    a_cloud_account_is_changed_unlinked_and_deleted_only_when_nothing_depends_on_it,
    jobs_an_older_heimdall_queued_keep_their_account_after_migrate
);

async fn a_cloud_account_is_changed_unlinked_and_deleted_only_when_nothing_depends_on_it(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    let w = world(&c, owner).await;
    let member = c.add_member(owner, "bo@example.com", "member").await;
    let path = "/v1/cloud-accounts/aws-dev";
    let patch = |body: serde_json::Value, token: &str| {
        let token = token.to_owned();
        let c = &c;
        async move { c.call(Method::PATCH, path, &token, Some(body)).await }
    };

    // In place: region, role and drift schedule; the rest stays.
    let role = "arn:aws:iam::123456789012:role/heimdall-2";
    let changed = patch(
        json!({ "region": "eu-central-1", "auth": { "kind": "oidc", "role_arn": role }, "drift_check_every": "24h" }),
        owner,
    )
    .await
    .expect(200);
    assert_eq!(
        (
            changed["region"].as_str(),
            changed["auth"]["role_arn"].as_str(),
            changed["drift_check_every_seconds"].as_i64()
        ),
        (Some("eu-central-1"), Some(role), Some(86_400)),
        "{changed}"
    );
    assert_eq!(
        (changed["id"].as_str(), changed["state_bucket"].as_str()),
        (Some(w.account.as_str()), Some("acme-tfstate"))
    );
    let events = c.get("/v1/events?action=cloud_account.updated", owner).await.expect(200);
    assert_eq!(events[0]["detail"]["changed"], json!(["auth", "drift_check_every", "region"]), "{events}");

    // Refused, nothing stored: a bad region, an unknown field, a member.
    patch(json!({ "region": "Not A Region" }), owner).await.expect_error(422, "INVALID_INPUT");
    patch(json!({ "regoin": "us-east-1" }), owner).await.expect_error(400, "BAD_REQUEST");
    patch(json!({ "region": "us-east-1" }), &member).await.expect_error(403, "FORBIDDEN");
    assert_eq!(c.get(path, owner).await.expect(200)["account"]["region"], "eu-central-1");

    // A Resource keeps its state in the account's bucket: the bucket stays.
    let created = crate::support::request_recibos(&c, owner, &w, "dev").await;
    let moved = patch(json!({ "state_bucket": "other-tfstate" }), owner).await.expect_error(409, "CONFLICT");
    assert!(moved["error"]["message"].as_str().unwrap().contains("1 Resource"), "{moved}");
    assert_eq!(c.get(path, owner).await.expect(200)["account"]["state_bucket"], "acme-tfstate");

    // Linked and used: neither the link nor the account goes.
    let unlink = format!("{path}/links?scope=organization&environment=dev");
    let refused = c.call(Method::DELETE, &unlink, owner, None).await.expect_error(409, "NOT_EMPTY");
    assert!(refused["error"]["message"].as_str().unwrap().contains("1 Resource"), "{refused}");
    c.call(Method::DELETE, path, owner, None).await.expect_error(409, "NOT_EMPTY");
    c.call(Method::DELETE, &format!("{path}/links?scope=organization&environment=prod"), owner, None)
        .await
        .expect_error(404, "NOT_FOUND");
    assert_eq!(c.get(path, owner).await.expect(200)["links"].as_array().unwrap().len(), 1);

    // Linking the same scope and environment to another account would move
    // the Resource's next job to another state store: refused while it
    // keeps state on this one.
    let other = json!({ "name": "aws-other", "provider": "aws", "region": "eu-west-1", "state_bucket": "other-tfstate",
                        "auth": { "kind": "oidc", "role_arn": "arn:aws:iam::123456789012:role/heimdall" } });
    c.post("/v1/cloud-accounts", owner, other).await.expect(201);
    let relink = json!({ "scope": "organization", "environment": "dev" });
    let moved = c
        .post("/v1/cloud-accounts/aws-other/links", owner, relink.clone())
        .await
        .expect_error(409, "CONFLICT");
    assert!(moved["error"]["message"].as_str().unwrap().contains("1 Resource"), "{moved}");
    let links = c.get("/v1/cloud-accounts/aws-other", owner).await.expect(200);
    assert!(links["links"].as_array().unwrap().is_empty(), "nothing stored: {links}");

    // Once the Resource is gone (it never ran: deleted at once), both go.
    let rid = created["id"].as_str().unwrap();
    c.call(Method::DELETE, &format!("/v1/resources/{rid}"), owner, None).await;
    patch(json!({ "state_bucket": "other-tfstate" }), owner).await.expect(200);
    c.call(Method::DELETE, &unlink, &member, None).await.expect_error(403, "FORBIDDEN");
    c.call(Method::DELETE, &unlink, owner, None).await.expect(204);
    c.post("/v1/cloud-accounts/aws-other/links", owner, relink).await.expect(201);
    assert!(c.get(path, owner).await.expect(200)["links"].as_array().unwrap().is_empty());
    c.call(Method::DELETE, path, owner, None).await.expect(204);
    c.get(path, owner).await.expect_error(404, "NOT_FOUND");
    let events = c.get("/v1/events?action=cloud_account.", owner).await.expect(200);
    let actions: Vec<&str> =
        events.as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(
        actions[..4],
        ["cloud_account.deleted", "cloud_account.linked", "cloud_account.unlinked", "cloud_account.updated"],
        "{events}"
    );
}

/// Jobs queued before migration 39 name their account only in their
/// request: `heimdall-api migrate` copies it out, so their Resources keep
/// the account's state where it is.
async fn jobs_an_older_heimdall_queued_keep_their_account_after_migrate(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    let w = world(&c, owner).await;
    crate::support::request_recibos(&c, owner, &w, "dev").await;

    // The jobs table as an older Heimdall left it, and its migration not yet run.
    sqlx::any::install_default_drivers();
    let pool = sqlx::any::AnyPoolOptions::new().max_connections(1).connect(api.database.url()).await.unwrap();
    for sql in [
        "DROP INDEX jobs_account",
        "ALTER TABLE jobs DROP COLUMN account_id",
        "DELETE FROM _sqlx_migrations WHERE version = 39",
    ] {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    pool.close().await;
    crate::support::migrate(api.database.url()).await;

    let body = json!({ "state_bucket": "other-tfstate" });
    c.call(Method::PATCH, "/v1/cloud-accounts/aws-dev", owner, Some(body))
        .await
        .expect_error(409, "CONFLICT");
}
