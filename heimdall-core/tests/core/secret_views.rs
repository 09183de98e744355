//! What people read of secrets and how a version is numbered
//! (`secrets::views`, `secrets::versions`) against in-memory stores: a
//! page never shows another member's personal secret nor what a policy
//! hides; holders leave a revoked Agent out; a version is numbered only
//! for a writer allowed there, with an Agent to hold it and no deletion
//! under way; the trail keeps to the environments the caller may read
//! and never shows a namesake's reads.

use heimdall_core::access::AccessLogEntry;
use heimdall_core::audit::AuditAction;
use heimdall_core::authz::Action;
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{CatalogId, SecretId};
use heimdall_core::secrets::certificates::{self, Signed};
use heimdall_core::secrets::versions::{self, Asked};
use heimdall_core::secrets::{service, views, NewSecret};
use heimdall_core::{ErrorCode, Sha256Hex};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::fakes::{entry, Ana, MemoryEnvironments, ANA};

const PROD: u128 = 21;
const DEV: u128 = 22;
const WEB: u128 = 23;

fn id(n: u128) -> SecretId {
    SecretId::from_uuid(Uuid::from_u128(n))
}

/// Environments prod and dev, a component `web`; secrets `api` (under
/// web), `db`, and Ana's personal `notes`; Ben's personal `diary`.
async fn world() -> MemoryEnvironments {
    let store = MemoryEnvironments::with_catalog(&[
        entry(PROD, CatalogKind::Environment, "prod", None),
        entry(DEV, CatalogKind::Environment, "dev", None),
        entry(WEB, CatalogKind::Component, "web", None),
    ]);
    let ana = Ana::allowed_everything();
    let named = |name: &str| NewSecret { name: name.into(), ..NewSecret::default() };
    service::create(&store.secrets, &ana, named("api"), &["web".into()], id(1)).await.unwrap();
    service::create(&store.secrets, &ana, named("db"), &[], id(2)).await.unwrap();
    let ben =
        Ana::allowed_everything().with_member(heimdall_core::ids::MemberId::from_uuid(Uuid::from_u128(2)));
    for (who, byte, name, n) in [(&ana, 1, "notes", 3), (&ben, 2, "diary", 4)] {
        let signed = Signed {
            sha256: Sha256Hex::of(&[byte]),
            spki_sha256: Sha256Hex::of(&[byte, byte]),
            not_after: OffsetDateTime::UNIX_EPOCH + time::Duration::days(1),
        };
        certificates::record_mine(&store.secrets, who, &signed).await.unwrap();
        let personal =
            NewSecret { personal: true, certificate_sha256: Some(Sha256Hex::of(&[byte])), ..named(name) };
        service::create(&store.secrets, who, personal, &[], id(n)).await.unwrap();
    }
    store
}

fn names(page: &[heimdall_core::secrets::Secret]) -> Vec<String> {
    page.iter().map(|s| s.name.clone()).collect()
}

/// The adapter can sign grants.
fn ready() -> Result<(), heimdall_core::ApiError> {
    Ok(())
}

#[tokio::test]
async fn a_page_leaves_out_others_personal_secrets_and_what_a_policy_hides() {
    let store = world().await;
    let all = views::list(&store, &Ana::allowed_everything(), 100, None).await.unwrap();
    assert_eq!(all.items.len(), 3, "api, db and Ana's notes: never Ben's diary ({:?})", names(&all.items));
    assert!(all.next.is_none());

    let web = CatalogId::from_uuid(Uuid::from_u128(WEB));
    let hidden = views::list(&store, &Ana::refused(Action::SecretRead, Some(web)), 100, None).await.unwrap();
    assert!(!names(&hidden.items).contains(&"api".to_owned()), "the secret under web is hidden");
    assert_eq!(hidden.items.len(), 2);

    let first = views::list(&store, &Ana::allowed_everything(), 1, None).await.unwrap();
    assert_eq!(first.items.len(), 1);
    let rest = views::list(&store, &Ana::allowed_everything(), 100, first.next).await.unwrap();
    assert_eq!(rest.items.len(), 2, "the next page starts after the first");

    let refused = views::list(&store, &Ana::refused(Action::SecretRead, None), 100, None).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
}

#[tokio::test]
async fn holders_are_the_assigned_agents_a_revoked_one_left_out() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    let edge = store.agents.enrolled(1, "edge");
    store.agents.enrolled(2, "old");
    service::assign(&store, &ana, "prod", "edge").await.unwrap();
    service::assign(&store, &ana, "prod", "old").await.unwrap();
    heimdall_core::agents::service::revoke(&store, &ana, "old").await.unwrap();

    let assigned = views::holders(&store, &ana, "db", "prod").await.unwrap();
    assert_eq!(assigned.len(), 2);
    let holders: Vec<_> = assigned.iter().filter_map(|a| a.holder.as_ref()).map(|h| h.agent_id).collect();
    assert_eq!(holders, [edge.id], "a revoked Agent serves no read");

    let refused = views::holders(&store, &Ana::refused_in(Action::SecretRead, "prod"), "db", "prod").await;
    assert_eq!(refused.unwrap_err().code, ErrorCode::Forbidden);
    let hidden = views::holders(&store, &ana, "diary", "prod").await.unwrap_err();
    assert_eq!(hidden.code, ErrorCode::NotFound, "another member's personal secret does not exist for her");
}

#[tokio::test]
async fn a_version_is_numbered_only_with_a_holder_for_a_writer_allowed_there() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    let asked = Asked { environment: "prod", certificate_sha256: None, keep_previous: None };
    let none = versions::number(&store, &ana, ("db", asked), ready).await.unwrap_err();
    assert_eq!(none.code, ErrorCode::NoAgent, "no Agent holds prod yet");

    let edge = store.agents.enrolled(1, "edge");
    service::assign(&store, &ana, "prod", "edge").await.unwrap();
    let first = versions::number(&store, &ana, ("db", asked), ready).await.unwrap();
    assert_eq!((first.version.version, first.environment.name.as_str()), (1, "prod"));
    assert_eq!(first.holders.iter().map(|h| h.agent_id).collect::<Vec<_>>(), [edge.id]);
    assert_eq!(first.version.created_by, "ana@example.com");
    let kept = Asked { keep_previous: Some("30m"), ..asked };
    let second = versions::number(&store, &ana, ("db", kept), ready).await.unwrap();
    assert_eq!((second.version.version, second.version.keep_previous_seconds), (2, 1800));

    // Without a signer nothing is numbered; a caller refused hears so first.
    let no_ca = || Err(heimdall_core::ApiError::new(ErrorCode::Unavailable, "no CA"));
    let unsigned = versions::number(&store, &ana, ("db", asked), no_ca).await.unwrap_err();
    assert_eq!(unsigned.code, ErrorCode::Unavailable);
    let refused_first = Ana::refused_in(Action::SecretWrite, "prod");
    let first_refusal = versions::number(&store, &refused_first, ("db", asked), no_ca).await.unwrap_err();
    assert_eq!(first_refusal.code, ErrorCode::Forbidden);
    let bo = Ana::refused_in(Action::SecretWrite, "prod");
    assert_eq!(
        versions::number(&store, &bo, ("db", asked), ready).await.unwrap_err().code,
        ErrorCode::Forbidden
    );
    let bad = Asked { keep_previous: Some("forever"), ..asked };
    assert_eq!(
        versions::number(&store, &ana, ("db", bad), ready).await.unwrap_err().code,
        ErrorCode::InvalidInput
    );

    service::delete(&store, &ana, "db", Some("prod"), time::Duration::days(1)).await.unwrap();
    let deleting = versions::number(&store, &ana, ("db", asked), ready).await.unwrap_err();
    assert_eq!(deleting.code, ErrorCode::Conflict, "a version would be deleted as it lands");
    let numbered = store.secrets.versions.lock().unwrap().len();
    assert_eq!(numbered, 2, "nothing refused was numbered");
    let versioned = store.actions().iter().filter(|a| **a == AuditAction::SecretVersionCreated).count();
    assert_eq!(versioned, 2);
}

fn read(environment: &str, version: i64, accessor: &str) -> AccessLogEntry {
    AccessLogEntry {
        accessed_at: OffsetDateTime::UNIX_EPOCH,
        accessor: accessor.into(),
        environment: environment.into(),
        version,
        served_by: "edge".into(),
        served_by_id: heimdall_core::ids::AgentId::from_uuid(Uuid::from_u128(1)),
        from: "127.0.0.1".into(),
        reads: 1,
    }
}

#[tokio::test]
async fn the_trail_keeps_to_the_environments_allowed_and_pages() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    store.trail.lock().unwrap().extend([
        read("prod", 1, "ana"),
        read("dev", 1, "ana"),
        read("prod", 1, "ben"),
    ]);

    let all = views::trail(&store, &ana, "db", None, 100, None).await.unwrap();
    assert_eq!(all.items.len(), 3);
    let no_prod = Ana::refused_in(Action::SecretAccessLog, "prod");
    let dev_only = views::trail(&store, &no_prod, "db", None, 100, None).await.unwrap();
    assert_eq!(dev_only.items.iter().map(|e| e.environment.as_str()).collect::<Vec<_>>(), ["dev"]);
    let asked = views::trail(&store, &no_prod, "db", Some("prod"), 100, None).await.unwrap_err();
    assert_eq!(asked.code, ErrorCode::Forbidden, "asking for prod by name is refused, not emptied");

    let first = views::trail(&store, &ana, "db", None, 2, None).await.unwrap();
    assert_eq!(first.items.len(), 2);
    assert!(first.next.is_some(), "a third read follows");
    let hidden = views::trail(&store, &ana, "diary", None, 100, None).await.unwrap_err();
    assert_eq!(hidden.code, ErrorCode::NotFound);
}

#[tokio::test]
async fn a_secret_shows_its_versions_only_where_the_caller_may_read_them() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    store.agents.enrolled(1, "edge");
    service::assign(&store, &ana, "prod", "edge").await.unwrap();
    service::assign(&store, &ana, "dev", "edge").await.unwrap();
    let asked = |environment| Asked { environment, certificate_sha256: None, keep_previous: None };
    versions::number(&store, &ana, ("db", asked("prod")), ready).await.unwrap();
    versions::number(&store, &ana, ("db", asked("dev")), ready).await.unwrap();

    let shown = views::show(&store, &ana, "db").await.unwrap();
    assert_eq!(shown.versions.len(), 2);
    let no_prod = Ana::refused_in(Action::SecretRead, "prod");
    let dev = views::show(&store, &no_prod, "db").await.unwrap();
    let prod = CatalogId::from_uuid(Uuid::from_u128(PROD));
    assert!(dev.versions.iter().all(|v| v.environment_id != prod), "prod's version is hidden");
    assert_eq!(dev.versions.len(), 1);
    let mine = views::show(&store, &ana, "notes").await.unwrap();
    assert_eq!(mine.secret.owner_id, Some(ANA));
}
