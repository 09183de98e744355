//! Programs' writes through their Agent (`program::service`) against
//! in-memory stores: a token is one its Agent registered inside an owner's
//! allowance, and is decided by its id: a write with another program's
//! name, through another Agent than the one that registered it, or with a
//! revoked token is refused and numbers nothing.

use std::sync::Arc;

use heimdall_core::authz::OrgPolicies;
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{CatalogId, OrgId, SecretId};
use heimdall_core::program::service::{self as programs, PolicySource, Program};
use heimdall_core::program::{NewToken, Verb};
use heimdall_core::secrets::{service, NewSecret};
use heimdall_core::{ApiError, ErrorCode};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::fakes::{entry, Ana, Clerk, MemoryEnvironments};

/// The role defaults and no policy of the organization's own.
struct Defaults;

#[async_trait::async_trait]
impl PolicySource for Defaults {
    async fn org_policies(&self, _org: OrgId) -> Result<Arc<OrgPolicies>, ApiError> {
        Ok(Arc::new(OrgPolicies::compile(&[]).expect("no policy compiles")))
    }
}

const PROD: u128 = 21;
const TOKEN: &str = "0123456789abcdef";

fn prod() -> CatalogId {
    CatalogId::from_uuid(Uuid::from_u128(PROD))
}

/// Environment prod held by Agent `edge`, which may let programs write
/// `app-*` there; a secret `app-db`; `edge`'s token for program `billing`.
async fn world() -> (MemoryEnvironments, heimdall_core::infra::Agent) {
    let store = MemoryEnvironments::with_catalog(&[entry(PROD, CatalogKind::Environment, "prod", None)]);
    let ana = Ana::allowed_everything();
    let edge = store.agents.enrolled(1, "edge");
    service::assign(&store, &ana, "prod", "edge").await.unwrap();
    let db = NewSecret { name: "app-db".into(), ..NewSecret::default() };
    service::create(&store.secrets, &ana, db, &[], SecretId::from_uuid(Uuid::from_u128(5))).await.unwrap();
    let allowance = ("prod", "app-*".to_owned());
    heimdall_core::agents::service::allow_programs(&store, &ana, "edge", allowance, vec![Verb::Write])
        .await
        .unwrap();
    let token = NewToken {
        id: TOKEN.into(),
        name: "billing".into(),
        environment: "prod".into(),
        secrets: vec!["app-*".into()],
        verbs: vec![Verb::Write],
        expires_at: None,
    };
    programs::register_token(&store, &Clerk(OffsetDateTime::UNIX_EPOCH), &edge, token).await.unwrap();
    (store, edge)
}

/// The adapter can sign grants.
fn ready() -> Result<(), heimdall_core::ApiError> {
    Ok(())
}

#[tokio::test]
async fn a_program_writes_by_its_tokens_id_through_the_agent_that_registered_it() {
    let (store, edge) = world().await;
    let clerk = Clerk(OffsetDateTime::UNIX_EPOCH);
    let asked = (SecretId::from_uuid(Uuid::from_u128(5)), prod());
    let billing = Program { token_id: TOKEN, name: "billing" };
    let numbered =
        programs::number_version(&store, (&clerk, &Defaults), &edge, (billing, asked), ready).await.unwrap();
    assert_eq!(
        (numbered.version.version, numbered.accessor.as_str()),
        (1, format!("program billing@{}", edge.id).as_str())
    );

    let posing = Program { token_id: TOKEN, name: "payroll" };
    let refused = programs::number_version(&store, (&clerk, &Defaults), &edge, (posing, asked), ready)
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::Unauthenticated, "another program's name on this token");

    let other = store.agents.enrolled(2, "other");
    let elsewhere = programs::number_version(&store, (&clerk, &Defaults), &other, (billing, asked), ready)
        .await
        .unwrap_err();
    assert_eq!(elsewhere.code, ErrorCode::Unauthenticated, "a token another Agent registered");

    programs::revoke_token(&store, &clerk, &edge, TOKEN).await.unwrap();
    let revoked = programs::number_version(&store, (&clerk, &Defaults), &edge, (billing, asked), ready)
        .await
        .unwrap_err();
    assert_eq!(revoked.code, ErrorCode::Unauthenticated, "a revoked token");
    assert_eq!(store.secrets.versions.lock().unwrap().len(), 1, "what was refused numbered nothing");
    let unknown = programs::revoke_token(&store, &clerk, &other, TOKEN).await.unwrap_err();
    assert_eq!(unknown.code, ErrorCode::NotFound);
}

#[tokio::test]
async fn a_token_is_registered_only_inside_an_owners_allowance() {
    let (store, edge) = world().await;
    let wider = NewToken {
        id: "fedcba9876543210".into(),
        name: "billing".into(),
        environment: "prod".into(),
        secrets: vec!["*".into()],
        verbs: vec![Verb::Write],
        expires_at: None,
    };
    let refused = programs::register_token(&store, &Clerk(OffsetDateTime::UNIX_EPOCH), &edge, wider).await;
    assert_eq!(refused.unwrap_err().code, ErrorCode::Forbidden);
}
