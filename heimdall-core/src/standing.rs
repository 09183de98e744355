//! Where an organization's holders stand: what each reported, which
//! version is current, and who lacks it. Loaded once per answer and
//! decided by core (`current::current_versions`, `lagging::behind`), so the
//! sync's transfers, `secret show`, `agent show` and the lag events all see
//! the same thing.

use crate::current::{Assigned, CurrentVersion, Deleted, Held};
use crate::domain::{CatalogEntry, CatalogKind};
use crate::error::ApiError;
use crate::ids::AgentId;
use crate::ids::{CatalogId, OrgId};
use crate::infra::Agent;
use crate::lagging::Behind;
use crate::ports::{
    AgentRecordStore, AssignmentStore, CatalogStore, DeletionStore, HoldingStore, VersionStore,
};
use crate::ports::{EnvironmentDeletion, Holding};
use crate::secrets::Assignment;
use time::OffsetDateTime;

/// Every port a standing is loaded from.
pub trait StandingStore:
    CatalogStore + AssignmentStore + VersionStore + DeletionStore + HoldingStore + AgentRecordStore
{
}
impl<T> StandingStore for T where
    T: CatalogStore
        + AssignmentStore
        + VersionStore
        + DeletionStore
        + HoldingStore
        + AgentRecordStore
        + ?Sized
{
}

/// A holder behind on a current version, named as people are shown it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderBehind {
    pub agent_id: AgentId,
    pub agent: String,
    pub secret: String,
    /// The environment's name.
    pub environment: String,
    /// The current version it lacks.
    pub current: i64,
    /// The newest version it holds there (none: nothing).
    pub held: Option<i64>,
    /// Since when it could have had it.
    pub since: OffsetDateTime,
    /// Behind for longer than three sync periods (`secret.holder_lagging`).
    pub lagging: bool,
}

/// Everything the current versions are decided from, as the store has it.
#[derive(Debug)]
pub struct Standing {
    pub environments: Vec<CatalogEntry>,
    pub assignments: Vec<Assignment>,
    /// (secret, environment, version) deactivated at the API.
    pub deactivated: Vec<(String, CatalogId, i64)>,
    pub deleted_secrets: Vec<String>,
    pub environment_deletions: Vec<EnvironmentDeletion>,
    /// Every Agent's last inventory.
    pub holdings: Vec<Holding>,
    /// Every enrolled Agent, revoked ones included.
    pub agents: Vec<Agent>,
}

impl Standing {
    /// Loads the rest for `org`, whose environments the caller has.
    pub async fn load<S: StandingStore + ?Sized>(
        store: &S,
        org: OrgId,
        environments: Vec<CatalogEntry>,
    ) -> Result<Self, ApiError> {
        Ok(Self {
            environments,
            assignments: store.list_all_assignments(org).await?,
            deactivated: store.deactivated_versions(org).await?,
            deleted_secrets: store.deleted_secret_names(org).await?,
            environment_deletions: store.environment_deletions(org).await?,
            holdings: store.holdings_of_org(org).await?,
            agents: store.list_agents(org).await?,
        })
    }

    /// [`Standing::load`] with the environments read too.
    pub async fn load_all<S: StandingStore + ?Sized>(store: &S, org: OrgId) -> Result<Self, ApiError> {
        let environments = store.list_catalog(org, CatalogKind::Environment, None).await?;
        Self::load(store, org, environments).await
    }

    fn environment_id(&self, name: &str) -> Option<CatalogId> {
        self.environments.iter().find(|e| e.name == name).map(|e| e.id)
    }

    /// An environment's name by id (empty for one that is gone).
    pub fn environment_name(&self, id: CatalogId) -> &str {
        self.environments.iter().find(|e| e.id == id).map_or("", |e| e.name.as_str())
    }

    /// What Agents not revoked reported, in environments that exist.
    pub fn held(&self) -> Vec<Held<'_>> {
        self.holdings
            .iter()
            .filter(|h| !h.agent_revoked)
            .filter_map(|h| {
                Some(Held {
                    agent: h.agent_id,
                    secret: &h.secret,
                    environment: self.environment_id(&h.environment)?,
                    version: h.version,
                    deactivated: h.deactivated,
                    since: h.held_since.unwrap_or(h.reported_at),
                })
            })
            .collect()
    }

    /// The assignments of Agents not revoked: a revoked Agent holds
    /// nothing that counts, and is behind on nothing.
    pub fn assigned(&self) -> Vec<Assigned> {
        let revoked = |id| self.agents.iter().any(|a| a.id == id && a.revoked_at.is_some());
        self.assignments
            .iter()
            .filter(|a| !revoked(a.agent_id))
            .map(|a| Assigned { agent: a.agent_id, environment: a.environment_id, at: a.assigned_at })
            .collect()
    }

    fn deleted(&self) -> Vec<Deleted<'_>> {
        let whole = self.deleted_secrets.iter().map(|secret| Deleted {
            secret,
            environment: None,
            through_version: None,
        });
        let in_one = self.environment_deletions.iter().map(|d| Deleted {
            secret: &d.secret,
            environment: Some(d.environment_id),
            through_version: d.through_version,
        });
        whole.chain(in_one).collect()
    }

    /// The current version of each secret in every environment.
    pub fn current(&self, held: &[Held<'_>], assigned: &[Assigned]) -> Vec<CurrentVersion> {
        let all: Vec<CatalogId> = self.environments.iter().map(|e| e.id).collect();
        crate::current::current_versions(held, assigned, &self.deactivated, &self.deleted(), &all)
    }

    /// Every holder behind on a current version, organization-wide.
    pub fn behind(&self) -> Vec<Behind> {
        let (held, assigned) = (self.held(), self.assigned());
        let current = self.current(&held, &assigned);
        crate::lagging::behind(&current, &held, &assigned)
    }

    /// `behind` as people are shown it at `now`.
    pub fn shown(&self, behind: &[Behind], now: OffsetDateTime) -> Vec<HolderBehind> {
        behind
            .iter()
            .map(|b| HolderBehind {
                agent_id: b.agent,
                agent: self
                    .agents
                    .iter()
                    .find(|a| a.id == b.agent)
                    .map_or_else(|| b.agent.to_string(), |a| a.name.clone()),
                secret: b.secret.clone(),
                environment: self.environment_name(b.environment).to_owned(),
                current: b.current,
                held: b.held,
                since: b.since,
                lagging: crate::lagging::is_lagging(b.since, now),
            })
            .collect()
    }
}
