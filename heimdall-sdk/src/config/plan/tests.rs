//! The plan as a pure diff: order, idempotence, renames by id, prune only
//! when asked, and the descriptions it refuses.

use super::*;
use crate::config::{
    Component, Domain, Environment, Member, NotificationChannel, Policy, Schema, Secret, System,
};
use crate::wire::Role;

fn domain(name: &str) -> Domain {
    Domain { name: name.into(), ..Domain::default() }
}

fn system(name: &str, domain: &str) -> System {
    System { name: name.into(), domain: domain.into(), ..System::default() }
}

fn component(name: &str, system: &str) -> Component {
    Component { name: name.into(), system: system.into(), ..Component::default() }
}

/// An organization as `current` reads it: every section, with ids.
fn organization() -> Config {
    Config {
        domains: Some(vec![Domain { id: Some("d1".into()), ..domain("payments") }]),
        systems: Some(vec![System { id: Some("s1".into()), ..system("ledger", "payments") }]),
        components: Some(vec![Component { id: Some("c1".into()), ..component("ledger-api", "ledger") }]),
        environments: Some(vec![Environment {
            id: Some("e1".into()),
            name: "prod".into(),
            description: None,
            agents: Some(vec!["edge-1".into(), "edge-2".into()]),
        }]),
        schemas: Some(vec![bucket()]),
        policies: Some(vec![Policy {
            name: "readers".into(),
            description: None,
            text: "permit(principal, action, resource);".into(),
        }]),
        members: Some(vec![
            Member { id: Some("m1".into()), email: "ana@example.com".into(), role: Role::Owner },
            Member { id: Some("m2".into()), email: "bo@example.com".into(), role: Role::Member },
        ]),
        secrets: Some(vec![Secret {
            name: "db".into(),
            secret_type: Some("password".into()),
            description: None,
            tags: Some([("team".to_owned(), "payments".to_owned())].into()),
            components: Some(vec!["ledger-api".into()]),
        }]),
        notification_channels: Some(vec![NotificationChannel { name: "ops".into(), webhook_env: None }]),
    }
}

fn bucket() -> Schema {
    Schema {
        type_name: "bucket".into(),
        input_schema: serde_json::json!({ "type": "object", "properties": { "name": { "type": "string" } } }),
        defaults: Some(Default::default()),
        module: Some(crate::wire::ModuleRef { source: "./modules/bucket".into(), version: "1.0.0".into() }),
        requires_approval: Some(true),
        drift_check_every: Some("1d".into()),
    }
}

fn without_ids(mut config: Config) -> Config {
    for d in config.domains.iter_mut().flatten() {
        d.id = None;
    }
    for s in config.systems.iter_mut().flatten() {
        s.id = None;
    }
    for c in config.components.iter_mut().flatten() {
        c.id = None;
    }
    for e in config.environments.iter_mut().flatten() {
        e.id = None;
    }
    for m in config.members.iter_mut().flatten() {
        m.id = None;
    }
    config
}

fn summary(plan: &Plan) -> Vec<String> {
    plan.changes.iter().map(|c| format!("{:?} {} {}", c.op, c.kind, c.key)).collect()
}

#[test]
fn an_organization_planned_against_itself_has_nothing_to_do_with_or_without_ids() {
    let org = organization();
    let prune = PlanOptions { prune: true, keep_member: None };
    let plan = super::plan(&org, &org, &prune).unwrap();
    assert!(plan.is_empty(), "{plan:?}");
    assert_eq!(plan.unchanged, 10);
    assert!(super::plan(&without_ids(org.clone()), &org, &prune).unwrap().is_empty());
}

#[test]
fn creations_run_parents_first_and_deletions_after_them_in_reverse() {
    let current = organization();
    let desired = Config {
        domains: Some(vec![domain("identity")]),
        systems: Some(vec![system("login", "identity")]),
        components: Some(vec![component("login-api", "login")]),
        ..Config::default()
    };
    let prune = PlanOptions { prune: true, keep_member: None };
    let plan = super::plan(&desired, &current, &prune).unwrap();
    assert_eq!(
        summary(&plan),
        [
            "Create domain identity",
            "Create system login",
            "Create component login-api",
            "Delete component ledger-api",
            "Delete system ledger",
            "Delete domain payments",
        ]
    );
    let login = &plan.changes[1];
    assert_eq!(login.to("domain"), Some(&Value::String("identity".into())));
}

#[test]
fn nothing_is_deleted_without_prune_nor_in_a_section_the_file_leaves_out() {
    let current = organization();
    let desired = Config { domains: Some(vec![domain("payments"), domain("identity")]), ..Config::default() };
    let plan = super::plan(&desired, &current, &PlanOptions::default()).unwrap();
    assert_eq!(summary(&plan), ["Create domain identity"]);
    let emptied = Config { policies: Some(Vec::new()), ..Config::default() };
    let plan = super::plan(&emptied, &current, &PlanOptions::default()).unwrap();
    assert!(plan.is_empty(), "no prune: {plan:?}");
    let prune = PlanOptions { prune: true, keep_member: None };
    assert_eq!(summary(&super::plan(&emptied, &current, &prune).unwrap()), ["Delete policy readers"]);
}

#[test]
fn pruning_members_never_removes_whoever_applies() {
    let current = organization();
    let desired = Config { members: Some(Vec::new()), ..Config::default() };
    let options = PlanOptions { prune: true, keep_member: Some("ana@example.com".into()) };
    assert_eq!(
        summary(&super::plan(&desired, &current, &options).unwrap()),
        ["Delete member bo@example.com"]
    );
}

#[test]
fn an_entry_given_by_id_is_renamed_and_its_children_follow() {
    let current = organization();
    let mut desired = without_ids(organization());
    desired.domains = Some(vec![Domain { id: Some("d1".into()), ..domain("money") }]);
    desired.systems = Some(vec![system("ledger", "money")]);
    let plan = super::plan(&desired, &current, &PlanOptions::default()).unwrap();
    assert_eq!(summary(&plan), ["Update domain money"]);
    let rename = &plan.changes[0];
    assert_eq!(rename.id.as_deref(), Some("d1"));
    assert_eq!(rename.to("name"), Some(&Value::String("money".into())));
    assert_eq!(rename.to_string(), "~ domain money\n    name: \"payments\" → \"money\"");
}

#[test]
fn updates_carry_only_the_fields_that_differ_and_lists_compare_as_sets() {
    let current = organization();
    let mut desired = without_ids(organization());
    desired.environments.as_mut().unwrap()[0].agents = Some(vec!["edge-2".into(), "edge-1".into()]);
    desired.members.as_mut().unwrap()[1].role = Role::Admin;
    let secret = &mut desired.secrets.as_mut().unwrap()[0];
    secret.description = Some("the ledger's database".into());
    secret.secret_type = None; // left out: not managed
    let plan = super::plan(&desired, &current, &PlanOptions::default()).unwrap();
    assert_eq!(summary(&plan), ["Update member bo@example.com", "Update secret db"]);
    let fields: Vec<&str> = plan.changes[1].fields.iter().map(|f| f.field.as_str()).collect();
    assert_eq!(fields, ["description"]);
}

#[test]
fn what_cannot_be_applied_is_refused_before_anything_runs() {
    let current = organization();
    let moved = Config {
        systems: Some(vec![system("ledger", "identity")]),
        domains: Some(vec![domain("identity")]),
        ..Config::default()
    };
    let refused = super::plan(&moved, &current, &PlanOptions::default()).unwrap_err();
    assert!(matches!(&refused, PlanError::Immutable { field, .. } if field == "domain"), "{refused}");

    let orphan = Config { components: Some(vec![component("api", "nowhere")]), ..Config::default() };
    let refused = super::plan(&orphan, &current, &PlanOptions::default()).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "component api: its system nowhere is neither in the file nor in the organization"
    );

    // A parent pruned away leaves its child without one.
    let pruned = Config {
        domains: Some(Vec::new()),
        systems: Some(vec![system("ledger", "payments")]),
        ..Config::default()
    };
    let prune = PlanOptions { prune: true, keep_member: None };
    assert!(matches!(super::plan(&pruned, &current, &prune), Err(PlanError::Missing { .. })));

    let twice = Config { domains: Some(vec![domain("payments"), domain("payments")]), ..Config::default() };
    assert!(matches!(
        super::plan(&twice, &current, &PlanOptions::default()),
        Err(PlanError::Duplicate { .. })
    ));

    let gone = Config {
        domains: Some(vec![Domain { id: Some("d9".into()), ..domain("payments") }]),
        ..Config::default()
    };
    assert!(matches!(
        super::plan(&gone, &current, &PlanOptions::default()),
        Err(PlanError::UnknownId { .. })
    ));
}

#[test]
fn a_member_pinned_by_id_is_not_whoever_holds_the_address_now() {
    let current = organization();
    let pinned = Config {
        members: Some(vec![Member {
            id: Some("m-before".into()),
            email: "bo@example.com".into(),
            role: Role::Admin,
        }]),
        ..Config::default()
    };
    let refused = super::plan(&pinned, &current, &PlanOptions::default()).unwrap_err();
    assert!(matches!(&refused, PlanError::Replaced { now, .. } if now == "m2"), "{refused}");
}

#[test]
fn a_description_parses_strictly_and_round_trips() {
    let text = "domains:\n  - name: payments\n    description: Money\nmembers:\n  - email: ana@example.com\n    role: admin\n";
    let config = Config::parse(text).unwrap();
    assert_eq!(config.domains.as_ref().map(Vec::len), Some(1));
    assert_eq!(Config::parse(&config.to_yaml().unwrap()).unwrap(), config);
    let unknown = Config::parse("secrets:\n  - name: db\n    value: hunter2\n").unwrap_err();
    assert!(unknown.to_string().contains("value"), "{unknown}");
    assert!(!unknown.to_string().contains("hunter2"), "the refusal does not quote the value: {unknown}");
    assert!(Config::parse("domains: []\ndomains: []\n").is_err(), "a key twice is refused");
    assert_eq!(Config::parse("").unwrap(), Config::default());
}

#[test]
fn a_schema_that_differs_gets_a_whole_new_version_keeping_what_the_file_leaves_out() {
    let current = organization();
    let same_schedule = Config {
        schemas: Some(vec![Schema { drift_check_every: Some("1440m".into()), ..bucket() }]),
        ..Config::default()
    };
    let plan = super::plan(&same_schedule, &current, &PlanOptions::default()).unwrap();
    assert!(plan.is_empty(), "1440m is 1d: {plan:?}");

    let pinned = crate::wire::ModuleRef { source: "./modules/bucket".into(), version: "1.1.0".into() };
    let upgraded = Config {
        schemas: Some(vec![Schema { module: Some(pinned), requires_approval: None, ..bucket() }]),
        ..Config::default()
    };
    let plan = super::plan(&upgraded, &current, &PlanOptions::default()).unwrap();
    assert_eq!(summary(&plan), ["Update schema bucket"]);
    let change = &plan.changes[0];
    let fields: Vec<&str> = change.fields.iter().map(|f| f.field.as_str()).collect();
    assert_eq!(fields, ["module"], "only the module differs");
    assert_eq!(change.object["module"]["version"], "1.1.0");
    assert_eq!(
        change.object["requires_approval"], true,
        "left out of the file: kept from the newest version"
    );
    assert_eq!(change.object["type"], "bucket");
}

#[test]
fn a_channel_s_webhook_is_read_where_the_file_says_only_to_make_it() {
    let current = organization();
    let channel = |name: &str, webhook_env: Option<&str>| NotificationChannel {
        name: name.into(),
        webhook_env: webhook_env.map(str::to_owned),
    };
    let same = Config {
        notification_channels: Some(vec![channel("ops", Some("OPS_WEBHOOK"))]),
        ..Config::default()
    };
    assert!(super::plan(&same, &current, &PlanOptions::default()).unwrap().is_empty(), "never compared");

    let new = Config {
        notification_channels: Some(vec![channel("audit", Some("AUDIT_WEBHOOK"))]),
        ..Config::default()
    };
    let plan = super::plan(&new, &current, &PlanOptions::default()).unwrap();
    assert_eq!(summary(&plan), ["Create notification channel audit"]);
    assert_eq!(plan.changes[0].to("webhook_env"), Some(&Value::String("AUDIT_WEBHOOK".into())));

    let unreachable =
        Config { notification_channels: Some(vec![channel("audit", None)]), ..Config::default() };
    let refused = super::plan(&unreachable, &current, &PlanOptions::default()).unwrap_err();
    assert_eq!(refused.to_string(), "notification channel audit: to make it, give `webhook_env`");
}
