use super::*;

catalog_beside!(MemoryResources, accounts.secrets.catalog);

secrets_beside!(MemoryResources, accounts.secrets);

/// Resources, their revisions and jobs in memory beside accounts (with
/// their secrets and catalog) and schemas. A plan is applied as the SQL
/// store applies it, all or nothing: a stale revision refused, pending
/// revisions superseded, queued applies cancelled, and a settled status
/// from the job the Resource still waits on (`resources::settle`).
#[derive(Default)]
pub struct MemoryResources {
    pub accounts: MemoryAccounts,
    pub schemas: MemorySchemas,
    resources: Mutex<Vec<Resource>>,
    revisions: Mutex<Vec<Revision>>,
    pub jobs: Mutex<Vec<Job>>,
    /// The lease each claimed job is held under.
    leases: Mutex<Vec<(JobId, LeaseId)>>,
    pub logs: Mutex<Vec<(JobId, String)>>,
    enrolled: Mutex<Vec<Agent>>,
    events: Mutex<Vec<NewEvent>>,
}

impl std::fmt::Debug for MemoryResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryResources")
    }
}

impl MemoryResources {
    pub fn with_catalog(entries: &[CatalogEntry]) -> Self {
        Self { accounts: MemoryAccounts::with_catalog(entries), ..Self::default() }
    }

    pub fn resources(&self) -> Vec<Resource> {
        self.resources.lock().unwrap().clone()
    }

    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }
}

#[async_trait]
impl ResourceRecordStore for MemoryResources {
    async fn get_resource(&self, org: OrgId, id: ResourceId) -> StoreResult<Resource> {
        let resources = self.resources.lock().unwrap();
        resources
            .iter()
            .find(|r| r.org_id == org && r.id == id)
            .cloned()
            .ok_or(StoreError::NotFound("resource"))
    }

    async fn find_resources_by_name(&self, org: OrgId, name: &str) -> StoreResult<Vec<Resource>> {
        let resources = self.resources.lock().unwrap();
        Ok(resources.iter().filter(|r| r.org_id == org && r.name == name).cloned().collect())
    }

    /// In the order they were requested (their ids are given in order).
    async fn list_resources(&self, org: OrgId, filter: &ResourceFilter) -> StoreResult<Vec<Resource>> {
        let resources = self.resources.lock().unwrap();
        let wanted = |r: &&Resource| {
            r.org_id == org
                && filter.component.is_none_or(|c| r.component_id == c)
                && filter.environment.is_none_or(|e| r.environment_id == e)
                && filter.status.is_none_or(|s| r.status == s)
                && filter.after.as_ref().is_none_or(|a| r.id > a.id)
        };
        let limit = filter.limit.map_or(usize::MAX, |n| n as usize);
        Ok(resources.iter().filter(wanted).take(limit).cloned().collect())
    }

    async fn resources_by_ids(&self, org: OrgId, ids: &[ResourceId]) -> StoreResult<Vec<Resource>> {
        let resources = self.resources.lock().unwrap();
        Ok(resources.iter().filter(|r| r.org_id == org && ids.contains(&r.id)).cloned().collect())
    }
}

#[async_trait]
impl InfraStore for MemoryResources {
    async fn apply_resource_plan(
        &self,
        org: OrgId,
        plan: &ResourcePlan,
        event: NewEvent,
    ) -> StoreResult<Resource> {
        let mut resources = self.resources.lock().unwrap();
        let (mut revisions, mut jobs) = (self.revisions.lock().unwrap(), self.jobs.lock().unwrap());
        let mut resource = match &plan.create {
            Some(new) if resources.iter().any(|r| r.org_id == org && r.name == new.name) => {
                return Err(StoreError::AlreadyExists("resource"));
            }
            Some(new) => new.clone(),
            None => resources
                .iter()
                .find(|r| r.id == plan.resource)
                .cloned()
                .ok_or(StoreError::NotFound("resource"))?,
        };
        if plan.expected_revision.is_some_and(|n| n != resource.revision) {
            return Err(StoreError::StaleRevision("another change landed since".into()));
        }
        let mine = |r: &&mut Revision| r.resource_id == plan.resource;
        if let Some(decision) = &plan.decision {
            if let Some(decided) = revisions.iter_mut().filter(mine).find(|r| r.number == decision.revision) {
                decided.state = decision.state;
                decided.decided_by = Some(decision.decided_by.clone());
                decided.decided_at = Some(decision.decided_at);
            }
        }
        if plan.supersede_pending {
            for pending in
                revisions.iter_mut().filter(mine).filter(|r| r.state == RevisionState::PendingApproval)
            {
                pending.state = RevisionState::Superseded;
            }
        }
        if let Some(reason) = &plan.cancel_queued_applies {
            let queued = |j: &&mut Job| {
                j.resource_id == plan.resource
                    && j.status == JobStatus::Queued
                    && j.operation == JobOperation::Apply
            };
            for job in jobs.iter_mut().filter(queued) {
                job.status = JobStatus::Cancelled;
                job.reason = Some(reason.clone());
            }
        }
        if let Some(revision) = &plan.revision {
            resource.revision = revision.number;
            resource.schema_id = revision.schema_id;
            resource.region.clone_from(&revision.region);
            revisions.push(revision.clone());
        }
        jobs.extend(plan.job.clone());
        resource.status = match plan.status {
            StatusUpdate::Set(status) => status,
            StatusUpdate::Settle(fallback) => {
                let waiting = jobs
                    .iter()
                    .filter(|j| j.resource_id == plan.resource)
                    .find(|j| matches!(j.status, JobStatus::Running | JobStatus::Queued))
                    .map(|j| (j.operation, j.status));
                let pending = revisions
                    .iter()
                    .any(|r| r.resource_id == plan.resource && r.state == RevisionState::PendingApproval);
                heimdall_core::resources::settle(fallback, waiting, pending)
            }
        };
        resource.updated_at = plan.at;
        resources.retain(|r| r.id != resource.id);
        resources.push(resource.clone());
        resources.sort_by_key(|r| r.id);
        self.events.lock().unwrap().push(event);
        Ok(resource)
    }

    async fn list_drift_candidates(&self) -> StoreResult<Vec<DriftCandidate>> {
        Ok(Vec::new())
    }

    async fn list_revisions(&self, _org: OrgId, resource: ResourceId) -> StoreResult<Vec<Revision>> {
        let revisions = self.revisions.lock().unwrap();
        Ok(revisions.iter().filter(|r| r.resource_id == resource).cloned().collect())
    }

    /// Oldest first (ids are given in order); newest first reversed.
    async fn list_jobs_page(
        &self,
        org: OrgId,
        resource: Option<ResourceId>,
        component: Option<CatalogId>,
        order: JobOrder,
        after: Option<&JobCursor>,
        limit: u32,
    ) -> StoreResult<Vec<Job>> {
        let under: Vec<ResourceId> = self
            .resources
            .lock()
            .unwrap()
            .iter()
            .filter(|r| component.is_none_or(|c| r.component_id == c))
            .map(|r| r.id)
            .collect();
        let mut jobs: Vec<Job> = self
            .jobs
            .lock()
            .unwrap()
            .iter()
            .filter(|j| {
                j.org_id == org
                    && resource.is_none_or(|r| j.resource_id == r)
                    && under.contains(&j.resource_id)
            })
            .cloned()
            .collect();
        jobs.sort_by_key(|j| j.id);
        if order == JobOrder::Newest {
            jobs.reverse();
        }
        let past = |j: &Job| match (after, order) {
            (None, _) => true,
            (Some(a), JobOrder::Newest) => j.id < a.id,
            (Some(a), _) => j.id > a.id,
        };
        Ok(jobs.into_iter().filter(past).take(limit as usize).collect())
    }

    async fn get_job(&self, org: OrgId, id: JobId) -> StoreResult<Job> {
        let jobs = self.jobs.lock().unwrap();
        jobs.iter().find(|j| j.org_id == org && j.id == id).cloned().ok_or(StoreError::NotFound("job"))
    }

    async fn job_log(&self, org: OrgId, id: JobId) -> StoreResult<(String, bool)> {
        self.get_job(org, id).await.map(|_| (String::new(), false))
    }
}

#[async_trait]
impl SchemaStore for MemoryResources {
    async fn create_schema(&self, schema: &ResourceSchema, event: NewEvent) -> StoreResult<ResourceSchema> {
        self.schemas.create_schema(schema, event).await
    }

    async fn list_schemas(&self, org: OrgId) -> StoreResult<Vec<ResourceSchema>> {
        self.schemas.list_schemas(org).await
    }

    async fn get_schema(&self, org: OrgId, id: SchemaId) -> StoreResult<ResourceSchema> {
        self.schemas.get_schema(org, id).await
    }

    async fn set_schema_deprecation(
        &self,
        org: OrgId,
        id: SchemaId,
        deprecation: Option<(OffsetDateTime, String)>,
        event: NewEvent,
    ) -> StoreResult<ResourceSchema> {
        self.schemas.set_schema_deprecation(org, id, deprecation, event).await
    }

    async fn delete_schema(
        &self,
        schema: &ResourceSchema,
        at: OffsetDateTime,
        event: NewEvent,
    ) -> StoreResult<()> {
        self.schemas.delete_schema(schema, at, event).await
    }
}

#[async_trait]
impl AccountStore for MemoryResources {
    async fn create_account(&self, account: &CloudAccount, event: NewEvent) -> StoreResult<()> {
        self.accounts.create_account(account, event).await
    }

    async fn list_accounts(&self, org: OrgId) -> StoreResult<Vec<CloudAccount>> {
        self.accounts.list_accounts(org).await
    }

    async fn get_account(&self, org: OrgId, id: CloudAccountId) -> StoreResult<CloudAccount> {
        self.accounts.get_account(org, id).await
    }

    async fn find_account_by_name(&self, org: OrgId, name: &str) -> StoreResult<Option<CloudAccount>> {
        self.accounts.find_account_by_name(org, name).await
    }

    async fn link_account(&self, org: OrgId, link: &AccountLink, event: NewEvent) -> StoreResult<()> {
        self.accounts.link_account(org, link, event).await
    }

    async fn list_links(&self, org: OrgId) -> StoreResult<Vec<AccountLink>> {
        self.accounts.list_links(org).await
    }

    async fn update_account(&self, change: &AccountChange, event: NewEvent) -> StoreResult<()> {
        self.accounts.update_account(change, event).await
    }

    async fn unlink_account(
        &self,
        account: &CloudAccount,
        scope: LinkScope,
        scope_id: Option<CatalogId>,
        environment: CatalogId,
        event: NewEvent,
    ) -> StoreResult<()> {
        self.accounts.unlink_account(account, scope, scope_id, environment, event).await
    }

    async fn delete_account(&self, account: &CloudAccount, event: NewEvent) -> StoreResult<()> {
        self.accounts.delete_account(account, event).await
    }
}

impl MemoryResources {
    /// An Agent as enrolled.
    pub fn enroll(&self, agent: Agent) {
        self.enrolled.lock().unwrap().push(agent);
    }

    fn job_mut<T>(&self, id: JobId, lease: LeaseId, f: impl FnOnce(&mut Job) -> T) -> StoreResult<T> {
        let mut jobs = self.jobs.lock().unwrap();
        let job = jobs.iter_mut().find(|j| j.id == id).ok_or(StoreError::NotFound("job"))?;
        let held = self.leases.lock().unwrap().iter().any(|(j, l)| *j == id && *l == lease);
        if !held || job.status != JobStatus::Running {
            return Err(StoreError::Fenced);
        }
        Ok(f(job))
    }
}

#[async_trait]
impl AgentStore for MemoryResources {
    async fn get_agent(&self, id: AgentId) -> StoreResult<Agent> {
        let agents = self.enrolled.lock().unwrap();
        agents.iter().find(|a| a.id == id).cloned().ok_or(StoreError::NotFound("agent"))
    }

    async fn touch_agent(&self, id: AgentId, now: OffsetDateTime) -> StoreResult<()> {
        let mut agents = self.enrolled.lock().unwrap();
        let agent = agents.iter_mut().find(|a| a.id == id).ok_or(StoreError::NotFound("agent"))?;
        agent.last_seen_at = Some(now);
        Ok(())
    }

    async fn set_agent_local_url(&self, id: AgentId, url: Option<&str>) -> StoreResult<()> {
        let mut agents = self.enrolled.lock().unwrap();
        let agent = agents.iter_mut().find(|a| a.id == id).ok_or(StoreError::NotFound("agent"))?;
        agent.local_url = url.map(str::to_owned);
        Ok(())
    }
}

/// The queue as the SQL store keeps it, in memory: a claim leases the
/// oldest queued job of the organization; only the current lease may
/// heartbeat, log or finish (`Fenced` otherwise); a retryable failure with
/// attempts left is queued again.
#[async_trait]
impl JobQueue for MemoryResources {
    async fn claim(
        &self,
        org: OrgId,
        agent: &str,
        _lock_holder: Option<&str>,
        lease: LeaseId,
        now: OffsetDateTime,
    ) -> StoreResult<Option<Job>> {
        let mut jobs = self.jobs.lock().unwrap();
        let Some(job) = jobs.iter_mut().find(|j| j.org_id == org && j.status == JobStatus::Queued) else {
            return Ok(None);
        };
        job.status = JobStatus::Running;
        job.attempts += 1;
        job.agent = Some(agent.to_owned());
        job.started_at = Some(now);
        job.lease_expires_at = Some(now + heimdall_core::queue::LEASE);
        self.leases.lock().unwrap().push((job.id, lease));
        Ok(Some(job.clone()))
    }

    async fn dead_attempts(
        &self,
        _resource: ResourceId,
    ) -> StoreResult<Vec<heimdall_core::state_lock::Attempt>> {
        Ok(Vec::new())
    }

    async fn heartbeat(
        &self,
        job: JobId,
        lease: LeaseId,
        state_lock_id: Option<&str>,
        now: OffsetDateTime,
    ) -> StoreResult<OffsetDateTime> {
        self.job_mut(job, lease, |j| {
            j.state_lock_id = state_lock_id.map(str::to_owned).or(j.state_lock_id.take());
            let until = now + heimdall_core::queue::LEASE;
            j.lease_expires_at = Some(until);
            until
        })
    }

    async fn append_log(&self, job: JobId, lease: LeaseId, chunk: &str) -> StoreResult<()> {
        self.job_mut(job, lease, |_| ())?;
        self.logs.lock().unwrap().push((job, chunk.to_owned()));
        Ok(())
    }

    async fn finish(
        &self,
        job: JobId,
        lease: LeaseId,
        outcome: JobOutcome,
        now: OffsetDateTime,
    ) -> StoreResult<Job> {
        self.job_mut(job, lease, |j| {
            (j.status, j.reason) = match outcome {
                JobOutcome::Completed { .. } => (JobStatus::Completed, None),
                JobOutcome::Failed { reason, retryable } => {
                    (heimdall_core::queue::after_failure(j.attempts, j.max_attempts, retryable), Some(reason))
                }
                JobOutcome::StalePlan { reason } => (JobStatus::Failed, Some(reason)),
            };
            j.finished_at = Some(now);
            j.clone()
        })
    }

    async fn finish_with_log(
        &self,
        job: JobId,
        lease: LeaseId,
        log_tail: &str,
        outcome: JobOutcome,
        now: OffsetDateTime,
    ) -> StoreResult<Job> {
        self.append_log(job, lease, log_tail).await?;
        self.finish(job, lease, outcome, now).await
    }

    async fn reap(
        &self,
        _now: OffsetDateTime,
    ) -> StoreResult<Vec<(JobId, heimdall_core::queue::ReapDecision)>> {
        Ok(Vec::new())
    }

    async fn count_active_jobs(&self) -> StoreResult<Vec<(JobOperation, JobStatus, i64)>> {
        Ok(Vec::new())
    }
}
