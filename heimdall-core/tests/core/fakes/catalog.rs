use super::*;

/// The catalog port in memory, with the SQL store's refusals: a name
/// taken among siblings, an entry with something in it.
#[derive(Default)]
pub struct MemoryCatalog {
    entries: Mutex<Vec<CatalogEntry>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryCatalog {
    pub fn with(entries: &[CatalogEntry]) -> Self {
        Self { entries: Mutex::new(entries.to_vec()), ..Self::default() }
    }

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
