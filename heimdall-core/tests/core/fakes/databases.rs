use super::*;

catalog_beside!(MemoryDatabases, secrets.catalog);

secrets_beside!(MemoryDatabases);

/// Databases and their service users in memory beside secrets, a catalog
/// and what Agents hold: names unique, a user's secret stored with it (its
/// name taken refuses both), a database with users refused deletion, and a
/// user being deleted refused a second deletion.
#[derive(Default)]
pub struct MemoryDatabases {
    pub secrets: MemorySecrets,
    pub holdings: Mutex<Vec<Holding>>,
    databases: Mutex<Vec<Database>>,
    users: Mutex<Vec<ServiceUser>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryDatabases {
    /// What an Agent's first task does: the user exists at version 1.
    pub fn created(&self, user: ServiceUserId) {
        let mut users = self.users.lock().unwrap();
        users.iter_mut().filter(|u| u.id == user).for_each(|u| u.current_version = Some(1));
    }

    pub fn with_catalog(entries: &[CatalogEntry]) -> Self {
        Self { secrets: MemorySecrets::with_catalog(entries), ..Self::default() }
    }

    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }
}

#[async_trait]
impl DatabaseRecordStore for MemoryDatabases {
    async fn create_database(&self, database: &Database, event: NewEvent) -> StoreResult<()> {
        let mut databases = self.databases.lock().unwrap();
        if databases.iter().any(|d| d.org_id == database.org_id && d.name == database.name) {
            return Err(StoreError::AlreadyExists("database"));
        }
        databases.push(database.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_databases(&self, org: OrgId) -> StoreResult<Vec<Database>> {
        Ok(self.databases.lock().unwrap().iter().filter(|d| d.org_id == org).cloned().collect())
    }

    async fn find_database(&self, org: OrgId, name: &str) -> StoreResult<Option<Database>> {
        Ok(self.databases.lock().unwrap().iter().find(|d| d.org_id == org && d.name == name).cloned())
    }

    async fn get_database(&self, org: OrgId, id: DatabaseId) -> StoreResult<Database> {
        let databases = self.databases.lock().unwrap();
        databases
            .iter()
            .find(|d| d.org_id == org && d.id == id)
            .cloned()
            .ok_or(StoreError::NotFound("database"))
    }

    async fn update_database(&self, database: &Database, event: NewEvent) -> StoreResult<()> {
        let mut databases = self.databases.lock().unwrap();
        let stored =
            databases.iter_mut().find(|d| d.id == database.id).ok_or(StoreError::NotFound("database"))?;
        *stored = database.clone();
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn delete_database(&self, database: &Database, event: NewEvent) -> StoreResult<()> {
        let users = self.users.lock().unwrap().iter().filter(|u| u.database_id == database.id).count() as u64;
        heimdall_core::dbusers::check_delete(&database.name, users).map_err(StoreError::Refused)?;
        self.databases.lock().unwrap().retain(|d| d.id != database.id);
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn create_service_user(
        &self,
        user: &ServiceUser,
        secret: &Secret,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut users = self.users.lock().unwrap();
        if users.iter().any(|u| u.database_id == user.database_id && u.name == user.name) {
            return Err(StoreError::AlreadyExists("service user"));
        }
        self.secrets.keep(secret)?;
        users.push(user.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_service_users(&self, org: OrgId, database: DatabaseId) -> StoreResult<Vec<ServiceUser>> {
        let users = self.users.lock().unwrap();
        Ok(users.iter().filter(|u| u.org_id == org && u.database_id == database).cloned().collect())
    }

    async fn get_service_user(&self, org: OrgId, id: ServiceUserId) -> StoreResult<ServiceUser> {
        let users = self.users.lock().unwrap();
        users
            .iter()
            .find(|u| u.org_id == org && u.id == id)
            .cloned()
            .ok_or(StoreError::NotFound("service user"))
    }

    async fn request_rotation(&self, org: OrgId, id: ServiceUserId, event: NewEvent) -> StoreResult<()> {
        let mut users = self.users.lock().unwrap();
        let user = users
            .iter_mut()
            .find(|u| u.org_id == org && u.id == id)
            .ok_or(StoreError::NotFound("service user"))?;
        user.rotate_requested = true;
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn request_user_deletion(
        &self,
        org: OrgId,
        id: ServiceUserId,
        drop_after: OffsetDateTime,
        by: &OnBehalfOf,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut users = self.users.lock().unwrap();
        let user = users
            .iter_mut()
            .find(|u| u.org_id == org && u.id == id)
            .ok_or(StoreError::NotFound("service user"))?;
        if user.drop_after.is_some() {
            return Err(StoreError::Conflict("the user is already being deleted".into()));
        }
        (user.drop_after, user.deleted_by, user.deleted_by_id) =
            (Some(drop_after), Some(by.email.clone()), Some(by.member_id));
        self.events.lock().unwrap().push(event);
        Ok(())
    }
}

holdings_in!(MemoryDatabases);
