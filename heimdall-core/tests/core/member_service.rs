//! The members' use cases (`members::service`) against an in-memory
//! store: addresses normalized and unique, a member found by id or by
//! email in any case, only an owner touches the owner role, the last
//! owner stays, and a refusal stores and records nothing.

use heimdall_core::audit::AuditAction;
use heimdall_core::authz::Action;
use heimdall_core::domain::{Member, Role};
use heimdall_core::ids::{MemberId, TokenId};
use heimdall_core::members::service;
use heimdall_core::ports::NewToken;
use heimdall_core::token::TokenHash;
use heimdall_core::ErrorCode;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::fakes::{Ana, MemoryMembers, ORG};

fn id(n: u128) -> MemberId {
    MemberId::from_uuid(Uuid::from_u128(n))
}

fn token(name: &str) -> NewToken {
    NewToken {
        id: TokenId::from_uuid(Uuid::new_v4()),
        name: name.into(),
        hash: TokenHash::of(name),
        expires_at: None,
    }
}

fn ana_the_owner() -> Member {
    Member {
        id: id(1),
        org_id: ORG,
        email: "ana@example.com".into(),
        role: Role::Owner,
        created_at: OffsetDateTime::UNIX_EPOCH,
    }
}

#[tokio::test]
async fn a_member_is_added_found_by_id_or_any_case_of_their_address_changed_and_removed() {
    let (store, ana) = (MemoryMembers::with(&[ana_the_owner()]), Ana::allowed_everything());
    let bo =
        service::add(&store, &ana, id(2), " Bo@Example.COM ", Role::Member, &token("initial")).await.unwrap();
    assert_eq!((bo.email.as_str(), bo.role), ("bo@example.com", Role::Member));
    assert_eq!(store.tokens_of(bo.id), ["initial"]);
    assert_eq!(service::show(&store, &ana, "BO@example.com").await.unwrap().id, bo.id);
    assert_eq!(service::show(&store, &ana, &bo.id.to_string()).await.unwrap().email, "bo@example.com");
    let again = service::add(&store, &ana, id(3), "bo@example.com", Role::Admin, &token("x")).await;
    assert_eq!(again.unwrap_err().code, ErrorCode::AlreadyExists, "one member per address");

    let admin = service::change_role(&store, &ana, "bo@example.com", Role::Admin).await.unwrap();
    assert_eq!(admin.role, Role::Admin);
    service::remove(&store, &ana, "bo@example.com").await.unwrap();
    assert!(store.tokens_of(bo.id).is_empty(), "a removal revokes the member's tokens");
    let emails: Vec<String> =
        service::list(&store, &ana).await.unwrap().into_iter().map(|m| m.email).collect();
    assert_eq!(emails, ["ana@example.com"]);
    let actions = [AuditAction::MemberAdded, AuditAction::MemberRoleChanged, AuditAction::MemberRemoved];
    assert_eq!(store.actions(), actions);
}

#[tokio::test]
async fn the_last_owner_can_be_neither_demoted_nor_removed() {
    let (store, ana) = (MemoryMembers::with(&[ana_the_owner()]), Ana::allowed_everything());
    let demoted = service::change_role(&store, &ana, "ana@example.com", Role::Admin).await.unwrap_err();
    assert_eq!(demoted.code, ErrorCode::LastOwner);
    let removed = service::remove(&store, &ana, "ana@example.com").await.unwrap_err();
    assert_eq!(removed.code, ErrorCode::LastOwner);
    assert_eq!(store.members(), [ana_the_owner()]);
    assert!(store.actions().is_empty());

    // With a second owner, the first may step down.
    service::add(&store, &ana, id(2), "cy@example.com", Role::Owner, &token("initial")).await.unwrap();
    let stepped_down = service::change_role(&store, &ana, "ana@example.com", Role::Member).await.unwrap();
    assert_eq!(stepped_down.role, Role::Member);
}

#[tokio::test]
async fn only_an_owner_grants_changes_or_removes_the_owner_role() {
    let store = MemoryMembers::with(&[ana_the_owner()]);
    let admin = Ana::allowed_everything().with_role(Role::Admin);
    let grant = service::add(&store, &admin, id(2), "cy@example.com", Role::Owner, &token("t")).await;
    assert_eq!(grant.unwrap_err().code, ErrorCode::Forbidden);
    let demote = service::change_role(&store, &admin, "ana@example.com", Role::Member).await;
    assert_eq!(demote.unwrap_err().code, ErrorCode::Forbidden);
    let remove = service::remove(&store, &admin, "ana@example.com").await;
    assert_eq!(remove.unwrap_err().code, ErrorCode::Forbidden);
    // An admin adds members and admins.
    service::add(&store, &admin, id(3), "dee@example.com", Role::Admin, &token("t")).await.unwrap();
    assert_eq!(store.actions(), [AuditAction::MemberAdded]);
    assert_eq!(store.members().len(), 2);
}

#[tokio::test]
async fn a_refusal_by_the_policies_or_a_malformed_address_stores_nothing() {
    let store = MemoryMembers::with(&[ana_the_owner()]);
    let refused = Ana::refused(Action::MemberWrite, None);
    let added = service::add(&store, &refused, id(2), "bo@example.com", Role::Member, &token("t")).await;
    assert_eq!(added.unwrap_err().code, ErrorCode::Forbidden);
    let changed = service::change_role(&store, &refused, "ana@example.com", Role::Owner).await;
    assert_eq!(changed.unwrap_err().code, ErrorCode::Forbidden);
    assert_eq!(store.members(), [ana_the_owner()]);
    assert!(store.actions().is_empty());

    // A malformed address is the same answer for everyone: the policies are not asked.
    let ana = Ana::allowed_everything();
    let malformed = service::add(&store, &ana, id(2), "not an address", Role::Member, &token("t")).await;
    assert_eq!(malformed.unwrap_err().code, ErrorCode::InvalidInput);
    assert_eq!(ana.asked(), 0);
    // A key that is neither an id nor an address names no member.
    assert_eq!(service::show(&store, &ana, "nobody").await.unwrap_err().code, ErrorCode::NotFound);
}
