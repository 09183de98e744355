//! The caller's own tokens (`token::service`) against an in-memory store:
//! a member lists and revokes only her own, a name is checked before
//! anything is stored, and revoking twice is harmless.

use heimdall_core::audit::AuditAction;
use heimdall_core::ids::{MemberId, TokenId};
use heimdall_core::ports::NewToken;
use heimdall_core::token::{service, TokenHash};
use heimdall_core::ErrorCode;
use uuid::Uuid;

use crate::fakes::{Ana, MemoryTokens};

fn record(n: u128, name: &str) -> NewToken {
    NewToken {
        id: TokenId::from_uuid(Uuid::from_u128(n)),
        name: name.into(),
        hash: TokenHash::of(name),
        expires_at: None,
    }
}

#[tokio::test]
async fn a_member_lists_and_revokes_her_own_tokens_only() {
    let (store, ana) = (MemoryTokens::default(), Ana::allowed_everything());
    let bo = Ana::allowed_everything().with_member(MemberId::from_uuid(Uuid::from_u128(2)));
    let ci = service::create(&store, &ana, &record(1, "ci")).await.unwrap();
    service::create(&store, &bo, &record(2, "laptop")).await.unwrap();
    let names = |tokens: Vec<heimdall_core::domain::TokenInfo>| {
        tokens.into_iter().map(|t| t.name).collect::<Vec<_>>()
    };
    assert_eq!(names(service::list(&store, &ana).await.unwrap()), ["ci"]);
    assert_eq!(names(service::list(&store, &bo).await.unwrap()), ["laptop"]);

    // Bo cannot revoke Ana's token: for him it does not exist.
    let not_his = service::revoke(&store, &bo, &ci.id.to_string()).await.unwrap_err();
    assert_eq!(not_his.code, ErrorCode::NotFound);
    assert!(service::list(&store, &ana).await.unwrap()[0].revoked_at.is_none());

    let revoked = service::revoke(&store, &ana, &ci.id.to_string()).await.unwrap();
    assert!(revoked.revoked_at.is_some());
    assert_eq!(
        service::revoke(&store, &ana, &ci.id.to_string()).await.unwrap().revoked_at,
        revoked.revoked_at
    );
    assert_eq!(
        service::revoke(&store, &ana, "ci").await.unwrap_err().code,
        ErrorCode::NotFound,
        "by id only"
    );
    let actions = [
        AuditAction::TokenCreated,
        AuditAction::TokenCreated,
        AuditAction::TokenRevoked,
        AuditAction::TokenRevoked,
    ];
    assert_eq!(store.actions(), actions);
}

#[tokio::test]
async fn a_token_without_a_usable_name_is_not_stored() {
    let (store, ana) = (MemoryTokens::default(), Ana::allowed_everything());
    for name in ["", "   ", &"x".repeat(101)] {
        let refused = service::create(&store, &ana, &record(1, name)).await.unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidInput, "{name:?}");
    }
    assert!(service::list(&store, &ana).await.unwrap().is_empty());
    assert!(store.actions().is_empty());
}
