//! One strict parse per body, and the value refusal judged by route:
//! the attacks of the security review, each through the real server on
//! both backends, and the infrastructure inputs the old filter broke.

use heimdall_api::testing::{TestApi, TestDatabase};
use reqwest::Method;
use serde_json::json;

use crate::on_every_backend;
use crate::support::{world, Client};

const MARKER: &str = "hunter2-MARKER-7";

on_every_backend!(one_parse_refuses_what_lenient_parsers_disagree_on, infrastructure_inputs_may_say_value);

async fn one_parse_refuses_what_lenient_parsers_disagree_on(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    c.post("/v1/environments", owner, json!({ "name": "dev" })).await.expect(201);
    c.post("/v1/secrets", owner, json!({ "name": "db" })).await.expect(201);
    let events_before = c.get("/v1/events?limit=1000", owner).await.expect(200).as_array().unwrap().len();

    // The reported bypass: one trailing `}` after a body whose value the
    // old middleware never saw (it scanned only bodies that parsed whole).
    let trailing = format!(
        r#"{{"type":"x","input_schema":{{"type":"object"}},"defaults":{{"dev":{{"secret_value":"{MARKER}"}}}}}}}}"#
    );
    let refused = [
        (Method::POST, "/v1/schemas", trailing.into_bytes()),
        (
            Method::POST,
            "/v1/schemas",
            format!(r#"{{"type":"x","input_schema":{{}}}} {{"defaults":"{MARKER}"}}"#).into_bytes(),
        ),
        // Duplicate keys: lenient parsers keep one or the other.
        (Method::POST, "/v1/secrets", format!(r#"{{"name":"a","name":"{MARKER}"}}"#).into_bytes()),
        (
            Method::POST,
            "/v1/secrets",
            format!(r#"{{"name":"b","tags":{{"t":"x","t":"{MARKER}"}}}}"#).into_bytes(),
        ),
        (
            Method::POST,
            "/v1/domains",
            format!(r#"{{"name":"d","description":"x","description":"{MARKER}"}}"#).into_bytes(),
        ),
        // A byte order mark.
        (
            Method::POST,
            "/v1/domains",
            format!("\u{feff}{{\"name\":\"d\",\"description\":\"{MARKER}\"}}").into_bytes(),
        ),
        // A body on a route that takes none.
        (Method::GET, "/v1/domains", format!(r#"{{"value":"{MARKER}"}}"#).into_bytes()),
        (Method::DELETE, "/v1/secrets/db", format!(r#"{{"note":"{MARKER}"}}"#).into_bytes()),
    ];
    for (method, path, body) in refused {
        let reply = c.raw(method.clone(), path, owner, &body).await;
        reply.expect_error(400, "BAD_REQUEST");
    }

    // The secret routes are closed: a field they do not define is where a
    // value would go, whatever it is called. A key named like a value is
    // named in the refusal; any other unknown key is not repeated (it may
    // be a value pasted where a key goes): the refusal says it is there.
    let closed = [
        (
            Method::POST,
            "/v1/secrets",
            json!({ "name": "c", "note": MARKER }),
            "a field this route does not take",
        ),
        (
            Method::PATCH,
            "/v1/secrets/db",
            json!({ "description": "x", "comment": MARKER }),
            "a field this route does not take",
        ),
        (
            Method::POST,
            "/v1/secrets/db/versions",
            json!({ "environment": "dev", "secret": MARKER }),
            "a field this route does not take",
        ),
        (
            Method::POST,
            "/v1/secrets/db/deactivate",
            json!({ "environment": "dev", "version": 1, "v": MARKER }),
            "a field this route does not take",
        ),
        (
            Method::POST,
            "/v1/environments/dev/agents",
            json!({ "agent": "a", "x": MARKER }),
            "a field this route does not take",
        ),
        (Method::POST, "/v1/secrets", json!({ "name": "c", "tags": { "value": MARKER } }), "/tags/value"),
    ];
    for (method, path, body, pointer) in closed {
        let reply = c.call(method, path, owner, Some(body)).await;
        assert!(reply.text.contains(pointer), "{path}: {}", reply.text);
        let err = reply.expect_error(400, "VALUE_NOT_ACCEPTED");
        assert!(!err.to_string().contains(MARKER), "{path} echoed the value: {err}");
    }
    for path in [
        format!("/v1/secrets/db/holders?environment=dev&note={MARKER}"),
        format!("/v1/secrets/db/access-log?token={MARKER}"),
        // A value-like parameter on any route: query strings reach logs.
        format!("/v1/domains?value={MARKER}"),
        format!("/v1/whoami?secret_value={MARKER}"),
    ] {
        let reply = c.get(&path, owner).await;
        let err = reply.expect_error(400, "VALUE_NOT_ACCEPTED");
        assert!(!err.to_string().contains(MARKER), "{path} echoed the value: {err}");
    }
    c.raw(Method::POST, "/v1/resources/x/retry", owner, br#"{"value":1}"#)
        .await
        .expect_error(400, "BAD_REQUEST");

    // Nothing was stored, no event was written, and the value is nowhere
    // in the database (the reported bypass left it in SQLite's WAL).
    assert!(c.get("/v1/schemas", owner).await.expect(200).as_array().unwrap().is_empty());
    assert!(c.get("/v1/domains", owner).await.expect(200).as_array().unwrap().is_empty());
    assert_eq!(c.get("/v1/secrets", owner).await.expect(200).as_array().unwrap().len(), 1);
    let events_after = c.get("/v1/events?limit=1000", owner).await.expect(200).as_array().unwrap().len();
    assert_eq!(events_before, events_after);
    assert!(!api.database_text().await.contains(MARKER), "a refused body reached the database");
}

async fn infrastructure_inputs_may_say_value(db: TestDatabase) {
    let api = TestApi::start(db).await;
    let c = Client::new(&api);
    let owner = api.owner_token.as_str();
    let w = world(&c, owner).await;
    // A DNS record's `value`, AWS tags as `[{"key","value"}]`, a
    // ConfigMap's `data`, Helm `values`, a message `payload`: the schema
    // governs them, not their names.
    let schema = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["value"],
        "properties": {
            "value": { "type": "string" },
            "tags": { "type": "array", "items": {
                "type": "object", "additionalProperties": false, "required": ["key", "value"],
                "properties": { "key": { "type": "string" }, "value": { "type": "string" } } } },
            "data": { "type": "object", "additionalProperties": { "type": "string" } },
            "values": { "type": "object" },
            "payload": { "type": "string" }
        }
    });
    let created = c
        .post(
            "/v1/schemas",
            owner,
            json!({ "type": "dns-record", "input_schema": schema,
                    "defaults": { "dev": { "data": { "ttl": "300" }, "values": { "replicas": 1 } } } }),
        )
        .await
        .expect(201);
    assert_eq!(created["input_schema"]["properties"]["value"]["type"], "string");
    let input =
        json!({ "value": "10.0.0.1", "tags": [{ "key": "team", "value": "payments" }], "payload": "hello" });
    let resource = c
        .post(
            "/v1/resources",
            owner,
            json!({ "component": w.component, "schema": "dns-record", "environment": "dev", "name": "www", "input": input }),
        )
        .await
        .expect(201);
    let id = resource["id"].as_str().unwrap();
    let shown = c.get(&format!("/v1/resources/{id}"), owner).await.expect(200);
    let revision = &shown["revisions"][0];
    assert_eq!(revision["effective_input"]["tags"][0]["value"], "payments", "{shown}");
    assert_eq!(revision["effective_input"]["data"]["ttl"], "300", "{shown}");
    // A change is judged the same way.
    c.call(
        Method::PATCH,
        &format!("/v1/resources/{id}"),
        owner,
        Some(json!({ "input": { "value": "10.0.0.2" } })),
    )
    .await
    .expect(200);
    // The schema still decides: a property it does not define is refused
    // with its pointer and rule, never the value.
    let reply = c
        .post(
            "/v1/resources",
            owner,
            json!({ "component": w.component, "schema": "dns-record", "environment": "dev", "name": "bad",
                    "input": { "value": "x", "secret": MARKER } }),
        )
        .await;
    assert!(!reply.text.contains(MARKER), "{}", reply.text);
    reply.expect_error(422, "SCHEMA_VIOLATION");
    // Outside the schema-governed input a value-like key is still refused.
    let reply = c
        .post(
            "/v1/resources",
            owner,
            json!({ "component": w.component, "schema": "dns-record", "environment": "dev", "name": "bad",
                    "input": { "value": "x" }, "secret_value": MARKER }),
        )
        .await;
    assert!(!reply.text.contains(MARKER), "{}", reply.text);
    reply.expect_error(400, "VALUE_NOT_ACCEPTED");
}
