//! Cedar policies.

use heimdall_core::ids::PolicyId;
use reqwest::Method;

use crate::wire::{CreatePolicy, Policy};
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

    /// `GET /v1/policies/{id}`.
    pub async fn get_policy(&self, id: PolicyId) -> Result<Policy> {
        self.get(&["policies", &id.to_string()]).await
    }

    /// `DELETE /v1/policies/{id}`; takes effect on the next request. The
    /// server answers `204 No Content`.
    pub async fn delete_policy(&self, id: PolicyId) -> Result<()> {
        let url = self.url(&["policies", &id.to_string()])?;
        self.send_ignoring_body(self.authed(Method::DELETE, url)).await
    }
}
