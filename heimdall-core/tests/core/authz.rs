use heimdall_core::authz::{
    allowed_environments, decide, secret_target, validate_policy_text, Action, CatalogTree, Decision,
    OrgPolicies, Principal, Target, TargetKind,
};
use heimdall_core::domain::{CatalogKind, Policy, Role};
use heimdall_core::ids::{CatalogId, MemberId, OrgId, PolicyId, SecretId};
use time::OffsetDateTime;
use uuid::Uuid;

fn org() -> OrgId {
    OrgId::from_uuid(Uuid::from_u128(1))
}

fn who(role: Role) -> Principal {
    let n = match role {
        Role::Owner => 100,
        Role::Admin => 101,
        Role::Member => 102,
    };
    Principal {
        org: org(),
        id: MemberId::from_uuid(Uuid::from_u128(n)),
        email: format!("{role}@example.com"),
        role,
    }
}

fn policy(n: u128, text: &str) -> Policy {
    validate_policy_text(text).unwrap_or_else(|e| panic!("test policy invalid: {e}"));
    Policy {
        id: PolicyId::from_uuid(Uuid::from_u128(n)),
        org_id: org(),
        name: format!("p{n}"),
        description: String::new(),
        text: text.into(),
        created_at: OffsetDateTime::UNIX_EPOCH,
        created_by: "owner@example.com".into(),
    }
}

/// DESIGN §2 "Who may do what", as the lowest role that may do each action.
fn expected_minimum_role(action: Action) -> Role {
    use Action::*;
    match action {
        CatalogRead | SchemaRead | MemberRead | ResourceRead | JobRead | SecretRead => Role::Member,
        CatalogWrite | SchemaWrite | MemberWrite | PolicyRead | EventRead | ResourceWrite
        | ResourceApprove | ResourceDelete | CloudAccountRead | CloudAccountWrite | SecretWrite
        | SecretAccessLog | AgentRead | CertificateRead | CertificateRevoke | NotificationRead => Role::Admin,
        PolicyWrite | AgentManage | EnvironmentAssignAgent | NotificationWrite => Role::Owner,
    }
}

fn allowed_for(role: Role, minimum: Role) -> bool {
    // Role's Ord: Owner < Admin < Member.
    role <= minimum
}

#[test]
fn role_defaults_match_the_design_table_in_every_environment() {
    let none = OrgPolicies::default();
    let target = Target::organization(org());
    for &action in Action::ALL {
        for role in Role::ALL {
            for env in [None, Some("dev"), Some("prod")] {
                let got = decide(&who(role), action, &target, env, &none);
                let want = allowed_for(role, expected_minimum_role(action));
                assert_eq!(got.is_allowed(), want, "{role} {action} env={env:?}: {got:?}");
                if !want {
                    assert_eq!(got, Decision::NotPermitted);
                }
            }
        }
    }
}

#[test]
fn forbid_wins_even_over_the_owner() {
    let policies = OrgPolicies::compile(&[policy(
        10,
        r#"forbid(principal, action == Heimdall::Action::"secret.read", resource)
           when { context.environment == "prod" };"#,
    )])
    .unwrap();
    let secret = Target::new(TargetKind::Secret, "db-password");
    for role in Role::ALL {
        match decide(&who(role), Action::SecretRead, &secret, Some("prod"), &policies) {
            Decision::ForbiddenBy(ids) => {
                assert_eq!(ids, vec![format!("{}#0", PolicyId::from_uuid(Uuid::from_u128(10)))])
            }
            other => panic!("{role}: {other:?}"),
        }
        assert!(decide(&who(role), Action::SecretRead, &secret, Some("dev"), &policies).is_allowed());
    }
}

#[test]
fn forbid_wins_over_an_explicit_permit() {
    let policies = OrgPolicies::compile(&[
        policy(11, r#"permit(principal == Heimdall::Member::"member@example.com", action == Heimdall::Action::"resource.delete", resource);"#),
        policy(12, r#"forbid(principal, action == Heimdall::Action::"resource.delete", resource) when { context.environment == "prod" };"#),
    ])
    .unwrap();
    let res = Target::new(TargetKind::Resource, "r1");
    assert!(decide(&who(Role::Member), Action::ResourceDelete, &res, Some("dev"), &policies).is_allowed());
    assert!(matches!(
        decide(&who(Role::Member), Action::ResourceDelete, &res, Some("prod"), &policies),
        Decision::ForbiddenBy(_)
    ));
    // The permit names one member only.
    let other = Principal {
        org: org(),
        id: MemberId::from_uuid(Uuid::from_u128(103)),
        email: "someone@example.com".into(),
        role: Role::Member,
    };
    assert_eq!(decide(&other, Action::ResourceDelete, &res, Some("dev"), &policies), Decision::NotPermitted);
}

#[test]
fn policies_can_scope_by_catalog_ancestry() {
    let payments = "11111111-1111-1111-1111-111111111111";
    let policies = OrgPolicies::compile(&[policy(
        13,
        &format!(r#"forbid(principal, action == Heimdall::Action::"resource.write", resource in Heimdall::Domain::"{payments}") unless {{ principal.role == "owner" }};"#),
    )])
    .unwrap();
    let in_payments = Target::new(TargetKind::Resource, "r1")
        .with_ancestor(TargetKind::Component, "c1")
        .with_ancestor(TargetKind::System, "s1")
        .with_ancestor(TargetKind::Domain, payments);
    let elsewhere = Target::new(TargetKind::Resource, "r2")
        .with_ancestor(TargetKind::Component, "c2")
        .with_ancestor(TargetKind::System, "s2")
        .with_ancestor(TargetKind::Domain, "22222222-2222-2222-2222-222222222222");
    assert!(matches!(
        decide(&who(Role::Admin), Action::ResourceWrite, &in_payments, None, &policies),
        Decision::ForbiddenBy(_)
    ));
    assert!(decide(&who(Role::Owner), Action::ResourceWrite, &in_payments, None, &policies).is_allowed());
    assert!(decide(&who(Role::Admin), Action::ResourceWrite, &elsewhere, None, &policies).is_allowed());
}

#[test]
fn invalid_policies_are_refused_with_a_position() {
    let cases = [
        "permit(principal, action, resource)",                   // missing ';'
        "allow(principal, action, resource);",                   // not a keyword
        r#"permit(principal in ?principal, action, resource);"#, // template
        r#"permit(principal, action, resource) when { principal.team == "x" };"#, // unknown attribute
        "",                                                      // nothing
    ];
    for text in cases {
        let err = validate_policy_text(text).expect_err(text);
        assert!(err.line >= 1 && err.column >= 1, "{text}: {err:?}");
        assert!(!err.message.is_empty());
    }
}

fn cid(n: u128) -> CatalogId {
    CatalogId::from_uuid(Uuid::from_u128(n))
}

/// Two domains, each with a system and a component.
fn catalog() -> CatalogTree {
    CatalogTree::new([
        (cid(1), CatalogKind::Domain, None),
        (cid(2), CatalogKind::System, Some(cid(1))),
        (cid(3), CatalogKind::Component, Some(cid(2))),
        (cid(11), CatalogKind::Domain, None),
        (cid(12), CatalogKind::System, Some(cid(11))),
        (cid(13), CatalogKind::Component, Some(cid(12))),
    ])
}

#[test]
fn catalog_scoped_forbids_reach_secrets_through_every_linked_component() {
    let tree = catalog();
    let payments = cid(11);
    let policies = OrgPolicies::compile(&[policy(
        14,
        &format!(r#"forbid(principal, action == Heimdall::Action::"secret.read", resource in Heimdall::Domain::"{payments}") unless {{ principal.role == "owner" }};"#),
    )])
    .unwrap();
    let secret = SecretId::from_uuid(Uuid::from_u128(20));
    // Linked to a component of each domain: the forbid on one applies.
    let both = secret_target(secret, None, &[cid(3), cid(13)], &tree);
    let elsewhere = secret_target(secret, None, &[cid(3)], &tree);
    let unlinked = secret_target(secret, None, &[], &tree);
    assert!(matches!(
        decide(&who(Role::Member), Action::SecretRead, &both, Some("dev"), &policies),
        Decision::ForbiddenBy(_)
    ));
    assert!(decide(&who(Role::Owner), Action::SecretRead, &both, Some("dev"), &policies).is_allowed());
    assert!(decide(&who(Role::Member), Action::SecretRead, &elsewhere, Some("dev"), &policies).is_allowed());
    assert!(decide(&who(Role::Member), Action::SecretRead, &unlinked, Some("dev"), &policies).is_allowed());
    // A system-scoped forbid, too.
    let system = OrgPolicies::compile(&[policy(
        15,
        &format!(r#"forbid(principal, action, resource in Heimdall::System::"{}");"#, cid(2)),
    )])
    .unwrap();
    assert!(!decide(&who(Role::Owner), Action::SecretRead, &both, Some("dev"), &system).is_allowed());
}

#[test]
fn a_personal_secret_is_its_owners_and_still_answers_to_forbids() {
    let tree = catalog();
    let member = who(Role::Member);
    let mine = secret_target(SecretId::from_uuid(Uuid::from_u128(21)), Some(member.id), &[], &tree);
    let none = OrgPolicies::default();
    // A member may write and read the trail of her own personal secret …
    for action in [Action::SecretRead, Action::SecretWrite, Action::SecretAccessLog] {
        assert!(decide(&member, action, &mine, Some("dev"), &none).is_allowed(), "{action}");
    }
    // … not of an organization secret, nor of someone else's.
    let org_secret = secret_target(SecretId::from_uuid(Uuid::from_u128(22)), None, &[], &tree);
    assert!(!decide(&member, Action::SecretWrite, &org_secret, Some("dev"), &none).is_allowed());
    let theirs =
        secret_target(SecretId::from_uuid(Uuid::from_u128(23)), Some(who(Role::Owner).id), &[], &tree);
    assert!(!decide(&member, Action::SecretWrite, &theirs, Some("dev"), &none).is_allowed());
    // An organization forbid applies to personal secrets: personal adds a
    // restriction, it never bypasses one.
    let no_prod = OrgPolicies::compile(&[policy(
        16,
        r#"forbid(principal, action == Heimdall::Action::"secret.read", resource) when { context.environment == "prod" };"#,
    )])
    .unwrap();
    assert!(matches!(
        decide(&member, Action::SecretRead, &mine, Some("prod"), &no_prod),
        Decision::ForbiddenBy(_)
    ));
}

#[test]
fn leaving_out_the_environment_filters_instead_of_skipping() {
    let tree = catalog();
    let policies = OrgPolicies::compile(&[policy(
        17,
        r#"forbid(principal, action == Heimdall::Action::"secret.access_log", resource) when { context.environment == "prod" };"#,
    )])
    .unwrap();
    let target = secret_target(SecretId::from_uuid(Uuid::from_u128(24)), None, &[], &tree);
    let allowed = allowed_environments(
        &who(Role::Admin),
        Action::SecretAccessLog,
        &target,
        ["dev", "prod", "dev", "qa"],
        &policies,
    );
    assert_eq!(allowed, vec!["dev", "qa"]);
}
