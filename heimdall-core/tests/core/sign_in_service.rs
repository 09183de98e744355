//! Signing in without a member's token (`console::service`,
//! `agents::service::{registration, enroll}`) against an in-memory store:
//! a Console link is traded once and in time for a session of the member
//! who made it; an Agent's registration token enrolls one Agent, once,
//! before it expires; what is refused stores nothing.

use heimdall_core::agents::service as agents;
use heimdall_core::audit::AuditAction;
use heimdall_core::console::{self, service};
use heimdall_core::ids::{AgentId, TokenId};
use heimdall_core::token::{TokenHash, TOKEN_PREFIX};
use heimdall_core::{ErrorCode, Sha256Hex};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::fakes::{Ana, Clerk, MemorySignIns, ORG};

fn session(n: u8) -> (TokenId, TokenHash) {
    (TokenId::from_uuid(Uuid::from_u128(n.into())), TokenHash::of(&format!("session-{n}")))
}

#[tokio::test]
async fn a_console_link_is_traded_once_and_in_time_for_its_makers_session() {
    let (store, ana) = (MemorySignIns::default(), Ana::allowed_everything());
    let code = format!("{}{}", console::CODE_PREFIX, "a".repeat(43));
    let expires = service::create_link(&store, &ana, &code).await.unwrap();
    assert_eq!(expires, OffsetDateTime::UNIX_EPOCH + console::LINK_LIFETIME);
    assert_eq!(store.actions(), [AuditAction::ConsoleSignInLinkCreated]);

    let late = expires + Duration::seconds(1);
    let expired = service::redeem(&store, &code, session(1), late).await.unwrap_err();
    assert_eq!(expired.code, ErrorCode::Unauthenticated);
    let signed_in = service::redeem(&store, &code, session(2), OffsetDateTime::UNIX_EPOCH).await.unwrap();
    assert_eq!(signed_in.email, "ana@example.com");
    assert_eq!(signed_in.expires_at, OffsetDateTime::UNIX_EPOCH + console::SESSION_LIFETIME);
    let again = service::redeem(&store, &code, session(3), OffsetDateTime::UNIX_EPOCH).await.unwrap_err();
    assert_eq!(again.code, ErrorCode::Unauthenticated, "a link is used once");
    let malformed = service::redeem(&store, "hcs_short", session(4), OffsetDateTime::UNIX_EPOCH).await;
    assert_eq!(malformed.unwrap_err().code, ErrorCode::Unauthenticated);
    let sessions = store.sessions.lock().unwrap();
    assert_eq!(
        sessions.iter().map(|t| t.id).collect::<Vec<_>>(),
        [session(2).0],
        "one session, for the one trade"
    );
    assert_eq!(sessions[0].name, console::SESSION_TOKEN_NAME);
}

#[tokio::test]
async fn a_registration_enrolls_one_agent_once_before_it_expires() {
    let store = MemorySignIns::default();
    let token = format!("{TOKEN_PREFIX}{}", "r".repeat(43));
    let tomorrow = OffsetDateTime::UNIX_EPOCH + Duration::days(1);
    store.register(&token, "edge-1", tomorrow);
    let id = AgentId::from_uuid(Uuid::from_u128(7));
    let digest = Sha256Hex::of(b"certificate");

    let malformed = agents::registration("not-a-token").unwrap_err();
    assert_eq!(malformed.code, ErrorCode::Unauthenticated);
    let hash = agents::registration(&token).unwrap();
    let late = agents::enroll(&store, &Clerk(tomorrow), &hash, (id, digest.clone())).await.unwrap_err();
    assert_eq!(late.code, ErrorCode::Unauthenticated, "an expired registration");
    let clerk = Clerk(OffsetDateTime::UNIX_EPOCH);
    let agent = agents::enroll(&store, &clerk, &hash, (id, digest.clone())).await.unwrap();
    assert_eq!((agent.id, agent.org_id, agent.name.as_str()), (id, ORG, "edge-1"));
    assert_eq!(agent.cert_sha256, digest);
    let again = agents::enroll(&store, &clerk, &hash, (AgentId::from_uuid(Uuid::from_u128(8)), digest)).await;
    assert_eq!(again.unwrap_err().code, ErrorCode::Unauthenticated, "a registration is used once");
    assert_eq!(store.agents.lock().unwrap().len(), 1);
    assert_eq!(store.actions(), [AuditAction::AgentEnrolled]);
}
