//! One scripted storage scenario, run against every backend.

use heimdall_api::testing::TestDatabase;
use heimdall_core::domain::{CatalogEntry, CatalogKind, Member, Organization, Policy, Role};
use heimdall_core::ids::{CatalogId, EventId, MemberId, OrgId, PolicyId, TokenId};
use heimdall_core::ports::{
    CatalogStore, EventQuery, EventStore, MemberStore, MetadataStore, NewEvent, NewToken, PolicyStore,
    StoreError, TokenStore,
};
use heimdall_core::token::TokenHash;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

crate::on_every_backend!(storage_scenario);

fn t0() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
}

fn event(at: OffsetDateTime, action: &str) -> NewEvent {
    NewEvent {
        id: EventId::from_uuid(Uuid::new_v4()),
        at,
        actor: "owner@example.com".into(),
        action: heimdall_core::audit::AuditAction::from_name(action).expect("an audit action"),
        target: "test:1".into(),
        detail: serde_json::json!({ "n": 1 }),
    }
}

fn token(name: &str, secret: &str) -> NewToken {
    NewToken {
        id: TokenId::from_uuid(Uuid::new_v4()),
        name: name.into(),
        hash: TokenHash::of(secret),
        expires_at: None,
    }
}

fn entry(
    org: OrgId,
    kind: CatalogKind,
    name: &str,
    parent: Option<CatalogId>,
    at: OffsetDateTime,
) -> CatalogEntry {
    CatalogEntry {
        id: CatalogId::from_uuid(Uuid::new_v4()),
        org_id: org,
        kind,
        name: name.into(),
        description: "d".into(),
        parent_id: parent,
        created_at: at,
        created_by: "owner@example.com".into(),
    }
}

async fn storage_scenario(db: TestDatabase) {
    let store = heimdall_api::db::connect(db.url()).await.expect("connect");
    // Migrations are idempotent: connecting again is fine.
    let again = heimdall_api::db::connect(db.url()).await.expect("reconnect");
    again.close().await;

    let t = t0();
    let org = Organization { id: OrgId::from_uuid(Uuid::new_v4()), name: "acme".into(), created_at: t };
    let owner = Member {
        id: MemberId::from_uuid(Uuid::new_v4()),
        org_id: org.id,
        email: "owner@example.com".into(),
        role: Role::Owner,
        created_at: t,
    };
    store
        .bootstrap(&org, &owner, &token("bootstrap", "owner-secret"), event(t, "organization.bootstrapped"))
        .await
        .unwrap();

    // Bootstrap runs once, even for a different organization.
    let other = Organization { id: OrgId::from_uuid(Uuid::new_v4()), ..org.clone() };
    let other_owner = Member { id: MemberId::from_uuid(Uuid::new_v4()), org_id: other.id, ..owner.clone() };
    let err = store
        .bootstrap(&other, &other_owner, &token("b", "x"), event(t, "organization.bootstrapped"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyBootstrapped), "{err:?}");

    // Authentication by token hash.
    let (who, which) =
        store.authenticate(&TokenHash::of("owner-secret"), OffsetDateTime::now_utc()).await.unwrap().unwrap();
    assert_eq!((who, which), (owner.clone(), org.clone()));
    assert!(store.authenticate(&TokenHash::of("nope"), OffsetDateTime::now_utc()).await.unwrap().is_none());

    // Members.
    let ana = Member {
        id: MemberId::from_uuid(Uuid::new_v4()),
        org_id: org.id,
        email: "ana@example.com".into(),
        role: Role::Member,
        created_at: t + Duration::seconds(1),
    };
    store
        .add_member(&ana, &token("initial", "ana-secret"), event(t + Duration::seconds(1), "member.added"))
        .await
        .unwrap();
    let dup = Member { id: MemberId::from_uuid(Uuid::new_v4()), ..ana.clone() };
    let err =
        store.add_member(&dup, &token("initial", "dup-secret"), event(t, "member.added")).await.unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists("member")), "{err:?}");
    assert!(
        store.authenticate(&TokenHash::of("dup-secret"), OffsetDateTime::now_utc()).await.unwrap().is_none(),
        "refused add left a token"
    );

    let members = store.list_members(org.id).await.unwrap();
    assert_eq!(
        members.iter().map(|m| m.email.as_str()).collect::<Vec<_>>(),
        ["ana@example.com", "owner@example.com"]
    );
    assert_eq!(store.find_member_by_email(org.id, "ana@example.com").await.unwrap(), Some(ana.clone()));
    assert_eq!(store.get_member(org.id, ana.id).await.unwrap(), ana);

    // The last owner stays.
    let err =
        store.change_role(org.id, owner.id, Role::Admin, event(t, "member.role_changed")).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Refused(ref e) if e.code == heimdall_core::ErrorCode::LastOwner),
        "{err}"
    );
    let err = store.remove_member(org.id, owner.id, event(t, "member.removed")).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Refused(ref e) if e.code == heimdall_core::ErrorCode::LastOwner),
        "{err}"
    );
    let promoted =
        store.change_role(org.id, ana.id, Role::Owner, event(t, "member.role_changed")).await.unwrap();
    assert_eq!(promoted.role, Role::Owner);
    store.change_role(org.id, owner.id, Role::Admin, event(t, "member.role_changed")).await.unwrap();
    store.change_role(org.id, owner.id, Role::Owner, event(t, "member.role_changed")).await.unwrap();

    // Tokens: list, revoke, and removal revokes everything.
    let second = token("laptop", "ana-second");
    store.create_token(org.id, ana.id, &second, event(t, "token.created")).await.unwrap();
    assert_eq!(store.list_tokens(org.id, ana.id).await.unwrap().len(), 2);
    let revoked = store
        .revoke_token(org.id, ana.id, second.id, event(t + Duration::seconds(5), "token.revoked"))
        .await
        .unwrap();
    assert_eq!(revoked.revoked_at, Some(t + Duration::seconds(5)));
    assert!(store
        .authenticate(&TokenHash::of("ana-second"), OffsetDateTime::now_utc())
        .await
        .unwrap()
        .is_none());
    assert!(store
        .authenticate(&TokenHash::of("ana-secret"), OffsetDateTime::now_utc())
        .await
        .unwrap()
        .is_some());
    // Someone else's token id is not found, not revoked.
    let err = store.revoke_token(org.id, owner.id, second.id, event(t, "token.revoked")).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound("token")));

    store.remove_member(org.id, ana.id, event(t + Duration::seconds(6), "member.removed")).await.unwrap();
    assert!(
        store.authenticate(&TokenHash::of("ana-secret"), OffsetDateTime::now_utc()).await.unwrap().is_none(),
        "removal revokes tokens"
    );
    assert!(matches!(store.get_member(org.id, ana.id).await, Err(StoreError::NotFound("member"))));
    // The address can be invited again.
    let ana2 = Member { id: MemberId::from_uuid(Uuid::new_v4()), ..ana.clone() };
    store.add_member(&ana2, &token("initial", "ana-again"), event(t, "member.added")).await.unwrap();

    // Catalog: a tree, names unique within their parent.
    let payments = entry(org.id, CatalogKind::Domain, "payments", None, t);
    let identity = entry(org.id, CatalogKind::Domain, "identity", None, t);
    store.create_catalog_entry(&payments, event(t, "domain.created")).await.unwrap();
    store.create_catalog_entry(&identity, event(t, "domain.created")).await.unwrap();
    let err = store
        .create_catalog_entry(
            &entry(org.id, CatalogKind::Domain, "payments", None, t),
            event(t, "domain.created"),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists("domain")), "{err:?}");
    let api_in_payments = entry(org.id, CatalogKind::System, "api", Some(payments.id), t);
    let api_in_identity = entry(org.id, CatalogKind::System, "api", Some(identity.id), t);
    store.create_catalog_entry(&api_in_payments, event(t, "system.created")).await.unwrap();
    store.create_catalog_entry(&api_in_identity, event(t, "system.created")).await.unwrap();
    // A system whose parent is not a domain is refused.
    let err = store
        .create_catalog_entry(
            &entry(org.id, CatalogKind::System, "x", Some(api_in_payments.id), t),
            event(t, "system.created"),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound("domain")), "{err:?}");
    let checkout = entry(org.id, CatalogKind::Component, "checkout", Some(api_in_payments.id), t);
    store.create_catalog_entry(&checkout, event(t, "component.created")).await.unwrap();
    let prod = entry(org.id, CatalogKind::Environment, "prod", None, t);
    store.create_catalog_entry(&prod, event(t, "environment.created")).await.unwrap();

    assert_eq!(store.list_catalog(org.id, CatalogKind::System, None).await.unwrap().len(), 2);
    let in_payments = store.list_catalog(org.id, CatalogKind::System, Some(payments.id)).await.unwrap();
    assert_eq!(in_payments, vec![api_in_payments.clone()]);
    assert_eq!(store.find_catalog_by_name(org.id, CatalogKind::System, "api").await.unwrap().len(), 2);
    assert_eq!(store.get_catalog_entry(org.id, checkout.id).await.unwrap(), checkout);

    let renamed =
        store.rename_catalog_entry(org.id, identity.id, "iam", event(t, "domain.renamed")).await.unwrap();
    assert_eq!(renamed.name, "iam");
    let err = store
        .rename_catalog_entry(org.id, identity.id, "payments", event(t, "domain.renamed"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists("domain")));

    let err = store.delete_catalog_entry(org.id, payments.id, event(t, "domain.deleted")).await.unwrap_err();
    assert!(matches!(&err, StoreError::NotEmpty(msg) if msg.contains("api")), "{err:?}");
    store.delete_catalog_entry(org.id, checkout.id, event(t, "component.deleted")).await.unwrap();
    store.delete_catalog_entry(org.id, api_in_payments.id, event(t, "system.deleted")).await.unwrap();
    store.delete_catalog_entry(org.id, payments.id, event(t, "domain.deleted")).await.unwrap();
    assert!(matches!(
        store.delete_catalog_entry(org.id, payments.id, event(t, "domain.deleted")).await,
        Err(StoreError::NotFound(_))
    ));

    // Policies.
    let policy = Policy {
        id: PolicyId::from_uuid(Uuid::new_v4()),
        org_id: org.id,
        name: "no-prod-reads".into(),
        description: String::new(),
        text: "forbid(principal, action, resource);".into(),
        version: 1,
        created_at: t,
        created_by: "owner@example.com".into(),
        updated_at: None,
        updated_by: None,
    };
    store.create_policy(&policy, event(t, "policy.created")).await.unwrap();
    let dup = Policy { id: PolicyId::from_uuid(Uuid::new_v4()), ..policy.clone() };
    assert!(matches!(
        store.create_policy(&dup, event(t, "policy.created")).await,
        Err(StoreError::AlreadyExists("policy"))
    ));
    assert_eq!(store.list_policies(org.id).await.unwrap(), vec![policy.clone()]);
    assert_eq!(store.get_policy(org.id, policy.id).await.unwrap(), policy);
    // A change is written only over the version it was decided on.
    let next = Policy {
        text: "forbid(principal, action == Heimdall::Action::\"secret.read\", resource);".into(),
        version: 2,
        updated_at: Some(t),
        updated_by: Some("ana@example.com".into()),
        ..policy.clone()
    };
    let write = |previous_version| heimdall_core::policies::PolicyWrite {
        policy: next.clone(),
        previous_version,
        event: heimdall_core::audit::EventPlan {
            action: heimdall_core::audit::AuditAction::PolicyUpdated,
            target: format!("policy:{}", next.id),
            detail: serde_json::json!({}),
        },
    };
    assert!(matches!(
        store.update_policy(&write(7), event(t, "policy.updated")).await,
        Err(StoreError::StaleRevision(_))
    ));
    assert_eq!(store.get_policy(org.id, policy.id).await.unwrap(), policy, "nothing written");
    store.update_policy(&write(1), event(t, "policy.updated")).await.unwrap();
    assert_eq!(store.get_policy(org.id, policy.id).await.unwrap(), next);
    let versions = store.policy_versions(org.id, policy.id).await.unwrap();
    let numbers: Vec<(i64, &str)> = versions.iter().map(|v| (v.version, v.written_by.as_str())).collect();
    assert_eq!(numbers, [(2, "ana@example.com"), (1, "owner@example.com")]);
    store.delete_policy(org.id, policy.id, event(t, "policy.deleted")).await.unwrap();
    assert!(matches!(store.get_policy(org.id, policy.id).await, Err(StoreError::NotFound("policy"))));
    assert!(matches!(
        store.delete_policy(org.id, policy.id, event(t, "policy.deleted")).await,
        Err(StoreError::NotFound(_))
    ));

    // The audit feed: every successful change above wrote exactly one event,
    // refused ones none; newest first; filters.
    let all = store.list_events(org.id, &EventQuery { limit: 1000, ..Default::default() }).await.unwrap();
    let count = |action: &str| all.iter().filter(|e| e.action == action).count();
    assert_eq!(count("organization.bootstrapped"), 1);
    assert_eq!(count("member.added"), 2);
    assert_eq!(count("member.removed"), 1);
    assert_eq!(count("member.role_changed"), 3);
    assert_eq!(count("policy.updated"), 1, "the stale change wrote none");
    assert_eq!(count("domain.created"), 2);
    assert_eq!(count("policy.created"), 1);
    assert_eq!(count("policy.deleted"), 1);
    assert!(all.windows(2).all(|w| w[0].at >= w[1].at), "newest first");
    assert_eq!(
        all.iter().find(|e| e.action == "member.added").unwrap().detail,
        serde_json::json!({ "n": 1 })
    );

    let members_only = store
        .list_events(
            org.id,
            &EventQuery { limit: 100, action_prefix: Some("member.".into()), ..Default::default() },
        )
        .await
        .unwrap();
    assert_eq!(members_only.len(), 6);
    assert!(members_only.iter().all(|e| e.action.starts_with("member.")));
    let two = store.list_events(org.id, &EventQuery { limit: 2, ..Default::default() }).await.unwrap();
    assert_eq!(two.len(), 2);
    let older = store
        .list_events(
            org.id,
            &EventQuery { limit: 1000, before: Some(t + Duration::seconds(1)), ..Default::default() },
        )
        .await
        .unwrap();
    assert!(older.iter().all(|e| e.at < t + Duration::seconds(1)));
    assert!(!older.is_empty());

    store.close().await;
}
