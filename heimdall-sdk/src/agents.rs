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

    /// `POST /v1/agents/{id-or-name}/program-allowances` (owner): the
    /// Agent's programs may `verbs` (write, delete) the secrets `secret` (a
    /// name or glob) names in `environment`. Without one, its program
    /// tokens only read; the API refuses any write or deletion outside an
    /// allowance, whatever the Agent asks. Recorded.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::Verb;
    /// client.allow_programs("edge-1", "prod", "billing-*", &[Verb::Write]).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn allow_programs(
        &self,
        agent: &str,
        environment: &str,
        secret: &str,
        verbs: &[crate::wire::Verb],
    ) -> Result<crate::wire::ProgramAllowance> {
        let body = crate::wire::AllowPrograms {
            environment: environment.to_owned(),
            secret: secret.to_owned(),
            verbs: verbs.to_vec(),
        };
        self.with_body(Method::POST, &["agents", agent, "program-allowances"], &body).await
    }

    /// `DELETE /v1/agents/{id-or-name}/program-allowances` (owner):
    /// withdraws the allowance for `secret` (as it was given) in
    /// `environment`; the API refuses what it allowed from now on.
    pub async fn disallow_programs(&self, agent: &str, environment: &str, secret: &str) -> Result<()> {
        let url = self.url_with_query(
            &["agents", agent, "program-allowances"],
            &[("environment", Some(environment)), ("secret", Some(secret))],
        )?;
        self.send_ignoring_body(self.authed(Method::DELETE, url)).await
    }

    /// `GET /v1/agents/{id-or-name}/program-allowances`: what the Agent's
    /// programs may write or delete.
    pub async fn program_allowances(&self, agent: &str) -> Result<Vec<crate::wire::ProgramAllowance>> {
        self.get(&["agents", agent, "program-allowances"]).await
    }

    /// `GET /v1/agents/{id-or-name}/program-tokens`: the program tokens the
    /// Agent registered (ids and scopes, never a token).
    pub async fn program_tokens(&self, agent: &str) -> Result<Vec<crate::wire::RegisteredToken>> {
        self.get(&["agents", agent, "program-tokens"]).await
    }

    /// `POST /v1/agents/{id-or-name}/names` (owner): a host name the
    /// Agent's local-API certificate may carry (loopback names need none).
    /// Recorded.
    pub async fn allow_agent_name(&self, agent: &str, name: &str) -> Result<crate::wire::ApprovedName> {
        let body = crate::wire::AllowName { name: name.to_owned() };
        self.with_body(Method::POST, &["agents", agent, "names"], &body).await
    }

    /// `DELETE /v1/agents/{id-or-name}/names/{name}` (owner): withdraws it;
    /// certificates that carry it are revoked.
    pub async fn disallow_agent_name(&self, agent: &str, name: &str) -> Result<()> {
        let url = self.url(&["agents", agent, "names", name])?;
        self.send_ignoring_body(self.authed(Method::DELETE, url)).await
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
