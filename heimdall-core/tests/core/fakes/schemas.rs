use super::*;

/// The schemas port in memory beside a catalog (for the environments
/// defaults name): versions numbered per type, deleted ones kept but not
/// listed, and a version refused deletion while `in_use` Resources use it.
#[derive(Default)]
pub struct MemorySchemas {
    pub catalog: MemoryCatalog,
    pub in_use: Mutex<u64>,
    schemas: Mutex<Vec<ResourceSchema>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemorySchemas {
    /// No schema yet; `environments` in the catalog.
    pub fn with_environments(environments: &[CatalogEntry]) -> Self {
        Self { catalog: MemoryCatalog::with(environments), ..Self::default() }
    }

    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }
}

#[async_trait]
impl SchemaStore for MemorySchemas {
    async fn create_schema(&self, schema: &ResourceSchema, event: NewEvent) -> StoreResult<ResourceSchema> {
        let mut schemas = self.schemas.lock().unwrap();
        let of_type = schemas.iter().filter(|s| s.org_id == schema.org_id && s.type_name == schema.type_name);
        let newest = of_type.map(|s| s.version).max().unwrap_or(0);
        let stored = ResourceSchema { version: newest + 1, ..schema.clone() };
        schemas.push(stored.clone());
        self.events.lock().unwrap().push(event);
        Ok(stored)
    }

    async fn list_schemas(&self, org: OrgId) -> StoreResult<Vec<ResourceSchema>> {
        let schemas = self.schemas.lock().unwrap();
        Ok(schemas.iter().filter(|s| s.org_id == org && s.deleted_at.is_none()).cloned().collect())
    }

    async fn get_schema(&self, org: OrgId, id: SchemaId) -> StoreResult<ResourceSchema> {
        let schemas = self.schemas.lock().unwrap();
        schemas.iter().find(|s| s.org_id == org && s.id == id).cloned().ok_or(StoreError::NotFound("schema"))
    }

    async fn set_schema_deprecation(
        &self,
        org: OrgId,
        id: SchemaId,
        deprecation: Option<(OffsetDateTime, String)>,
        event: NewEvent,
    ) -> StoreResult<ResourceSchema> {
        let mut schemas = self.schemas.lock().unwrap();
        let live = |s: &&mut ResourceSchema| s.org_id == org && s.id == id && s.deleted_at.is_none();
        let schema = schemas.iter_mut().find(live).ok_or(StoreError::NotFound("schema"))?;
        (schema.deprecated_at, schema.deprecated_by) =
            deprecation.map_or((None, None), |(at, by)| (Some(at), Some(by)));
        self.events.lock().unwrap().push(event);
        Ok(schema.clone())
    }

    async fn delete_schema(
        &self,
        schema: &ResourceSchema,
        at: OffsetDateTime,
        event: NewEvent,
    ) -> StoreResult<()> {
        heimdall_core::schemas::check_delete(schema, *self.in_use.lock().unwrap())
            .map_err(StoreError::Refused)?;
        let mut schemas = self.schemas.lock().unwrap();
        let live = |s: &&mut ResourceSchema| s.id == schema.id && s.deleted_at.is_none();
        schemas.iter_mut().find(live).ok_or(StoreError::NotFound("schema"))?.deleted_at = Some(at);
        self.events.lock().unwrap().push(event);
        Ok(())
    }
}

catalog_beside!(MemorySchemas, catalog);
