//! Agent sync and the access log: records stored once (a retried sync does
//! not double-count), aggregated per accessor/version/Agent/address/second,
//! a gap in an Agent's sequence raises "read and not reported", only
//! owners and admins read the log, and a revoked Agent reports its last
//! reads and is told it was revoked.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::{json, Value};

use crate::agents::{agent_client, csr};
use crate::support::Client;

crate::on_every_backend!(
    sync_stores_records_once_and_the_access_log_aggregates_them,
    no_record_is_lost_when_an_agents_numbering_restarts,
    the_access_log_comes_in_pages_that_miss_and_repeat_nothing,
    a_sync_bigger_than_one_insert_stores_every_read_and_holding_once,
    syncs_of_one_agent_at_once_each_replace_its_inventory_whole
);

fn record(seq: i64, accessor: &str, at: &str, version: i64, from: &str) -> Value {
    json!({
        "seq": seq,
        "accessor": accessor,
        "at": at,
        "secret": "db-password",
        "environment": "prod",
        "version": version,
        "from": from,
    })
}

async fn sync(agent: &reqwest::Client, api: &TestApi, body: &Value) -> (u16, Value) {
    let resp = agent.post(format!("{}/v1/agent/sync", api.agent_url)).json(body).send().await.expect("sync");
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    (status, if text.is_empty() { Value::Null } else { serde_json::from_str(&text).expect("JSON") })
}

async fn sync_stores_records_once_and_the_access_log_aggregates_them(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let admin = c.add_member(owner, "admin@example.com", "admin").await;
    let member = c.add_member(owner, "member@example.com", "member").await;
    c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201);
    c.post("/v1/environments", owner, json!({ "name": "dev" })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);

    // Enroll edge-1 through the real route and talk to it over mTLS.
    let reg = c.post("/v1/agents/registrations", owner, json!({ "name": "edge-1" })).await.expect(201);
    let (key, request) = csr();
    let enrolled = reqwest::Client::new()
        .post(format!("{}/v1/agents/enroll", api.url))
        .json(&json!({ "token": reg["token"], "csr_pem": request }))
        .send()
        .await
        .unwrap();
    assert_eq!(enrolled.status().as_u16(), 201);
    let enrolled: Value = enrolled.json().await.unwrap();
    let edge = agent_client(
        enrolled["ca_pem"].as_str().unwrap(),
        Some((enrolled["certificate_pem"].as_str().unwrap(), &key)),
    );
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-1" })).await.expect(201);

    // Records 1..3: two reads by ana of v2 from one address within one second, one by bob later.
    let first = json!({
        "records": [
            record(1, "ana@example.com", "2026-03-01T10:00:00.100Z", 2, "10.0.0.7"),
            record(2, "ana@example.com", "2026-03-01T10:00:00.900Z", 2, "10.0.0.7"),
            record(3, "bob@example.com", "2026-03-01T10:00:05Z", 1, "10.0.0.8"),
        ],
        "inventory": [
            { "secret": "db-password", "environment": "prod", "version": 2, "deactivated": false },
        ],
    });
    // The same reads beside an alert out of bounds: refused whole, nothing stored.
    let mut refused = first.clone();
    let file = "f".repeat(65);
    refused["alerts"] =
        json!([{ "kind": "sealed_file_rolled_back", "file": file, "generation": 1, "expected_at_least": 2 }]);
    let (status, answer) = sync(&edge, &api, &refused).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (422, Some("INVALID_INPUT")), "{answer}");
    assert_eq!(c.get("/v1/secrets/db-password/access-log", owner).await.expect(200), json!([]));

    let (status, answer) = sync(&edge, &api, &first).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["received_through"], 3);
    let emails: Vec<&str> =
        answer["members"].as_array().unwrap().iter().map(|m| m["email"].as_str().unwrap()).collect();
    assert!(emails.contains(&"owner@example.com") && emails.contains(&"member@example.com"), "{answer}");
    assert_eq!(answer["assignments"].as_array().map(Vec::len), Some(1), "{answer}");
    assert_eq!(answer["deactivated"], json!([]));
    assert!(answer["policies"].is_array());

    let edge_id = &enrolled["agent"]["id"];
    let expected = json!([
        {
            "accessed_at": "2026-03-01T10:00:05Z",
            "accessor": "bob@example.com",
            "environment": "prod",
            "version": 1,
            "served_by": "edge-1",
            "served_by_id": edge_id,
            "from": "10.0.0.8",
            "reads": 1,
        },
        {
            "accessed_at": "2026-03-01T10:00:00Z",
            "accessor": "ana@example.com",
            "environment": "prod",
            "version": 2,
            "served_by": "edge-1",
            "served_by_id": edge_id,
            "from": "10.0.0.7",
            "reads": 2,
        },
    ]);
    assert_eq!(c.get("/v1/secrets/db-password/access-log", owner).await.expect(200), expected);
    assert_eq!(
        c.get("/v1/secrets/db-password/access-log?environment=prod", &admin).await.expect(200),
        expected
    );
    assert_eq!(
        c.get("/v1/secrets/db-password/access-log?environment=dev", owner).await.expect(200),
        json!([])
    );

    // The same sync retried: nothing counted twice.
    let (status, answer) = sync(&edge, &api, &first).await;
    assert_eq!((status, &answer["received_through"]), (200, &json!(3)), "{answer}");
    assert_eq!(c.get("/v1/secrets/db-password/access-log", owner).await.expect(200), expected);
    let gaps = c.get("/v1/events?action=secret.read_not_reported", owner).await.expect(200);
    assert_eq!(gaps, json!([]), "no gap yet");

    // 4 and 5 never arrive: read and not reported.
    let later = json!({ "records": [record(6, "ana@example.com", "2026-03-01T10:01:00Z", 2, "10.0.0.7")] });
    let (status, answer) = sync(&edge, &api, &later).await;
    assert_eq!((status, &answer["received_through"]), (200, &json!(6)), "{answer}");
    let gaps = c.get("/v1/events?action=secret.read_not_reported", owner).await.expect(200);
    let gaps = gaps.as_array().unwrap();
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(
        gaps[0]["detail"],
        json!({ "agent": "edge-1", "epoch": "legacy", "from_seq": 4, "to_seq": 5 })
    );
    // Retried, the late sync raises nothing new.
    assert_eq!(sync(&edge, &api, &later).await.0, 200);
    let again = c.get("/v1/events?action=secret.read_not_reported", owner).await.expect(200);
    assert_eq!(again.as_array().map(Vec::len), Some(1));
    let log = c.get("/v1/secrets/db-password/access-log", owner).await.expect(200);
    assert_eq!(log.as_array().map(Vec::len), Some(3));

    // A value has no place on the sync channel.
    let smuggled = json!({ "records": [], "inventory": [], "value": "hunter2" });
    let (status, answer) = sync(&edge, &api, &smuggled).await;
    assert_eq!(status, 400, "{answer}");
    assert!(!answer.to_string().contains("hunter2"));
    let smuggled = json!({ "records": [{
        "seq": 7, "accessor": "a", "at": "2026-03-01T10:02:00Z", "secret": "db-password",
        "environment": "prod", "version": 2, "from": "10.0.0.7", "value": "hunter2",
    }] });
    assert_eq!(sync(&edge, &api, &smuggled).await.0, 400);

    // Who reads the log: owner and admin; a member is refused.
    c.get("/v1/secrets/db-password/access-log", &member).await.expect_error(403, "FORBIDDEN");
    c.get("/v1/secrets/nope/access-log", owner).await.expect_error(404, "NOT_FOUND");
    // A personal secret's log: only its owner; anyone else, even the org owner, 404.
    c.personal_secret(&member, "mine").await;
    assert_eq!(c.get("/v1/secrets/mine/access-log", &member).await.expect(200), json!([]));
    c.get("/v1/secrets/mine/access-log", owner).await.expect_error(404, "NOT_FOUND");

    // Not on the people's listener; refused once revoked.
    let people = c.call(Method::POST, "/v1/agent/sync", owner, Some(json!({ "records": [] }))).await;
    assert_eq!(people.status.as_u16(), 404);
    c.call(Method::DELETE, "/v1/agents/edge-1", owner, None).await.expect(200);
    // A revoked Agent's last reads are still taken (nothing it served goes
    // unreported); it is told it was revoked and gets nothing to decide with.
    let last = json!({ "records": [record(7, "ana@example.com", "2026-03-01T12:00:00Z", 2, "10.0.0.7")] });
    let (status, answer) = sync(&edge, &api, &last).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (403, Some("AGENT_REVOKED")), "{answer}");
    assert!(answer.get("members").is_none() && answer.get("policies").is_none(), "{answer}");
    let log = c.get("/v1/secrets/db-password/access-log?environment=prod", owner).await.expect(200);
    assert!(log.as_array().unwrap().iter().any(|e| e["accessed_at"] == "2026-03-01T12:00:00Z"), "{log}");
}

/// An Agent's store recreated (a new epoch) or restored from a backup (its
/// numbers used again, with other reads): every record is kept, and each
/// case raises its own audit event instead of being taken as a repeat.
async fn no_record_is_lost_when_an_agents_numbering_restarts(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);
    let (edge, _) = crate::support::enroll_agent(&c, &api, owner, "edge-1").await;
    let reads = || async {
        let log = c.get("/v1/secrets/db-password/access-log", owner).await.expect(200);
        log.as_array().unwrap().iter().map(|r| r["reads"].as_u64().unwrap()).sum::<u64>()
    };
    let c = &c;
    let events = |action: &'static str| async move {
        c.get(&format!("/v1/events?action={action}"), owner).await.expect(200).as_array().unwrap().clone()
    };
    let r = |seq, who: &str, at: &str| record(seq, who, at, 1, "10.0.0.7");

    // Epoch e1: three reads.
    let (status, answer) = sync(
        &edge,
        &api,
        &json!({ "epoch": "e1", "records": [r(1, "ana@example.com", "2026-03-01T10:00:01Z"), r(2, "ana@example.com", "2026-03-01T10:00:02Z"), r(3, "bo@example.com", "2026-03-01T10:00:03Z")] }),
    )
    .await;
    assert_eq!((status, &answer["received_through"]), (200, &json!(3)), "{answer}");
    assert!(events("secret.sequence_restarted").await.is_empty(), "a first epoch is no restart");

    // The store is recreated: epoch e2 numbers from 1 again. Before, these
    // were taken as repeats of e1's 1 and 2 and dropped.
    let (status, answer) = sync(
        &edge,
        &api,
        &json!({ "epoch": "e2", "records": [r(1, "cy@example.com", "2026-03-02T10:00:01Z"), r(2, "cy@example.com", "2026-03-02T10:00:02Z")] }),
    )
    .await;
    assert_eq!((status, &answer["received_through"]), (200, &json!(2)), "{answer}");
    assert_eq!(reads().await, 5);
    let restarted = events("secret.sequence_restarted").await;
    assert_eq!(restarted.len(), 1, "{restarted:?}");
    assert_eq!(
        (
            &restarted[0]["detail"]["previous_epoch"],
            &restarted[0]["detail"]["previous_last_seq"],
            &restarted[0]["detail"]["epoch"]
        ),
        (&json!("e1"), &json!(3), &json!("e2"))
    );

    // A retried sync is a repeat: nothing new, no event.
    sync(&edge, &api, &json!({ "epoch": "e2", "records": [r(2, "cy@example.com", "2026-03-02T10:00:02Z")] }))
        .await;
    assert_eq!(reads().await, 5);
    assert!(events("secret.record_conflict").await.is_empty());

    // Restored from a backup: e2's number 2 used again for another read.
    // Kept, and flagged.
    let (status, _) = sync(
        &edge,
        &api,
        &json!({ "epoch": "e2", "records": [r(2, "dee@example.com", "2026-03-03T10:00:00Z")] }),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(reads().await, 6);
    let conflicts = events("secret.record_conflict").await;
    assert_eq!(conflicts.len(), 1, "{conflicts:?}");
    assert_eq!((&conflicts[0]["detail"]["epoch"], &conflicts[0]["detail"]["seq"]), (&json!("e2"), &json!(2)));
    let log = c.get("/v1/secrets/db-password/access-log", owner).await.expect(200);
    assert!(log.as_array().unwrap().iter().any(|e| e["accessor"] == "dee@example.com"), "{log}");

    // A gap in an epoch is still a read not reported.
    sync(
        &edge,
        &api,
        &json!({ "epoch": "e2", "records": [r(5, "eve@example.com", "2026-03-03T11:00:00Z")] }),
    )
    .await;
    let gaps = events("secret.read_not_reported").await;
    assert_eq!(
        (&gaps[0]["detail"]["from_seq"], &gaps[0]["detail"]["to_seq"]),
        (&json!(3), &json!(4)),
        "{gaps:?}"
    );
}

async fn the_access_log_comes_in_pages_that_miss_and_repeat_nothing(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);
    let (edge, _) = crate::support::enroll_agent(&c, &api, owner, "edge-1").await;
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-1" })).await.expect(201);
    // 250 entries: many in one second (ties on the time, told apart by
    // the other columns), most a second apart, and the oldest years apart
    // (a page reaches back through every stretch the store looks at).
    let records: Vec<Value> = (1..=250)
        .map(|i| {
            let at = if i <= 120 {
                "2026-03-01T10:00:00Z".to_owned()
            } else if i > 240 {
                format!("20{}-06-01T00:00:00Z", i - 231)
            } else {
                format!("2026-03-01T11:{:02}:{:02}Z", i / 60, i % 60)
            };
            record(i, &format!("reader-{i:03}@example.com"), &at, 1 + i % 3, "10.0.0.7")
        })
        .collect();
    let (status, answer) = sync(&edge, &api, &json!({ "records": records })).await;
    assert_eq!(status, 200, "{answer}");
    let whole = c.get("/v1/secrets/db-password/access-log?limit=1000", owner).await.expect(200);
    assert_eq!(whole.as_array().unwrap().len(), 250);

    // Page by page: 100, 100, 50, and put together the whole log, in order.
    let (mut pages, mut joined, mut after) = (Vec::new(), Vec::new(), None::<String>);
    loop {
        let path = match &after {
            Some(a) => format!("/v1/secrets/db-password/access-log?limit=100&after={a}"),
            None => "/v1/secrets/db-password/access-log?limit=100".to_owned(),
        };
        let reply = c.get(&path, owner).await;
        assert_eq!(reply.status.as_u16(), 200, "{}", reply.text);
        let page = reply.body.as_array().unwrap();
        pages.push(page.len());
        joined.extend(page.iter().cloned());
        match reply.next_after {
            Some(next) if pages.len() < 10 => after = Some(next),
            _ => break,
        }
    }
    assert_eq!(pages, [100, 100, 50]);
    assert_eq!(Value::Array(joined), whole);
    // The default page is 100; a cursor or limit this API did not give is refused.
    assert_eq!(
        c.get("/v1/secrets/db-password/access-log", owner).await.expect(200).as_array().unwrap().len(),
        100
    );
    for bad in ["limit=0", "limit=1001", "after=bm90LWEtY3Vyc29y", "after=%%%"] {
        let reply = c.get(&format!("/v1/secrets/db-password/access-log?{bad}"), owner).await;
        assert!(matches!(reply.code(), "INVALID_INPUT" | "BAD_REQUEST"), "{bad}: {}", reply.text);
    }
}

/// A sync's reads and inventory are written many rows a statement; one of
/// more rows than a statement takes loses none and doubles none.
async fn a_sync_bigger_than_one_insert_stores_every_read_and_holding_once(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let prod = c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201)["id"].clone();
    c.post("/v1/secrets", owner, json!({ "name": "db-password" })).await.expect(201);
    let (edge, _) = crate::support::enroll_agent(&c, &api, owner, "edge-1").await;
    c.post("/v1/environments/prod/agents", owner, json!({ "agent": "edge-1" })).await.expect(201);

    // 1,201 reads, each in its own second (its own log line), and 1,201 held versions.
    const N: i64 = 1_201;
    let reads: Vec<Value> = (1..=N)
        .map(|seq| {
            let at = format!("2026-03-01T{:02}:{:02}:{:02}Z", seq / 3600, (seq / 60) % 60, seq % 60);
            record(seq, "ana@example.com", &at, 1, "10.0.0.7")
        })
        .collect();
    let held: Vec<Value> = (1..=N)
        .map(|v| json!({ "secret": "db-password", "environment": prod, "version": v, "deactivated": false }))
        .collect();
    let body = json!({ "records": reads, "inventory": held });
    for _ in 0..2 {
        let (status, answer) = sync(&edge, &api, &body).await;
        assert_eq!((status, &answer["received_through"]), (200, &json!(N)), "{answer}");
    }
    let mut lines = 0;
    let mut reads_logged = 0;
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            Some(cursor) => format!("/v1/secrets/db-password/access-log?limit=500&after={cursor}"),
            None => "/v1/secrets/db-password/access-log?limit=500".to_owned(),
        };
        let resp = c.call(Method::GET, &path, owner, None).await;
        after = resp.next_after.clone();
        for line in resp.expect(200).as_array().unwrap() {
            lines += 1;
            reads_logged += line["reads"].as_i64().unwrap();
        }
        if after.is_none() {
            break;
        }
    }
    assert_eq!((lines, reads_logged), (N, N), "every read once, the retried sync counted none");
    let holdings = c.get("/v1/agents/edge-1", owner).await.expect(200)["holdings"].clone();
    assert_eq!(holdings.as_array().map(Vec::len), Some(N as usize), "every held version once");
    let first_report = holdings[0]["reported_at"].clone();

    // The next report drops v1 and deactivates v2; only those rows change,
    // and every holding says when the Agent last reported.
    let mut held = body["inventory"].as_array().unwrap().clone();
    held.remove(0);
    held[0]["deactivated"] = json!(true);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let (status, _) = sync(&edge, &api, &json!({ "inventory": held })).await;
    assert_eq!(status, 200);
    let holdings = c.get("/v1/agents/edge-1", owner).await.expect(200)["holdings"].clone();
    let holdings = holdings.as_array().unwrap();
    assert_eq!(holdings.len(), N as usize - 1);
    let versions: Vec<(i64, bool)> = holdings
        .iter()
        .take(2)
        .map(|h| (h["version"].as_i64().unwrap(), h["deactivated"].as_bool().unwrap()))
        .collect();
    assert_eq!(versions, [(2, true), (3, false)]);
    let latest = &holdings[0]["reported_at"];
    assert_ne!(latest, &first_report, "the holdings say when the Agent last reported");
    assert!(holdings.iter().all(|h| &h["reported_at"] == latest));
}

/// An Agent's syncs that overlap (a retry while the first is still in
/// the API) each replace the inventory whole: none fails on the rows the
/// other wrote, and what is left is one of the reports, not a mix.
async fn syncs_of_one_agent_at_once_each_replace_its_inventory_whole(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let prod = c.post("/v1/environments", owner, json!({ "name": "prod" })).await.expect(201)["id"].clone();
    let (edge, _) = crate::support::enroll_agent(&c, &api, owner, "edge-1").await;
    let report = |from: i64, to: i64| {
        let held: Vec<Value> = (from..=to)
            .map(|v| json!({ "secret": "db-password", "environment": prod, "version": v, "deactivated": false }))
            .collect();
        json!({ "inventory": held })
    };
    let bodies: Vec<Value> = (0..6).map(|k| report(1 + k * 50, 600 + k * 50)).collect();
    let (a, b, c3, d, e, f) = tokio::join!(
        sync(&edge, &api, &bodies[0]),
        sync(&edge, &api, &bodies[1]),
        sync(&edge, &api, &bodies[2]),
        sync(&edge, &api, &bodies[3]),
        sync(&edge, &api, &bodies[4]),
        sync(&edge, &api, &bodies[5]),
    );
    for (status, answer) in [a, b, c3, d, e, f] {
        assert_eq!(status, 200, "{answer}");
    }
    let holdings = c.get("/v1/agents/edge-1", owner).await.expect(200)["holdings"].clone();
    let versions: Vec<i64> =
        holdings.as_array().unwrap().iter().map(|h| h["version"].as_i64().unwrap()).collect();
    assert_eq!(versions.len(), 600, "one whole report");
    let first = versions[0];
    assert!((1..=251).step_by(50).any(|k| k == first), "{first}");
    assert_eq!(versions, (first..first + 600).collect::<Vec<_>>(), "one report, not a mix");
}
