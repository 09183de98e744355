//! `domain|system|component|environment create|list|show|rename|delete`:
//! four nouns, one handler.

use std::collections::HashMap;

use heimdall_core::ids::CatalogId;
use heimdall_sdk::Client;
use heimdall_wire::{CatalogEntry, CatalogKind, CreateCatalogEntry};

use super::{title, Context};
use crate::args::{ComponentCommand, EntryCommand, PlainCatalogCommand, SystemCommand};
use crate::error::Result;
use crate::output::timestamp;

/// A catalog command, lowered from the per-noun clap enums.
#[derive(Debug, PartialEq, Eq)]
pub struct CatalogAction {
    pub kind: CatalogKind,
    pub op: CatalogOp,
}

#[derive(Debug, PartialEq, Eq)]
pub enum CatalogOp {
    /// `parent`: the domain of a system, the system of a component (id or name).
    Create {
        name: String,
        description: Option<String>,
        parent: Option<String>,
    },
    List {
        parent: Option<String>,
    },
    Show {
        entry: String,
    },
    Rename {
        entry: String,
        new_name: String,
    },
    Delete {
        entry: String,
    },
}

impl From<EntryCommand> for CatalogOp {
    fn from(cmd: EntryCommand) -> Self {
        match cmd {
            EntryCommand::Show { entry } => CatalogOp::Show { entry },
            EntryCommand::Rename { entry, new_name } => CatalogOp::Rename { entry, new_name },
            EntryCommand::Delete { entry } => CatalogOp::Delete { entry },
        }
    }
}

impl CatalogAction {
    pub fn plain(kind: CatalogKind, cmd: PlainCatalogCommand) -> Self {
        let op = match cmd {
            PlainCatalogCommand::Create { name, description } => {
                CatalogOp::Create { name, description, parent: None }
            }
            PlainCatalogCommand::List => CatalogOp::List { parent: None },
            PlainCatalogCommand::Entry(entry) => entry.into(),
        };
        Self { kind, op }
    }

    pub fn system(cmd: SystemCommand) -> Self {
        let op = match cmd {
            SystemCommand::Create { name, domain, description } => {
                CatalogOp::Create { name, description, parent: Some(domain) }
            }
            SystemCommand::List { domain } => CatalogOp::List { parent: domain },
            SystemCommand::Entry(entry) => entry.into(),
        };
        Self { kind: CatalogKind::System, op }
    }

    pub fn component(cmd: ComponentCommand) -> Self {
        let op = match cmd {
            ComponentCommand::Create { name, system, description } => {
                CatalogOp::Create { name, description, parent: Some(system) }
            }
            ComponentCommand::List { system } => CatalogOp::List { parent: system },
            ComponentCommand::Entry(entry) => entry.into(),
        };
        Self { kind: CatalogKind::Component, op }
    }
}

pub async fn run(ctx: &Context, action: CatalogAction) -> Result<()> {
    let client = ctx.client()?;
    let out = &ctx.out;
    let kind = action.kind;
    match action.op {
        CatalogOp::Create { name, description, parent } => {
            let parent_id = match (kind.parent_kind(), parent) {
                (Some(parent_kind), Some(parent)) => Some(resolve(&client, parent_kind, &parent).await?),
                _ => None,
            };
            let entry = client
                .create_catalog_entry(kind, &CreateCatalogEntry { name, description, parent_id })
                .await?;
            out.done(&entry, &format!("{} created: {} ({})", title(kind), entry.name, entry.id), &[])
        }
        CatalogOp::List { parent } => {
            // The API takes the parent's id or name.
            let entries = client.list_catalog(kind, parent.as_deref()).await?;
            match kind.parent_kind() {
                None => out.list(&entries, &["ID", "NAME", "DESCRIPTION", "CREATED AT"], |e| {
                    vec![e.id.to_string(), e.name.clone(), e.description.clone(), timestamp(e.created_at)]
                }),
                Some(parent_kind) => {
                    let names =
                        if out.is_json() { HashMap::new() } else { parent_names(&client, parent_kind).await };
                    let parent_header = parent_kind.as_str().to_uppercase();
                    let headers = ["ID", "NAME", parent_header.as_str(), "DESCRIPTION", "CREATED AT"];
                    out.list(&entries, &headers, |e| {
                        vec![
                            e.id.to_string(),
                            e.name.clone(),
                            parent_label(&names, e.parent_id),
                            e.description.clone(),
                            timestamp(e.created_at),
                        ]
                    })
                }
            }
        }
        CatalogOp::Show { entry } => {
            let entry = client.get_catalog_entry(kind, &entry).await?;
            let mut fields = vec![
                ("ID", entry.id.to_string()),
                ("KIND", entry.kind.to_string()),
                ("NAME", entry.name.clone()),
            ];
            let parent_header = kind.parent_kind().map(|k| k.as_str().to_uppercase());
            if let (Some(parent_kind), Some(header)) = (kind.parent_kind(), parent_header.as_deref()) {
                let label = match (entry.parent_id, out.is_json()) {
                    (Some(id), false) => match client.get_catalog_entry(parent_kind, &id.to_string()).await {
                        Ok(parent) => format!("{} ({id})", parent.name),
                        Err(_) => id.to_string(),
                    },
                    (id, _) => id.map(|id| id.to_string()).unwrap_or_default(),
                };
                fields.push((header, label));
            }
            fields.extend([
                ("DESCRIPTION", entry.description.clone()),
                ("CREATED AT", timestamp(entry.created_at)),
                ("CREATED BY", entry.created_by.clone()),
            ]);
            out.record(&entry, &fields)
        }
        CatalogOp::Rename { entry: old, new_name } => {
            let entry = client.rename_catalog_entry(kind, &old, &new_name).await?;
            out.done(&entry, &format!("{} renamed: {old} → {} ({})", title(kind), entry.name, entry.id), &[])
        }
        CatalogOp::Delete { entry } => {
            // Look it up first: the API answers 204, and the id makes sure
            // the entry shown is the one deleted.
            let entry = client.get_catalog_entry(kind, &entry).await?;
            client.delete_catalog_entry(kind, &entry.id.to_string()).await?;
            out.done(&entry, &format!("{} deleted: {} ({})", title(kind), entry.name, entry.id), &[])
        }
    }
}

/// An id as typed, or the id of the entry with that name.
async fn resolve(client: &Client, kind: CatalogKind, id_or_name: &str) -> Result<CatalogId> {
    if let Ok(id) = id_or_name.parse::<CatalogId>() {
        return Ok(id);
    }
    Ok(client.get_catalog_entry(kind, id_or_name).await?.id)
}

/// Names of the parents, for a readable DOMAIN/SYSTEM column. Best effort:
/// on any error the column shows ids.
async fn parent_names(client: &Client, parent_kind: CatalogKind) -> HashMap<CatalogId, String> {
    client
        .list_catalog(parent_kind, None)
        .await
        .map(|parents| parents.into_iter().map(|p: CatalogEntry| (p.id, p.name)).collect())
        .unwrap_or_default()
}

fn parent_label(names: &HashMap<CatalogId, String>, parent: Option<CatalogId>) -> String {
    match parent {
        Some(id) => names.get(&id).cloned().unwrap_or_else(|| id.to_string()),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowering_keeps_the_parent() {
        let action = CatalogAction::system(SystemCommand::Create {
            name: "checkout".into(),
            domain: "payments".into(),
            description: None,
        });
        assert_eq!(action.kind, CatalogKind::System);
        assert_eq!(
            action.op,
            CatalogOp::Create { name: "checkout".into(), description: None, parent: Some("payments".into()) }
        );
        let action = CatalogAction::plain(CatalogKind::Environment, PlainCatalogCommand::List);
        assert_eq!(action.op, CatalogOp::List { parent: None });
    }
}
