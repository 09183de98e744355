//! Retention: a version replaced by a newer one stays readable for the
//! overlap its writer asked for, then every holder erases it — its
//! ciphertext leaves the store's row, on SQLite, PostgreSQL and DynamoDB —
//! and answers `410 VERSION_SUPERSEDED`. Bad input numbers nothing.

use std::path::Path;

use aws_sdk_dynamodb::types::AttributeValue;
use heimdall_agent::values::store::ValueAddress;
use heimdall_core::ids::{CatalogId, OrgId};
use heimdall_sdk::{AgentClient, ErrorCode};
use reqwest::Method;
use serde_json::json;

use crate::support::{agent_client, World};
use crate::values::{
    agent_database, configure, eventually, holders_reachable, identity, set, set_keeping, Store,
};

/// What a store's row holds for one version, read from the database itself.
#[derive(Debug, PartialEq, Eq)]
enum RowState {
    Value,
    Superseded,
    Other(String),
}

async fn sql_row(url: &str, at: &ValueAddress) -> RowState {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    let row: Option<(Option<Vec<u8>>, i64, i64)> = sqlx::query_as(
        "SELECT ciphertext, deactivated, superseded FROM secret_values \
         WHERE org_id = $1 AND secret = $2 AND environment_id = $3 AND version = $4",
    )
    .bind(at.org.to_string())
    .bind(&at.secret)
    .bind(at.environment.to_string())
    .bind(i64::from(at.version))
    .fetch_optional(&pool)
    .await
    .unwrap();
    pool.close().await;
    match row {
        Some((Some(c), 0, 0)) if !c.is_empty() => RowState::Value,
        Some((None, 1, 1)) => RowState::Superseded,
        other => RowState::Other(format!("{other:?}")),
    }
}

async fn dynamo_row(config: &Path, at: &ValueAddress) -> RowState {
    let text = std::fs::read_to_string(config).unwrap();
    let field = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(name)).unwrap();
        line.split_once('=').unwrap().1.trim().trim_matches('"').to_owned()
    };
    let (table, endpoint) = (field("dynamodb_table"), field("aws_endpoint_url"));
    let client = aws_sdk_dynamodb::Client::new(&crate::store::aws_config(&endpoint).await);
    let item = client
        .get_item()
        .table_name(table)
        .set_key(Some(crate::store::ddb_value_key(at)))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item;
    let Some(item) = item else { return RowState::Other("no item".into()) };
    let flag = |name: &str| item.get(name) == Some(&AttributeValue::Bool(true));
    match (item.contains_key("ciphertext"), flag("deactivated"), flag("superseded")) {
        (true, false, false) => RowState::Value,
        (false, true, true) if !item.contains_key("nonce") && !item.contains_key("key_id") => {
            RowState::Superseded
        }
        other => RowState::Other(format!("{other:?}")),
    }
}

async fn read(client: &AgentClient, version: Option<i64>) -> Result<(i64, String), Option<ErrorCode>> {
    client
        .get_value("db-password", "dev", version)
        .await
        .map(|a| (a.version, a.value.expose().clone()))
        .map_err(|e| e.code())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_superseded_version_is_erased_from_every_store_after_its_overlap_and_answers_410() {
    let w = World::new().await;
    let configs = [w.enroll("edge-1").await, w.enroll("edge-2").await, w.enroll("edge-3").await];
    let (_, _, pg_url) = agent_database().await;
    let (url_1, sqlite) = configure(&configs[0], Store::Sqlite, None);
    let (url_2, _) = configure(&configs[1], Store::Postgres, Some(&pg_url));
    let (url_3, _) = configure(&configs[2], Store::Dynamo, None);
    let sqlite_url = format!("sqlite://{}", sqlite.unwrap().display());
    let owner = w.api.owner_token.clone();
    for agent in ["edge-1", "edge-2", "edge-3"] {
        w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": agent })).await;
    }
    w.post(&owner, "/v1/secrets", json!({ "name": "db-password" })).await;
    let ana = identity(&w, &owner).await;
    let mut agents: Vec<_> = configs.iter().map(|c| w.run_agent(c)).collect();
    holders_reachable(&w, &configs[0], "db-password", 3).await;
    let clients: Vec<AgentClient> = [(&configs[0], &url_1), (&configs[1], &url_2), (&configs[2], &url_3)]
        .into_iter()
        .map(|(config, url)| agent_client(config, url, &ana))
        .collect();

    // Bad input numbers nothing: the next version is still 1.
    for bad in ["31d", "1y", "-5m"] {
        let (status, refused) = w
            .call(
                Method::POST,
                "/v1/secrets/db-password/versions",
                Some(json!({ "environment": "dev", "keep_previous": bad })),
            )
            .await;
        assert_eq!((status, refused["error"]["code"].as_str()), (422, Some("INVALID_INPUT")), "{refused}");
    }
    assert_eq!(set(&w, &owner, &ana, "db-password", "dev", "one").await, 1);

    // Version 2 keeps version 1 readable for a while: during the overlap
    // every holder serves both (2 as the latest).
    let org: OrgId = w.api.bootstrapped.organization.id;
    let (_, dev) = w.call(Method::GET, "/v1/environments/dev", None).await;
    let dev: CatalogId = dev["id"].as_str().unwrap().parse().unwrap();
    let at = |version| ValueAddress { org, secret: "db-password".into(), environment: dev, version };
    assert_eq!(set_keeping(&w, &owner, &ana, ("db-password", "dev", "two"), "6s").await, 2);
    for client in &clients {
        assert_eq!(read(client, Some(1)).await, Ok((1, "one".into())), "in the overlap");
        assert_eq!(read(client, None).await, Ok((2, "two".into())));
    }
    assert_eq!(sql_row(&sqlite_url, &at(1)).await, RowState::Value);

    // After it, each erases version 1 and says so; version 2 stays.
    for (n, client) in clients.iter().enumerate() {
        eventually(&configs[n], "version 1 superseded", || async {
            read(client, Some(1)).await == Err(Some(ErrorCode::VersionSuperseded))
        })
        .await;
        assert_eq!(read(client, None).await, Ok((2, "two".into())));
    }
    // The ciphertext is gone from each store's row; a tombstone says why.
    assert_eq!(sql_row(&sqlite_url, &at(1)).await, RowState::Superseded);
    assert_eq!(sql_row(&pg_url, &at(1)).await, RowState::Superseded);
    assert_eq!(dynamo_row(&configs[2], &at(1)).await, RowState::Superseded);
    assert_eq!(sql_row(&pg_url, &at(2)).await, RowState::Value);
    assert_eq!(dynamo_row(&configs[2], &at(2)).await, RowState::Value);

    // The default overlap is none: version 3 replaces 2 at once.
    assert_eq!(set(&w, &owner, &ana, "db-password", "dev", "three").await, 3);
    for (n, client) in clients.iter().enumerate() {
        eventually(&configs[n], "version 2 superseded", || async {
            read(client, Some(2)).await == Err(Some(ErrorCode::VersionSuperseded))
        })
        .await;
        assert_eq!(read(client, None).await, Ok((3, "three".into())));
    }
    assert_eq!(sql_row(&pg_url, &at(2)).await, RowState::Superseded);

    // The holdings no longer list an erased version.
    eventually(&configs[0], "the holdings without versions 1 and 2", || async {
        let (_, shown) = w.call(Method::GET, "/v1/secrets/db-password", None).await;
        let held = shown["holdings"].as_array().cloned().unwrap_or_default();
        !held.is_empty() && held.iter().all(|h| h["version"] == 3)
    })
    .await;

    for agent in &mut agents {
        agent.start_kill().unwrap();
        let _ = agent.wait().await;
    }
}
