use super::*;

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
