//! The OpenAPI documents against the servers that serve them: every
//! documented operation is answered by a handler (not the router's "no
//! such route"), on the people listener and on the Agent channel; the
//! routers hold no route the documents leave out (every route is
//! registered through `utoipa_axum::routes!`, checked on the source); and
//! every error the documents describe is the one error body.

use reqwest::Method;
use serde_json::Value;

use crate::support::{enroll_agent, Client};

/// Each `(METHOD, path)` of a document, path as written (`{key}` kept).
fn operations(document: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_some() {
                out.push((method.to_uppercase(), path.clone()));
            }
        }
    }
    out
}

/// A path with each `{param}` filled by something no row is called.
fn concrete(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("closing brace") + start;
        out.push_str("00000000-0000-4000-8000-000000000000");
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

fn is_router_miss(reply_status: u16, body: &Value) -> bool {
    reply_status == 404 && body["error"]["message"] == "no such route"
}

#[tokio::test]
async fn every_documented_operation_reaches_a_handler_and_nothing_else_does() {
    let api = heimdall_api::testing::TestApi::sqlite().await;
    let c = Client::new(&api);
    let document = c.get("/v1/openapi.json", "").await.expect(200);
    assert!(document["openapi"].as_str().is_some_and(|v| v.starts_with("3.")), "{}", document["openapi"]);

    let people = operations(&document);
    assert!(people.len() > 60, "only {} operations documented", people.len());
    for (method, path) in &people {
        let reply = c
            .call(Method::from_bytes(method.as_bytes()).unwrap(), &concrete(path), &api.owner_token, None)
            .await;
        assert!(
            !is_router_miss(reply.status.as_u16(), &reply.body),
            "{method} {path} is documented but not routed"
        );
        // The document says which statuses this operation answers.
        let responses = &document["paths"][path][method.to_lowercase()]["responses"];
        assert!(
            responses.get(reply.status.as_u16().to_string()).is_some(),
            "{method} {path} answered {} ({}), which its document does not list",
            reply.status,
            reply.text
        );
    }
    // A path the document does not have is the router's miss.
    let unknown = c.get("/v1/secretz", &api.owner_token).await;
    assert!(is_router_miss(unknown.status.as_u16(), &unknown.body), "{}", unknown.text);

    // The Agent channel serves its own document; each of its operations
    // reaches a handler there, and none is on the people listener.
    let (agent, _) = enroll_agent(&c, &api, &api.owner_token, "docs").await;
    let channel: Value = agent
        .get(format!("{}/v1/agent/openapi.json", api.agent_url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let channel_ops = operations(&channel);
    assert!(channel_ops.len() >= 10, "{channel_ops:?}");
    for (method, path) in &channel_ops {
        assert!(!people.contains(&(method.clone(), path.clone())), "{method} {path} in both documents");
        let reply = agent
            .request(
                Method::from_bytes(method.as_bytes()).unwrap(),
                format!("{}{}", api.agent_url, concrete(path)),
            )
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        let status = reply.status().as_u16();
        let body: Value = reply.json().await.unwrap_or(Value::Null);
        assert!(
            !is_router_miss(status, &body),
            "{method} {path} is documented but not routed on the channel"
        );
    }
}

/// Every error response in both documents is `{"error": {"code", "message"}}`.
#[tokio::test]
async fn every_documented_error_is_the_error_body() {
    for document in [heimdall_api::openapi_document(), heimdall_api::agent_channel_openapi_document()] {
        let document = serde_json::to_value(&document).unwrap();
        let error_body = &document["components"]["schemas"]["ErrorBody"];
        assert_eq!(error_body["required"], serde_json::json!(["error"]), "{error_body}");
        let api_error = &document["components"]["schemas"]["ApiError"];
        let required: Vec<&str> =
            api_error["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert!(required.contains(&"code") && required.contains(&"message"), "{api_error}");
        for (method, path) in operations(&document) {
            let responses = document["paths"][&path][method.to_lowercase()]["responses"].as_object().unwrap();
            for (status, response) in responses {
                if status.starts_with('4') || status.starts_with('5') {
                    let schema = &response["content"]["application/json"]["schema"]["$ref"];
                    assert_eq!(schema, "#/components/schemas/ErrorBody", "{method} {path} {status}");
                    let description = response["description"].as_str().unwrap();
                    for code in description.split(", ") {
                        let code = code.trim_matches('`');
                        let parsed = heimdall_core::ErrorCode::parse(code)
                            .unwrap_or_else(|| panic!("{method} {path} {status}: unknown code {code}"));
                        assert_eq!(parsed.http_status().to_string(), *status, "{method} {path} {code}");
                    }
                }
            }
        }
    }
}

/// Every operation of both documents says what it does in product words:
/// a summary and a description, neither naming the code behind it (a Rust
/// path, a function, a file).
#[tokio::test]
async fn every_operation_has_a_summary_and_a_description_in_product_words() {
    let mut missing = Vec::new();
    for document in [heimdall_api::openapi_document(), heimdall_api::agent_channel_openapi_document()] {
        let document = serde_json::to_value(&document).unwrap();
        for (method, path) in operations(&document) {
            let operation = &document["paths"][&path][method.to_lowercase()];
            for key in ["summary", "description"] {
                let text = operation[key].as_str().unwrap_or_default();
                let internal = ["::", "heimdall_", "Self", ".rs", "[`"].iter().find(|w| text.contains(**w));
                if text.trim().is_empty() {
                    missing.push(format!("{method} {path}: no {key}"));
                } else if let Some(word) = internal {
                    missing.push(format!("{method} {path}: {key} names code ({word}): {text}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "{} problems:\n{}", missing.len(), missing.join("\n"));
}

/// Every closed set of words in both documents is the one the servers
/// speak: a client generated from the document sends `aws`, not `Aws`.
#[tokio::test]
async fn every_documented_enum_lists_the_words_on_the_wire() {
    use heimdall_core::infra::{
        JobOperation, JobStatus, LinkScope, Provider, ResourceStatus, RevisionState, StateBackend,
    };
    fn words<T: serde::Serialize>(all: &[T]) -> Value {
        serde_json::to_value(all).unwrap()
    }
    let spoken = [
        ("Provider", words(Provider::ALL)),
        ("StateBackend", words(StateBackend::ALL)),
        ("ResourceStatus", words(ResourceStatus::ALL)),
        ("RevisionState", words(RevisionState::ALL)),
        ("LinkScope", words(LinkScope::ALL)),
        ("JobOperation", words(JobOperation::ALL)),
        ("JobStatus", words(JobStatus::ALL)),
        ("ErrorCode", words(heimdall_core::ErrorCode::ALL)),
    ];
    let mut wrong = Vec::new();
    let documents = [heimdall_api::openapi_document(), heimdall_api::agent_channel_openapi_document()];
    for (n, document) in documents.iter().enumerate() {
        let document = serde_json::to_value(document).unwrap();
        for (name, words) in &spoken {
            let documented = &document["components"]["schemas"][name]["enum"];
            // The people's document has each; the Agent channel's, some.
            if documented != words && (n == 0 || !documented.is_null()) {
                wrong.push(format!("{name}: documented {documented}, spoken {words}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Every `$ref` in both documents names a schema the document holds (a
/// query parameter's schema is not collected by itself): a client
/// generator or a fuzzer skips what it cannot resolve.
#[tokio::test]
async fn every_reference_in_the_documents_resolves() {
    fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    out.push(target);
                }
                map.values().for_each(|v| refs(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    for document in [heimdall_api::openapi_document(), heimdall_api::agent_channel_openapi_document()] {
        let document = serde_json::to_value(&document).unwrap();
        let mut found = Vec::new();
        refs(&document, &mut found);
        assert!(found.len() > 50, "too few references to mean anything: {}", found.len());
        let unresolved: Vec<&&str> = found
            .iter()
            .filter(|target| {
                let name = target.strip_prefix("#/components/schemas/").unwrap_or(target);
                document["components"]["schemas"][name].is_null()
            })
            .collect();
        assert!(unresolved.is_empty(), "{unresolved:?}");
    }
}
