//! The secret and job lists come in pages like the Resource list: keyset
//! cursors in `Heimdall-Next-After`, pages full even when some entries are
//! hidden from the caller (the API reads on), and put together the whole
//! list the caller may see, each entry once.

use heimdall_api::testing::{TestApi, TestDatabase};
use serde_json::{json, Value};

use crate::support::{world, Client};

crate::on_every_backend!(
    secret_and_job_lists_come_in_full_pages_with_hidden_entries_left_out,
    the_short_lists_come_in_pages_that_make_up_the_whole_list,
    a_page_hidden_almost_whole_ends_short_and_goes_on
);

/// Every page of `path` (which has a `?`) for `token`, `limit` at a time:
/// the page sizes and the entries' `key` fields in order.
async fn pages(c: &Client, path: &str, token: &str, limit: u32, key: &str) -> (Vec<usize>, Vec<String>) {
    let (mut sizes, mut keys, mut after) = (Vec::new(), Vec::new(), None::<String>);
    loop {
        let mut url = format!("{path}limit={limit}");
        if let Some(a) = &after {
            url.push_str(&format!("&after={a}"));
        }
        let reply = c.get(&url, token).await;
        assert_eq!(reply.status.as_u16(), 200, "{url}: {}", reply.text);
        let page: Vec<Value> = reply.body.as_array().unwrap().clone();
        sizes.push(page.len());
        keys.extend(page.iter().map(|e| e[key].as_str().unwrap().to_owned()));
        match reply.next_after {
            Some(next) if sizes.len() < 50 => after = Some(next),
            _ => break,
        }
    }
    (sizes, keys)
}

async fn secret_and_job_lists_come_in_full_pages_with_hidden_entries_left_out(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    let admin = c.add_member(owner, "admin@example.com", "admin").await;

    // 23 organization secrets, and 4 personal ones of the admin's, which
    // the owner never sees (kept under her member id, they list after the
    // organization's).
    for i in 0..23 {
        c.post("/v1/secrets", owner, json!({ "name": format!("s{i:02}") })).await.expect(201);
    }
    for i in [0, 7, 14, 21] {
        c.personal_secret(&admin, &format!("s{i:02}-mine")).await;
    }
    let (sizes, names) = pages(&c, "/v1/secrets?", owner, 10, "name").await;
    assert_eq!(sizes, [10, 10, 3], "pages full though personal secrets are interleaved");
    let all: Vec<String> = (0..23).map(|i| format!("s{i:02}")).collect();
    assert_eq!(names, all, "by name, each once, no one else's personal secret");
    let (sizes, names) = pages(&c, "/v1/secrets?", &admin, 9, "name").await;
    assert_eq!((sizes.iter().sum::<usize>(), names.len()), (27, 27), "{sizes:?}");
    let mut expected: Vec<String> = (0..23).map(|i| format!("s{i:02}")).collect();
    expected.extend([0, 7, 14, 21].map(|i| format!("s{i:02}-mine")));
    assert_eq!(names, expected, "the organization's by name, then her own, each once");
    assert_eq!(c.get("/v1/secrets", owner).await.expect(200).as_array().unwrap().len(), 23);
    c.get("/v1/secrets?after=eyJ4IjoxfQ", owner).await.expect_error(422, "INVALID_INPUT");
    c.get("/v1/secrets?limit=1001", owner).await.expect_error(422, "INVALID_INPUT");

    // Jobs: one per Resource, in dev and prod; a forbid hides prod's jobs
    // from the admin.
    let w = world(&c, owner).await;
    c.post(
        &format!("/v1/cloud-accounts/{}/links", w.account),
        owner,
        json!({ "scope": "organization", "environment": "prod" }),
    )
    .await
    .expect(201);
    // Odd ones in a second Component of the same System.
    let system =
        c.get(&format!("/v1/components/{}", w.component), owner).await.expect(200)["parent_id"].clone();
    let ledger =
        c.post("/v1/components", owner, json!({ "name": "ledger", "parent_id": system })).await.expect(201);
    let ledger = ledger["id"].as_str().unwrap().to_owned();
    for i in 0..13 {
        let env = if i % 3 == 0 { "prod" } else { "dev" };
        let component = if i % 2 == 1 { &ledger } else { &w.component };
        let body = json!({ "component": component, "schema": w.schema, "environment": env,
                           "name": format!("r{i:02}"), "input": { "bucket": format!("bucket-{i:02}") } });
        c.post("/v1/resources", owner, body).await.expect(201);
    }
    let text = r#"forbid (principal, action == Heimdall::Action::"job.read", resource) when { context.environment == "prod" } unless { principal.role == "owner" };"#;
    c.post("/v1/policies", owner, json!({ "name": "no-prod-jobs", "text": text })).await.expect(201);
    let every: Vec<String> = c
        .get("/v1/jobs?limit=1000", owner)
        .await
        .expect(200)
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(every.len(), 13, "one job per Resource");
    let (sizes, ids) = pages(&c, "/v1/jobs?", owner, 5, "id").await;
    assert_eq!(sizes, [5, 5, 3]);
    assert_eq!(ids, every, "oldest first, each once");
    // Newest first (what the Console shows): the same jobs, reversed,
    // page after page; a cursor of one order is refused in the other.
    let (sizes, ids) = pages(&c, "/v1/jobs?order=newest&", owner, 5, "id").await;
    assert_eq!(sizes, [5, 5, 3]);
    let newest: Vec<String> = every.iter().rev().cloned().collect();
    assert_eq!(ids, newest, "newest first, each once");
    let first = c.get("/v1/jobs?order=newest&limit=5", owner).await;
    let cursor = first.next_after.clone().expect("more than one page");
    c.get(&format!("/v1/jobs?limit=5&after={cursor}"), owner).await.expect_error(422, "INVALID_INPUT");
    c.get("/v1/jobs?order=sideways", owner).await.expect_error(400, "BAD_REQUEST");
    let (sizes, ids) = pages(&c, "/v1/jobs?", &admin, 4, "id").await;
    assert_eq!(sizes, [4, 4], "prod's 5 jobs hidden, pages still full");
    assert!(ids.iter().all(|id| every.contains(id)));
    let (sizes, newest_visible) = pages(&c, "/v1/jobs?order=newest&", &admin, 3, "id").await;
    assert_eq!(sizes, [3, 3, 2], "newest first, prod's still hidden and pages still full");
    assert_eq!(newest_visible, ids.iter().rev().cloned().collect::<Vec<_>>());
    // By Component: the 6 odd ones; the admin sees the 4 of them in dev.
    let (sizes, ids) = pages(&c, &format!("/v1/jobs?component={ledger}&"), owner, 4, "id").await;
    assert_eq!(sizes, [4, 2]);
    let odd: Vec<String> = every.iter().skip(1).step_by(2).cloned().collect();
    assert_eq!(ids, odd, "the ledger's jobs, oldest first");
    let (sizes, _) = pages(&c, &format!("/v1/jobs?component={ledger}&"), &admin, 3, "id").await;
    assert_eq!(sizes, [3, 1]);
    c.get("/v1/jobs?after=nope", owner).await.expect_error(422, "INVALID_INPUT");
}

/// Members, tokens, policies, schemas, cloud accounts, Agents and the
/// catalog are read whole but answered in pages like the long lists: put
/// together, the pages are the whole list in its order, each entry once.
async fn the_short_lists_come_in_pages_that_make_up_the_whole_list(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    for who in ["b@example.com", "c@example.com", "a@example.com"] {
        c.add_member(owner, who, "member").await;
    }
    for name in ["prod", "dev", "stage"] {
        c.post("/v1/environments", owner, json!({ "name": name })).await.expect(201);
        c.post("/v1/domains", owner, json!({ "name": name })).await.expect(201);
        c.post("/v1/tokens", owner, json!({ "name": name })).await.expect(201);
        let text = format!(
            r#"forbid (principal, action == Heimdall::Action::"secret.write", resource) when {{ context.environment == "{name}" }};"#
        );
        c.post("/v1/policies", owner, json!({ "name": name, "text": text })).await.expect(201);
        c.post("/v1/schemas", owner, json!({ "type": name, "input_schema": { "type": "object" }, "module": { "source": "./m", "version": "1" } }))
            .await
            .expect(201);
        c.post(
            "/v1/cloud-accounts",
            owner,
            json!({ "name": name, "provider": "aws", "region": "us-east-1", "state_bucket": "state-bucket",
                    "auth": { "kind": "oidc", "role_arn": "arn:aws:iam::123456789012:role/heimdall" } }),
        )
        .await
        .expect(201);
        crate::support::enroll_agent(&c, &api, owner, &format!("edge-{name}")).await;
        c.post("/v1/notifications", owner, json!({ "name": name, "webhook": "http://127.0.0.1:9/hook" }))
            .await
            .expect(201);
        c.certificate(owner).await;
    }
    // The lists under one entry: an environment's Agents, a secret's
    // holders there, a database's service users.
    // (In an environment of its own: the policies above forbid writes in the others.)
    c.post("/v1/environments", owner, json!({ "name": "qa" })).await.expect(201);
    for name in ["edge-stage", "edge-prod", "edge-dev"] {
        c.post("/v1/environments/qa/agents", owner, json!({ "agent": name })).await.expect(201);
    }
    c.post("/v1/secrets", owner, json!({ "name": "orders-admin" })).await.expect(201);
    let database = json!({ "name": "orders", "engine": "postgres", "host": "db.internal", "port": 5432,
                           "database": "orders", "environment": "qa", "admin_secret": "orders-admin" });
    c.post("/v1/databases", owner, database).await.expect(201);
    for name in ["web", "app", "jobs"] {
        let user = json!({ "name": name, "rotate_every": "1d", "grace": "1h" });
        c.post("/v1/databases/orders/users", owner, user).await.expect(201);
    }
    // Tokens come oldest first, certificates newest first, an
    // environment's Agents (and so a secret's holders) in the order they
    // were assigned; the others by the key shown.
    for (path, key, by_key) in [
        ("/v1/certificates?", "sha256", false),
        ("/v1/notifications?", "name", true),
        ("/v1/environments/qa/agents?", "agent_id", false),
        ("/v1/secrets/orders-admin/holders?environment=qa&", "agent", false),
        ("/v1/databases/orders/users?", "name", true),
        ("/v1/members?", "email", true),
        ("/v1/environments?", "name", true),
        ("/v1/domains?", "name", true),
        ("/v1/tokens?", "name", false),
        ("/v1/policies?", "name", true),
        ("/v1/schemas?", "type", true),
        ("/v1/cloud-accounts?", "name", true),
        ("/v1/agents?", "name", true),
    ] {
        let whole = c.get(path.trim_end_matches(['?', '&']), owner).await;
        assert_eq!(whole.next_after, None, "{path}: a list under the default limit is one page");
        let whole: Vec<String> =
            whole.body.as_array().unwrap().iter().map(|e| e[key].as_str().unwrap().to_owned()).collect();
        assert!(whole.len() >= 3, "{path}: {whole:?}");
        let mut sorted = whole.clone();
        sorted.sort();
        assert!(!by_key || whole == sorted, "{path}: in order of {key}: {whole:?}");
        let (sizes, paged) = pages(&c, path, owner, 2, key).await;
        assert_eq!(paged, whole, "{path}: the pages make up the whole list");
        assert!(sizes[..sizes.len() - 1].iter().all(|n| *n == 2), "{path}: {sizes:?}");
        let bad = c.get(&format!("{path}after=bogus"), owner).await;
        assert_eq!((bad.status.as_u16(), bad.code()), (422, "INVALID_INPUT"), "{path}");
    }
    let holders = c.get("/v1/secrets/orders-admin/holders?environment=qa", owner).await.body;
    let holders: Vec<&str> =
        holders.as_array().unwrap().iter().map(|h| h["agent"].as_str().unwrap()).collect();
    assert_eq!(holders, ["edge-stage", "edge-prod", "edge-dev"], "in the order they were assigned");
    let certificates = c.get("/v1/certificates", owner).await.body;
    let made: Vec<time::OffsetDateTime> = certificates
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let at = c["created_at"].as_str().unwrap();
            time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).unwrap()
        })
        .collect();
    assert!(made.len() >= 3 && made.windows(2).all(|w| w[0] >= w[1]), "newest first: {made:?}");
}

/// A page reads a bounded number of chunks: where a `forbid` hides nearly
/// all of a list, a page ends short with where to go on, and following
/// the pages still reaches every visible entry.
async fn a_page_hidden_almost_whole_ends_short_and_goes_on(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = &api.owner_token;
    let bo = c.add_member(owner, "bo@example.com", "member").await;
    let d = c.post("/v1/domains", owner, json!({ "name": "payments" })).await.expect(201)["id"].clone();
    let s = c.post("/v1/systems", owner, json!({ "name": "checkout", "parent_id": d })).await.expect(201)
        ["id"]
        .clone();
    let component =
        c.post("/v1/components", owner, json!({ "name": "vault", "parent_id": s })).await.expect(201)["id"]
            .clone();
    for i in 0..50 {
        let body = json!({ "name": format!("a{i:02}"), "components": [component.clone()] });
        c.post("/v1/secrets", owner, body).await.expect(201);
    }
    c.post("/v1/secrets", owner, json!({ "name": "zz-open" })).await.expect(201);
    let text = format!(
        "forbid (principal, action == Heimdall::Action::\"secret.read\", resource in Heimdall::Component::\"{}\") unless {{ principal.role == \"owner\" }};",
        component.as_str().unwrap()
    );
    c.post("/v1/policies", owner, json!({ "name": "vault-owner-only", "text": text })).await.expect(201);
    let first = c.get("/v1/secrets?limit=1", &bo).await;
    assert_eq!(first.body.as_array().map(Vec::len), Some(0), "{}", first.text);
    assert!(first.next_after.is_some(), "a short page says where to go on");
    let (_, names) = pages(&c, "/v1/secrets?", &bo, 1, "name").await;
    assert_eq!(names, ["zz-open"]);
}
