//! The secrets' record use cases (`secrets::service`) against in-memory
//! stores: a secret under Components named by id or name, a move allowed
//! where it lands as well as where it is, a personal secret bound to its
//! owner's member id and certificate key and hidden from everyone else,
//! and a refusal that stores and records nothing.

use heimdall_core::audit::AuditAction;
use heimdall_core::authz::Action;
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{CatalogId, MemberId, SecretId};
use heimdall_core::secrets::service::{self, Change};
use heimdall_core::secrets::{MemberCertificate, NewSecret};
use heimdall_core::{ErrorCode, Sha256Hex};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::fakes::{entry, Ana, MemorySecrets, ANA, ORG};

fn id(n: u128) -> SecretId {
    SecretId::from_uuid(Uuid::from_u128(n))
}

/// A domain `shop`, its system `store`, and components `web` and `billing` in it.
fn shop() -> (MemorySecrets, CatalogId, CatalogId) {
    let domain = entry(10, CatalogKind::Domain, "shop", None);
    let system = entry(11, CatalogKind::System, "store", Some(domain.id));
    let web = entry(12, CatalogKind::Component, "web", Some(system.id));
    let billing = entry(13, CatalogKind::Component, "billing", Some(system.id));
    let (web_id, billing_id) = (web.id, billing.id);
    (MemorySecrets::with_catalog(&[domain, system, web, billing]), web_id, billing_id)
}

fn named(name: &str) -> NewSecret {
    NewSecret { name: name.into(), ..NewSecret::default() }
}

#[tokio::test]
async fn a_secret_is_created_under_components_and_moved_only_where_the_caller_may_write() {
    let ((store, web, billing), ana) = (shop(), Ana::allowed_everything());
    let created =
        service::create(&store, &ana, named("db-password"), &["web".into(), web.to_string()], id(1))
            .await
            .unwrap();
    assert_eq!(created.components, [web], "a Component named twice is kept once");
    assert_eq!((created.secret_type.as_str(), created.created_by.as_str()), ("generic", "ana@example.com"));
    assert_eq!(service::resolve(&store, &ana, "db-password").await.unwrap().id, created.id);

    // Bo may write under web but not under billing: the move is refused where it lands.
    let bo = Ana::refused(Action::SecretWrite, Some(billing));
    let to_billing = Change { components: Some(vec!["billing".into()]), ..Change::default() };
    let refused = service::update(&store, &bo, "db-password", to_billing.clone()).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert_eq!(store.secrets()[0].components, [web], "a refused move changes nothing");
    // A change that stays under web is his to make.
    let described = Change { description: Some("the primary".into()), ..Change::default() };
    assert_eq!(
        service::update(&store, &bo, "db-password", described).await.unwrap().description,
        "the primary"
    );

    let moved = service::update(&store, &ana, &created.id.to_string(), to_billing).await.unwrap();
    assert_eq!(moved.components, [billing]);
    let unknown = Change { components: Some(vec!["nowhere".into()]), ..Change::default() };
    assert_eq!(
        service::update(&store, &ana, "db-password", unknown).await.unwrap_err().code,
        ErrorCode::NotFound
    );
    let actions = [AuditAction::SecretCreated, AuditAction::SecretUpdated, AuditAction::SecretUpdated];
    assert_eq!(store.actions(), actions);
}

fn certificate(member: MemberId, n: u8, not_after: OffsetDateTime) -> MemberCertificate {
    MemberCertificate {
        sha256: Sha256Hex::of(&[n]),
        org_id: ORG,
        member_id: member,
        spki_sha256: Some(Sha256Hex::of(&[n, n])),
        created_at: OffsetDateTime::UNIX_EPOCH,
        not_after,
    }
}

#[tokio::test]
async fn a_personal_secret_is_bound_to_its_owner_and_exists_for_no_one_else() {
    let ((store, _, _), ana) = (shop(), Ana::allowed_everything());
    let tomorrow = OffsetDateTime::UNIX_EPOCH + Duration::days(1);
    store.certificates.lock().unwrap().push(certificate(ANA, 1, tomorrow));
    service::create(&store, &ana, named("token"), &[], id(1)).await.unwrap();
    let personal =
        NewSecret { personal: true, certificate_sha256: Some(Sha256Hex::of(&[1])), ..named("token") };
    let mine = service::create(&store, &ana, personal, &[], id(2)).await.unwrap();
    assert_eq!((mine.owner_id, mine.owner_keys.clone()), (Some(ANA), vec![Sha256Hex::of(&[1, 1])]));

    // Her own comes first by name; the organization's stays reachable by id.
    assert_eq!(service::resolve(&store, &ana, "token").await.unwrap().id, mine.id);
    assert_eq!(service::resolve(&store, &ana, &id(1).to_string()).await.unwrap().owner_id, None);
    // Anyone else, an owner too, finds the organization's by name and hers not at all.
    let cy = Ana::allowed_everything().with_member(MemberId::from_uuid(Uuid::from_u128(9)));
    assert_eq!(service::resolve(&store, &cy, "token").await.unwrap().id, id(1));
    let by_id = service::resolve(&store, &cy, &mine.id.to_string()).await.unwrap_err();
    assert_eq!(by_id.code, ErrorCode::NotFound);
    let change = Change { description: Some("mine now".into()), ..Change::default() };
    assert_eq!(
        service::update(&store, &cy, &mine.id.to_string(), change).await.unwrap_err().code,
        ErrorCode::NotFound
    );
}

#[tokio::test]
async fn a_personal_secret_needs_a_current_certificate_of_its_creator() {
    let ((store, _, _), ana) = (shop(), Ana::allowed_everything());
    let cy = MemberId::from_uuid(Uuid::from_u128(9));
    let tomorrow = OffsetDateTime::UNIX_EPOCH + Duration::days(1);
    store.certificates.lock().unwrap().extend([
        certificate(cy, 2, tomorrow),
        certificate(ANA, 3, OffsetDateTime::UNIX_EPOCH - Duration::days(1)),
    ]);
    for (n, why) in [(2, "another member's"), (3, "expired"), (4, "unknown")] {
        let personal =
            NewSecret { personal: true, certificate_sha256: Some(Sha256Hex::of(&[n])), ..named("token") };
        let refused = service::create(&store, &ana, personal, &[], id(1)).await.unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidInput, "{why}");
    }
    // Without a certificate it is refused before anything is asked or loaded.
    let asked = ana.asked();
    let bare = NewSecret { personal: true, ..named("token") };
    assert_eq!(
        service::create(&store, &ana, bare, &[], id(1)).await.unwrap_err().code,
        ErrorCode::InvalidInput
    );
    assert_eq!(ana.asked(), asked);
    assert!(store.secrets().is_empty());
    assert!(store.actions().is_empty());
}

#[tokio::test]
async fn a_refusal_by_the_policies_or_a_name_taken_stores_nothing() {
    let ((store, web, _), ana) = (shop(), Ana::allowed_everything());
    let refused = Ana::refused(Action::SecretWrite, Some(web));
    let denied =
        service::create(&store, &refused, named("api-key"), &["web".into()], id(1)).await.unwrap_err();
    assert_eq!(denied.code, ErrorCode::Forbidden);
    service::create(&store, &ana, named("api-key"), &[], id(2)).await.unwrap();
    let taken = service::create(&store, &ana, named("api-key"), &[], id(3)).await.unwrap_err();
    assert_eq!(taken.code, ErrorCode::AlreadyExists);
    assert_eq!(store.secrets().len(), 1);
    assert_eq!(store.actions(), [AuditAction::SecretCreated]);
}
