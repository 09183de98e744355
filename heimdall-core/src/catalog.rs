//! The catalog (domains, systems, components, environments) as people
//! change it, as planners: each returns the entry or the event the store
//! writes with it. Which parent an entry needs (`CatalogKind::parent_kind`)
//! is read from the request before the parent is resolved.

pub mod service;

use serde_json::json;
use time::OffsetDateTime;

use crate::audit::{AuditAction, CatalogChange, EventPlan};
use crate::domain::{CatalogEntry, CatalogKind};
use crate::error::ApiError;
use crate::ids::{CatalogId, OrgId};
use crate::names::{validate_name, validate_text};

/// A new entry to store, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryPlan {
    pub entry: CatalogEntry,
    pub event: EventPlan,
}

/// A new `kind` called `name` under `parent` (resolved).
#[allow(clippy::too_many_arguments)]
pub fn create(
    kind: CatalogKind,
    name: String,
    description: String,
    parent: Option<&CatalogEntry>,
    id: CatalogId,
    org: OrgId,
    by: &str,
    now: OffsetDateTime,
) -> Result<EntryPlan, ApiError> {
    validate_name("name", &name)?;
    validate_text("description", &description, 1000)?;
    let entry = CatalogEntry {
        id,
        org_id: org,
        kind,
        name,
        description,
        parent_id: parent.map(|p| p.id),
        created_at: now,
        created_by: by.to_owned(),
    };
    let detail = json!({ "name": entry.name, "parent_id": entry.parent_id });
    let event = entry_event(CatalogChange::Created, &entry, detail);
    Ok(EntryPlan { entry, event })
}

/// Which `kind` entry `key` (an id, or a name) means among `entries`:
/// what a lookup found for it, or all of one kind. Another kind's entry,
/// or none, is `NOT_FOUND`; two of one name are refused, asking for the id.
pub fn resolve<'a>(
    entries: &'a [CatalogEntry],
    kind: CatalogKind,
    key: &str,
) -> Result<&'a CatalogEntry, ApiError> {
    let id = key.parse::<CatalogId>().ok();
    let mut named = entries.iter().filter(|e| e.kind == kind && id.map_or(e.name == key, |id| e.id == id));
    match (named.next(), named.next()) {
        (None, _) => Err(ApiError::not_found(kind)),
        (Some(entry), None) => Ok(entry),
        (Some(_), Some(_)) => Err(ApiError::invalid_input(format!(
            "{} {}s have that name; use the id",
            2 + named.count(),
            kind.as_str()
        ))),
    }
}

/// What renaming `entry` to `name` records.
pub fn renamed(entry: &CatalogEntry, name: &str) -> Result<EventPlan, ApiError> {
    validate_name("name", name)?;
    Ok(entry_event(CatalogChange::Renamed, entry, json!({ "from": entry.name, "to": name })))
}

/// What deleting `entry` records.
pub fn deleted(entry: &CatalogEntry) -> EventPlan {
    entry_event(CatalogChange::Deleted, entry, json!({ "name": entry.name }))
}

fn entry_event(change: CatalogChange, entry: &CatalogEntry, detail: serde_json::Value) -> EventPlan {
    EventPlan {
        action: AuditAction::catalog(entry.kind, change),
        target: format!("{}:{}", entry.kind, entry.id),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::fixtures::environment;

    #[test]
    fn a_key_means_one_entry_of_its_kind_by_id_or_by_a_name_no_other_shares() {
        let (prod, dev) = (environment("prod"), environment("dev"));
        let entries = [prod.clone(), dev.clone()];
        assert_eq!(resolve(&entries, CatalogKind::Environment, "prod"), Ok(&prod));
        assert_eq!(resolve(&entries, CatalogKind::Environment, &dev.id.to_string()), Ok(&dev));
        for (kind, key) in [(CatalogKind::Environment, "staging"), (CatalogKind::Domain, "prod")] {
            assert_eq!(resolve(&entries, kind, key).unwrap_err().code, ErrorCode::NotFound, "{key}");
        }
        let namesakes = [prod.clone(), CatalogEntry { id: dev.id, ..prod.clone() }];
        let refused = resolve(&namesakes, CatalogKind::Environment, "prod").unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidInput);
        assert!(refused.message.contains("2 environments have that name; use the id"), "{}", refused.message);
    }

    #[test]
    fn an_entry_is_recorded_as_its_kind_by_id() {
        let (org, now) = (OrgId::from_uuid(uuid::Uuid::nil()), OffsetDateTime::UNIX_EPOCH);
        let id = CatalogId::from_uuid(uuid::Uuid::from_u128(4));
        let plan = create(CatalogKind::Environment, "prod".into(), String::new(), None, id, org, "ana", now)
            .unwrap();
        assert_eq!(plan.event.action, AuditAction::catalog(CatalogKind::Environment, CatalogChange::Created));
        assert_eq!(plan.event.target, format!("environment:{id}"));
        let bad = create(CatalogKind::Domain, "Pay Ments".into(), String::new(), None, id, org, "ana", now);
        assert_eq!(bad.unwrap_err().code, ErrorCode::InvalidInput);
        let prod = environment("prod");
        assert_eq!(
            renamed(&prod, "production").unwrap().detail,
            json!({ "from": "prod", "to": "production" })
        );
        assert_eq!(renamed(&prod, "no way").unwrap_err().code, ErrorCode::InvalidInput);
        assert_eq!(
            deleted(&prod).action,
            AuditAction::catalog(CatalogKind::Environment, CatalogChange::Deleted)
        );
    }
}
