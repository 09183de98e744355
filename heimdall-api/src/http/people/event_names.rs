//! Names beside the ids of a page of audit events. An event's `target` is
//! `kind:id`, and the id stays the reference (names change); the name is
//! for people reading the feed. Each kind on the page is looked up once; a
//! target that no longer exists, or a kind without names, gets none, and a
//! lookup that fails leaves the page as it was rather than failing it.

use std::collections::{BTreeSet, HashMap};

use heimdall_core::domain::{AuditEvent, CatalogKind};
use heimdall_core::ids::{OrgId, ResourceId};
use heimdall_core::ports::StoreError;

use crate::http::AppState;

pub(super) async fn name_targets(state: &AppState, org: OrgId, events: &mut [AuditEvent]) {
    let kinds: BTreeSet<String> =
        events.iter().filter_map(|e| e.target.split_once(':').map(|(kind, _)| kind.to_owned())).collect();
    let mut names: HashMap<String, String> = HashMap::new();
    for kind in kinds {
        let ids: BTreeSet<&str> =
            events.iter().filter_map(|e| e.target.strip_prefix(&format!("{kind}:"))).collect();
        match names_of(state, org, &kind, &ids).await {
            Ok(found) => names.extend(found.into_iter().map(|(id, name)| (format!("{kind}:{id}"), name))),
            Err(e) => tracing::warn!(%kind, error = %e, "audit feed: names not looked up"),
        }
    }
    for event in events {
        event.target_name = names.get(&event.target).cloned();
    }
}

/// `(id, name)` of the objects of `kind` (those named `ids` where a kind
/// is looked up one by one).
async fn names_of(
    state: &AppState,
    org: OrgId,
    kind: &str,
    ids: &BTreeSet<&str>,
) -> Result<Vec<(String, String)>, StoreError> {
    let store = &state.store;
    let pairs = match kind {
        "agent" => store.list_agents(org).await?.into_iter().map(|a| (a.id.to_string(), a.name)).collect(),
        // A personal secret's name is its owner's alone: the feed never names it.
        "secret" => store
            .list_secrets(org)
            .await?
            .into_iter()
            .filter(|s| s.owner_id.is_none())
            .map(|s| (s.id.to_string(), s.name))
            .collect(),
        "member" => store.list_members(org).await?.into_iter().map(|m| (m.id.to_string(), m.email)).collect(),
        "policy" => store.list_policies(org).await?.into_iter().map(|p| (p.id.to_string(), p.name)).collect(),
        "cloud_account" => {
            store.list_accounts(org).await?.into_iter().map(|a| (a.id.to_string(), a.name)).collect()
        }
        "database" => {
            store.list_databases(org).await?.into_iter().map(|d| (d.id.to_string(), d.name)).collect()
        }
        "notification" => store.list_channels(org).await?.into_iter().map(|c| (c.id, c.name)).collect(),
        "schema" => store
            .list_schemas(org)
            .await?
            .into_iter()
            .map(|s| (s.id.to_string(), format!("{} v{}", s.type_name, s.version)))
            .collect(),
        "resource" => {
            let mut found = Vec::new();
            for id in ids.iter().filter_map(|id| id.parse::<ResourceId>().ok()) {
                match store.get_resource(org, id).await {
                    Ok(resource) => found.push((id.to_string(), resource.name)),
                    Err(StoreError::NotFound(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            found
        }
        other => match CatalogKind::ALL.iter().find(|k| k.as_str() == other) {
            Some(kind) => store
                .list_catalog(org, *kind, None)
                .await?
                .into_iter()
                .map(|e| (e.id.to_string(), e.name))
                .collect(),
            None => Vec::new(),
        },
    };
    Ok(pairs)
}
