//! The policies' use cases (`policies::service`) against an in-memory
//! store: owners write, a text that does not compile is refused before
//! anything is stored, every version is kept, and a change planned on an
//! older version is refused `STALE_REVISION`.

use heimdall_core::audit::AuditAction;
use heimdall_core::authz::Action;
use heimdall_core::ids::PolicyId;
use heimdall_core::policies::service::{self, NewPolicy};
use heimdall_core::policies::Change;
use heimdall_core::ports::PolicyStore;
use heimdall_core::ErrorCode;
use uuid::Uuid;

use crate::fakes::{Ana, MemoryPolicies, ORG};

const FORBID: &str = r#"forbid (principal, action == Heimdall::Action::"secret.read", resource) when { context.environment == "prod" };"#;
const PERMIT: &str = r#"permit (principal, action == Heimdall::Action::"secret.read", resource) when { context.environment == "dev" };"#;

fn guard() -> NewPolicy {
    NewPolicy { name: "guard".into(), description: Some("no prod reads".into()), text: FORBID.into() }
}

fn id(n: u128) -> PolicyId {
    PolicyId::from_uuid(Uuid::from_u128(n))
}

#[tokio::test]
async fn a_policy_is_written_in_versions_each_kept_and_deleted() {
    let (store, ana) = (MemoryPolicies::default(), Ana::allowed_everything());
    let created = service::create(&store, &ana, guard(), id(1)).await.unwrap();
    assert_eq!((created.version, created.created_by.as_str()), (1, "ana@example.com"));
    let change = Change { text: Some(PERMIT.into()), description: None, expected_version: Some(1) };
    let changed = service::update(&store, &ana, "guard", change).await.unwrap();
    assert_eq!((changed.version, changed.text.as_str()), (2, PERMIT));
    // The same text again is no new version and no event.
    let same = Change { text: Some(PERMIT.into()), description: None, expected_version: None };
    assert_eq!(service::update(&store, &ana, "guard", same).await.unwrap().version, 2);
    let versions = service::versions(&store, &ana, &created.id.to_string()).await.unwrap();
    let texts: Vec<(i64, &str)> = versions.iter().map(|v| (v.version, v.text.as_str())).collect();
    assert_eq!(texts, [(2, PERMIT), (1, FORBID)]);
    assert_eq!(store.policy_version(ORG).await.unwrap(), 2, "each change bumps what caches key on");
    service::delete(&store, &ana, "guard").await.unwrap();
    assert!(service::list(&store, &ana).await.unwrap().is_empty());
    let actions = [AuditAction::PolicyCreated, AuditAction::PolicyUpdated, AuditAction::PolicyDeleted];
    assert_eq!(store.actions(), actions);
}

#[tokio::test]
async fn a_change_planned_on_an_older_version_is_refused_and_changes_nothing() {
    let (store, ana) = (MemoryPolicies::default(), Ana::allowed_everything());
    service::create(&store, &ana, guard(), id(1)).await.unwrap();
    let first = Change { text: Some(PERMIT.into()), description: None, expected_version: Some(1) };
    service::update(&store, &ana, "guard", first).await.unwrap();
    // Someone else read version 1 and writes on it.
    let late =
        Change { text: Some(FORBID.into()), description: Some("back".into()), expected_version: Some(1) };
    let refused = service::update(&store, &ana, "guard", late).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::StaleRevision);
    assert_eq!(service::show(&store, &ana, "guard").await.unwrap().text, PERMIT);
    assert_eq!(store.actions().len(), 2);
}

#[tokio::test]
async fn a_text_that_does_not_compile_or_a_caller_not_allowed_stores_nothing() {
    let store = MemoryPolicies::default();
    let ana = Ana::allowed_everything();
    let broken = NewPolicy { text: "forbid (principal, action, resource".into(), ..guard() };
    let refused = service::create(&store, &ana, broken, id(1)).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::InvalidPolicy);
    let member = Ana::refused(Action::PolicyWrite, None);
    let refused = service::create(&store, &member, guard(), id(2)).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
    // Reading is another permission: she may list, and there is nothing.
    assert!(service::list(&store, &member).await.unwrap().is_empty());
    assert_eq!((store.actions().len(), store.policy_version(ORG).await.unwrap()), (0, 0));
}
