//! In-memory stores and a caller for the use cases' tests: the ports'
//! behaviour the SQL store has (names taken, entries not empty, stale
//! versions), kept in memory, and a caller whose policies a test sets.

pub(crate) use std::sync::Mutex;

pub(crate) use async_trait::async_trait;
pub(crate) use heimdall_core::access::{AccessLogEntry, AccessLogPage};
pub(crate) use heimdall_core::accounts::AccountChange;
pub(crate) use heimdall_core::audit::{AuditAction, EventPlan};
pub(crate) use heimdall_core::authz::{secret_target, Action, CatalogTree, Target};
pub(crate) use heimdall_core::dbusers::{Database, ServiceUser};
pub(crate) use heimdall_core::deletion::Lifecycle;
pub(crate) use heimdall_core::domain::{
    AuditEvent, CatalogEntry, CatalogKind, Member, Organization, Policy, PolicyVersion, Role, TokenInfo,
};
pub(crate) use heimdall_core::ids::{
    AgentId, CatalogId, CloudAccountId, DatabaseId, EventId, JobId, LeaseId, MemberId, OrgId, PolicyId,
    ResourceId, SchemaId, SecretId, ServiceUserId, TokenId,
};
pub(crate) use heimdall_core::infra::{
    AccountLink, Agent, CloudAccount, Job, JobOperation, JobStatus, LinkScope, Resource, ResourceSchema,
    Revision, RevisionState,
};
pub(crate) use heimdall_core::notify::{Channel, Delivery};
pub(crate) use heimdall_core::on_behalf::{OnBehalfOf, UsedSecret};
pub(crate) use heimdall_core::policies::PolicyWrite;
pub(crate) use heimdall_core::ports::{
    AccountStore, Actor, AgentRecordStore, AgentStore, AssignmentStore, CatalogStore, CertificateStore,
    ChannelStore, DatabaseRecordStore, DeletionStore, DriftCandidate, EnrollmentStore, EnvironmentDeletion,
    EventQuery, EventStore, Holding, HoldingStore, InfraStore, JobOutcome, JobQueue, MemberStore, NewEvent,
    NewRegistration, NewToken, PolicyStore, ProgramAllowanceStore, ProgramStore, Recorder, ResourceFilter,
    ResourceRecordStore, SchemaStore, SecretRecordStore, SignInStore, StoreError, StoreResult, TokenStore,
    TrailStore, VersionStore,
};
pub(crate) use heimdall_core::program::{ProgramAllowance, RegisteredToken};
pub(crate) use heimdall_core::queue::{JobCursor, JobOrder};
pub(crate) use heimdall_core::resources::{ResourcePlan, StatusUpdate};
pub(crate) use heimdall_core::secrets::{
    AgentCertificate, Assignment, CertificateKind, IssuedCertificateInfo, MemberCertificate, Secret,
    SecretCursor, SecretStatus, SecretVersion, VersionAsked,
};
pub(crate) use heimdall_core::server_names::ApprovedName;
pub(crate) use heimdall_core::token::TokenHash;
pub(crate) use heimdall_core::ApiError;
pub(crate) use heimdall_core::Sha256Hex;
pub(crate) use time::OffsetDateTime;
pub(crate) use uuid::Uuid;

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

/// The secrets' records of a fake that keeps `secrets` (or the store at a
/// path) beside its own rows.
macro_rules! secrets_beside {
    ($fake:ty) => {
        secrets_beside!($fake, secrets);
    };
    ($fake:ty, $($secrets:ident).+) => {
        #[async_trait]
        impl SecretRecordStore for $fake {
            async fn list_secrets_page(
                &self,
                org: OrgId,
                after: Option<&SecretCursor>,
                limit: u32,
            ) -> StoreResult<Vec<Secret>> {
                self.$($secrets).+.list_secrets_page(org, after, limit).await
            }

            async fn create_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()> {
                self.$($secrets).+.create_secret(secret, event).await
            }

            async fn get_secret(&self, org: OrgId, id: SecretId) -> StoreResult<Secret> {
                self.$($secrets).+.get_secret(org, id).await
            }

            async fn find_secret_by_name(&self, org: OrgId, name: &str) -> StoreResult<Option<Secret>> {
                self.$($secrets).+.find_secret_by_name(org, name).await
            }

            async fn update_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()> {
                self.$($secrets).+.update_secret(secret, event).await
            }

            async fn list_versions(&self, org: OrgId, secret: SecretId) -> StoreResult<Vec<SecretVersion>> {
                self.$($secrets).+.list_versions(org, secret).await
            }

            async fn deactivate_version(
                &self,
                org: OrgId,
                secret: SecretId,
                environment: CatalogId,
                version: i64,
                event: NewEvent,
            ) -> StoreResult<SecretVersion> {
                self.$($secrets).+.deactivate_version(org, secret, environment, version, event).await
            }
        }
    };
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

mod accounts;
mod actor;
mod agents;
mod catalog;
mod channel;
mod channels;
mod databases;
mod environments;
mod members;
mod policies;
mod resources;
mod schemas;
mod secrets;
mod sign_ins;
mod tokens;

pub use accounts::MemoryAccounts;
pub use actor::{entry, Ana, ANA, ORG};
pub use agents::MemoryAgents;
pub use catalog::MemoryCatalog;
pub use channels::MemoryChannels;
pub use databases::MemoryDatabases;
pub use environments::MemoryEnvironments;
pub use members::MemoryMembers;
pub use policies::MemoryPolicies;
pub use resources::MemoryResources;
pub use schemas::MemorySchemas;
pub use secrets::MemorySecrets;
pub use sign_ins::{Clerk, MemorySignIns};
pub use tokens::MemoryTokens;
