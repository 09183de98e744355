use super::*;

catalog_beside!(MemoryAccounts, secrets.catalog);

/// The accounts port in memory beside secrets and a catalog: names unique,
/// a link replacing any account linked at the same place, and an account
/// refused deletion while something links it (no Resource keeps state
/// here: there are none in memory).
#[derive(Default)]
pub struct MemoryAccounts {
    pub secrets: MemorySecrets,
    accounts: Mutex<Vec<CloudAccount>>,
    links: Mutex<Vec<AccountLink>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryAccounts {
    pub fn with_catalog(entries: &[CatalogEntry]) -> Self {
        Self { secrets: MemorySecrets::with_catalog(entries), ..Self::default() }
    }

    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }
}

#[async_trait]
impl AccountStore for MemoryAccounts {
    async fn create_account(&self, account: &CloudAccount, event: NewEvent) -> StoreResult<()> {
        let mut accounts = self.accounts.lock().unwrap();
        if accounts.iter().any(|a| a.org_id == account.org_id && a.name == account.name) {
            return Err(StoreError::AlreadyExists("cloud account"));
        }
        accounts.push(account.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_accounts(&self, org: OrgId) -> StoreResult<Vec<CloudAccount>> {
        Ok(self.accounts.lock().unwrap().iter().filter(|a| a.org_id == org).cloned().collect())
    }

    async fn get_account(&self, org: OrgId, id: CloudAccountId) -> StoreResult<CloudAccount> {
        let accounts = self.accounts.lock().unwrap();
        accounts
            .iter()
            .find(|a| a.org_id == org && a.id == id)
            .cloned()
            .ok_or(StoreError::NotFound("cloud account"))
    }

    async fn find_account_by_name(&self, org: OrgId, name: &str) -> StoreResult<Option<CloudAccount>> {
        Ok(self.accounts.lock().unwrap().iter().find(|a| a.org_id == org && a.name == name).cloned())
    }

    async fn link_account(&self, _org: OrgId, link: &AccountLink, event: NewEvent) -> StoreResult<()> {
        let mut links = self.links.lock().unwrap();
        let same_place = |l: &AccountLink| {
            l.scope == link.scope && l.scope_id == link.scope_id && l.environment_id == link.environment_id
        };
        links.retain(|l| !same_place(l));
        links.push(link.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_links(&self, _org: OrgId) -> StoreResult<Vec<AccountLink>> {
        Ok(self.links.lock().unwrap().clone())
    }

    async fn update_account(&self, change: &AccountChange, event: NewEvent) -> StoreResult<()> {
        let mut accounts = self.accounts.lock().unwrap();
        let stored = accounts
            .iter_mut()
            .find(|a| a.id == change.account.id)
            .ok_or(StoreError::NotFound("cloud account"))?;
        *stored = change.account.clone();
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn unlink_account(
        &self,
        account: &CloudAccount,
        scope: LinkScope,
        scope_id: Option<CatalogId>,
        environment: CatalogId,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut links = self.links.lock().unwrap();
        let that = |l: &AccountLink| {
            l.account_id == account.id
                && l.scope == scope
                && l.scope_id == scope_id
                && l.environment_id == environment
        };
        let at = links.iter().position(that).ok_or(StoreError::NotFound("link"))?;
        links.remove(at);
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn delete_account(&self, account: &CloudAccount, event: NewEvent) -> StoreResult<()> {
        let links = self.links.lock().unwrap().iter().filter(|l| l.account_id == account.id).count() as u64;
        heimdall_core::accounts::check_delete(&account.name, links, 0).map_err(StoreError::Refused)?;
        self.accounts.lock().unwrap().retain(|a| a.id != account.id);
        self.events.lock().unwrap().push(event);
        Ok(())
    }
}

secrets_beside!(MemoryAccounts);
