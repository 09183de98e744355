//! The databases' use cases (`dbusers::service`) against in-memory
//! stores: a database registered with an admin secret the caller may have
//! used in its environment, users created, rotated and deleted with it, a
//! list that shows only the environments the caller may read, and a
//! refusal that stores and records nothing.

use heimdall_core::audit::AuditAction;
use heimdall_core::authz::Action;
use heimdall_core::dbusers::service;
use heimdall_core::dbusers::{Engine, NewDatabase, NewUser, Schedule, UpdateDatabase};
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{AgentId, DatabaseId, SecretId, ServiceUserId};
use heimdall_core::ports::Holding;
use heimdall_core::secrets::NewSecret;
use heimdall_core::ErrorCode;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::fakes::{entry, Ana, MemoryDatabases};

/// Environments `dev` and `prod`, and an organization secret `pg-admin`.
async fn world() -> MemoryDatabases {
    let store = MemoryDatabases::with_catalog(&[
        entry(20, CatalogKind::Environment, "dev", None),
        entry(21, CatalogKind::Environment, "prod", None),
    ]);
    let admin = NewSecret { name: "pg-admin".into(), ..NewSecret::default() };
    let id = SecretId::from_uuid(Uuid::from_u128(5));
    heimdall_core::secrets::service::create(&store.secrets, &Ana::allowed_everything(), admin, &[], id)
        .await
        .unwrap();
    store
}

fn orders() -> NewDatabase {
    NewDatabase {
        name: "orders".into(),
        engine: Engine::Postgres,
        host: "db.internal".into(),
        port: 5432,
        database: "orders".into(),
        tls: None,
        ca_pem: None,
    }
}

fn app_user() -> NewUser {
    NewUser {
        name: "app".into(),
        rotate_every: "30d".into(),
        grace: "1h".into(),
        schedule: Schedule::new(Duration::days(30), Duration::hours(1)).unwrap(),
        grants: None,
    }
}

fn ids(n: u128) -> (ServiceUserId, SecretId) {
    (ServiceUserId::from_uuid(Uuid::from_u128(n)), SecretId::from_uuid(Uuid::from_u128(100 + n)))
}

#[tokio::test]
async fn a_database_is_registered_and_its_users_made_rotated_and_deleted() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    let db = DatabaseId::from_uuid(Uuid::from_u128(1));
    let orders = service::create(&store, &ana, orders(), ("prod", "pg-admin"), db).await.unwrap();
    assert_eq!((orders.environment.as_str(), orders.admin_secret.as_str()), ("prod", "pg-admin"));
    let user = service::create_user(&store, &ana, "orders", app_user(), ids(1)).await.unwrap();
    assert!(
        store.secrets.secrets().iter().any(|s| s.name == user.secret),
        "the user's secret is made with it"
    );
    let again = service::create_user(&store, &ana, "orders", app_user(), ids(2)).await.unwrap_err();
    assert_eq!(again.code, ErrorCode::AlreadyExists);

    // Not created by its Agent yet: nothing to rotate.
    let early = service::rotate(&store, &ana, ("orders", "app")).await.unwrap_err();
    assert_eq!(early.code, ErrorCode::Conflict);
    store.created(user.id);
    assert!(service::rotate(&store, &ana, ("orders", "app")).await.unwrap().rotate_requested);

    let refused = service::delete(&store, &ana, "orders").await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::NotEmpty, "a database with users stays");
    let deleting =
        service::delete_user(&store, &ana, ("orders", "app"), None, Duration::hours(1)).await.unwrap();
    assert_eq!(deleting.drop_after, Some(OffsetDateTime::UNIX_EPOCH + Duration::hours(1)), "its own grace");
    assert_eq!(deleting.deleted_by.as_deref(), Some("ana@example.com"));
    let twice =
        service::delete_user(&store, &ana, ("orders", "app"), None, Duration::hours(1)).await.unwrap_err();
    assert_eq!(twice.code, ErrorCode::Conflict);
    use AuditAction::{
        DatabaseCreated, DatabaseRotationRequested, DatabaseUserCreated, DatabaseUserDeletionRequested,
    };
    let actions =
        [DatabaseCreated, DatabaseUserCreated, DatabaseRotationRequested, DatabaseUserDeletionRequested];
    assert_eq!(store.actions(), actions);
}

#[tokio::test]
async fn the_admin_secret_is_one_the_caller_may_have_used_in_that_environment() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    let db = DatabaseId::from_uuid(Uuid::from_u128(1));
    let missing = service::create(&store, &ana, orders(), ("prod", "nope"), db).await.unwrap_err();
    assert_eq!(missing.code, ErrorCode::NotFound);
    assert!(missing.message.contains("in prod first"), "{}", missing.message);

    let bo = Ana::refused_in(Action::SecretRead, "prod");
    let refused = service::create(&store, &bo, orders(), ("prod", "pg-admin"), db).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert!(service::list(&store, &ana).await.unwrap().is_empty());

    // Ana registers it; Bo may write there but not use the admin secret:
    // he can neither make users nor switch the admin secret.
    service::create(&store, &ana, orders(), ("prod", "pg-admin"), db).await.unwrap();
    let user = service::create_user(&store, &bo, "orders", app_user(), ids(1)).await.unwrap_err();
    assert_eq!(user.code, ErrorCode::Forbidden);
    let switch = UpdateDatabase { admin_secret: Some("pg-admin".into()), ..UpdateDatabase::default() };
    let unchanged = service::update(&store, &bo, "orders", &switch).await.unwrap();
    assert_eq!(unchanged.admin_secret, "pg-admin", "the same secret is no change");
    assert_eq!(store.actions(), [AuditAction::DatabaseCreated]);
}

#[tokio::test]
async fn a_caller_sees_the_databases_of_the_environments_she_may_read() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    let (one, two) = (DatabaseId::from_uuid(Uuid::from_u128(1)), DatabaseId::from_uuid(Uuid::from_u128(2)));
    service::create(&store, &ana, orders(), ("prod", "pg-admin"), one).await.unwrap();
    let dev = NewDatabase { name: "orders-dev".into(), ..orders() };
    service::create(&store, &ana, dev, ("dev", "pg-admin"), two).await.unwrap();
    let bo = Ana::refused_in(Action::SecretRead, "prod");
    let names: Vec<String> = service::list(&store, &bo).await.unwrap().into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["orders-dev"]);
    assert_eq!(service::list_users(&store, &bo, "orders").await.unwrap_err().code, ErrorCode::Forbidden);
    assert!(service::list_users(&store, &bo, "orders-dev").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_user_whose_password_an_agent_that_will_not_sync_holds_is_not_deleted() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    let db = DatabaseId::from_uuid(Uuid::from_u128(1));
    service::create(&store, &ana, orders(), ("prod", "pg-admin"), db).await.unwrap();
    let user = service::create_user(&store, &ana, "orders", app_user(), ids(1)).await.unwrap();
    store.holdings.lock().unwrap().push(Holding {
        agent_id: AgentId::from_uuid(Uuid::from_u128(7)),
        agent: "edge-1".into(),
        secret: user.secret.clone(),
        environment: "prod".into(),
        version: 1,
        deactivated: false,
        reported_at: OffsetDateTime::UNIX_EPOCH,
        held_since: None,
        agent_revoked: true,
        agent_last_seen_at: None,
    });
    let refused =
        service::delete_user(&store, &ana, ("orders", "app"), None, Duration::hours(1)).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::ValueMayPersist);
    assert!(refused.message.contains("edge-1"), "{}", refused.message);
    assert_eq!(service::show_user(&store, &ana, ("orders", "app")).await.unwrap().drop_after, None);
}
