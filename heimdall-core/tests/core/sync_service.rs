//! An Agent's sync (`agents::sync`) against in-memory stores: the Agent is
//! the one its certificate is, a report out of bounds is refused before
//! anything of it is written, a revoked Agent's reads are kept and it is
//! told nothing, and a serving Agent is answered from one standing: what
//! is current where it holds, and a grant the CA signs naming it for what
//! it lacks.

use heimdall_core::access::AccessRecord;
use heimdall_core::agents::sync::{self, Notary, RaisedAlert, Report};
use heimdall_core::audit::{AuditAction, EventPlan};
use heimdall_core::domain::{CatalogKind, Member, Role};
use heimdall_core::ids::{CatalogId, MemberId, SecretId};
use heimdall_core::infra::Agent;
use heimdall_core::ports::{AgentRecordStore, Reported};
use heimdall_core::queue::service::Peer;
use heimdall_core::secrets::service;
use heimdall_core::secrets::{MemberCertificate, NewSecret, SecretVersion};
use heimdall_core::{ApiError, ErrorCode, Sha256Hex};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::fakes::{entry, Ana, Clerk, MemoryEnvironments, ORG};

const PROD: u128 = 21;
const DEV: u128 = 22;
const DB: u128 = 5;

fn env(n: u128) -> CatalogId {
    CatalogId::from_uuid(Uuid::from_u128(n))
}

fn at(seconds: i64) -> Clerk {
    Clerk(OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(seconds))
}

/// A sealed file an Agent found copied back, as the wire's alert carries it.
struct RolledBack(String);

impl RaisedAlert for RolledBack {
    fn check(&self) -> Result<(), ApiError> {
        heimdall_core::names::validate_text("alerts[].file", &self.0, 64)
    }

    fn event(&self, agent: &Agent) -> EventPlan {
        EventPlan {
            action: AuditAction::AgentSealedFileRolledBack,
            target: format!("agent:{}", agent.id),
            detail: serde_json::json!({ "file": self.0 }),
        }
    }
}

/// Signs with a digest of the message (what a test can check), and numbers
/// grants from 1000.
struct Ca(std::sync::atomic::AtomicU64);

impl Notary for Ca {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, ApiError> {
        Ok(Sha256Hex::of(message).as_str().as_bytes().to_vec())
    }

    fn grant_id(&self) -> Uuid {
        Uuid::from_u128(1000 + u128::from(self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)))
    }
}

/// prod and dev; `db` numbered 1 and 2 in prod and 1 in dev; edge and
/// backup hold prod, edge dev too.
async fn world() -> (MemoryEnvironments, Agent, Agent) {
    let store = MemoryEnvironments::with_catalog(&[
        entry(PROD, CatalogKind::Environment, "prod", None),
        entry(DEV, CatalogKind::Environment, "dev", None),
    ]);
    let ana = Ana::allowed_everything();
    let db = NewSecret { name: "db".into(), ..NewSecret::default() };
    service::create(&store.secrets, &ana, db, &[], SecretId::from_uuid(Uuid::from_u128(DB))).await.unwrap();
    for (environment, version) in [(PROD, 1), (PROD, 2), (DEV, 1)] {
        store.secrets.versions.lock().unwrap().push(SecretVersion {
            secret_id: SecretId::from_uuid(Uuid::from_u128(DB)),
            environment_id: env(environment),
            version,
            created_at: OffsetDateTime::UNIX_EPOCH,
            created_by: "ana@example.com".into(),
            deactivated_at: None,
            keep_previous_seconds: 0,
            superseded_at: None,
        });
    }
    let (edge, backup) = (store.agents.enrolled(1, "edge"), store.agents.enrolled(2, "backup"));
    service::assign(&store, &ana, "prod", "edge").await.unwrap();
    service::assign(&store, &ana, "dev", "edge").await.unwrap();
    service::assign(&store, &ana, "prod", "backup").await.unwrap();
    (store, edge, backup)
}

fn peer(agent: &Agent) -> Peer {
    Peer { id: agent.id, cert_sha256: agent.cert_sha256.clone() }
}

fn holds(environment: u128, version: i64) -> Reported {
    Reported { secret: "db".into(), environment: env(environment).to_string(), version, deactivated: false }
}

fn read(seq: i64) -> AccessRecord {
    AccessRecord {
        seq,
        accessor: "ana@example.com".into(),
        at: OffsetDateTime::UNIX_EPOCH,
        secret: "db".into(),
        environment: env(PROD).to_string(),
        version: 2,
        from: "10.0.0.7".into(),
    }
}

fn report<'a>(
    records: &'a [AccessRecord],
    inventory: Vec<Reported>,
    alerts: &'a [RolledBack],
) -> Report<'a, RolledBack> {
    Report {
        epoch: Some("e1"),
        records_after: None,
        records,
        inventory,
        applied_through: None,
        local_url: Some("https://edge.internal:7482"),
        revoked_program_tokens: &[],
        alerts,
        secrets_known: None,
        current_omits_held: false,
    }
}

#[tokio::test]
async fn a_report_out_of_bounds_is_refused_before_anything_of_it_is_written() {
    let (store, edge, _) = world().await;
    let reads = [read(1), read(2)];
    let long_file = [RolledBack("f".repeat(65))];
    let many = (0..101).map(|_| RolledBack("policy-snapshot".into())).collect::<Vec<_>>();
    let plain_http =
        Report { local_url: Some("http://edge.internal:7482"), ..report(&reads, vec![holds(PROD, 2)], &[]) };
    let unnumbered = [read(0)];
    for (case, bad) in [
        ("an alert's field too long", report(&reads, vec![holds(PROD, 2)], &long_file)),
        ("too many alerts", report(&reads, vec![holds(PROD, 2)], &many)),
        ("a local API that is not https", plain_http),
        ("a record numbered 0", report(&unnumbered, vec![holds(PROD, 2)], &[])),
    ] {
        let refused = sync::sync(&store, &at(10), None, &peer(&edge), bad).await.err();
        assert_eq!(refused.map(|e| e.code), Some(ErrorCode::InvalidInput), "{case}");
        assert!(store.channel.records.lock().unwrap().is_empty(), "{case}: no read stored");
        assert!(store.channel.touched.lock().unwrap().is_empty(), "{case}: not even marked seen");
        assert!(store.holdings.lock().unwrap().is_empty(), "{case}: no inventory stored");
        let recorded = store.actions().into_iter().filter(|a| *a != AuditAction::EnvironmentAgentAssigned);
        assert_eq!(recorded.count(), 0, "{case}: no event");
    }
}

#[tokio::test]
async fn an_unknown_or_replaced_certificate_is_refused_and_stores_nothing() {
    let (store, edge, _) = world().await;
    let reads = [read(1)];
    let stranger = Peer { id: edge.id, cert_sha256: Sha256Hex::of(b"another certificate with edge's id") };
    let refused = sync::sync(&store, &at(10), None, &stranger, report(&reads, vec![], &[])).await.err();
    assert_eq!(refused.map(|e| e.code), Some(ErrorCode::Unauthenticated));
    let unknown = Peer { id: heimdall_core::ids::AgentId::from_uuid(Uuid::from_u128(77)), ..peer(&edge) };
    let refused = sync::sync(&store, &at(10), None, &unknown, report(&reads, vec![], &[])).await.err();
    assert_eq!(refused.map(|e| e.code), Some(ErrorCode::Unauthenticated));
    assert!(store.channel.records.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_revoked_agent_s_reads_and_alerts_are_kept_and_it_is_told_nothing() {
    let (store, edge, _) = world().await;
    let ana = Ana::allowed_everything();
    heimdall_core::agents::service::revoke(&store, &ana, "edge").await.unwrap();
    let reads = [read(1), read(2)];
    let alert = [RolledBack("policy-snapshot".into())];
    let synced =
        sync::sync(&store, &at(10), None, &peer(&edge), report(&reads, vec![holds(PROD, 2)], &alert))
            .await
            .unwrap();
    assert!(synced.answer.is_none(), "a revoked Agent gets nothing to decide with");
    assert_eq!((synced.received.stored, synced.received.received_through), (2, 2));
    assert_eq!(store.channel.records.lock().unwrap().len(), 2);
    assert!(store.actions().contains(&AuditAction::AgentSealedFileRolledBack));
    let agent = store.agents.all().into_iter().find(|a| a.id == edge.id).unwrap();
    assert_eq!(agent.local_url, None, "a revoked Agent's address is not taken");
}

#[tokio::test]
async fn a_serving_agent_is_told_what_is_current_where_it_holds_and_granted_what_it_lacks() {
    let (mut store, edge, backup) = world().await;
    let ana_id = MemberId::from_uuid(Uuid::from_u128(1));
    let ana = Member {
        id: ana_id,
        org_id: ORG,
        email: "ana@example.com".into(),
        role: Role::Owner,
        created_at: OffsetDateTime::UNIX_EPOCH,
    };
    store.channel.members = crate::fakes::MemoryMembers::with(&[ana]);
    let certificate = Sha256Hex::of(b"ana's client certificate");
    store.secrets.certificates.lock().unwrap().push(MemberCertificate {
        sha256: certificate.clone(),
        org_id: ORG,
        member_id: ana_id,
        spki_sha256: None,
        created_at: OffsetDateTime::UNIX_EPOCH,
        not_after: OffsetDateTime::UNIX_EPOCH + time::Duration::days(30),
    });
    let none: [AccessRecord; 0] = [];
    // edge holds what is current everywhere; backup holds prod's version 1 only.
    let edge_holds = vec![holds(PROD, 1), holds(PROD, 2), holds(DEV, 1)];
    sync::sync(&store, &at(10), None, &peer(&edge), report(&none, edge_holds, &[])).await.unwrap();

    let ca = Ca(0.into());
    let backup_report = Report { local_url: None, ..report(&none, vec![holds(PROD, 1)], &[]) };
    let synced = sync::sync(&store, &at(20), Some(&ca), &peer(&backup), backup_report).await.unwrap();
    let answer = synced.answer.unwrap();

    let current: Vec<_> = answer.current.listed.iter().map(|c| (c.environment, c.version)).collect();
    assert_eq!(current, [(env(PROD), 2)], "only where backup holds: dev is edge's alone");
    assert_eq!(answer.members.len(), 1);
    assert_eq!(answer.members[0].certificates, [certificate]);
    assert_eq!(answer.secrets.changed.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["db"]);

    assert_eq!(answer.transfers.len(), 1, "backup lacks prod's version 2");
    let transfer = &answer.transfers[0];
    assert_eq!((transfer.secret.as_str(), transfer.environment, transfer.version), ("db", env(PROD), 2));
    let sources: Vec<_> = transfer.sources.iter().map(|s| (s.agent_id, s.url.as_deref())).collect();
    assert_eq!(
        sources,
        [(edge.id, Some("https://edge.internal:7482"))],
        "from edge, where it said it is reached"
    );
    let grant = heimdall_core::transfer::parse(&transfer.grant).unwrap();
    assert_eq!(grant.claims.destination, backup.id, "the grant names the Agent that fetches");
    assert_eq!(grant.signature, Sha256Hex::of(&grant.signed_message).as_str().as_bytes());
    assert!(answer.local_api_status.is_some(), "signed with a CA");

    // Without a CA there is nothing to sign a grant with.
    let again = Report { local_url: None, ..report(&none, vec![holds(PROD, 1)], &[]) };
    let unsigned = sync::sync(&store, &at(30), None, &peer(&backup), again).await.unwrap().answer.unwrap();
    assert!(unsigned.transfers.is_empty() && unsigned.local_api_status.is_none());
    assert_eq!(unsigned.behind.iter().filter(|b| b.agent == backup.id).count(), 1, "still behind");
    let listed = store.list_agents(ORG).await.unwrap();
    assert!(listed.iter().all(|a| a.last_seen_at.is_some()), "each sync marks its Agent seen");
}
