//! In-memory stores and a caller for the use cases' tests: the ports'
//! behaviour the SQL store has (names taken, entries not empty, stale
//! versions), kept in memory, and a caller whose policies a test sets.

use std::sync::Mutex;

use async_trait::async_trait;
use heimdall_core::audit::{AuditAction, EventPlan};
use heimdall_core::authz::{Action, Target};
use heimdall_core::domain::{CatalogEntry, CatalogKind, Policy, PolicyVersion};
use heimdall_core::ids::{CatalogId, EventId, OrgId, PolicyId};
use heimdall_core::policies::PolicyWrite;
use heimdall_core::ports::{Actor, CatalogStore, NewEvent, PolicyStore, StoreError, StoreResult};
use heimdall_core::ApiError;
use time::OffsetDateTime;
use uuid::Uuid;

/// The catalog port in memory, with the SQL store's refusals: a name
/// taken among siblings, an entry with something in it.
#[derive(Default)]
pub struct MemoryCatalog {
    entries: Mutex<Vec<CatalogEntry>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryCatalog {
    pub fn entries(&self) -> Vec<CatalogEntry> {
        self.entries.lock().unwrap().clone()
    }

    pub fn actions(&self) -> Vec<AuditAction> {
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
pub struct Ana {
    refused: Option<(Action, Option<String>)>,
    pub asked: Mutex<Vec<(Action, Target)>>,
}

pub const ORG: OrgId = OrgId::from_uuid(Uuid::nil());

impl Ana {
    pub fn allowed_everything() -> Self {
        Self { refused: None, asked: Mutex::default() }
    }

    pub fn refused(action: Action, under: Option<CatalogId>) -> Self {
        Self { refused: Some((action, under.map(|id| id.to_string()))), asked: Mutex::default() }
    }

    pub fn asked(&self) -> usize {
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

/// The policies port in memory: names unique, a write refused
/// `StaleRevision` unless the policy is still at the version it was
/// planned on, every version kept, and the organization's policy version
/// bumped with each change.
#[derive(Default)]
pub struct MemoryPolicies {
    policies: Mutex<Vec<Policy>>,
    history: Mutex<Vec<(PolicyId, PolicyVersion)>>,
    generation: Mutex<i64>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryPolicies {
    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }

    fn keep(&self, policy: &Policy, event: NewEvent) {
        let version = PolicyVersion {
            version: policy.version,
            name: policy.name.clone(),
            description: policy.description.clone(),
            text: policy.text.clone(),
            written_at: policy.updated_at.unwrap_or(policy.created_at),
            written_by: policy.updated_by.clone().unwrap_or_else(|| policy.created_by.clone()),
        };
        self.history.lock().unwrap().push((policy.id, version));
        *self.generation.lock().unwrap() += 1;
        self.events.lock().unwrap().push(event);
    }
}

#[async_trait]
impl PolicyStore for MemoryPolicies {
    async fn create_policy(&self, policy: &Policy, event: NewEvent) -> StoreResult<()> {
        {
            let mut policies = self.policies.lock().unwrap();
            if policies.iter().any(|p| p.org_id == policy.org_id && p.name == policy.name) {
                return Err(StoreError::AlreadyExists("policy"));
            }
            policies.push(policy.clone());
        }
        self.keep(policy, event);
        Ok(())
    }

    async fn list_policies(&self, org: OrgId) -> StoreResult<Vec<Policy>> {
        let mut policies: Vec<Policy> =
            self.policies.lock().unwrap().iter().filter(|p| p.org_id == org).cloned().collect();
        policies.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(policies)
    }

    async fn policy_version(&self, _org: OrgId) -> StoreResult<i64> {
        Ok(*self.generation.lock().unwrap())
    }

    async fn get_policy(&self, org: OrgId, id: PolicyId) -> StoreResult<Policy> {
        let policies = self.policies.lock().unwrap();
        policies.iter().find(|p| p.org_id == org && p.id == id).cloned().ok_or(StoreError::NotFound("policy"))
    }

    async fn delete_policy(&self, org: OrgId, id: PolicyId, event: NewEvent) -> StoreResult<()> {
        {
            let mut policies = self.policies.lock().unwrap();
            let before = policies.len();
            policies.retain(|p| !(p.org_id == org && p.id == id));
            if policies.len() == before {
                return Err(StoreError::NotFound("policy"));
            }
        }
        self.history.lock().unwrap().retain(|(of, _)| *of != id);
        *self.generation.lock().unwrap() += 1;
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn update_policy(&self, write: &PolicyWrite, event: NewEvent) -> StoreResult<()> {
        {
            let mut policies = self.policies.lock().unwrap();
            let current = policies.iter_mut().find(|p| p.id == write.policy.id);
            let current = current.ok_or(StoreError::NotFound("policy"))?;
            if current.version != write.previous_version {
                return Err(StoreError::StaleRevision(format!(
                    "policy {} is at version {}, not {}",
                    current.name, current.version, write.previous_version
                )));
            }
            *current = write.policy.clone();
        }
        self.keep(&write.policy, event);
        Ok(())
    }

    async fn policy_versions(&self, org: OrgId, id: PolicyId) -> StoreResult<Vec<PolicyVersion>> {
        self.get_policy(org, id).await?;
        let history = self.history.lock().unwrap();
        let mut versions: Vec<PolicyVersion> =
            history.iter().filter(|(of, _)| *of == id).map(|(_, v)| v.clone()).collect();
        versions.sort_by_key(|v| std::cmp::Reverse(v.version));
        Ok(versions)
    }
}
