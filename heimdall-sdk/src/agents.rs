//! Agents: registrations, the Agents enrolled, and which Agents hold each
//! environment's values.

use reqwest::Method;

use crate::wire::{
    Agent, AgentDetail, AssignAgent, Assignment, CreateRegistration, ForgetAgent, Registration,
};
use crate::{Client, Result};

impl Client {
    /// `POST /v1/agents/registrations` (owner): a one-time registration
    /// token for a new Agent called `name`, shown this once. It enrolls one
    /// Agent (`heimdall-agent enroll --token …`) before
    /// [`Registration::expires_at`]; the Agent makes its key itself and
    /// sends only a certificate request.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// let registration = client.create_agent_registration("edge-1").await?;
    /// println!("enroll {} before {}", registration.name, registration.expires_at);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_agent_registration(&self, name: &str) -> Result<Registration> {
        let body = CreateRegistration { name: name.to_owned() };
        self.with_body(Method::POST, &["agents", "registrations"], &body).await
    }

    /// `GET /v1/agents` (owner, admin): every enrolled Agent, revoked ones
    /// included (`revoked_at` set), by name.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// for agent in client.list_agents().await? {
    ///     let status = if agent.revoked_at.is_some() { "revoked" } else { "active" };
    ///     println!("{} {} {status} last seen {:?}", agent.id, agent.name, agent.last_seen_at);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_agents(&self) -> Result<Vec<Agent>> {
        self.get_all_pages(&["agents"], &[]).await
    }

    /// `GET /v1/agents/{id-or-name}` (owner, admin): the Agent and what its
    /// last inventory listed (names and versions, never a value).
    pub async fn get_agent(&self, id_or_name: &str) -> Result<AgentDetail> {
        self.get(&["agents", id_or_name]).await
    }

    /// `POST /v1/agents/{id-or-name}/forget` (owner): its value store is
    /// destroyed, so its last inventory no longer holds up a delete. Recorded.
    pub async fn forget_agent(&self, id_or_name: &str) -> Result<AgentDetail> {
        let body = ForgetAgent { confirm_store_destroyed: true };
        self.with_body(Method::POST, &["agents", id_or_name, "forget"], &body).await
    }

    /// `DELETE /v1/agents/{id-or-name}` (owner): revokes an Agent; its
    /// certificate is refused from the next request on, even a claim already
    /// waiting. A name names an Agent not yet revoked; revoking by id again
    /// changes nothing.
    pub async fn revoke_agent(&self, id_or_name: &str) -> Result<Agent> {
        self.delete(&["agents", id_or_name]).await
    }

    // ---- environments: which Agents hold their values --------------------------

    /// `POST /v1/environments/{id-or-name}/agents` (owner): the Agent
    /// (`agent`, id or name) holds `environment`'s secret values from now on.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// let assignment = client.assign_agent("prod", "edge-1").await?;
    /// println!("{} holds {}", assignment.agent_id, assignment.environment_id);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn assign_agent(&self, environment: &str, agent: &str) -> Result<Assignment> {
        let body = AssignAgent { agent: agent.to_owned() };
        self.with_body(Method::POST, &["environments", environment, "agents"], &body).await
    }

    /// `DELETE /v1/environments/{id-or-name}/agents/{agent}` (owner): the
    /// Agent no longer holds `environment`, and deletes its values there on
    /// its next sync. Refused `CONFLICT` while it holds the only copy of a
    /// current version.
    pub async fn unassign_agent(&self, environment: &str, agent: &str) -> Result<Assignment> {
        self.delete(&["environments", environment, "agents", agent]).await
    }

    /// `GET /v1/environments/{id-or-name}/agents`: the Agents that hold
    /// `environment`'s values, who assigned each and when.
    pub async fn list_assignments(&self, environment: &str) -> Result<Vec<Assignment>> {
        self.get_all_pages(&["environments", environment, "agents"], &[]).await
    }
}
