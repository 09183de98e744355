use super::*;

use heimdall_core::access::AccessRecord;
use heimdall_core::ports::{
    AccessStore, InventoryStore, Reported, ReportedAt, SecretChanges, SecretStore, SyncOutcome, SyncedSecret,
};
use heimdall_core::retention::Overlap;

/// What an Agent's sync touches beyond environments and their holders, in
/// memory: members and policies (as people wrote them), the reads Agents
/// reported (one per epoch and number), when each Agent last synced, and
/// the environments an Agent was released from.
#[derive(Default)]
pub struct ChannelRows {
    pub members: MemoryMembers,
    pub policies: MemoryPolicies,
    pub records: Mutex<Vec<(String, AccessRecord)>>,
    pub touched: Mutex<Vec<(AgentId, OffsetDateTime)>>,
    pub released: Mutex<Vec<(AgentId, CatalogId)>>,
}

#[async_trait]
impl AgentStore for MemoryEnvironments {
    async fn get_agent(&self, id: AgentId) -> StoreResult<Agent> {
        self.agents.all().into_iter().find(|a| a.id == id).ok_or(StoreError::NotFound("agent"))
    }

    async fn touch_agent(&self, id: AgentId, now: OffsetDateTime) -> StoreResult<()> {
        self.agents.update(id, |a| a.last_seen_at = Some(now))?;
        self.channel.touched.lock().unwrap().push((id, now));
        Ok(())
    }

    async fn set_agent_local_url(&self, id: AgentId, url: Option<&str>) -> StoreResult<()> {
        self.agents.update(id, |a| a.local_url = url.map(str::to_owned))
    }
}

#[async_trait]
impl AccessStore for MemoryEnvironments {
    /// Keeps each (epoch, number) once; raises nothing.
    async fn record_access(
        &self,
        _org: OrgId,
        _agent: &Agent,
        report: heimdall_core::access::Report<'_>,
        _environment_names: &[(String, String)],
        _now: OffsetDateTime,
    ) -> StoreResult<SyncOutcome> {
        let mut kept = self.channel.records.lock().unwrap();
        let mut outcome = SyncOutcome::default();
        for record in report.records {
            if kept.iter().any(|(epoch, r)| epoch == report.epoch && r.seq == record.seq) {
                outcome.duplicates += 1;
            } else {
                kept.push((report.epoch.to_owned(), record.clone()));
                outcome.stored += 1;
            }
        }
        let mine = kept.iter().filter(|(epoch, _)| epoch == report.epoch);
        outcome.received_through = mine.map(|(_, r)| r.seq).max().unwrap_or(0);
        Ok(outcome)
    }
}

#[async_trait]
impl InventoryStore for MemoryEnvironments {
    /// Replaces what `agent` holds with its report (environments by id).
    async fn store_inventory(
        &self,
        org: OrgId,
        agent: &Agent,
        items: &[Reported],
        at: ReportedAt,
    ) -> StoreResult<()> {
        let mut holdings = Vec::new();
        for item in items {
            let Ok(environment) = item.environment.parse::<CatalogId>() else { continue };
            let environment = self.secrets.catalog.get_catalog_entry(org, environment).await?.name;
            holdings.push(Holding {
                agent_id: agent.id,
                agent: agent.name.clone(),
                secret: item.secret.clone(),
                environment,
                version: item.version,
                deactivated: item.deactivated,
                reported_at: at.now,
                held_since: Some(at.now),
                agent_revoked: agent.revoked_at.is_some(),
                agent_last_seen_at: Some(at.now),
            });
        }
        let mut held = self.holdings.lock().unwrap();
        held.retain(|h| h.agent_id != agent.id);
        held.extend(holdings);
        Ok(())
    }

    async fn released_environments(&self, _org: OrgId, agent: AgentId) -> StoreResult<Vec<CatalogId>> {
        let released = self.channel.released.lock().unwrap();
        Ok(released.iter().filter(|(a, _)| *a == agent).map(|(_, e)| *e).collect())
    }
}

#[async_trait]
impl SecretStore for MemoryEnvironments {
    /// Always the whole list, at generation 1.
    async fn secret_changes(&self, _org: OrgId, _known: Option<i64>) -> StoreResult<SecretChanges> {
        let live = self.secrets.secrets().into_iter().filter(|s| s.status == SecretStatus::Active);
        let changed = live
            .map(|s| SyncedSecret {
                id: s.id,
                name: s.name,
                owner_id: s.owner_id,
                owner_keys: Vec::new(),
                components: s.components,
            })
            .collect();
        Ok(SecretChanges { through: 1, since: None, changed, removed: Vec::new() })
    }

    async fn start_sync_epoch(&self) -> StoreResult<()> {
        Ok(())
    }

    async fn version_overlaps(
        &self,
        _org: OrgId,
        _wanted: &[(&str, CatalogId)],
    ) -> StoreResult<Vec<(String, CatalogId, Overlap)>> {
        Ok(Vec::new())
    }
}

#[async_trait]
impl MemberStore for MemoryEnvironments {
    async fn add_member(&self, member: &Member, token: &NewToken, event: NewEvent) -> StoreResult<()> {
        self.channel.members.add_member(member, token, event).await
    }

    async fn list_members(&self, org: OrgId) -> StoreResult<Vec<Member>> {
        self.channel.members.list_members(org).await
    }

    async fn get_member(&self, org: OrgId, id: MemberId) -> StoreResult<Member> {
        self.channel.members.get_member(org, id).await
    }

    async fn find_member_by_email(&self, org: OrgId, email: &str) -> StoreResult<Option<Member>> {
        self.channel.members.find_member_by_email(org, email).await
    }

    async fn change_role(
        &self,
        org: OrgId,
        id: MemberId,
        role: Role,
        event: NewEvent,
    ) -> StoreResult<Member> {
        self.channel.members.change_role(org, id, role, event).await
    }

    async fn remove_member(&self, org: OrgId, id: MemberId, event: NewEvent) -> StoreResult<Member> {
        self.channel.members.remove_member(org, id, event).await
    }
}

#[async_trait]
impl PolicyStore for MemoryEnvironments {
    async fn create_policy(&self, policy: &Policy, event: NewEvent) -> StoreResult<()> {
        self.channel.policies.create_policy(policy, event).await
    }

    async fn list_policies(&self, org: OrgId) -> StoreResult<Vec<Policy>> {
        self.channel.policies.list_policies(org).await
    }

    async fn policy_version(&self, org: OrgId) -> StoreResult<i64> {
        self.channel.policies.policy_version(org).await
    }

    async fn get_policy(&self, org: OrgId, id: PolicyId) -> StoreResult<Policy> {
        self.channel.policies.get_policy(org, id).await
    }

    async fn delete_policy(&self, org: OrgId, id: PolicyId, event: NewEvent) -> StoreResult<()> {
        self.channel.policies.delete_policy(org, id, event).await
    }

    async fn update_policy(&self, write: &PolicyWrite, event: NewEvent) -> StoreResult<()> {
        self.channel.policies.update_policy(write, event).await
    }

    async fn policy_versions(&self, org: OrgId, id: PolicyId) -> StoreResult<Vec<PolicyVersion>> {
        self.channel.policies.policy_versions(org, id).await
    }
}

impl std::fmt::Debug for MemoryEnvironments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryEnvironments")
    }
}
