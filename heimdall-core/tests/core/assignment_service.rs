//! Which Agents hold an environment (`secrets::service::{assignments,
//! assign, unassign}`) against in-memory stores: an Agent named by one
//! rule, a revoked one never assigned, the policies asked in that
//! environment, and an unassignment refused while the Agent is the only
//! holder of a current version there.

use heimdall_core::audit::AuditAction;
use heimdall_core::authz::Action;
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{CatalogId, SecretId};
use heimdall_core::ports::Holding;
use heimdall_core::secrets::service;
use heimdall_core::secrets::{NewSecret, SecretVersion};
use heimdall_core::ErrorCode;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::fakes::{entry, Ana, MemoryEnvironments};

const PROD: u128 = 21;

async fn world() -> MemoryEnvironments {
    let store = MemoryEnvironments::with_catalog(&[entry(PROD, CatalogKind::Environment, "prod", None)]);
    let ana = Ana::allowed_everything();
    let db = NewSecret { name: "db".into(), ..NewSecret::default() };
    service::create(&store.secrets, &ana, db, &[], SecretId::from_uuid(Uuid::from_u128(5))).await.unwrap();
    store
}

/// `agent` reports holding `db` version `version` in prod.
fn holds(store: &MemoryEnvironments, agent: &heimdall_core::infra::Agent, version: i64) {
    store.holdings.lock().unwrap().push(Holding {
        agent_id: agent.id,
        agent: agent.name.clone(),
        secret: "db".into(),
        environment: "prod".into(),
        version,
        deactivated: false,
        reported_at: OffsetDateTime::UNIX_EPOCH,
        held_since: None,
        agent_revoked: false,
        agent_last_seen_at: None,
    });
}

fn numbered(store: &MemoryEnvironments, version: i64) {
    store.secrets.versions.lock().unwrap().push(SecretVersion {
        secret_id: SecretId::from_uuid(Uuid::from_u128(5)),
        environment_id: CatalogId::from_uuid(Uuid::from_u128(PROD)),
        version,
        created_at: OffsetDateTime::UNIX_EPOCH,
        created_by: "ana@example.com".into(),
        deactivated_at: None,
        keep_previous_seconds: 0,
        superseded_at: None,
    });
}

#[tokio::test]
async fn an_agent_not_revoked_is_assigned_once_where_the_caller_may_assign() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    let edge = store.agents.enrolled(1, "edge");
    let assigned = service::assign(&store, &ana, "prod", "edge").await.unwrap();
    assert_eq!(assigned.agent_id, edge.id);
    let again = service::assign(&store, &ana, "prod", &edge.id.to_string()).await.unwrap_err();
    assert_eq!(again.code, ErrorCode::AlreadyExists);
    let listed = service::assignments(&store, &ana, "prod").await.unwrap();
    assert_eq!(listed.iter().map(|a| a.agent_id).collect::<Vec<_>>(), [edge.id]);

    store.agents.enrolled(2, "old");
    heimdall_core::agents::service::revoke(&store, &ana, "old").await.unwrap();
    assert_eq!(service::assign(&store, &ana, "prod", "old").await.unwrap_err().code, ErrorCode::NotFound);
    let bo = Ana::refused_in(Action::EnvironmentAssignAgent, "prod");
    store.agents.enrolled(3, "new");
    assert_eq!(service::assign(&store, &bo, "prod", "new").await.unwrap_err().code, ErrorCode::Forbidden);
    assert_eq!(store.actions(), [AuditAction::EnvironmentAgentAssigned], "what was refused is not recorded");
}

#[tokio::test]
async fn the_only_holder_of_a_current_version_is_not_unassigned() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    let (edge, twin) = (store.agents.enrolled(1, "edge"), store.agents.enrolled(2, "twin"));
    service::assign(&store, &ana, "prod", "edge").await.unwrap();
    service::assign(&store, &ana, "prod", "twin").await.unwrap();
    numbered(&store, 1);
    numbered(&store, 2);
    holds(&store, &edge, 2);
    holds(&store, &twin, 1);
    let refused = service::unassign(&store, &ana, "prod", "edge").await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert!(refused.message.contains("db v2"), "{}", refused.message);

    // Once the twin holds v2 too, edge may go.
    holds(&store, &twin, 2);
    let gone = service::unassign(&store, &ana, "prod", "edge").await.unwrap();
    assert_eq!(gone.agent_id, edge.id);
    let again = service::unassign(&store, &ana, "prod", "edge").await.unwrap_err();
    assert_eq!(again.code, ErrorCode::NotFound);
    assert!(again.message.contains("agent holding prod"), "{}", again.message);
    use AuditAction::{EnvironmentAgentAssigned as A, EnvironmentAgentUnassigned as U};
    assert_eq!(store.actions(), [A, A, U]);
}
