//! The organization's configuration as a [`Config`]: what `plan` compares
//! a file with, and what `heimdall export-config` writes.

use std::collections::HashMap;

use super::{
    Component, Config, Domain, Environment, Member, NotificationChannel, Policy, Schema, Secret, System,
};
use crate::wire::{CatalogEntry, CatalogKind};
use crate::{Client, Result};

/// Reads every managed kind, with ids. Names stand for ids where one
/// object points at another (a system's domain, a secret's components).
/// Personal secrets and secrets being deleted are left out.
pub async fn current(client: &Client) -> Result<Config> {
    let mut catalog: HashMap<CatalogKind, Vec<CatalogEntry>> = HashMap::new();
    for kind in CatalogKind::ALL {
        catalog.insert(kind, client.list_catalog(kind, None).await?);
    }
    let entries = |kind| catalog.get(&kind).map(Vec::as_slice).unwrap_or_default();
    let name_of = |kind, id: Option<heimdall_core::ids::CatalogId>| {
        entries(kind).iter().find(|e| Some(e.id) == id).map(|e| e.name.clone()).unwrap_or_default()
    };
    let described = |e: &CatalogEntry| (!e.description.is_empty()).then(|| e.description.clone());
    let domains = entries(CatalogKind::Domain)
        .iter()
        .map(|e| Domain { id: Some(e.id.to_string()), name: e.name.clone(), description: described(e) })
        .collect();
    let systems = entries(CatalogKind::System)
        .iter()
        .map(|e| System {
            id: Some(e.id.to_string()),
            name: e.name.clone(),
            domain: name_of(CatalogKind::Domain, e.parent_id),
            description: described(e),
        })
        .collect();
    let components = entries(CatalogKind::Component)
        .iter()
        .map(|e| Component {
            id: Some(e.id.to_string()),
            name: e.name.clone(),
            system: name_of(CatalogKind::System, e.parent_id),
            description: described(e),
        })
        .collect();
    let agents = client.list_agents().await?;
    let mut environments = Vec::new();
    for e in entries(CatalogKind::Environment) {
        let assigned = client.list_assignments(&e.id.to_string()).await?;
        let mut names: Vec<String> = assigned
            .iter()
            .filter_map(|a| agents.iter().find(|g| g.id == a.agent_id))
            .map(|g| g.name.clone())
            .collect();
        names.sort();
        environments.push(Environment {
            id: Some(e.id.to_string()),
            name: e.name.clone(),
            description: described(e),
            agents: Some(names),
        });
    }
    // Each type's newest version.
    let mut newest: Vec<crate::wire::ResourceSchema> = Vec::new();
    for schema in client.list_schemas(None).await? {
        match newest.iter_mut().find(|s| s.type_name == schema.type_name) {
            Some(kept) if kept.version >= schema.version => {}
            Some(kept) => *kept = schema,
            None => newest.push(schema),
        }
    }
    let schemas = newest
        .into_iter()
        .map(|s| Schema {
            type_name: s.type_name,
            input_schema: s.input_schema,
            defaults: Some(s.defaults),
            module: s.module,
            requires_approval: Some(s.requires_approval),
            drift_check_every: s.drift_check_every_seconds.map(super::every_text),
        })
        .collect();
    let policies = client
        .list_policies()
        .await?
        .into_iter()
        .map(|p| Policy {
            name: p.name,
            description: (!p.description.is_empty()).then_some(p.description),
            text: p.text,
        })
        .collect();
    let members = client
        .list_members()
        .await?
        .into_iter()
        .map(|m| Member { id: Some(m.id.to_string()), email: m.email, role: m.role })
        .collect();
    let secrets = client
        .list_secrets()
        .await?
        .into_iter()
        .filter(|s| s.owner_id.is_none() && s.personal_owner.is_none())
        .filter(|s| s.status == heimdall_core::secrets::SecretStatus::Active)
        .map(|s| {
            let mut components: Vec<String> = s
                .components
                .iter()
                .map(|id| name_of(CatalogKind::Component, Some(*id)))
                .filter(|name| !name.is_empty())
                .collect();
            components.sort();
            Secret {
                name: s.name,
                secret_type: Some(s.secret_type),
                description: (!s.description.is_empty()).then_some(s.description),
                tags: Some(s.tags),
                components: Some(components),
            }
        })
        .collect();
    let notification_channels = client
        .list_channels()
        .await?
        .into_iter()
        .map(|c| NotificationChannel { name: c.name, webhook_env: None })
        .collect();
    Ok(Config {
        domains: Some(domains),
        systems: Some(systems),
        components: Some(components),
        environments: Some(environments),
        schemas: Some(schemas),
        policies: Some(policies),
        members: Some(members),
        secrets: Some(secrets),
        notification_channels: Some(notification_channels),
    })
}
