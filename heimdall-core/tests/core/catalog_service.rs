//! The catalog's use cases (`catalog::service`) against an in-memory store
//! and a caller whose policies the test sets: what is stored, what is
//! recorded, and that a refusal leaves nothing behind. The same use cases
//! run on the SQL store in the API's tests.

use std::sync::Mutex;

use async_trait::async_trait;
use heimdall_core::audit::{AuditAction, CatalogChange, EventPlan};
use heimdall_core::authz::{Action, Target, TargetKind};
use heimdall_core::catalog::service::{self, NewEntry};
use heimdall_core::domain::{CatalogEntry, CatalogKind};
use heimdall_core::ids::{CatalogId, EventId, OrgId};
use heimdall_core::ports::{Actor, CatalogStore, NewEvent, StoreError, StoreResult};
use heimdall_core::{ApiError, ErrorCode};
use time::OffsetDateTime;
use uuid::Uuid;

/// The catalog port in memory, with the SQL store's refusals: a name
/// taken among siblings, an entry with something in it.
#[derive(Default)]
struct MemoryCatalog {
    entries: Mutex<Vec<CatalogEntry>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryCatalog {
    fn entries(&self) -> Vec<CatalogEntry> {
        self.entries.lock().unwrap().clone()
    }

    fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }
}

#[async_trait]
impl CatalogStore for MemoryCatalog {
    async fn create_catalog_entry(&self, entry: &CatalogEntry, event: NewEvent) -> StoreResult<()> {
        let mut entries = self.entries.lock().unwrap();
        let taken =
            |e: &CatalogEntry| e.kind == entry.kind && e.parent_id == entry.parent_id && e.name == entry.name;
        if entries.iter().any(taken) {
            return Err(StoreError::AlreadyExists("catalog entry"));
        }
        entries.push(entry.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_catalog(
        &self,
        org: OrgId,
        kind: CatalogKind,
        parent: Option<CatalogId>,
    ) -> StoreResult<Vec<CatalogEntry>> {
        let of = |e: &&CatalogEntry| {
            e.org_id == org && e.kind == kind && parent.is_none_or(|p| e.parent_id == Some(p))
        };
        Ok(self.entries.lock().unwrap().iter().filter(of).cloned().collect())
    }

    async fn get_catalog_entry(&self, org: OrgId, id: CatalogId) -> StoreResult<CatalogEntry> {
        let entries = self.entries.lock().unwrap();
        entries
            .iter()
            .find(|e| e.org_id == org && e.id == id)
            .cloned()
            .ok_or(StoreError::NotFound("catalog entry"))
    }

    async fn find_catalog_by_name(
        &self,
        org: OrgId,
        kind: CatalogKind,
        name: &str,
    ) -> StoreResult<Vec<CatalogEntry>> {
        let named = |e: &&CatalogEntry| e.org_id == org && e.kind == kind && e.name == name;
        Ok(self.entries.lock().unwrap().iter().filter(named).cloned().collect())
    }

    async fn rename_catalog_entry(
        &self,
        org: OrgId,
        id: CatalogId,
        name: &str,
        event: NewEvent,
    ) -> StoreResult<CatalogEntry> {
        let mut entries = self.entries.lock().unwrap();
        let entry = entries.iter().find(|e| e.org_id == org && e.id == id).cloned();
        let mut entry = entry.ok_or(StoreError::NotFound("catalog entry"))?;
        if entries.iter().any(|e| e.kind == entry.kind && e.parent_id == entry.parent_id && e.name == name) {
            return Err(StoreError::AlreadyExists("catalog entry"));
        }
        entry.name = name.to_owned();
        entries.retain(|e| e.id != id);
        entries.push(entry.clone());
        self.events.lock().unwrap().push(event);
        Ok(entry)
    }

    async fn delete_catalog_entry(&self, org: OrgId, id: CatalogId, event: NewEvent) -> StoreResult<()> {
        let mut entries = self.entries.lock().unwrap();
        if entries.iter().any(|e| e.parent_id == Some(id)) {
            return Err(StoreError::NotEmpty("it still contains entries".into()));
        }
        let before = entries.len();
        entries.retain(|e| !(e.org_id == org && e.id == id));
        if entries.len() == before {
            return Err(StoreError::NotFound("catalog entry"));
        }
        self.events.lock().unwrap().push(event);
        Ok(())
    }
}

/// Ana, in organization `ORG`, whose policies refuse `refused` (on any
/// target naming `refused_under` among its ancestors, or on any target
/// when that is `None`); what she was asked is kept.
struct Ana {
    refused: Option<(Action, Option<String>)>,
    asked: Mutex<Vec<(Action, Target)>>,
}

const ORG: OrgId = OrgId::from_uuid(Uuid::nil());

impl Ana {
    fn allowed_everything() -> Self {
        Self { refused: None, asked: Mutex::default() }
    }

    fn refused(action: Action, under: Option<CatalogId>) -> Self {
        Self { refused: Some((action, under.map(|id| id.to_string()))), asked: Mutex::default() }
    }

    fn asked(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

#[async_trait]
impl Actor for Ana {
    fn org(&self) -> OrgId {
        ORG
    }

    fn name(&self) -> &str {
        "ana@example.com"
    }

    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::UNIX_EPOCH
    }

    async fn authorize(&self, action: Action, target: &Target) -> Result<(), ApiError> {
        self.asked.lock().unwrap().push((action, target.clone()));
        let names = |id: &String| target.id == *id || target.chains.iter().flatten().any(|(_, a)| a == id);
        match &self.refused {
            Some((refused, under)) if *refused == action && under.as_ref().is_none_or(names) => {
                Err(ApiError::forbidden("refused by the test's policy"))
            }
            _ => Ok(()),
        }
    }

    fn event(&self, plan: EventPlan) -> NewEvent {
        NewEvent {
            id: EventId::from_uuid(Uuid::new_v4()),
            at: self.now(),
            actor: self.name().to_owned(),
            action: plan.action,
            target: plan.target,
            detail: plan.detail,
        }
    }
}

fn id(n: u128) -> CatalogId {
    CatalogId::from_uuid(Uuid::from_u128(n))
}

fn named(name: &str, parent: Option<CatalogId>) -> NewEntry {
    NewEntry { name: name.into(), description: None, parent }
}

#[tokio::test]
async fn a_system_lives_under_its_domain_is_renamed_and_deleted_with_one_event_each() {
    let (store, ana) = (MemoryCatalog::default(), Ana::allowed_everything());
    let payments =
        service::create(&store, &ana, CatalogKind::Domain, named("payments", None), id(1)).await.unwrap();
    let checkout =
        service::create(&store, &ana, CatalogKind::System, named("checkout", Some(payments.id)), id(2))
            .await
            .unwrap();
    assert_eq!((checkout.parent_id, checkout.created_by.as_str()), (Some(payments.id), "ana@example.com"));
    // Asked to write under the domain, with the domain as the target.
    let (action, target) = ana.asked.lock().unwrap().last().cloned().unwrap();
    assert_eq!(
        (action, target.kind, target.id),
        (Action::CatalogWrite, TargetKind::Domain, payments.id.to_string())
    );

    let shown = service::show(&store, &ana, CatalogKind::System, "checkout").await.unwrap();
    assert_eq!(shown, checkout);
    let renamed =
        service::rename(&store, &ana, CatalogKind::System, &checkout.id.to_string(), "till").await.unwrap();
    assert_eq!((renamed.id, renamed.name.as_str()), (checkout.id, "till"));
    let refused = service::delete(&store, &ana, CatalogKind::Domain, "payments").await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::NotEmpty);
    service::delete(&store, &ana, CatalogKind::System, "till").await.unwrap();
    service::delete(&store, &ana, CatalogKind::Domain, "payments").await.unwrap();

    use CatalogChange::{Created, Deleted, Renamed};
    let expected = [
        (CatalogKind::Domain, Created),
        (CatalogKind::System, Created),
        (CatalogKind::System, Renamed),
        (CatalogKind::System, Deleted),
        (CatalogKind::Domain, Deleted),
    ]
    .map(|(kind, change)| AuditAction::catalog(kind, change));
    assert_eq!(store.actions(), expected);
    assert!(store.entries().is_empty());
}

#[tokio::test]
async fn a_caller_the_policies_refuse_under_a_domain_changes_nothing_there() {
    let store = MemoryCatalog::default();
    let payments = service::create(
        &store,
        &Ana::allowed_everything(),
        CatalogKind::Domain,
        named("payments", None),
        id(1),
    )
    .await
    .unwrap();
    let ana = Ana::refused(Action::CatalogWrite, Some(payments.id));
    let refused =
        service::create(&store, &ana, CatalogKind::System, named("checkout", Some(payments.id)), id(2)).await;
    assert_eq!(refused.unwrap_err().code, ErrorCode::Forbidden);
    for refused in [
        service::rename(&store, &ana, CatalogKind::Domain, "payments", "billing").await.unwrap_err(),
        service::delete(&store, &ana, CatalogKind::Domain, "payments").await.unwrap_err(),
    ] {
        assert_eq!(refused.code, ErrorCode::Forbidden);
    }
    // Elsewhere she may.
    service::create(&store, &ana, CatalogKind::Domain, named("billing", None), id(3)).await.unwrap();
    let names: Vec<String> = store.entries().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["payments", "billing"]);
    assert_eq!(store.actions().len(), 2, "only the two creations are recorded");
}

#[tokio::test]
async fn a_misplaced_entry_is_refused_before_anything_is_asked_or_stored() {
    let (store, ana) = (MemoryCatalog::default(), Ana::allowed_everything());
    let refusals = [
        (CatalogKind::System, named("checkout", None), "a system needs parent_id"),
        (CatalogKind::Domain, named("payments", Some(id(9))), "a domain belongs to the organization"),
        (CatalogKind::Environment, named("prod", Some(id(9))), "an environment belongs"),
    ];
    for (kind, request, said) in refusals {
        let refused = service::create(&store, &ana, kind, request, id(2)).await.unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidInput);
        assert!(refused.message.starts_with(said) || refused.message.contains(said), "{}", refused.message);
    }
    // A parent that does not exist, by id: not found, nothing asked.
    let refused =
        service::create(&store, &ana, CatalogKind::System, named("checkout", Some(id(9))), id(2)).await;
    assert_eq!(refused.unwrap_err().code, ErrorCode::NotFound);
    assert_eq!((ana.asked(), store.entries().len(), store.actions().len()), (0, 0, 0));
}
