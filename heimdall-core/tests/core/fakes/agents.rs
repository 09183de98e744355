use super::*;

catalog_beside!(MemoryAgents, catalog);

/// Agents as people manage them, in memory beside a catalog: Agents
/// (`enrolled` adds one as the enrollment would), registrations, program
/// allowances (one per Agent, environment and glob), the program tokens
/// Agents registered (an id once) and approved names.
#[derive(Default)]
pub struct MemoryAgents {
    pub catalog: MemoryCatalog,
    agents: Mutex<Vec<Agent>>,
    registrations: Mutex<Vec<NewRegistration>>,
    allowances: Mutex<Vec<ProgramAllowance>>,
    names: Mutex<Vec<(AgentId, ApprovedName)>>,
    tokens: Mutex<Vec<RegisteredToken>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryAgents {
    pub fn with_catalog(entries: &[CatalogEntry]) -> Self {
        Self { catalog: MemoryCatalog::with(entries), ..Self::default() }
    }

    /// An Agent `name` of `ORG`, as its enrollment stores it.
    pub fn enrolled(&self, n: u128, name: &str) -> Agent {
        let agent = Agent {
            id: AgentId::from_uuid(Uuid::from_u128(n)),
            org_id: ORG,
            name: name.into(),
            cert_sha256: heimdall_core::Sha256Hex::of(name.as_bytes()),
            created_at: OffsetDateTime::UNIX_EPOCH,
            created_by: "ana@example.com".into(),
            revoked_at: None,
            last_seen_at: None,
            local_url: None,
        };
        self.agents.lock().unwrap().push(agent.clone());
        agent
    }

    /// Every Agent, of any organization (what the Agent channel looks up
    /// by id).
    pub fn all(&self) -> Vec<Agent> {
        self.agents.lock().unwrap().clone()
    }

    /// Changes the Agent `id` as a store's update would.
    pub fn update(&self, id: AgentId, change: impl FnOnce(&mut Agent)) -> StoreResult<()> {
        let mut agents = self.agents.lock().unwrap();
        change(agents.iter_mut().find(|a| a.id == id).ok_or(StoreError::NotFound("agent"))?);
        Ok(())
    }

    pub fn registrations(&self) -> Vec<NewRegistration> {
        self.registrations.lock().unwrap().clone()
    }

    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }
}

#[async_trait]
impl AgentRecordStore for MemoryAgents {
    async fn create_registration(&self, registration: &NewRegistration, event: NewEvent) -> StoreResult<()> {
        self.registrations.lock().unwrap().push(registration.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_agents(&self, org: OrgId) -> StoreResult<Vec<Agent>> {
        Ok(self.agents.lock().unwrap().iter().filter(|a| a.org_id == org).cloned().collect())
    }

    async fn revoke_agent(&self, org: OrgId, id: AgentId, event: NewEvent) -> StoreResult<Agent> {
        let mut agents = self.agents.lock().unwrap();
        let agent =
            agents.iter_mut().find(|a| a.org_id == org && a.id == id).ok_or(StoreError::NotFound("agent"))?;
        agent.revoked_at = agent.revoked_at.or(Some(event.at));
        self.events.lock().unwrap().push(event);
        Ok(agent.clone())
    }

    async fn approve_agent_name(
        &self,
        _org: OrgId,
        agent: AgentId,
        name: &ApprovedName,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut names = self.names.lock().unwrap();
        if !names.iter().any(|(a, n)| *a == agent && n.name == name.name) {
            names.push((agent, name.clone()));
        }
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn remove_agent_name(
        &self,
        _org: OrgId,
        agent: AgentId,
        name: &str,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut names = self.names.lock().unwrap();
        let at = names
            .iter()
            .position(|(a, n)| *a == agent && n.name == name)
            .ok_or(StoreError::NotFound("name"))?;
        names.remove(at);
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn agent_names(&self, _org: OrgId, agent: AgentId) -> StoreResult<Vec<ApprovedName>> {
        let names = self.names.lock().unwrap();
        Ok(names.iter().filter(|(a, _)| *a == agent).map(|(_, n)| n.clone()).collect())
    }
}

#[async_trait]
impl ProgramAllowanceStore for MemoryAgents {
    async fn set_program_allowance(
        &self,
        _org: OrgId,
        allowance: &ProgramAllowance,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut allowances = self.allowances.lock().unwrap();
        let same = |a: &ProgramAllowance| {
            a.agent_id == allowance.agent_id
                && a.environment_id == allowance.environment_id
                && a.secret == allowance.secret
        };
        allowances.retain(|a| !same(a));
        allowances.push(allowance.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn remove_program_allowance(
        &self,
        _org: OrgId,
        agent: AgentId,
        environment: CatalogId,
        secret: &str,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut allowances = self.allowances.lock().unwrap();
        let that = |a: &ProgramAllowance| {
            a.agent_id == agent && a.environment_id == environment && a.secret == secret
        };
        let at = allowances.iter().position(that).ok_or(StoreError::NotFound("allowance"))?;
        allowances.remove(at);
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn program_allowances(&self, _org: OrgId, agent: AgentId) -> StoreResult<Vec<ProgramAllowance>> {
        Ok(self.allowances.lock().unwrap().iter().filter(|a| a.agent_id == agent).cloned().collect())
    }

    async fn program_tokens(&self, _org: OrgId, agent: AgentId) -> StoreResult<Vec<RegisteredToken>> {
        Ok(self.tokens.lock().unwrap().iter().filter(|t| t.agent_id == agent).cloned().collect())
    }
}

#[async_trait]
impl ProgramStore for MemoryAgents {
    async fn register_program_token(
        &self,
        _org: OrgId,
        token: &RegisteredToken,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tokens = self.tokens.lock().unwrap();
        if tokens.iter().any(|t| t.id == token.id) {
            return Err(StoreError::AlreadyExists("program token"));
        }
        tokens.push(token.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn revoke_program_tokens(
        &self,
        _org: OrgId,
        agent: AgentId,
        ids: &[String],
        at: OffsetDateTime,
        _actor: &str,
    ) -> StoreResult<Vec<String>> {
        let mut revoked = Vec::new();
        for token in self.tokens.lock().unwrap().iter_mut() {
            if token.agent_id == agent && ids.contains(&token.id) && token.revoked_at.is_none() {
                token.revoked_at = Some(at);
                revoked.push(token.id.clone());
            }
        }
        Ok(revoked)
    }
}
