//! In-memory stores and a caller for the use cases' tests: the ports'
//! behaviour the SQL store has (names taken, entries not empty, stale
//! versions), kept in memory, and a caller whose policies a test sets.

use std::sync::Mutex;

use async_trait::async_trait;
use heimdall_core::accounts::AccountChange;
use heimdall_core::audit::{AuditAction, EventPlan};
use heimdall_core::authz::{secret_target, Action, CatalogTree, Target};
use heimdall_core::dbusers::{Database, ServiceUser};
use heimdall_core::domain::{CatalogEntry, CatalogKind, Member, Policy, PolicyVersion, Role, TokenInfo};
use heimdall_core::ids::{
    AgentId, CatalogId, CloudAccountId, DatabaseId, EventId, MemberId, OrgId, PolicyId, SchemaId, SecretId,
    ServiceUserId, TokenId,
};
use heimdall_core::infra::{AccountLink, Agent, CloudAccount, LinkScope, ResourceSchema};
use heimdall_core::notify::{Channel, Delivery};
use heimdall_core::on_behalf::{OnBehalfOf, UsedSecret};
use heimdall_core::policies::PolicyWrite;
use heimdall_core::ports::{
    AccountStore, Actor, AgentRecordStore, AssignmentStore, CatalogStore, CertificateStore, ChannelStore,
    DatabaseRecordStore, DeletionStore, Holding, HoldingStore, MemberStore, NewEvent, NewRegistration,
    NewToken, PolicyStore, ProgramAllowanceStore, SchemaStore, SecretRecordStore, StoreError, StoreResult,
    TokenStore,
};
use heimdall_core::program::{ProgramAllowance, RegisteredToken};
use heimdall_core::secrets::{
    AgentCertificate, Assignment, CertificateKind, IssuedCertificateInfo, MemberCertificate, Secret,
    SecretCursor, SecretStatus, SecretVersion,
};
use heimdall_core::server_names::ApprovedName;
use heimdall_core::ApiError;
use heimdall_core::Sha256Hex;
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

/// Ana, in organization `ORG`, whose policies refuse `refused` (on any
/// target naming `refused_under` among its ancestors, or on any target
/// when that is `None`); what she was asked is kept.
pub struct Ana {
    member: MemberId,
    role: Role,
    refused: Option<(Action, Option<String>)>,
    refused_in: Option<(Action, String)>,
    pub asked: Mutex<Vec<(Action, Target)>>,
}

pub const ORG: OrgId = OrgId::from_uuid(Uuid::nil());

/// A catalog entry `n` of `ORG`, made by Ana.
pub fn entry(n: u128, kind: CatalogKind, name: &str, parent: Option<CatalogId>) -> CatalogEntry {
    CatalogEntry {
        id: CatalogId::from_uuid(Uuid::from_u128(n)),
        org_id: ORG,
        kind,
        name: name.into(),
        description: String::new(),
        parent_id: parent,
        created_at: OffsetDateTime::UNIX_EPOCH,
        created_by: "ana@example.com".into(),
    }
}
/// Ana's member id.
pub const ANA: MemberId = MemberId::from_uuid(Uuid::from_u128(1));

impl Ana {
    pub fn allowed_everything() -> Self {
        Self { member: ANA, role: Role::Owner, refused: None, refused_in: None, asked: Mutex::default() }
    }

    /// Ana, whose policies refuse `action` in `environment` only.
    pub fn refused_in(action: Action, environment: &str) -> Self {
        Self { refused_in: Some((action, environment.to_owned())), ..Self::allowed_everything() }
    }

    /// Another member than Ana, as `member`, with her policies' answers.
    pub fn with_member(self, member: MemberId) -> Self {
        Self { member, ..self }
    }

    /// Ana with another role than owner.
    pub fn with_role(self, role: Role) -> Self {
        Self { role, ..self }
    }

    pub fn refused(action: Action, under: Option<CatalogId>) -> Self {
        let refused = Some((action, under.map(|id| id.to_string())));
        Self { refused, ..Self::allowed_everything() }
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

    fn member(&self) -> MemberId {
        self.member
    }

    fn role(&self) -> Role {
        self.role
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

    async fn authorize_in(&self, action: Action, target: &Target, environment: &str) -> Result<(), ApiError> {
        if self.refused_in.as_ref().is_some_and(|(a, env)| *a == action && env == environment) {
            self.asked.lock().unwrap().push((action, target.clone()));
            return Err(ApiError::forbidden("refused in this environment by the test's policy"));
        }
        self.authorize(action, target).await
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

    /// As the API decides it: an organization secret that Ana may read
    /// where it is, in that environment.
    async fn may_use(
        &self,
        secret: UsedSecret<'_>,
        environment: &str,
        tree: &CatalogTree,
    ) -> Result<(), ApiError> {
        heimdall_core::secrets::usable_by_jobs(secret.owner)?;
        let target = secret_target(secret.id, secret.owner, secret.components, tree);
        self.authorize_in(Action::SecretRead, &target, environment).await
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

/// The members port in memory, with the SQL store's refusals: one member
/// per address, and `LAST_OWNER` (core's rule, on the owners counted
/// here) for a change that would leave no owner. Tokens are counted per
/// member; a removal revokes them.
#[derive(Default)]
pub struct MemoryMembers {
    members: Mutex<Vec<Member>>,
    tokens: Mutex<Vec<(MemberId, String)>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryMembers {
    pub fn with(members: &[Member]) -> Self {
        Self { members: Mutex::new(members.to_vec()), ..Self::default() }
    }

    pub fn members(&self) -> Vec<Member> {
        self.members.lock().unwrap().clone()
    }

    pub fn tokens_of(&self, member: MemberId) -> Vec<String> {
        let tokens = self.tokens.lock().unwrap();
        tokens.iter().filter(|(m, _)| *m == member).map(|(_, name)| name.clone()).collect()
    }

    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }

    fn owners(&self) -> u64 {
        self.members.lock().unwrap().iter().filter(|m| m.role == Role::Owner).count() as u64
    }
}

#[async_trait]
impl MemberStore for MemoryMembers {
    async fn add_member(&self, member: &Member, token: &NewToken, event: NewEvent) -> StoreResult<()> {
        let mut members = self.members.lock().unwrap();
        if members.iter().any(|m| m.org_id == member.org_id && m.email == member.email) {
            return Err(StoreError::AlreadyExists("member"));
        }
        members.push(member.clone());
        self.tokens.lock().unwrap().push((member.id, token.name.clone()));
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_members(&self, org: OrgId) -> StoreResult<Vec<Member>> {
        let mut members: Vec<Member> =
            self.members.lock().unwrap().iter().filter(|m| m.org_id == org).cloned().collect();
        members.sort_by(|a, b| a.email.cmp(&b.email));
        Ok(members)
    }

    async fn get_member(&self, org: OrgId, id: MemberId) -> StoreResult<Member> {
        let members = self.members.lock().unwrap();
        members.iter().find(|m| m.org_id == org && m.id == id).cloned().ok_or(StoreError::NotFound("member"))
    }

    async fn find_member_by_email(&self, org: OrgId, email: &str) -> StoreResult<Option<Member>> {
        Ok(self.members.lock().unwrap().iter().find(|m| m.org_id == org && m.email == email).cloned())
    }

    async fn change_role(
        &self,
        org: OrgId,
        id: MemberId,
        role: Role,
        event: NewEvent,
    ) -> StoreResult<Member> {
        let owners = self.owners();
        let mut members = self.members.lock().unwrap();
        let member = members
            .iter_mut()
            .find(|m| m.org_id == org && m.id == id)
            .ok_or(StoreError::NotFound("member"))?;
        heimdall_core::members::check_owner_remains(owners, member.role, Some(role))
            .map_err(StoreError::Refused)?;
        member.role = role;
        self.events.lock().unwrap().push(event);
        Ok(member.clone())
    }

    async fn remove_member(&self, org: OrgId, id: MemberId, event: NewEvent) -> StoreResult<Member> {
        let owners = self.owners();
        let mut members = self.members.lock().unwrap();
        let at = members
            .iter()
            .position(|m| m.org_id == org && m.id == id)
            .ok_or(StoreError::NotFound("member"))?;
        heimdall_core::members::check_owner_remains(owners, members[at].role, None)
            .map_err(StoreError::Refused)?;
        self.tokens.lock().unwrap().retain(|(m, _)| *m != id);
        self.events.lock().unwrap().push(event);
        Ok(members.remove(at))
    }
}

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

/// The catalog port of a fake that keeps a `catalog` beside its own rows.
macro_rules! catalog_beside {
    ($fake:ty, $($catalog:ident).+) => {
        #[async_trait]
        impl CatalogStore for $fake {
            async fn create_catalog_entry(&self, entry: &CatalogEntry, event: NewEvent) -> StoreResult<()> {
                self.$($catalog).+.create_catalog_entry(entry, event).await
            }

            async fn list_catalog(
                &self,
                org: OrgId,
                kind: CatalogKind,
                parent: Option<CatalogId>,
            ) -> StoreResult<Vec<CatalogEntry>> {
                self.$($catalog).+.list_catalog(org, kind, parent).await
            }

            async fn get_catalog_entry(&self, org: OrgId, id: CatalogId) -> StoreResult<CatalogEntry> {
                self.$($catalog).+.get_catalog_entry(org, id).await
            }

            async fn find_catalog_by_name(
                &self,
                org: OrgId,
                kind: CatalogKind,
                name: &str,
            ) -> StoreResult<Vec<CatalogEntry>> {
                self.$($catalog).+.find_catalog_by_name(org, kind, name).await
            }

            async fn rename_catalog_entry(
                &self,
                org: OrgId,
                id: CatalogId,
                name: &str,
                event: NewEvent,
            ) -> StoreResult<CatalogEntry> {
                self.$($catalog).+.rename_catalog_entry(org, id, name, event).await
            }

            async fn delete_catalog_entry(
                &self,
                org: OrgId,
                id: CatalogId,
                event: NewEvent,
            ) -> StoreResult<()> {
                self.$($catalog).+.delete_catalog_entry(org, id, event).await
            }
        }
    };
}

catalog_beside!(MemorySchemas, catalog);
catalog_beside!(MemorySecrets, catalog);
catalog_beside!(MemoryAccounts, secrets.catalog);
catalog_beside!(MemoryDatabases, secrets.catalog);
catalog_beside!(MemoryAgents, catalog);
catalog_beside!(MemoryEnvironments, secrets.catalog);

/// The secrets' records in memory beside a catalog (the Components they
/// are under) and the members' certificates: names unique in the
/// organization (a personal secret's is kept under its owner's id), and a
/// certificate active until its `not_after`.
#[derive(Default)]
pub struct MemorySecrets {
    pub catalog: MemoryCatalog,
    pub certificates: Mutex<Vec<MemberCertificate>>,
    /// Version numbers, as Agents' writes make them.
    pub versions: Mutex<Vec<SecretVersion>>,
    /// Agents' local-API certificates, as their renewals store them.
    pub agent_certificates: Mutex<Vec<AgentCertificate>>,
    revoked: Mutex<Vec<Sha256Hex>>,
    secrets: Mutex<Vec<Secret>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemorySecrets {
    pub fn with_catalog(entries: &[CatalogEntry]) -> Self {
        Self { catalog: MemoryCatalog::with(entries), ..Self::default() }
    }

    pub fn secrets(&self) -> Vec<Secret> {
        self.secrets.lock().unwrap().clone()
    }

    /// Stores `secret` unless its name is taken (what another store's
    /// transaction does with it).
    pub fn keep(&self, secret: &Secret) -> StoreResult<()> {
        let mut secrets = self.secrets.lock().unwrap();
        if secrets.iter().any(|s| s.org_id == secret.org_id && s.name == secret.name) {
            return Err(StoreError::AlreadyExists("secret"));
        }
        secrets.push(secret.clone());
        Ok(())
    }

    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }
}

#[async_trait]
impl SecretRecordStore for MemorySecrets {
    async fn list_secrets_page(
        &self,
        org: OrgId,
        after: Option<&SecretCursor>,
        limit: u32,
    ) -> StoreResult<Vec<Secret>> {
        let mut page: Vec<Secret> =
            self.secrets.lock().unwrap().iter().filter(|s| s.org_id == org).cloned().collect();
        page.sort_by(|a, b| a.name.cmp(&b.name));
        page.retain(|s| after.is_none_or(|c| s.name > c.name));
        page.truncate(limit as usize);
        Ok(page)
    }

    async fn create_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()> {
        self.keep(secret)?;
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn get_secret(&self, org: OrgId, id: SecretId) -> StoreResult<Secret> {
        let secrets = self.secrets.lock().unwrap();
        secrets.iter().find(|s| s.org_id == org && s.id == id).cloned().ok_or(StoreError::NotFound("secret"))
    }

    async fn find_secret_by_name(&self, org: OrgId, name: &str) -> StoreResult<Option<Secret>> {
        Ok(self.secrets.lock().unwrap().iter().find(|s| s.org_id == org && s.name == name).cloned())
    }

    async fn list_versions(&self, _org: OrgId, secret: SecretId) -> StoreResult<Vec<SecretVersion>> {
        Ok(self.versions.lock().unwrap().iter().filter(|v| v.secret_id == secret).cloned().collect())
    }

    async fn deactivate_version(
        &self,
        _org: OrgId,
        secret: SecretId,
        environment: CatalogId,
        version: i64,
        event: NewEvent,
    ) -> StoreResult<SecretVersion> {
        let mut versions = self.versions.lock().unwrap();
        let that = |v: &&mut SecretVersion| {
            v.secret_id == secret && v.environment_id == environment && v.version == version
        };
        let found = versions.iter_mut().find(that).ok_or(StoreError::NotFound("version"))?;
        found.deactivated_at = found.deactivated_at.or(Some(event.at));
        self.events.lock().unwrap().push(event);
        Ok(found.clone())
    }

    async fn update_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()> {
        let mut secrets = self.secrets.lock().unwrap();
        let stored = secrets.iter_mut().find(|s| s.id == secret.id).ok_or(StoreError::NotFound("secret"))?;
        *stored = secret.clone();
        self.events.lock().unwrap().push(event);
        Ok(())
    }
}

#[async_trait]
impl CertificateStore for MemorySecrets {
    async fn add_member_certificate(&self, cert: &MemberCertificate, event: NewEvent) -> StoreResult<()> {
        self.certificates.lock().unwrap().push(cert.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn active_member_certificates(
        &self,
        org: OrgId,
        now: OffsetDateTime,
    ) -> StoreResult<Vec<MemberCertificate>> {
        let certificates = self.certificates.lock().unwrap();
        Ok(certificates.iter().filter(|c| c.org_id == org && c.not_after > now).cloned().collect())
    }

    async fn add_agent_certificate(&self, cert: &AgentCertificate, event: NewEvent) -> StoreResult<()> {
        self.agent_certificates.lock().unwrap().push(cert.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn active_agent_certificates(
        &self,
        org: OrgId,
        now: OffsetDateTime,
    ) -> StoreResult<Vec<AgentCertificate>> {
        let revoked = self.revoked.lock().unwrap().clone();
        let certificates = self.agent_certificates.lock().unwrap();
        let active =
            |c: &&AgentCertificate| c.org_id == org && c.not_after > now && !revoked.contains(&c.sha256);
        Ok(certificates.iter().filter(active).cloned().collect())
    }

    async fn list_certificates(
        &self,
        org: OrgId,
        member: Option<MemberId>,
    ) -> StoreResult<Vec<IssuedCertificateInfo>> {
        let revoked = self.revoked.lock().unwrap().clone();
        let issued =
            |sha256: &Sha256Hex, kind, subject: String, (created_at, not_after)| IssuedCertificateInfo {
                sha256: sha256.clone(),
                kind,
                subject_id: subject.clone(),
                subject,
                created_at,
                not_after,
                revoked_at: revoked.contains(sha256).then_some(OffsetDateTime::UNIX_EPOCH),
            };
        let mut all = Vec::new();
        for c in self.certificates.lock().unwrap().iter().filter(|c| c.org_id == org) {
            all.push(issued(
                &c.sha256,
                CertificateKind::Member,
                c.member_id.to_string(),
                (c.created_at, c.not_after),
            ));
        }
        for c in self.agent_certificates.lock().unwrap().iter().filter(|c| c.org_id == org) {
            let times = (c.created_at, c.not_after);
            all.push(issued(&c.sha256, CertificateKind::AgentServer, c.agent_id.to_string(), times));
        }
        let mine = |c: &IssuedCertificateInfo| {
            member.is_none_or(|m| c.kind == CertificateKind::Member && c.subject_id == m.to_string())
        };
        Ok(all.into_iter().filter(mine).collect())
    }

    async fn revoke_certificate(
        &self,
        org: OrgId,
        sha256: &Sha256Hex,
        event: NewEvent,
    ) -> StoreResult<IssuedCertificateInfo> {
        let all = self.list_certificates(org, None).await?;
        let found =
            all.into_iter().find(|c| &c.sha256 == sha256).ok_or(StoreError::NotFound("certificate"))?;
        let mut revoked = self.revoked.lock().unwrap();
        if !revoked.contains(sha256) {
            revoked.push(sha256.clone());
        }
        self.events.lock().unwrap().push(event);
        Ok(IssuedCertificateInfo {
            revoked_at: found.revoked_at.or(Some(OffsetDateTime::UNIX_EPOCH)),
            ..found
        })
    }
}

/// Members' tokens in memory: each member reaches only her own, and a
/// revocation keeps its first time.
#[derive(Default)]
pub struct MemoryTokens {
    tokens: Mutex<Vec<(OrgId, TokenInfo)>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryTokens {
    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }
}

#[async_trait]
impl TokenStore for MemoryTokens {
    async fn create_token(
        &self,
        org: OrgId,
        member: MemberId,
        token: &NewToken,
        event: NewEvent,
    ) -> StoreResult<TokenInfo> {
        let info = TokenInfo {
            id: token.id,
            member_id: member,
            name: token.name.clone(),
            created_at: event.at,
            revoked_at: None,
            expires_at: token.expires_at,
        };
        self.tokens.lock().unwrap().push((org, info.clone()));
        self.events.lock().unwrap().push(event);
        Ok(info)
    }

    async fn list_tokens(&self, org: OrgId, member: MemberId) -> StoreResult<Vec<TokenInfo>> {
        let tokens = self.tokens.lock().unwrap();
        Ok(tokens
            .iter()
            .filter(|(o, t)| *o == org && t.member_id == member)
            .map(|(_, t)| t.clone())
            .collect())
    }

    async fn revoke_token(
        &self,
        org: OrgId,
        member: MemberId,
        id: TokenId,
        event: NewEvent,
    ) -> StoreResult<TokenInfo> {
        let mut tokens = self.tokens.lock().unwrap();
        let hers = |(o, t): &&mut (OrgId, TokenInfo)| *o == org && t.member_id == member && t.id == id;
        let (_, token) = tokens.iter_mut().find(hers).ok_or(StoreError::NotFound("token"))?;
        token.revoked_at = token.revoked_at.or(Some(event.at));
        self.events.lock().unwrap().push(event);
        Ok(token.clone())
    }
}

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

/// The secrets' records of a fake that keeps `secrets` beside its own rows.
macro_rules! secrets_beside {
    ($fake:ty) => {
        #[async_trait]
        impl SecretRecordStore for $fake {
            async fn list_secrets_page(
                &self,
                org: OrgId,
                after: Option<&SecretCursor>,
                limit: u32,
            ) -> StoreResult<Vec<Secret>> {
                self.secrets.list_secrets_page(org, after, limit).await
            }

            async fn create_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()> {
                self.secrets.create_secret(secret, event).await
            }

            async fn get_secret(&self, org: OrgId, id: SecretId) -> StoreResult<Secret> {
                self.secrets.get_secret(org, id).await
            }

            async fn find_secret_by_name(&self, org: OrgId, name: &str) -> StoreResult<Option<Secret>> {
                self.secrets.find_secret_by_name(org, name).await
            }

            async fn update_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()> {
                self.secrets.update_secret(secret, event).await
            }

            async fn list_versions(&self, org: OrgId, secret: SecretId) -> StoreResult<Vec<SecretVersion>> {
                self.secrets.list_versions(org, secret).await
            }

            async fn deactivate_version(
                &self,
                org: OrgId,
                secret: SecretId,
                environment: CatalogId,
                version: i64,
                event: NewEvent,
            ) -> StoreResult<SecretVersion> {
                self.secrets.deactivate_version(org, secret, environment, version, event).await
            }
        }
    };
}

secrets_beside!(MemoryAccounts);
secrets_beside!(MemoryDatabases);
secrets_beside!(MemoryEnvironments);

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

/// The holdings port of a fake that keeps `holdings` (what Agents report).
macro_rules! holdings_in {
    ($fake:ty) => {
        #[async_trait]
        impl HoldingStore for $fake {
            async fn holdings_of_secret(&self, _org: OrgId, secret: &str) -> StoreResult<Vec<Holding>> {
                Ok(self.holdings.lock().unwrap().iter().filter(|h| h.secret == secret).cloned().collect())
            }

            async fn holdings_of_agent(&self, _org: OrgId, agent: AgentId) -> StoreResult<Vec<Holding>> {
                Ok(self.holdings.lock().unwrap().iter().filter(|h| h.agent_id == agent).cloned().collect())
            }

            async fn holdings_of_org(&self, _org: OrgId) -> StoreResult<Vec<Holding>> {
                Ok(self.holdings.lock().unwrap().clone())
            }
        }
    };
}

holdings_in!(MemoryDatabases);
holdings_in!(MemoryEnvironments);

/// Agents as people manage them, in memory beside a catalog: Agents
/// (`enrolled` adds one as the enrollment would), registrations, program
/// allowances (one per Agent, environment and glob) and approved names.
#[derive(Default)]
pub struct MemoryAgents {
    pub catalog: MemoryCatalog,
    agents: Mutex<Vec<Agent>>,
    registrations: Mutex<Vec<NewRegistration>>,
    allowances: Mutex<Vec<ProgramAllowance>>,
    names: Mutex<Vec<(AgentId, ApprovedName)>>,
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

    async fn program_tokens(&self, _org: OrgId, _agent: AgentId) -> StoreResult<Vec<RegisteredToken>> {
        // Agents register program tokens over their channel; none here.
        Ok(Vec::new())
    }
}

/// Notification channels in memory: names unique, and recent deliveries
/// a test adds.
#[derive(Default)]
pub struct MemoryChannels {
    channels: Mutex<Vec<Channel>>,
    pub deliveries: Mutex<Vec<Delivery>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryChannels {
    pub fn channels(&self) -> Vec<Channel> {
        self.channels.lock().unwrap().clone()
    }

    pub fn events(&self) -> Vec<(AuditAction, String)> {
        self.events.lock().unwrap().iter().map(|e| (e.action, e.target.clone())).collect()
    }
}

#[async_trait]
impl ChannelStore for MemoryChannels {
    async fn create_channel(&self, channel: &Channel, event: NewEvent) -> StoreResult<()> {
        let mut channels = self.channels.lock().unwrap();
        if channels.iter().any(|c| c.org_id == channel.org_id && c.name == channel.name) {
            return Err(StoreError::AlreadyExists("notification channel"));
        }
        channels.push(channel.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_channels(&self, org: OrgId) -> StoreResult<Vec<Channel>> {
        Ok(self.channels.lock().unwrap().iter().filter(|c| c.org_id == org).cloned().collect())
    }

    async fn delete_channel(&self, org: OrgId, key: &str, event: NewEvent) -> StoreResult<Channel> {
        let mut channels = self.channels.lock().unwrap();
        let named = |c: &Channel| c.org_id == org && (c.id == key || c.name == key);
        let at = channels.iter().position(named).ok_or(StoreError::NotFound("notification channel"))?;
        self.events.lock().unwrap().push(event);
        Ok(channels.remove(at))
    }

    async fn update_channel(&self, channel: &Channel, event: NewEvent) -> StoreResult<()> {
        let mut channels = self.channels.lock().unwrap();
        if channels.iter().any(|c| c.id != channel.id && c.name == channel.name) {
            return Err(StoreError::AlreadyExists("notification channel"));
        }
        let stored = channels
            .iter_mut()
            .find(|c| c.id == channel.id)
            .ok_or(StoreError::NotFound("notification channel"))?;
        *stored = channel.clone();
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_deliveries(&self, _org: OrgId, limit: u32) -> StoreResult<Vec<Delivery>> {
        Ok(self.deliveries.lock().unwrap().iter().take(limit as usize).cloned().collect())
    }
}

/// Environments and the Agents that hold them, in memory: assignments (one
/// per Agent and environment), beside Agents, secrets (with their
/// versions), what Agents report holding and a catalog.
#[derive(Default)]
pub struct MemoryEnvironments {
    pub secrets: MemorySecrets,
    pub agents: MemoryAgents,
    pub holdings: Mutex<Vec<Holding>>,
    assignments: Mutex<Vec<Assignment>>,
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
        let mut secrets = self.secrets.secrets.lock().unwrap();
        let found = secrets.iter_mut().find(|s| s.id == secret).ok_or(StoreError::NotFound("secret"))?;
        if found.status == SecretStatus::Deleting {
            return Err(StoreError::Conflict("the secret is already being deleted".into()));
        }
        found.status = SecretStatus::Deleting;
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn start_environment_deletion(
        &self,
        _org: OrgId,
        _secret: SecretId,
        _environment: CatalogId,
        event: NewEvent,
    ) -> StoreResult<()> {
        self.events.lock().unwrap().push(event);
        Ok(())
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
