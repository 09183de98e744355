//! Signing in to the Console with a one-time link (`heimdall console`):
//! the link works once, within its minute, for a member still there; the
//! session it gives ends by itself; nothing is made for a refused link.

use heimdall_api::testing::{TestApi, TestDatabase};
use heimdall_core::audit::AuditAction;
use heimdall_core::ids::EventId;
use heimdall_core::ports::{MetadataStore, NewEvent, SignInStore};
use heimdall_core::token::TokenHash;
use reqwest::Method;
use serde_json::{json, Value};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::support::Client;

crate::on_every_backend!(a_sign_in_link_works_once_for_its_member_and_its_session_ends);

fn code_of(link: &Value) -> String {
    let path = link["path"].as_str().unwrap();
    path.strip_prefix("/console/#sign-in=").unwrap_or_else(|| panic!("a fragment link: {path}")).to_owned()
}

async fn a_sign_in_link_works_once_for_its_member_and_its_session_ends(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.clone();

    // Signed in only: no token, no link.
    c.call(Method::POST, "/v1/console/sign-in-links", "", None).await.expect_error(401, "UNAUTHENTICATED");
    let link = c.call(Method::POST, "/v1/console/sign-in-links", &owner, None).await.expect(201);
    let code = code_of(&link);
    assert!(code.starts_with("hcs_") && code.len() == 47, "{code}");
    let expires: OffsetDateTime = time::OffsetDateTime::parse(
        link["expires_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let left = expires - OffsetDateTime::now_utc();
    assert!(left > Duration::seconds(50) && left <= Duration::seconds(60), "{left}");

    // Traded once, without a token, for a session of the link's member.
    let session = c.post("/v1/console/sessions", "", json!({ "code": code })).await.expect(201);
    assert_eq!(session["email"], api.bootstrapped.owner.email);
    let token = session["token"].as_str().unwrap().to_owned();
    assert_ne!(token, owner, "a session token of its own, never the CLI's");
    let me = c.get("/v1/whoami", &token).await.expect(200);
    assert_eq!(me["member"]["email"], api.bootstrapped.owner.email);
    let tokens = c.get("/v1/tokens", &owner).await.expect(200);
    let listed: Vec<&Value> =
        tokens.as_array().unwrap().iter().filter(|t| t["name"] == "console session").collect();
    assert_eq!(listed.len(), 1, "{tokens}");
    assert!(listed[0]["expires_at"].is_string(), "{tokens}");

    // A second use, a made-up code, a malformed one: refused, and nothing made.
    c.post("/v1/console/sessions", "", json!({ "code": code })).await.expect_error(401, "UNAUTHENTICATED");
    let unknown = format!("hcs_{}", "A".repeat(43));
    c.post("/v1/console/sessions", "", json!({ "code": unknown })).await.expect_error(401, "UNAUTHENTICATED");
    c.post("/v1/console/sessions", "", json!({ "code": "hmd_not-a-code" }))
        .await
        .expect_error(401, "UNAUTHENTICATED");
    c.post("/v1/console/sessions", "", json!({ "code": code, "token": owner }))
        .await
        .expect_error(400, "BAD_REQUEST");
    let tokens = c.get("/v1/tokens", &owner).await.expect(200);
    assert_eq!(tokens.as_array().unwrap().iter().filter(|t| t["name"] == "console session").count(), 1);

    // The session ends by itself after 12 hours.
    let now = OffsetDateTime::now_utc();
    let hash = TokenHash::of(&token);
    assert!(api.store.authenticate(&hash, now + Duration::hours(11)).await.unwrap().is_some());
    assert!(api
        .store
        .authenticate(&hash, now + Duration::hours(12) + Duration::minutes(1))
        .await
        .unwrap()
        .is_none());

    // A link past its minute is refused.
    let org = api.bootstrapped.organization.id;
    let stale = format!("hcs_{}", "B".repeat(43));
    let event = NewEvent {
        id: EventId::from_uuid(Uuid::new_v4()),
        at: now - Duration::minutes(2),
        actor: api.bootstrapped.owner.email.clone(),
        action: AuditAction::ConsoleSignInLinkCreated,
        target: format!("member:{}", api.bootstrapped.owner.id),
        detail: Value::Null,
    };
    let stale_hash = heimdall_core::console::code_hash(&stale);
    api.store
        .create_sign_in(org, api.bootstrapped.owner.id, &stale_hash, now - Duration::minutes(1), event)
        .await
        .unwrap();
    c.post("/v1/console/sessions", "", json!({ "code": stale })).await.expect_error(401, "UNAUTHENTICATED");

    // A member removed after making a link cannot use it.
    let ana = c.add_member(&owner, "ana@example.com", "admin").await;
    let ana_link = c.call(Method::POST, "/v1/console/sign-in-links", &ana, None).await.expect(201);
    c.call(Method::DELETE, "/v1/members/ana@example.com", &owner, None).await.expect(200);
    c.post("/v1/console/sessions", "", json!({ "code": code_of(&ana_link) }))
        .await
        .expect_error(401, "UNAUTHENTICATED");

    // Both steps are in the audit feed, by the member.
    let events = c.get("/v1/events?action=console.", &owner).await.expect(200);
    let actions: Vec<&str> =
        events.as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions.iter().filter(|a| **a == "console.signed_in").count(), 1, "{events}");
    assert!(actions.contains(&"console.sign_in_link_created"), "{events}");
}
