use super::*;

catalog_beside!(MemoryEnvironments, secrets.catalog);

secrets_beside!(MemoryEnvironments);

holdings_in!(MemoryEnvironments);

/// Environments and the Agents that hold them, in memory: assignments (one
/// per Agent and environment), beside Agents, secrets (with their
/// versions), what Agents report holding and a catalog.
#[derive(Default)]
pub struct MemoryEnvironments {
    pub secrets: MemorySecrets,
    pub agents: MemoryAgents,
    pub holdings: Mutex<Vec<Holding>>,
    /// Reads Agents reported, as the trail shows them.
    pub trail: Mutex<Vec<AccessLogEntry>>,
    /// What the Agent channel's sync reads and writes besides.
    pub channel: super::channel::ChannelRows,
    assignments: Mutex<Vec<Assignment>>,
    deletions: Mutex<Vec<EnvironmentDeletion>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryEnvironments {
    pub fn with_catalog(entries: &[CatalogEntry]) -> Self {
        Self { secrets: MemorySecrets::with_catalog(entries), ..Self::default() }
    }

    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }
}

#[async_trait]
impl AssignmentStore for MemoryEnvironments {
    async fn assign_agent(&self, _org: OrgId, assignment: &Assignment, event: NewEvent) -> StoreResult<()> {
        let mut assignments = self.assignments.lock().unwrap();
        let same = |a: &Assignment| {
            a.agent_id == assignment.agent_id && a.environment_id == assignment.environment_id
        };
        if assignments.iter().any(same) {
            return Err(StoreError::AlreadyExists("assignment"));
        }
        assignments.push(assignment.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_assignments(&self, _org: OrgId, environment: CatalogId) -> StoreResult<Vec<Assignment>> {
        Ok(self
            .assignments
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.environment_id == environment)
            .cloned()
            .collect())
    }

    async fn list_all_assignments(&self, _org: OrgId) -> StoreResult<Vec<Assignment>> {
        Ok(self.assignments.lock().unwrap().clone())
    }

    async fn unassign_agent(
        &self,
        _org: OrgId,
        environment: CatalogId,
        agent: AgentId,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut assignments = self.assignments.lock().unwrap();
        let at = assignments
            .iter()
            .position(|a| a.agent_id == agent && a.environment_id == environment)
            .ok_or(StoreError::NotFound("assignment"))?;
        assignments.remove(at);
        self.events.lock().unwrap().push(event);
        Ok(())
    }
}

#[async_trait]
impl AgentRecordStore for MemoryEnvironments {
    async fn create_registration(&self, registration: &NewRegistration, event: NewEvent) -> StoreResult<()> {
        self.agents.create_registration(registration, event).await
    }

    async fn list_agents(&self, org: OrgId) -> StoreResult<Vec<Agent>> {
        self.agents.list_agents(org).await
    }

    async fn revoke_agent(&self, org: OrgId, id: AgentId, event: NewEvent) -> StoreResult<Agent> {
        self.agents.revoke_agent(org, id, event).await
    }

    async fn approve_agent_name(
        &self,
        org: OrgId,
        agent: AgentId,
        name: &ApprovedName,
        event: NewEvent,
    ) -> StoreResult<()> {
        self.agents.approve_agent_name(org, agent, name, event).await
    }

    async fn remove_agent_name(
        &self,
        org: OrgId,
        agent: AgentId,
        name: &str,
        event: NewEvent,
    ) -> StoreResult<()> {
        self.agents.remove_agent_name(org, agent, name, event).await
    }

    async fn agent_names(&self, org: OrgId, agent: AgentId) -> StoreResult<Vec<ApprovedName>> {
        self.agents.agent_names(org, agent).await
    }
}

#[async_trait]
impl DeletionStore for MemoryEnvironments {
    async fn forget_agent(&self, _org: OrgId, agent: AgentId, event: NewEvent) -> StoreResult<()> {
        self.holdings.lock().unwrap().retain(|h| h.agent_id != agent);
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn start_deletion(&self, _org: OrgId, secret: SecretId, event: NewEvent) -> StoreResult<()> {
        self.secrets.start_deleting(secret)?;
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn start_environment_deletion(
        &self,
        org: OrgId,
        secret: SecretId,
        environment: CatalogId,
        event: NewEvent,
    ) -> StoreResult<()> {
        let name = self.secrets.get_secret(org, secret).await?.name;
        let env = self.secrets.catalog.get_catalog_entry(org, environment).await?;
        self.deletions.lock().unwrap().push(EnvironmentDeletion {
            secret: name,
            environment_id: env.id,
            environment: env.name,
            status: Lifecycle::Deleting,
            started_at: event.at,
            deleted_at: None,
            through_version: None,
        });
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn deleted_secret_names(&self, _org: OrgId) -> StoreResult<Vec<String>> {
        let gone = |s: &Secret| s.status != SecretStatus::Active;
        Ok(self.secrets.secrets().into_iter().filter(gone).map(|s| s.name).collect())
    }

    async fn environment_deletions(&self, _org: OrgId) -> StoreResult<Vec<EnvironmentDeletion>> {
        Ok(self.deletions.lock().unwrap().clone())
    }
}

#[async_trait]
impl VersionStore for MemoryEnvironments {
    async fn create_version(
        &self,
        _org: OrgId,
        secret: SecretId,
        environment: CatalogId,
        asked: VersionAsked<'_>,
        event: NewEvent,
    ) -> StoreResult<SecretVersion> {
        let mut versions = self.secrets.versions.lock().unwrap();
        let here = |v: &&SecretVersion| v.secret_id == secret && v.environment_id == environment;
        let version = versions.iter().filter(here).map(|v| v.version).max().unwrap_or(0) + 1;
        let numbered = SecretVersion {
            secret_id: secret,
            environment_id: environment,
            version,
            created_at: event.at,
            created_by: asked.created_by.to_owned(),
            deactivated_at: None,
            keep_previous_seconds: asked.keep_previous.whole_seconds(),
            superseded_at: None,
        };
        versions.push(numbered.clone());
        self.events.lock().unwrap().push(event);
        Ok(numbered)
    }

    async fn deactivated_versions(&self, _org: OrgId) -> StoreResult<Vec<(String, CatalogId, i64)>> {
        let secrets = self.secrets.secrets();
        let versions = self.secrets.versions.lock().unwrap();
        let name = |id| secrets.iter().find(|s| s.id == id).map(|s| s.name.clone());
        let deactivated = versions.iter().filter(|v| v.deactivated_at.is_some());
        Ok(deactivated.filter_map(|v| Some((name(v.secret_id)?, v.environment_id, v.version))).collect())
    }
}

#[async_trait]
impl TrailStore for MemoryEnvironments {
    /// The reads in `page.environments`, none of a namesake's, oldest first.
    async fn access_log(
        &self,
        _org: OrgId,
        _secret_name: &str,
        page: &AccessLogPage,
    ) -> StoreResult<Vec<AccessLogEntry>> {
        let trail = self.trail.lock().unwrap();
        let shown = |e: &&AccessLogEntry| {
            page.environments.contains(&e.environment)
                && !page.namesakes.iter().any(|(env, v)| *env == e.environment && *v == e.version)
        };
        Ok(trail.iter().filter(shown).take(page.limit as usize).cloned().collect())
    }

    async fn access_log_environments(&self, _org: OrgId, _secret_name: &str) -> StoreResult<Vec<String>> {
        let mut environments: Vec<String> =
            self.trail.lock().unwrap().iter().map(|e| e.environment.clone()).collect();
        environments.sort();
        environments.dedup();
        Ok(environments)
    }
}

#[async_trait]
impl CertificateStore for MemoryEnvironments {
    async fn add_member_certificate(&self, cert: &MemberCertificate, event: NewEvent) -> StoreResult<()> {
        self.secrets.add_member_certificate(cert, event).await
    }

    async fn active_member_certificates(
        &self,
        org: OrgId,
        now: OffsetDateTime,
    ) -> StoreResult<Vec<MemberCertificate>> {
        self.secrets.active_member_certificates(org, now).await
    }

    async fn add_agent_certificate(&self, cert: &AgentCertificate, event: NewEvent) -> StoreResult<()> {
        self.secrets.add_agent_certificate(cert, event).await
    }

    async fn active_agent_certificates(
        &self,
        org: OrgId,
        now: OffsetDateTime,
    ) -> StoreResult<Vec<AgentCertificate>> {
        self.secrets.active_agent_certificates(org, now).await
    }

    async fn list_certificates(
        &self,
        org: OrgId,
        member: Option<MemberId>,
    ) -> StoreResult<Vec<IssuedCertificateInfo>> {
        self.secrets.list_certificates(org, member).await
    }

    async fn revoke_certificate(
        &self,
        org: OrgId,
        sha256: &Sha256Hex,
        event: NewEvent,
    ) -> StoreResult<IssuedCertificateInfo> {
        self.secrets.revoke_certificate(org, sha256, event).await
    }
}

#[async_trait]
impl EventStore for MemoryEnvironments {
    async fn list_events(&self, org: OrgId, query: &EventQuery) -> StoreResult<Vec<AuditEvent>> {
        let events = self.events.lock().unwrap();
        let prefix = query.action_prefix.as_deref().unwrap_or_default();
        let shown = events.iter().rev().filter(|e| e.action.as_str().starts_with(prefix));
        let event = |e: &NewEvent| AuditEvent {
            id: e.id,
            org_id: org,
            at: e.at,
            actor: e.actor.clone(),
            action: e.action.as_str().to_owned(),
            target: e.target.clone(),
            target_name: None,
            detail: e.detail.clone(),
        };
        Ok(shown.take(query.limit as usize).map(event).collect())
    }

    async fn record_event(&self, _org: OrgId, event: NewEvent) -> StoreResult<()> {
        self.events.lock().unwrap().push(event);
        Ok(())
    }
}

#[async_trait]
impl ProgramAllowanceStore for MemoryEnvironments {
    async fn set_program_allowance(
        &self,
        org: OrgId,
        allowance: &ProgramAllowance,
        event: NewEvent,
    ) -> StoreResult<()> {
        self.agents.set_program_allowance(org, allowance, event).await
    }

    async fn remove_program_allowance(
        &self,
        org: OrgId,
        agent: AgentId,
        environment: CatalogId,
        secret: &str,
        event: NewEvent,
    ) -> StoreResult<()> {
        self.agents.remove_program_allowance(org, agent, environment, secret, event).await
    }

    async fn program_allowances(&self, org: OrgId, agent: AgentId) -> StoreResult<Vec<ProgramAllowance>> {
        self.agents.program_allowances(org, agent).await
    }

    async fn program_tokens(&self, org: OrgId, agent: AgentId) -> StoreResult<Vec<RegisteredToken>> {
        self.agents.program_tokens(org, agent).await
    }
}

#[async_trait]
impl ProgramStore for MemoryEnvironments {
    async fn register_program_token(
        &self,
        org: OrgId,
        token: &RegisteredToken,
        event: NewEvent,
    ) -> StoreResult<()> {
        self.agents.register_program_token(org, token, event).await
    }

    async fn revoke_program_tokens(
        &self,
        org: OrgId,
        agent: AgentId,
        ids: &[String],
        at: OffsetDateTime,
        actor: &str,
    ) -> StoreResult<Vec<String>> {
        self.agents.revoke_program_tokens(org, agent, ids, at, actor).await
    }
}
