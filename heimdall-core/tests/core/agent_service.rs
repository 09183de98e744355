//! Agents' use cases as people run them (`agents::service`) against an
//! in-memory store: one rule for which Agent a key means (a revoked
//! Agent's name no longer names it for new grants, its id always does), a
//! revocation asked of the policies on that Agent, program allowances
//! replaced per place, names never the API's own, and a refusal that
//! stores and records nothing.

use heimdall_core::agents::service;
use heimdall_core::agents::ByName;
use heimdall_core::audit::AuditAction;
use heimdall_core::authz::{Action, TargetKind};
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::RegistrationId;
use heimdall_core::program::Verb;
use heimdall_core::token::TokenHash;
use heimdall_core::ErrorCode;
use uuid::Uuid;

use crate::fakes::{entry, Ana, MemoryAgents, ORG};

fn world() -> MemoryAgents {
    MemoryAgents::with_catalog(&[entry(20, CatalogKind::Environment, "prod", None)])
}

#[tokio::test]
async fn a_registration_is_stored_by_its_hash_and_a_name_that_is_not_one_is_refused() {
    let (store, ana) = (world(), Ana::allowed_everything());
    let id = RegistrationId::from_uuid(Uuid::from_u128(1));
    let made =
        service::create_registration(&store, &ana, (id, "edge-1"), TokenHash::of("hmd_x")).await.unwrap();
    assert_eq!((made.name.as_str(), made.hash.clone()), ("edge-1", TokenHash::of("hmd_x")));
    assert!(made.expires_at > made.created_at);
    let bad = service::create_registration(&store, &ana, (id, "no spaces"), TokenHash::of("hmd_y")).await;
    assert_eq!(bad.unwrap_err().code, ErrorCode::InvalidInput);
    let refused = Ana::refused(Action::AgentManage, None);
    let denied = service::create_registration(&store, &refused, (id, "edge-2"), TokenHash::of("hmd_z")).await;
    assert_eq!(denied.unwrap_err().code, ErrorCode::Forbidden);
    assert_eq!(store.registrations().len(), 1);
    assert_eq!(store.actions(), [AuditAction::AgentRegistrationCreated]);
}

#[tokio::test]
async fn a_revoked_agent_is_named_by_its_id_and_its_name_passes_to_its_successor() {
    let (store, ana) = (world(), Ana::allowed_everything());
    let old = store.enrolled(1, "edge");
    let revoked = service::revoke(&store, &ana, "edge").await.unwrap();
    assert!(revoked.revoked_at.is_some());
    let again = service::revoke(&store, &ana, "edge").await.unwrap_err();
    assert_eq!(again.code, ErrorCode::NotFound, "a revoked Agent's name names no Agent to revoke");
    // Its name still reaches it where a revoked Agent is what one means.
    assert_eq!(service::resolve(&store, ORG, "edge", ByName::OrLastRevoked).await.unwrap().id, old.id);
    let new = store.enrolled(2, "edge");
    assert_eq!(service::resolve(&store, ORG, "edge", ByName::OrLastRevoked).await.unwrap().id, new.id);
    assert_eq!(service::resolve(&store, ORG, &old.id.to_string(), ByName::Active).await.unwrap().id, old.id);
    assert_eq!(service::list(&store, &ana).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_revocation_is_asked_of_the_policies_on_that_agent() {
    let (store, ana) = (world(), Ana::allowed_everything());
    let edge = store.enrolled(1, "edge");
    service::revoke(&store, &ana, &edge.id.to_string()).await.unwrap();
    let asked = ana.asked.lock().unwrap().clone();
    assert!(asked.iter().any(|(a, t)| *a == Action::AgentManage
        && t.kind == TargetKind::Agent
        && t.id == edge.id.to_string()));
    let other = store.enrolled(2, "other");
    let refused = Ana::refused(Action::AgentManage, None);
    assert_eq!(service::revoke(&store, &refused, "other").await.unwrap_err().code, ErrorCode::Forbidden);
    assert!(service::resolve(&store, ORG, &other.id.to_string(), ByName::Active)
        .await
        .unwrap()
        .revoked_at
        .is_none());
}

#[tokio::test]
async fn program_allowances_are_replaced_per_place_and_withdrawn() {
    let (store, ana) = (world(), Ana::allowed_everything());
    store.enrolled(1, "edge");
    let first = service::allow_programs(&store, &ana, "edge", ("prod", "app/*".into()), vec![Verb::Write])
        .await
        .unwrap();
    assert_eq!(first.verbs, [Verb::Write]);
    let both = vec![Verb::Write, Verb::Delete];
    service::allow_programs(&store, &ana, "edge", ("prod", "app/*".into()), both.clone()).await.unwrap();
    let allowed = service::allowances(&store, &ana, "edge").await.unwrap();
    assert_eq!(allowed.iter().map(|a| a.verbs.clone()).collect::<Vec<_>>(), [both]);
    let nowhere =
        service::allow_programs(&store, &ana, "edge", ("staging", "app/*".into()), vec![Verb::Write]).await;
    assert_eq!(nowhere.unwrap_err().code, ErrorCode::NotFound);
    service::disallow_programs(&store, &ana, "edge", ("prod", "app/*")).await.unwrap();
    assert!(service::allowances(&store, &ana, "edge").await.unwrap().is_empty());
    let gone = service::disallow_programs(&store, &ana, "edge", ("prod", "app/*")).await.unwrap_err();
    assert_eq!(gone.code, ErrorCode::NotFound);
}

#[tokio::test]
async fn an_agent_is_never_approved_one_of_the_apis_own_names() {
    let (store, ana) = (world(), Ana::allowed_everything());
    store.enrolled(1, "edge");
    let api = ["api.example.com".to_owned()];
    let approved = service::allow_name(&store, &ana, "edge", "Edge.Example.com", &api).await.unwrap();
    assert_eq!(approved.name, "edge.example.com");
    let refused = service::allow_name(&store, &ana, "edge", "api.example.com", &api).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden, "{}", refused.message);
    assert_eq!(store.actions(), [AuditAction::AgentNameAllowed]);
}

#[tokio::test]
async fn a_forgotten_agent_holds_up_no_delete_once_its_owner_confirms_its_store_is_gone() {
    let (store, ana) = (crate::fakes::MemoryEnvironments::default(), Ana::allowed_everything());
    let edge = store.agents.enrolled(1, "edge");
    store.holdings.lock().unwrap().push(heimdall_core::ports::Holding {
        agent_id: edge.id,
        agent: "edge".into(),
        secret: "db".into(),
        environment: "prod".into(),
        version: 1,
        deactivated: false,
        reported_at: time::OffsetDateTime::UNIX_EPOCH,
        held_since: None,
        agent_revoked: true,
        agent_last_seen_at: None,
    });
    let unconfirmed = service::forget(&store, &ana, "edge", false).await.unwrap_err();
    assert_eq!(unconfirmed.code, ErrorCode::InvalidInput);
    assert_eq!(store.holdings.lock().unwrap().len(), 1);
    let (forgotten, _) = service::forget(&store, &ana, "edge", true).await.unwrap();
    assert_eq!(forgotten.id, edge.id);
    assert!(store.holdings.lock().unwrap().is_empty(), "what it held no longer counts");
    assert_eq!(store.actions(), [AuditAction::AgentForgotten]);
}

#[tokio::test]
async fn a_withdrawn_name_revokes_the_certificates_that_carry_it() {
    let (store, ana) = (crate::fakes::MemoryEnvironments::default(), Ana::allowed_everything());
    let edge = store.agents.enrolled(1, "edge");
    service::allow_name(&store, &ana, "edge", "edge.example.com", &[]).await.unwrap();
    service::allow_name(&store, &ana, "edge", "other.example.com", &[]).await.unwrap();
    let cert = |n: u8, names: &[&str]| heimdall_core::secrets::AgentCertificate {
        sha256: heimdall_core::Sha256Hex::of(&[n]),
        org_id: ORG,
        agent_id: edge.id,
        names: names.iter().map(|n| (*n).to_owned()).collect(),
        created_at: time::OffsetDateTime::UNIX_EPOCH,
        not_after: time::OffsetDateTime::UNIX_EPOCH + time::Duration::days(30),
    };
    store
        .secrets
        .agent_certificates
        .lock()
        .unwrap()
        .extend([cert(1, &["edge.example.com", "other.example.com"]), cert(2, &["other.example.com"])]);
    service::disallow_name(&store, &ana, "edge", "EDGE.example.com").await.unwrap();
    let now = time::OffsetDateTime::UNIX_EPOCH;
    use heimdall_core::ports::{AgentRecordStore, CertificateStore};
    let active = store.active_agent_certificates(ORG, now).await.unwrap();
    assert_eq!(
        active.iter().map(|c| c.sha256.clone()).collect::<Vec<_>>(),
        [heimdall_core::Sha256Hex::of(&[2])]
    );
    let names = store.agent_names(ORG, edge.id).await.unwrap();
    assert_eq!(names.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["other.example.com"]);
    let again = service::disallow_name(&store, &ana, "edge", "edge.example.com").await.unwrap_err();
    assert_eq!(again.code, ErrorCode::NotFound);
}

#[tokio::test]
async fn a_local_api_certificate_names_only_what_an_owner_approved_and_a_refusal_is_recorded() {
    use heimdall_core::server_names::service as local_names;
    let (store, ana) = (crate::fakes::MemoryEnvironments::default(), Ana::allowed_everything());
    let edge = store.agents.enrolled(1, "edge");
    service::allow_name(&store, &ana, "edge", "edge.example.com", &[]).await.unwrap();
    let clerk = crate::fakes::Clerk(time::OffsetDateTime::UNIX_EPOCH);
    let api = ["api.example.com".to_owned()];

    let asked = ["edge.example.com".to_owned(), "localhost".to_owned()];
    let names = local_names::signable(&store, &clerk, &edge, (&asked, &api)).await.unwrap();
    assert_eq!(names, asked);
    for refused in ["other.example.com", "api.example.com"] {
        let asked = [refused.to_owned()];
        let error = local_names::signable(&store, &clerk, &edge, (&asked, &api)).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::Forbidden, "{refused}");
    }
    let refusals = store.actions().iter().filter(|a| **a == AuditAction::AgentCertificateRefused).count();
    assert_eq!(refusals, 2, "each refusal is on the audit feed");

    let end = time::OffsetDateTime::UNIX_EPOCH + time::Duration::days(30);
    let digest = heimdall_core::Sha256Hex::of(b"local api");
    let record =
        local_names::record_issued(&store, &clerk, &edge, names, (digest.clone(), end)).await.unwrap();
    assert_eq!((record.agent_id, record.sha256.clone()), (edge.id, digest));
    use heimdall_core::ports::CertificateStore;
    assert_eq!(
        store.active_agent_certificates(ORG, time::OffsetDateTime::UNIX_EPOCH).await.unwrap().len(),
        1
    );
}
