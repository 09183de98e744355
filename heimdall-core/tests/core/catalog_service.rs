//! The catalog's use cases (`catalog::service`) against an in-memory store
//! and a caller whose policies the test sets: what is stored, what is
//! recorded, and that a refusal leaves nothing behind. The same use cases
//! run on the SQL store in the API's tests.

use heimdall_core::audit::{AuditAction, CatalogChange};
use heimdall_core::authz::{Action, TargetKind};
use heimdall_core::catalog::service::{self, NewEntry};
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::CatalogId;
use heimdall_core::ErrorCode;
use uuid::Uuid;

use crate::fakes::{Ana, MemoryCatalog};

fn id(n: u128) -> CatalogId {
    CatalogId::from_uuid(Uuid::from_u128(n))
}

fn named(name: &str, parent: Option<CatalogId>) -> NewEntry {
    NewEntry { name: name.into(), description: None, parent }
}

#[tokio::test]
async fn a_system_lives_under_its_domain_is_renamed_and_deleted_with_one_event_each() {
    let (store, ana) = (MemoryCatalog::default(), Ana::allowed_everything());
    let payments =
        service::create(&store, &ana, CatalogKind::Domain, named("payments", None), id(1)).await.unwrap();
    let checkout =
        service::create(&store, &ana, CatalogKind::System, named("checkout", Some(payments.id)), id(2))
            .await
            .unwrap();
    assert_eq!((checkout.parent_id, checkout.created_by.as_str()), (Some(payments.id), "ana@example.com"));
    // Asked to write under the domain, with the domain as the target.
    let (action, target) = ana.asked.lock().unwrap().last().cloned().unwrap();
    assert_eq!(
        (action, target.kind, target.id),
        (Action::CatalogWrite, TargetKind::Domain, payments.id.to_string())
    );

    let within = service::list(&store, &ana, CatalogKind::System, (Some("payments"), None)).await.unwrap();
    assert_eq!(within, std::slice::from_ref(&checkout));
    let refused =
        service::list(&store, &ana, CatalogKind::System, (None, Some("checkout"))).await.unwrap_err();
    assert_eq!(
        (refused.code, refused.message.as_str()),
        (ErrorCode::InvalidInput, "systems can be filtered by domain only")
    );
    let shown = service::show(&store, &ana, CatalogKind::System, "checkout").await.unwrap();
    assert_eq!(shown, checkout);
    let renamed =
        service::rename(&store, &ana, CatalogKind::System, &checkout.id.to_string(), "till").await.unwrap();
    assert_eq!((renamed.id, renamed.name.as_str()), (checkout.id, "till"));
    let refused = service::delete(&store, &ana, CatalogKind::Domain, "payments").await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::NotEmpty);
    service::delete(&store, &ana, CatalogKind::System, "till").await.unwrap();
    service::delete(&store, &ana, CatalogKind::Domain, "payments").await.unwrap();

    use CatalogChange::{Created, Deleted, Renamed};
    let expected = [
        (CatalogKind::Domain, Created),
        (CatalogKind::System, Created),
        (CatalogKind::System, Renamed),
        (CatalogKind::System, Deleted),
        (CatalogKind::Domain, Deleted),
    ]
    .map(|(kind, change)| AuditAction::catalog(kind, change));
    assert_eq!(store.actions(), expected);
    assert!(store.entries().is_empty());
}

#[tokio::test]
async fn a_caller_the_policies_refuse_under_a_domain_changes_nothing_there() {
    let store = MemoryCatalog::default();
    let payments = service::create(
        &store,
        &Ana::allowed_everything(),
        CatalogKind::Domain,
        named("payments", None),
        id(1),
    )
    .await
    .unwrap();
    let ana = Ana::refused(Action::CatalogWrite, Some(payments.id));
    let refused =
        service::create(&store, &ana, CatalogKind::System, named("checkout", Some(payments.id)), id(2)).await;
    assert_eq!(refused.unwrap_err().code, ErrorCode::Forbidden);
    for refused in [
        service::rename(&store, &ana, CatalogKind::Domain, "payments", "billing").await.unwrap_err(),
        service::delete(&store, &ana, CatalogKind::Domain, "payments").await.unwrap_err(),
    ] {
        assert_eq!(refused.code, ErrorCode::Forbidden);
    }
    // Elsewhere she may.
    service::create(&store, &ana, CatalogKind::Domain, named("billing", None), id(3)).await.unwrap();
    let names: Vec<String> = store.entries().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["payments", "billing"]);
    assert_eq!(store.actions().len(), 2, "only the two creations are recorded");
}

#[tokio::test]
async fn a_misplaced_entry_is_refused_before_anything_is_asked_or_stored() {
    let (store, ana) = (MemoryCatalog::default(), Ana::allowed_everything());
    let refusals = [
        (CatalogKind::System, named("checkout", None), "a system needs parent_id"),
        (CatalogKind::Domain, named("payments", Some(id(9))), "a domain belongs to the organization"),
        (CatalogKind::Environment, named("prod", Some(id(9))), "an environment belongs"),
    ];
    for (kind, request, said) in refusals {
        let refused = service::create(&store, &ana, kind, request, id(2)).await.unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidInput);
        assert!(refused.message.starts_with(said) || refused.message.contains(said), "{}", refused.message);
    }
    // A parent that does not exist, by id: not found, nothing asked.
    let refused =
        service::create(&store, &ana, CatalogKind::System, named("checkout", Some(id(9))), id(2)).await;
    assert_eq!(refused.unwrap_err().code, ErrorCode::NotFound);
    assert_eq!((ana.asked(), store.entries().len(), store.actions().len()), (0, 0, 0));
}
