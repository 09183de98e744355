//! Cedar policies.

use reqwest::Method;

use crate::wire::{CreatePolicy, Policy, PolicyVersion, UpdatePolicy};
use crate::{Client, Result};

impl Client {
    /// `POST /v1/policies`: Cedar text, validated by the server
    /// (`INVALID_POLICY` names the error's position).
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::CreatePolicy;
    /// let policy = client
    ///     .create_policy(&CreatePolicy {
    ///         name: "no-prod-deletes".into(),
    ///         description: None,
    ///         text: r#"forbid (principal, action == Action::"resource.delete", resource) when { context.environment == "prod" };"#.into(),
    ///     })
    ///     .await?;
    /// println!("{}", policy.id);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_policy(&self, policy: &CreatePolicy) -> Result<Policy> {
        self.with_body(Method::POST, &["policies"], policy).await
    }

    /// `GET /v1/policies`, every page.
    pub async fn list_policies(&self) -> Result<Vec<Policy>> {
        self.get_all_pages(&["policies"], &[]).await
    }

    /// `GET /v1/policies/{key}`: by id or name.
    pub async fn get_policy(&self, key: &str) -> Result<Policy> {
        self.get(&["policies", key]).await
    }

    /// `PATCH /v1/policies/{key}`: the policy's next version, validated as
    /// a new policy is, written in one transaction (never a moment without
    /// it); what the change leaves out stays. `expected_version` refuses
    /// `STALE_REVISION` if someone changed it since. The same text and
    /// description again is no new version.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::UpdatePolicy;
    /// let current = client.get_policy("no-prod-deletes").await?;
    /// let text = r#"forbid (principal, action == Heimdall::Action::"resource.delete", resource) when { context.environment == "prod" } unless { principal.role == "owner" };"#;
    /// let change = UpdatePolicy { text: Some(text.into()), expected_version: Some(current.version), ..Default::default() };
    /// println!("version {}", client.update_policy("no-prod-deletes", &change).await?.version);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn update_policy(&self, key: &str, change: &UpdatePolicy) -> Result<Policy> {
        self.with_body(Method::PATCH, &["policies", key], change).await
    }

    /// `GET /v1/policies/{key}/versions`: every version, newest first.
    pub async fn policy_versions(&self, key: &str) -> Result<Vec<PolicyVersion>> {
        self.get(&["policies", key, "versions"]).await
    }

    /// `DELETE /v1/policies/{key}`; takes effect on the next request. The
    /// server answers `204 No Content`.
    pub async fn delete_policy(&self, key: &str) -> Result<()> {
        let url = self.url(&["policies", key])?;
        self.send_ignoring_body(self.authed(Method::DELETE, url)).await
    }
}
