//! Where an organization's holders stand: what each reported, which
//! version is current, and who lacks it. Loaded once per answer and
//! decided by core (`current::current_versions`, `lagging::behind`), so the
//! sync's transfers, `secret show`, `agent show` and the lag events all see
//! the same thing.

use heimdall_core::current::{Assigned, CurrentVersion, Deleted, Held};
use heimdall_core::domain::{CatalogEntry, CatalogKind};
use heimdall_core::ids::{CatalogId, OrgId};
use heimdall_core::infra::Agent;
use heimdall_core::lagging::Behind;
use heimdall_core::ports::{EnvironmentDeletion, Holding};
use heimdall_core::secrets::Assignment;
use heimdall_core::ApiError;
use heimdall_wire::HolderBehind;
use time::OffsetDateTime;

use crate::http::AppState;

/// Everything the current versions are decided from, as the store has it.
pub(crate) struct Standing {
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
    pub async fn load(
        state: &AppState,
        org: OrgId,
        environments: Vec<CatalogEntry>,
    ) -> Result<Self, ApiError> {
        Ok(Self {
            environments,
            assignments: state.store.list_all_assignments(org).await?,
            deactivated: state.store.deactivated_versions(org).await?,
            deleted_secrets: state.store.deleted_secret_names(org).await?,
            environment_deletions: state.store.environment_deletions(org).await?,
            holdings: state.store.holdings_of_org(org).await?,
            agents: state.store.list_agents(org).await?,
        })
    }

    /// [`Standing::load`] with the environments read too.
    pub async fn load_all(state: &AppState, org: OrgId) -> Result<Self, ApiError> {
        let environments = state.store.list_catalog(org, CatalogKind::Environment, None).await?;
        Self::load(state, org, environments).await
    }

    fn environment_id(&self, name: &str) -> Option<CatalogId> {
        self.environments.iter().find(|e| e.name == name).map(|e| e.id)
    }

    fn environment_name(&self, id: CatalogId) -> &str {
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
        heimdall_core::current::current_versions(held, assigned, &self.deactivated, &self.deleted(), &all)
    }

    /// Every holder behind on a current version, organization-wide.
    pub fn behind(&self) -> Vec<Behind> {
        let (held, assigned) = (self.held(), self.assigned());
        let current = self.current(&held, &assigned);
        heimdall_core::lagging::behind(&current, &held, &assigned)
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
                lagging: heimdall_core::lagging::is_lagging(b.since, now),
            })
            .collect()
    }
}
