//! The API over real HTTP: authentication, role limits, the last-owner
//! rule, bad input on every create endpoint, and policies taking effect.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

crate::on_every_backend!(
    authentication_failures,
    role_limits,
    last_owner_rule,
    bad_input_on_every_create_endpoint,
    policies_apply_from_the_next_request,
    catalog_lifecycle,
    member_removal_revokes_and_is_audited,
    values_are_refused_everywhere,
);

struct Client {
    http: reqwest::Client,
    base: String,
}

struct Reply {
    status: StatusCode,
    body: Value,
}

impl Reply {
    fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("<none>")
    }

    #[track_caller]
    fn expect(self, status: u16) -> Value {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        self.body
    }

    #[track_caller]
    fn expect_error(self, status: u16, code: &str) -> Value {
        assert_eq!((self.status.as_u16(), self.code()), (status, code), "body: {}", self.body);
        assert!(self.body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
        self.body
    }
}

impl Client {
    fn new(api: &TestApi) -> Self {
        Self { http: reqwest::Client::new(), base: api.url.clone() }
    }

    async fn raw(&self, method: Method, path: &str, token: Option<&str>, body: Option<Vec<u8>>) -> Reply {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some(body) = body {
            req = req.header("content-type", "application/json").body(body);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status();
        let bytes = resp.bytes().await.expect("body");
        let body =
            if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).expect("JSON body") };
        Reply { status, body }
    }

    async fn call(&self, method: Method, path: &str, token: &str, body: Option<Value>) -> Reply {
        self.raw(method, path, Some(token), body.map(|b| serde_json::to_vec(&b).unwrap())).await
    }

    async fn get(&self, path: &str, token: &str) -> Reply {
        self.call(Method::GET, path, token, None).await
    }

    async fn post(&self, path: &str, token: &str, body: Value) -> Reply {
        self.call(Method::POST, path, token, Some(body)).await
    }

    /// Adds a member and returns their token.
    async fn add_member(&self, owner: &str, email: &str, role: &str) -> String {
        let body = self.post("/v1/members", owner, json!({ "email": email, "role": role })).await.expect(201);
        body["token"].as_str().unwrap().to_owned()
    }
}

async fn authentication_failures(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    assert_eq!(c.raw(Method::GET, "/v1/health", None, None).await.expect(200)["status"], "ok");

    let well_formed_unknown = format!("hmd_{}", "A".repeat(43));
    for token in [None, Some(""), Some("not-a-token"), Some(well_formed_unknown.as_str())] {
        c.raw(Method::GET, "/v1/whoami", token, None).await.expect_error(401, "UNAUTHENTICATED");
    }
    // Wrong scheme.
    let resp = c
        .http
        .get(format!("{}/v1/whoami", c.base))
        .header("authorization", format!("Basic {}", api.owner_token))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);

    let me = c.get("/v1/whoami", &api.owner_token).await.expect(200);
    assert_eq!(me["member"]["email"], "owner@example.com");
    assert_eq!(me["member"]["role"], "owner");

    // A revoked token stops working at once.
    let created = c.post("/v1/tokens", &api.owner_token, json!({ "name": "ci" })).await.expect(201);
    let second = created["token"].as_str().unwrap().to_owned();
    assert!(second.starts_with("hmd_") && second != api.owner_token);
    c.get("/v1/whoami", &second).await.expect(200);
    let id = created["info"]["id"].as_str().unwrap();
    c.call(Method::DELETE, &format!("/v1/tokens/{id}"), &api.owner_token, None).await.expect(200);
    c.get("/v1/whoami", &second).await.expect_error(401, "UNAUTHENTICATED");
    // The token list never shows a token.
    let tokens = c.get("/v1/tokens", &api.owner_token).await.expect(200);
    assert!(!tokens.to_string().contains(&second) && !tokens.to_string().contains(&api.owner_token));

    // Unknown routes answer in the same error shape.
    c.get("/v1/nope", &api.owner_token).await.expect_error(404, "NOT_FOUND");
    c.call(Method::PUT, "/v1/domains", &api.owner_token, None).await.expect_error(404, "NOT_FOUND");
}

async fn role_limits(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let admin = c.add_member(owner, "admin@example.com", "admin").await;
    let member = c.add_member(owner, "member@example.com", "member").await;

    // Everyone reads the catalog and the member list; only owner/admin write.
    c.post("/v1/domains", owner, json!({ "name": "payments" })).await.expect(201);
    for token in [owner, admin.as_str(), member.as_str()] {
        c.get("/v1/domains", token).await.expect(200);
        c.get("/v1/members", token).await.expect(200);
    }
    c.post("/v1/domains", &member, json!({ "name": "x" })).await.expect_error(403, "FORBIDDEN");
    c.post("/v1/environments", &member, json!({ "name": "x" })).await.expect_error(403, "FORBIDDEN");
    c.post("/v1/domains", &admin, json!({ "name": "identity" })).await.expect(201);
    c.call(Method::PATCH, "/v1/domains/payments", &member, Some(json!({ "name": "y" })))
        .await
        .expect_error(403, "FORBIDDEN");
    c.call(Method::DELETE, "/v1/domains/identity", &member, None).await.expect_error(403, "FORBIDDEN");

    // Members: a member manages nobody; an admin never touches the owner role.
    c.post("/v1/members", &member, json!({ "email": "z@example.com", "role": "member" }))
        .await
        .expect_error(403, "FORBIDDEN");
    c.post("/v1/members", &admin, json!({ "email": "o2@example.com", "role": "owner" }))
        .await
        .expect_error(403, "FORBIDDEN");
    c.post("/v1/members", &admin, json!({ "email": "m2@example.com", "role": "member" })).await.expect(201);
    c.call(Method::PATCH, "/v1/members/owner@example.com", &admin, Some(json!({ "role": "member" })))
        .await
        .expect_error(403, "FORBIDDEN");
    c.call(Method::DELETE, "/v1/members/owner@example.com", &admin, None)
        .await
        .expect_error(403, "FORBIDDEN");
    c.call(Method::PATCH, "/v1/members/admin@example.com", &admin, Some(json!({ "role": "owner" })))
        .await
        .expect_error(403, "FORBIDDEN");

    // Policies are written by owners only; the feed is for owners and admins.
    let policy = json!({ "name": "p", "text": "permit(principal, action, resource);" });
    c.post("/v1/policies", &admin, policy.clone()).await.expect_error(403, "FORBIDDEN");
    c.get("/v1/policies", &admin).await.expect(200);
    c.get("/v1/policies", &member).await.expect_error(403, "FORBIDDEN");
    c.get("/v1/events", &admin).await.expect(200);
    c.get("/v1/events", &member).await.expect_error(403, "FORBIDDEN");
    c.post("/v1/policies", owner, policy).await.expect(201);
}

async fn last_owner_rule(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    c.call(Method::PATCH, "/v1/members/owner@example.com", owner, Some(json!({ "role": "admin" })))
        .await
        .expect_error(409, "LAST_OWNER");
    c.call(Method::DELETE, "/v1/members/owner@example.com", owner, None)
        .await
        .expect_error(409, "LAST_OWNER");

    let second = c.add_member(owner, "second@example.com", "owner").await;
    c.call(Method::PATCH, "/v1/members/owner@example.com", owner, Some(json!({ "role": "admin" })))
        .await
        .expect(200);
    // Now `second` is the last owner, and cannot leave either.
    c.call(Method::DELETE, "/v1/members/second@example.com", &second, None)
        .await
        .expect_error(409, "LAST_OWNER");
    let me = c.get("/v1/whoami", owner).await.expect(200);
    assert_eq!(me["member"]["role"], "admin");
}

async fn bad_input_on_every_create_endpoint(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let domain = c.post("/v1/domains", owner, json!({ "name": "payments" })).await.expect(201);
    let domain_id = domain["id"].as_str().unwrap().to_owned();
    let system =
        c.post("/v1/systems", owner, json!({ "name": "checkout", "parent_id": domain_id })).await.expect(201);
    let system_id = system["id"].as_str().unwrap().to_owned();
    let events_before = c.get("/v1/events?limit=1000", owner).await.expect(200).as_array().unwrap().len();
    let marker = "MARKER-8c1f";

    let cases: Vec<(&str, Value, u16, &str)> = vec![
        ("/v1/members", json!({ "email": marker, "role": "member" }), 422, "INVALID_INPUT"),
        ("/v1/members", json!({ "email": "a@example.com", "role": marker }), 400, "BAD_REQUEST"),
        (
            "/v1/members",
            json!({ "email": "a@example.com", "role": "member", "extra": marker }),
            400,
            "BAD_REQUEST",
        ),
        ("/v1/members", json!({ "email": "a@example.com" }), 400, "BAD_REQUEST"),
        ("/v1/members", json!({ "email": 7, "role": "member" }), 400, "BAD_REQUEST"),
        ("/v1/tokens", json!({ "name": "" }), 422, "INVALID_INPUT"),
        ("/v1/tokens", json!({ "name": "x", "scope": marker }), 400, "BAD_REQUEST"),
        ("/v1/domains", json!({ "name": format!("Bad {marker}") }), 422, "INVALID_INPUT"),
        ("/v1/domains", json!({ "name": "ok", "parent_id": domain_id }), 422, "INVALID_INPUT"),
        ("/v1/domains", json!({ "name": "ok", "colour": marker }), 400, "BAD_REQUEST"),
        ("/v1/domains", json!({ "name": "payments" }), 409, "ALREADY_EXISTS"),
        ("/v1/systems", json!({ "name": "ok" }), 422, "INVALID_INPUT"),
        ("/v1/systems", json!({ "name": "ok", "parent_id": system_id }), 404, "NOT_FOUND"),
        ("/v1/systems", json!({ "name": "ok", "parent_id": marker }), 400, "BAD_REQUEST"),
        ("/v1/systems", json!({ "name": "checkout", "parent_id": domain_id }), 409, "ALREADY_EXISTS"),
        ("/v1/components", json!({ "name": "ok", "parent_id": domain_id }), 404, "NOT_FOUND"),
        ("/v1/components", json!({ "name": "-ok", "parent_id": system_id }), 422, "INVALID_INPUT"),
        ("/v1/environments", json!({ "name": "x".repeat(64) }), 422, "INVALID_INPUT"),
        ("/v1/environments", json!({ "name": "prod", "description": 5 }), 400, "BAD_REQUEST"),
        (
            "/v1/policies",
            json!({ "name": "p", "text": format!("permit(principal, action, resource) when {{ \"{marker}\" }}") }),
            422,
            "INVALID_POLICY",
        ),
        (
            "/v1/policies",
            json!({ "name": "p", "text": "permit(principal, action == Heimdall::Action::\"nope\", resource);" }),
            422,
            "INVALID_POLICY",
        ),
        ("/v1/policies", json!({ "name": "p" }), 400, "BAD_REQUEST"),
        (
            "/v1/policies",
            json!({ "name": "p", "text": "permit(principal, action, resource);", "effect": marker }),
            400,
            "BAD_REQUEST",
        ),
    ];
    for (path, body, status, code) in cases {
        let reply = c.post(path, owner, body.clone()).await;
        let err = reply.expect_error(status, code);
        // The refusal never repeats a value it was sent.
        // Policy text is not secret: Cedar may quote it when it points at an error.
        let echoed = code != "INVALID_POLICY" && err.to_string().contains(marker);
        assert!(!echoed, "{path} {body} echoed the input: {err}");
    }
    // Malformed JSON and a body over the limit, on every create endpoint.
    for path in [
        "/v1/members",
        "/v1/tokens",
        "/v1/domains",
        "/v1/systems",
        "/v1/components",
        "/v1/environments",
        "/v1/policies",
    ] {
        c.raw(Method::POST, path, Some(owner), Some(b"{\"name\": ".to_vec()))
            .await
            .expect_error(400, "BAD_REQUEST");
        c.raw(Method::POST, path, Some(owner), Some(vec![b' '; 300 * 1024]))
            .await
            .expect_error(413, "PAYLOAD_TOO_LARGE");
    }
    // The policy error names the position.
    let err = c
        .post("/v1/policies", owner, json!({ "name": "p", "text": "permit(principal,\n  action resource);" }))
        .await
        .expect_error(422, "INVALID_POLICY");
    assert_eq!(err["error"]["fields"][0]["path"], "/text");
    assert!(err["error"]["message"].as_str().unwrap().contains("line 2"), "{err}");

    // Nothing was stored by any refusal.
    assert_eq!(c.get("/v1/members", owner).await.expect(200).as_array().unwrap().len(), 1);
    assert_eq!(c.get("/v1/domains", owner).await.expect(200).as_array().unwrap().len(), 1);
    assert_eq!(c.get("/v1/systems", owner).await.expect(200).as_array().unwrap().len(), 1);
    assert_eq!(c.get("/v1/components", owner).await.expect(200).as_array().unwrap().len(), 0);
    assert_eq!(c.get("/v1/environments", owner).await.expect(200).as_array().unwrap().len(), 0);
    assert_eq!(c.get("/v1/policies", owner).await.expect(200).as_array().unwrap().len(), 0);
    assert_eq!(c.get("/v1/tokens", owner).await.expect(200).as_array().unwrap().len(), 1);
    let events_after = c.get("/v1/events?limit=1000", owner).await.expect(200).as_array().unwrap().len();
    assert_eq!(events_before, events_after, "a refused request wrote an audit event");

    // Query strings are checked the same way.
    c.get("/v1/events?limit=0", owner).await.expect_error(422, "INVALID_INPUT");
    c.get(&format!("/v1/events?limit={marker}"), owner).await.expect_error(400, "BAD_REQUEST");
    c.get("/v1/events?before=yesterday", owner).await.expect_error(422, "INVALID_INPUT");
    c.get("/v1/domains?system=x", owner).await.expect_error(422, "INVALID_INPUT");
}

async fn policies_apply_from_the_next_request(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let admin = c.add_member(owner, "admin@example.com", "admin").await;
    c.post("/v1/environments", &admin, json!({ "name": "dev" })).await.expect(201);

    let policy = c
        .post(
            "/v1/policies",
            owner,
            json!({ "name": "freeze-catalog", "description": "change freeze",
                    "text": "forbid(principal, action == Heimdall::Action::\"catalog.write\", resource)\n  unless { principal.role == \"owner\" };" }),
        )
        .await
        .expect(201);
    let denied =
        c.post("/v1/environments", &admin, json!({ "name": "prod" })).await.expect_error(403, "FORBIDDEN");
    let id = policy["id"].as_str().unwrap();
    assert!(denied["error"]["message"].as_str().unwrap().contains(id), "{denied}");
    c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201);

    assert_eq!(c.get(&format!("/v1/policies/{id}"), owner).await.expect(200)["name"], "freeze-catalog");
    c.call(Method::DELETE, &format!("/v1/policies/{id}"), owner, None).await.expect(204);
    c.post("/v1/environments", &admin, json!({ "name": "staging" })).await.expect(201);
    c.get(&format!("/v1/policies/{id}"), owner).await.expect_error(404, "NOT_FOUND");
}

async fn catalog_lifecycle(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let payments =
        c.post("/v1/domains", owner, json!({ "name": "payments", "description": "money" })).await.expect(201);
    let identity = c.post("/v1/domains", owner, json!({ "name": "identity" })).await.expect(201);
    let sys =
        c.post("/v1/systems", owner, json!({ "name": "api", "parent_id": payments["id"] })).await.expect(201);
    c.post("/v1/systems", owner, json!({ "name": "api", "parent_id": identity["id"] })).await.expect(201);
    let comp = c
        .post("/v1/components", owner, json!({ "name": "checkout", "parent_id": sys["id"] }))
        .await
        .expect(201);
    assert_eq!(comp["parent_id"], sys["id"]);

    // By name when unambiguous, by id always.
    assert_eq!(c.get("/v1/domains/payments", owner).await.expect(200)["description"], "money");
    c.get("/v1/systems/api", owner).await.expect_error(422, "INVALID_INPUT");
    let sys_id = sys["id"].as_str().unwrap();
    assert_eq!(c.get(&format!("/v1/systems/{sys_id}"), owner).await.expect(200)["name"], "api");
    // An id of another kind is not found under this kind.
    c.get(&format!("/v1/domains/{sys_id}"), owner).await.expect_error(404, "NOT_FOUND");
    let filtered = c.get("/v1/systems?domain=payments", owner).await.expect(200);
    assert_eq!(filtered.as_array().unwrap().len(), 1);
    assert_eq!(
        c.get(&format!("/v1/components?system={sys_id}"), owner).await.expect(200).as_array().unwrap().len(),
        1
    );

    // Rename, uniqueness, delete-if-empty.
    c.call(Method::PATCH, "/v1/domains/identity", owner, Some(json!({ "name": "payments" })))
        .await
        .expect_error(409, "ALREADY_EXISTS");
    let renamed = c
        .call(Method::PATCH, "/v1/domains/identity", owner, Some(json!({ "name": "iam" })))
        .await
        .expect(200);
    assert_eq!(renamed["name"], "iam");
    let err =
        c.call(Method::DELETE, "/v1/domains/payments", owner, None).await.expect_error(409, "NOT_EMPTY");
    assert!(err["error"]["message"].as_str().unwrap().contains("api"));
    c.call(Method::DELETE, "/v1/components/checkout", owner, None).await.expect(204);
    c.call(Method::DELETE, &format!("/v1/systems/{sys_id}"), owner, None).await.expect(204);
    c.call(Method::DELETE, "/v1/domains/payments", owner, None).await.expect(204);
    c.get("/v1/domains/payments", owner).await.expect_error(404, "NOT_FOUND");

    let events = c.get("/v1/events?action=domain.", owner).await.expect(200);
    let actions: Vec<&str> =
        events.as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["domain.deleted", "domain.renamed", "domain.created", "domain.created"]);
}

async fn member_removal_revokes_and_is_audited(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let ana = c.add_member(owner, "Ana@Example.com", "admin").await;
    let second = c.post("/v1/tokens", &ana, json!({ "name": "laptop" })).await.expect(201)["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(c.get("/v1/members/ana@example.com", owner).await.expect(200)["role"], "admin");
    let removed = c.call(Method::DELETE, "/v1/members/ana@example.com", owner, None).await.expect(200);
    assert_eq!(removed["email"], "ana@example.com");
    for token in [&ana, &second] {
        c.get("/v1/whoami", token).await.expect_error(401, "UNAUTHENTICATED");
    }
    let feed = c.get("/v1/events?action=member.removed", owner).await.expect(200);
    let feed = feed.as_array().unwrap();
    assert_eq!(feed.len(), 1);
    assert_eq!(feed[0]["actor"], "owner@example.com");
    assert_eq!(feed[0]["detail"]["email"], "ana@example.com");
    // No token ever appears in the feed.
    let all = c.get("/v1/events?limit=1000", owner).await.expect(200).to_string();
    assert!(!all.contains("hmd_"), "{all}");
}

async fn values_are_refused_everywhere(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let marker = "hunter2-MARKER";
    let events_before = c.get("/v1/events?limit=1000", owner).await.expect(200).as_array().unwrap().len();
    let shapes = [
        ("/v1/domains", json!({ "name": "payments", "value": marker })),
        ("/v1/domains", json!({ "name": "payments", "Value": marker })),
        ("/v1/domains", json!({ "name": "payments", "SECRET_VALUE": marker })),
        ("/v1/domains", json!({ "name": "payments", "description": "x", "extra": { "data": marker } })),
        ("/v1/environments", json!({ "name": "prod", "tags": [{ "plainText": marker }] })),
        (
            "/v1/members",
            json!({ "email": "a@example.com", "role": "member", "password": { "value": marker } }),
        ),
        (
            "/v1/policies",
            json!({ "name": "p", "text": "permit(principal, action, resource);", "payload": marker }),
        ),
        (
            "/v1/schemas",
            json!({ "type": "x", "input_schema": {}, "module": { "source": "./m", "version": "1", "secret-value": marker } }),
        ),
        ("/v1/tokens", json!({ "name": "t", "default_value": marker })),
    ];
    for (path, body) in shapes {
        let reply = c.raw(Method::POST, path, Some(owner), Some(serde_json::to_vec(&body).unwrap())).await;
        let err = reply.expect_error(400, "VALUE_NOT_ACCEPTED");
        assert!(!err.to_string().contains(marker), "{path}: the refusal echoed the value: {err}");
    }
    // PATCH bodies too.
    let reply = c
        .call(
            Method::PATCH,
            "/v1/members/owner@example.com",
            owner,
            Some(json!({ "role": "owner", "value": marker })),
        )
        .await;
    reply.expect_error(400, "VALUE_NOT_ACCEPTED");
    // Nothing was stored, no event was written.
    assert!(c.get("/v1/domains", owner).await.expect(200).as_array().unwrap().is_empty());
    assert!(c.get("/v1/environments", owner).await.expect(200).as_array().unwrap().is_empty());
    assert!(c.get("/v1/policies", owner).await.expect(200).as_array().unwrap().is_empty());
    assert_eq!(c.get("/v1/members", owner).await.expect(200).as_array().unwrap().len(), 1);
    let events_after = c.get("/v1/events?limit=1000", owner).await.expect(200).as_array().unwrap().len();
    assert_eq!(events_before, events_after);
    // A secret's *name* in a cloud account is fine, once that secret exists
    // as an organization secret.
    let account = json!({ "name": "gcp", "provider": "gcp", "region": "europe-west1", "state_bucket": "acme-state",
                          "auth": { "kind": "static", "secret": "gcp-sa-key" } });
    let missing = c.post("/v1/cloud-accounts", owner, account.clone()).await;
    assert!(missing.expect_error(404, "NOT_FOUND").to_string().contains("secret gcp-sa-key not found"));
    c.post("/v1/secrets", owner, json!({ "name": "gcp-sa-key" })).await.expect(201);
    c.post("/v1/cloud-accounts", owner, account).await.expect(201);
}

crate::on_every_backend!(secret_metadata);

async fn secret_metadata(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let member = c.add_member(owner, "member@example.com", "member").await;
    let ana = c.add_member(owner, "ana@example.com", "member").await;
    let d = c.post("/v1/domains", owner, json!({ "name": "payments" })).await.expect(201);
    let s =
        c.post("/v1/systems", owner, json!({ "name": "checkout", "parent_id": d["id"] })).await.expect(201);
    c.post("/v1/components", owner, json!({ "name": "api", "parent_id": s["id"] })).await.expect(201);
    c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201);

    let created = c
        .post(
            "/v1/secrets",
            owner,
            json!({ "name": "db-password", "type": "password", "description": "primary DB",
                    "tags": { "team": "payments" }, "components": ["api"] }),
        )
        .await
        .expect(201);
    assert_eq!(created["components"].as_array().unwrap().len(), 1);
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect_error(409, "ALREADY_EXISTS");
    c.post("/v1/secrets", &member, json!({ "name": "x" })).await.expect_error(403, "FORBIDDEN");
    c.post("/v1/secrets", owner, json!({ "name": "y", "tags": { "Bad Key": "v" } }))
        .await
        .expect_error(422, "INVALID_INPUT");
    // A value smuggled into a tag is refused before anything is stored.
    c.post("/v1/secrets", owner, json!({ "name": "z", "tags": { "value": "hunter2" } }))
        .await
        .expect_error(400, "VALUE_NOT_ACCEPTED");

    // Every member reads metadata; there are no versions yet.
    let shown = c.get("/v1/secrets/db-password", &member).await.expect(200);
    assert_eq!(shown["secret"]["tags"]["team"], "payments");
    assert!(shown["versions"].as_array().unwrap().is_empty());
    let updated = c
        .call(
            Method::PATCH,
            "/v1/secrets/db-password",
            owner,
            Some(json!({ "description": "primary", "components": [] })),
        )
        .await
        .expect(200);
    assert_eq!(
        (updated["description"].as_str(), updated["components"].as_array().map(Vec::len)),
        (Some("primary"), Some(0))
    );
    c.call(Method::PATCH, "/v1/secrets/db-password", &member, Some(json!({ "description": "x" })))
        .await
        .expect_error(403, "FORBIDDEN");

    // A personal secret exists only for its owner, even for the org owner.
    crate::support::Client::new(&api).personal_secret(&ana, "ana-ssh").await;
    c.get("/v1/secrets/ana-ssh", &ana).await.expect(200);
    c.get("/v1/secrets/ana-ssh", owner).await.expect_error(404, "NOT_FOUND");
    let listed = c.get("/v1/secrets", owner).await.expect(200);
    assert!(listed.as_array().unwrap().iter().all(|s| s["name"] != "ana-ssh"));
    // Her list holds it, with its bound key, as its own page does.
    let hers = c.get("/v1/secrets", &ana).await.expect(200);
    let ssh = hers.as_array().unwrap().iter().find(|s| s["name"] == "ana-ssh").expect("her list");
    assert_eq!(ssh, &c.get("/v1/secrets/ana-ssh", &ana).await.expect(200)["secret"]);
    assert_eq!(ssh["owner_keys"].as_array().map(Vec::len), Some(1), "{ssh}");
    c.call(Method::PATCH, "/v1/secrets/ana-ssh", owner, Some(json!({ "description": "mine" })))
        .await
        .expect_error(404, "NOT_FOUND");
    // A personal secret needs the key it is bound to: no certificate, no secret.
    c.post("/v1/secrets", &ana, json!({ "name": "ana-gpg", "personal": true }))
        .await
        .expect_error(422, "INVALID_INPUT");
    c.post(
        "/v1/secrets",
        &ana,
        json!({ "name": "ana-gpg", "personal": true, "certificate_sha256": "ab".repeat(32) }),
    )
    .await
    .expect_error(422, "INVALID_INPUT");

    // A component a secret links to cannot be deleted from under it.
    let again = c
        .call(Method::PATCH, "/v1/secrets/db-password", owner, Some(json!({ "components": ["api"] })))
        .await
        .expect(200);
    assert_eq!(again["components"].as_array().unwrap().len(), 1);
    c.call(Method::DELETE, "/v1/components/api", owner, None).await.expect_error(409, "NOT_EMPTY");

    // Assigning Agents to environments is the owner's decision.
    let reg = c.post("/v1/agents/registrations", owner, json!({ "name": "vault-1" })).await.expect(201);
    let key = rcgen::KeyPair::generate().unwrap();
    let csr = rcgen::CertificateParams::default().serialize_request(&key).unwrap().pem().unwrap();
    let enrolled = reqwest::Client::new()
        .post(format!("{}/v1/agents/enroll", api.url))
        .json(&json!({ "token": reg["token"], "csr_pem": csr }))
        .send()
        .await
        .unwrap();
    assert_eq!(enrolled.status(), 201);
    let admin = c.add_member(owner, "admin@example.com", "admin").await;
    c.post("/v1/environments/prod/agents", &admin, json!({ "agent": "vault-1" }))
        .await
        .expect_error(403, "FORBIDDEN");
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "nope" }))
        .await
        .expect_error(404, "NOT_FOUND");
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "vault-1" })).await.expect(201);
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "vault-1" }))
        .await
        .expect_error(409, "ALREADY_EXISTS");
    let held = c.get("/v1/environments/prod/agents", &admin).await.expect(200);
    assert_eq!(held.as_array().unwrap().len(), 1);
    c.call(Method::DELETE, "/v1/environments/prod", owner, None).await.expect_error(409, "NOT_EMPTY");
}
