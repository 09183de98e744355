use std::collections::HashSet;

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
        version: 1,
        updated_at: None,
        updated_by: None,
    }
}

/// docs/concepts.md's "Who may do what", as the lowest role that may do each action.
fn expected_minimum_role(action: Action) -> Role {
    use Action::*;
    match action {
        CatalogRead | SchemaRead | MemberRead | ResourceRead | JobRead | SecretRead => Role::Member,
        CatalogWrite | SchemaWrite | MemberWrite | PolicyRead | EventRead | ResourceWrite
        | ResourceApprove | ResourceDelete | ResourceAbandon | CloudAccountRead | CloudAccountWrite
        | SecretWrite | SecretAccessLog | AgentRead | CertificateRead | CertificateRevoke
        | NotificationRead => Role::Admin,
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

/// A page decided through `ManyDecisions` answers item by item as
/// `decide` does: with policies that tell Resources apart only by their
/// id (in the scope, in a condition's set), by a Component or a Domain,
/// by environment, and with secrets whose owner differs. A policy that
/// names one Resource or one Component must hide exactly what it names,
/// though its siblings look the same to every other policy.
#[test]
fn deciding_a_page_at_once_answers_as_deciding_each_item() {
    use heimdall_core::authz::{resource_target, ManyDecisions};
    use heimdall_core::ids::ResourceId;
    // Two domains as in `catalog`, and eight more Components in each system.
    let mut entries = vec![
        (cid(1), CatalogKind::Domain, None),
        (cid(2), CatalogKind::System, Some(cid(1))),
        (cid(11), CatalogKind::Domain, None),
        (cid(12), CatalogKind::System, Some(cid(11))),
    ];
    let components: Vec<CatalogId> = (0..10).map(|k| cid(100 + k)).collect();
    for (k, c) in components.iter().enumerate() {
        entries.push((*c, CatalogKind::Component, Some(if k % 2 == 0 { cid(2) } else { cid(12) })));
    }
    let tree = CatalogTree::new(entries);
    let rid = |n: u128| ResourceId::from_uuid(Uuid::from_u128(1000 + n));
    let by_scope = format!(
        r#"forbid(principal, action == Heimdall::Action::"resource.read", resource == Heimdall::Resource::"{}");"#,
        rid(3)
    );
    let by_condition = format!(
        r#"forbid(principal, action, resource) when {{ resource in [Heimdall::Resource::"{}", Heimdall::Resource::"{}"] }};"#,
        rid(4),
        rid(5)
    );
    let by_component = format!(
        r#"forbid(principal, action, resource in Heimdall::Component::"{}") when {{ context.environment == "prod" }};"#,
        components[3]
    );
    let by_domain = format!(
        r#"forbid(principal, action, resource in Heimdall::Domain::"{}") unless {{ principal.role == "owner" }};"#,
        cid(11)
    );
    let sets = [
        ("none", OrgPolicies::default()),
        ("by component", OrgPolicies::compile(&[policy(30, &by_component)]).unwrap()),
        ("by scope", OrgPolicies::compile(&[policy(31, &by_scope), policy(32, &by_component)]).unwrap()),
        ("by condition", OrgPolicies::compile(&[policy(33, &by_condition)]).unwrap()),
        ("by domain", OrgPolicies::compile(&[policy(34, &by_domain), policy(35, &by_scope)]).unwrap()),
    ];
    let mut hidden = HashSet::new();
    for (name, policies) in &sets {
        for role in [Role::Owner, Role::Member] {
            let principal = who(role);
            let mut page = ManyDecisions::new(&principal, Action::ResourceRead, policies);
            let mut secrets = ManyDecisions::new(&principal, Action::SecretRead, policies);
            for n in 0..40 {
                let component = components[(n % 10) as usize];
                let env = ["dev", "prod", "dev"][(n % 3) as usize];
                let target = resource_target(Some(rid(n)), component, &tree);
                let one = decide(&principal, Action::ResourceRead, &target, Some(env), policies);
                assert_eq!(page.decide(&target, Some(env)), one, "{name}, {role}, Resource {n} in {env}");
                if !one.is_allowed() {
                    hidden.insert(*name);
                }
                let owner = (n % 4 == 0).then_some(principal.id);
                let linked = [component, components[((n + 1) % 10) as usize]];
                let secret = secret_target(
                    SecretId::from_uuid(Uuid::from_u128(40 + n)),
                    owner,
                    &linked[..1 + (n % 2) as usize],
                    &tree,
                );
                let one = decide(&principal, Action::SecretRead, &secret, Some(env), policies);
                assert_eq!(secrets.decide(&secret, Some(env)), one, "{name}, {role}, secret {n}");
            }
        }
    }
    // Not a vacuous comparison: every set but none hid something.
    assert_eq!(hidden.len(), sets.len() - 1, "{hidden:?}");
    let by_scope = &sets[2].1;
    assert!(by_scope.names_entity(Action::ResourceRead, TargetKind::Resource, &rid(3).to_string()));
    assert!(!by_scope.names_entity(Action::ResourceRead, TargetKind::Resource, &rid(4).to_string()));
    assert!(by_scope.names_entity(Action::SecretRead, TargetKind::Component, &components[3].to_string()));
    assert!(!by_scope.names_entity(Action::SecretRead, TargetKind::Resource, &rid(3).to_string()));
}

/// A member as the target is the principal entity too when it is the
/// caller: `resource == principal` tells members apart with no literal,
/// so `ManyDecisions` never shares a member's decision with another's.
#[test]
fn deciding_members_at_once_tells_the_caller_from_the_others() {
    use heimdall_core::authz::ManyDecisions;
    let policies = OrgPolicies::compile(&[policy(
        36,
        r#"forbid (principal, action == Heimdall::Action::"member.write", resource) when { resource == principal };"#,
    )])
    .unwrap();
    let owner = who(Role::Owner);
    let mut many = ManyDecisions::new(&owner, Action::MemberWrite, &policies);
    for email in ["x@example.com", owner.email.as_str(), "y@example.com"] {
        let target = Target::new(TargetKind::Member, email);
        let one = decide(&owner, Action::MemberWrite, &target, None, &policies);
        assert_eq!(one.is_allowed(), email != owner.email, "{email}");
        assert_eq!(many.decide(&target, None), one, "{email}");
    }
}
