//! The resource schemas' use cases (`schemas::service`) against an
//! in-memory store: versions numbered per type, a type name means its
//! newest version not deprecated, defaults name environments that exist,
//! a version in use stays, and a refusal stores and records nothing.

use std::collections::BTreeMap;

use heimdall_core::audit::AuditAction;
use heimdall_core::authz::Action;
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{CatalogId, SchemaId};
use heimdall_core::schemas::service;
use heimdall_core::schemas::NewSchema;
use heimdall_core::ErrorCode;
use serde_json::json;
use uuid::Uuid;

use crate::fakes::{entry, Ana, MemorySchemas};

fn id(n: u128) -> SchemaId {
    SchemaId::from_uuid(Uuid::from_u128(n))
}

fn bucket() -> NewSchema {
    NewSchema {
        type_name: "bucket".into(),
        input_schema: json!({ "type": "object", "properties": { "name": { "type": "string" } } }),
        ..NewSchema::default()
    }
}

fn with_prod() -> (MemorySchemas, CatalogId) {
    let prod = entry(77, CatalogKind::Environment, "prod", None);
    let id = prod.id;
    (MemorySchemas::with_environments(&[prod]), id)
}

#[tokio::test]
async fn versions_are_numbered_per_type_and_a_type_name_means_the_newest_not_deprecated() {
    let (store, ana) = (MemorySchemas::default(), Ana::allowed_everything());
    let first = service::create(&store, &ana, bucket(), id(1)).await.unwrap();
    let second = service::create(&store, &ana, bucket(), id(2)).await.unwrap();
    assert_eq!((first.version, second.version), (1, 2));
    assert_eq!(service::show(&store, &ana, "bucket").await.unwrap().id, second.id);

    let deprecated = service::set_deprecated(&store, &ana, &second.id.to_string(), true).await.unwrap();
    assert_eq!(deprecated.deprecated_by.as_deref(), Some("ana@example.com"));
    assert_eq!(service::show(&store, &ana, "bucket").await.unwrap().id, first.id);
    // Deprecating it again changes nothing and records nothing.
    service::set_deprecated(&store, &ana, &second.id.to_string(), true).await.unwrap();
    // A version to change is named by id: a type name would pick one.
    let by_name = service::set_deprecated(&store, &ana, "bucket", false).await.unwrap_err();
    assert_eq!(by_name.code, ErrorCode::NotFound);

    service::delete(&store, &ana, &first.id.to_string()).await.unwrap();
    let listed = service::list(&store, &ana, Some("bucket")).await.unwrap();
    assert_eq!(listed.iter().map(|s| s.version).collect::<Vec<_>>(), [2]);
    let gone = service::show(&store, &ana, &first.id.to_string()).await.unwrap_err();
    assert_eq!(gone.code, ErrorCode::NotFound, "a deleted version is not shown");
    assert!(service::list(&store, &ana, Some("queue")).await.unwrap().is_empty());
    let actions = [
        AuditAction::SchemaCreated,
        AuditAction::SchemaCreated,
        AuditAction::SchemaDeprecated,
        AuditAction::SchemaDeleted,
    ];
    assert_eq!(store.actions(), actions);
}

#[tokio::test]
async fn defaults_name_environments_that_exist_and_are_kept_under_their_names() {
    let ((store, prod), ana) = (with_prod(), Ana::allowed_everything());
    let by_id =
        NewSchema { defaults: BTreeMap::from([(prod.to_string(), json!({ "name": "p" }))]), ..bucket() };
    let stored = service::create(&store, &ana, by_id, id(1)).await.unwrap();
    assert_eq!(stored.defaults, BTreeMap::from([("prod".to_owned(), json!({ "name": "p" }))]));

    let unknown = NewSchema { defaults: BTreeMap::from([("staging".to_owned(), json!({}))]), ..bucket() };
    let refused = service::create(&store, &ana, unknown, id(2)).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::InvalidInput);
    assert!(refused.message.contains("staging"), "{}", refused.message);
    assert_eq!(store.actions(), [AuditAction::SchemaCreated], "the refused version is not stored");
}

#[tokio::test]
async fn a_bad_request_is_refused_before_the_policies_are_asked_or_anything_is_loaded() {
    let (store, ana) = (MemorySchemas::default(), Ana::allowed_everything());
    let broken = NewSchema { input_schema: json!({ "type": "no such type" }), ..bucket() };
    assert!(service::create(&store, &ana, broken, id(1)).await.is_err());
    let no_version = NewSchema {
        module: Some(heimdall_core::infra::ModuleRef { source: "./m".into(), version: " ".into() }),
        ..bucket()
    };
    assert_eq!(
        service::create(&store, &ana, no_version, id(2)).await.unwrap_err().code,
        ErrorCode::InvalidInput
    );
    assert_eq!(ana.asked(), 0);
    assert!(store.actions().is_empty());
}

#[tokio::test]
async fn a_version_in_use_stays_and_a_refusal_by_the_policies_writes_nothing() {
    let (store, ana) = (MemorySchemas::default(), Ana::allowed_everything());
    let first = service::create(&store, &ana, bucket(), id(1)).await.unwrap();
    *store.in_use.lock().unwrap() = 2;
    let refused = service::delete(&store, &ana, &first.id.to_string()).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::NotEmpty);
    assert!(refused.message.contains("2 Resources"), "{}", refused.message);
    assert_eq!(service::show(&store, &ana, "bucket").await.unwrap().id, first.id);

    let refused_writer = Ana::refused(Action::SchemaWrite, None);
    let created = service::create(&store, &refused_writer, bucket(), id(2)).await.unwrap_err();
    assert_eq!(created.code, ErrorCode::Forbidden);
    let deprecated = service::set_deprecated(&store, &refused_writer, &first.id.to_string(), true).await;
    assert_eq!(deprecated.unwrap_err().code, ErrorCode::Forbidden);
    assert_eq!(store.actions(), [AuditAction::SchemaCreated]);
    // Reading is another action: still allowed.
    assert_eq!(service::list(&store, &refused_writer, None).await.unwrap().len(), 1);
}
