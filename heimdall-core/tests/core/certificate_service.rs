//! The certificates' use cases (`secrets::certificates`) against an
//! in-memory store: a member without `certificate.read` sees only her own,
//! revokes her own without asking and no one else's without
//! `certificate.revoke`; issuing records the certificate under her member
//! id, with its event.

use heimdall_core::audit::AuditAction;
use heimdall_core::authz::Action;
use heimdall_core::ids::MemberId;
use heimdall_core::secrets::certificates::{self, Signed};
use heimdall_core::secrets::MemberCertificate;
use heimdall_core::{ErrorCode, Sha256Hex};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::fakes::{Ana, MemorySecrets, ANA, ORG};

const BEN: MemberId = MemberId::from_uuid(Uuid::from_u128(2));

fn digest(byte: char) -> Sha256Hex {
    Sha256Hex::parse_field("a digest", &byte.to_string().repeat(64)).unwrap()
}

fn signed(byte: char) -> Signed {
    Signed {
        sha256: digest(byte),
        spki_sha256: digest('f'),
        not_after: OffsetDateTime::UNIX_EPOCH + Duration::days(30),
    }
}

/// Ben's certificate `b…`, stored as the CA's record of it.
fn with_bens() -> MemorySecrets {
    let store = MemorySecrets::default();
    store.certificates.lock().unwrap().push(MemberCertificate {
        sha256: digest('b'),
        org_id: ORG,
        member_id: BEN,
        spki_sha256: None,
        created_at: OffsetDateTime::UNIX_EPOCH,
        not_after: OffsetDateTime::UNIX_EPOCH + Duration::days(30),
    });
    store
}

#[tokio::test]
async fn issuing_records_the_certificate_under_the_callers_member_id() {
    let (store, ana) = (MemorySecrets::default(), Ana::allowed_everything());
    let record = certificates::record_mine(&store, &ana, &signed('a')).await.unwrap();
    assert_eq!((record.member_id, record.org_id), (ANA, ORG));
    assert_eq!(record.spki_sha256, Some(digest('f')));
    assert_eq!(store.certificates.lock().unwrap().len(), 1);
    assert_eq!(store.actions(), [AuditAction::MemberCertificateIssued]);
    assert_eq!(ana.asked(), 0, "any member may have a certificate of her own");
}

#[tokio::test]
async fn without_certificate_read_a_member_lists_only_her_own() {
    let store = with_bens();
    let ana = Ana::refused(Action::CertificateRead, None);
    certificates::record_mine(&store, &ana, &signed('a')).await.unwrap();
    let seen = certificates::list(&store, &ana).await.unwrap();
    assert_eq!(seen.iter().map(|c| c.sha256.clone()).collect::<Vec<_>>(), [digest('a')]);
    let everyone = certificates::list(&store, &Ana::allowed_everything()).await.unwrap();
    assert_eq!(everyone.len(), 2);
}

#[tokio::test]
async fn a_member_revokes_her_own_but_anothers_only_with_certificate_revoke() {
    let store = with_bens();
    let ana = Ana::refused(Action::CertificateRevoke, None);
    certificates::record_mine(&store, &ana, &signed('a')).await.unwrap();

    let refused = certificates::revoke(&store, &ana, &digest('b')).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
    let all = certificates::list(&store, &Ana::allowed_everything()).await.unwrap();
    assert!(all.iter().all(|c| c.revoked_at.is_none()), "Ben's certificate stays valid");
    assert_eq!(store.actions(), [AuditAction::MemberCertificateIssued], "a refusal records nothing");

    let own = certificates::revoke(&store, &ana, &digest('a')).await.unwrap();
    assert!(own.revoked_at.is_some());
    let bens = certificates::revoke(&store, &Ana::allowed_everything(), &digest('b')).await.unwrap();
    assert!(bens.revoked_at.is_some());
    let unknown = certificates::revoke(&store, &ana, &digest('c')).await.unwrap_err();
    assert_eq!(unknown.code, ErrorCode::NotFound);
}
