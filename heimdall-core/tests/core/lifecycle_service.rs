//! A secret's versions deactivated and the secret deleted
//! (`secrets::service::{deactivate, delete}`) against in-memory stores:
//! the policies asked in every environment it goes from, a copy an Agent
//! that will not sync again holds keeps it, and a refusal changes nothing.

use heimdall_core::audit::AuditAction;
use heimdall_core::authz::Action;
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{AgentId, CatalogId, SecretId};
use heimdall_core::ports::Holding;
use heimdall_core::secrets::service;
use heimdall_core::secrets::{NewSecret, SecretStatus, SecretVersion};
use heimdall_core::ErrorCode;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::fakes::{entry, Ana, MemoryEnvironments};

async fn world() -> MemoryEnvironments {
    let store = MemoryEnvironments::with_catalog(&[
        entry(20, CatalogKind::Environment, "dev", None),
        entry(21, CatalogKind::Environment, "prod", None),
    ]);
    let db = NewSecret { name: "db".into(), ..NewSecret::default() };
    let ana = Ana::allowed_everything();
    service::create(&store.secrets, &ana, db, &[], SecretId::from_uuid(Uuid::from_u128(5))).await.unwrap();
    store.secrets.versions.lock().unwrap().push(SecretVersion {
        secret_id: SecretId::from_uuid(Uuid::from_u128(5)),
        environment_id: CatalogId::from_uuid(Uuid::from_u128(21)),
        version: 1,
        created_at: OffsetDateTime::UNIX_EPOCH,
        created_by: "ana@example.com".into(),
        deactivated_at: None,
        keep_previous_seconds: 0,
        superseded_at: None,
    });
    store
}

fn held_in_prod_by(store: &MemoryEnvironments, agent: &str, revoked: bool) {
    store.holdings.lock().unwrap().push(Holding {
        agent_id: AgentId::from_uuid(Uuid::from_u128(7)),
        agent: agent.into(),
        secret: "db".into(),
        environment: "prod".into(),
        version: 1,
        deactivated: false,
        reported_at: OffsetDateTime::UNIX_EPOCH,
        held_since: None,
        agent_revoked: revoked,
        agent_last_seen_at: Some(OffsetDateTime::UNIX_EPOCH),
    });
}

#[tokio::test]
async fn a_version_is_deactivated_once_where_the_caller_may_write() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    let bo = Ana::refused_in(Action::SecretWrite, "prod");
    assert_eq!(
        service::deactivate(&store, &bo, "db", ("prod", 1)).await.unwrap_err().code,
        ErrorCode::Forbidden
    );
    assert_eq!(
        service::deactivate(&store, &ana, "db", ("prod", 0)).await.unwrap_err().code,
        ErrorCode::InvalidInput
    );
    assert_eq!(
        service::deactivate(&store, &ana, "db", ("prod", 2)).await.unwrap_err().code,
        ErrorCode::NotFound
    );
    let off = service::deactivate(&store, &ana, "db", ("prod", 1)).await.unwrap();
    assert!(off.deactivated_at.is_some());
    assert_eq!(
        service::deactivate(&store, &ana, "db", ("prod", 1)).await.unwrap().deactivated_at,
        off.deactivated_at
    );
    let recorded =
        store.secrets.actions().into_iter().filter(|a| *a == AuditAction::SecretVersionDeactivated).count();
    assert_eq!(recorded, 2, "each ask is recorded; the first time is kept");
}

#[tokio::test]
async fn a_delete_is_asked_in_every_environment_the_secret_goes_from() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    held_in_prod_by(&store, "edge", false);
    // Bo may write in dev but not in prod, where an Agent holds it.
    let bo = Ana::refused_in(Action::SecretWrite, "prod");
    let refused = service::delete(&store, &bo, "db", None, Duration::hours(1)).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert_eq!(service::resolve(&store, &ana, "db").await.unwrap().status, SecretStatus::Active);
    // Only in dev is his to delete.
    service::delete(&store, &bo, "db", Some("dev"), Duration::hours(1)).await.unwrap();

    let (secret, holdings) = service::delete(&store, &ana, "db", None, Duration::hours(1)).await.unwrap();
    assert_eq!((secret.name.as_str(), holdings.len()), ("db", 1));
    assert_eq!(service::resolve(&store, &ana, "db").await.unwrap().status, SecretStatus::Deleting);
    assert_eq!(store.actions(), [AuditAction::SecretDeletionStarted, AuditAction::SecretDeletionStarted]);
}

#[tokio::test]
async fn a_copy_held_by_an_agent_that_will_not_sync_again_keeps_the_secret() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    held_in_prod_by(&store, "gone", true);
    let refused = service::delete(&store, &ana, "db", None, Duration::hours(1)).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::ValueMayPersist);
    assert!(refused.message.contains("gone"), "{}", refused.message);
    assert_eq!(service::resolve(&store, &ana, "db").await.unwrap().status, SecretStatus::Active);
    assert!(store.actions().is_empty());
}
