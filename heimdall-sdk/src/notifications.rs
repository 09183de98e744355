//! The organization's notification channels (webhooks) and their deliveries.

use reqwest::Method;

use crate::wire::{CreateChannel, CreatedChannel, UpdateChannel};
use crate::{Client, Result};
use heimdall_core::notify::{Channel, Delivery};

impl Client {
    /// `POST /v1/notifications` (owner): POST the organization's notified
    /// events (`secret.at_risk`, `resource.drifted`, `job.failed`,
    /// `database.rotation_failed`) to
    /// `webhook`, signed with the secret in the answer, shown this once.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// let created = client.create_channel("ops", "https://hooks.example.com/heimdall").await?;
    /// println!("verify X-Heimdall-Signature with {}", created.secret);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_channel(&self, name: &str, webhook: &str) -> Result<CreatedChannel> {
        let body = CreateChannel { name: name.to_owned(), webhook: webhook.to_owned() };
        self.with_body(Method::POST, &["notifications"], &body).await
    }

    /// `GET /v1/notifications` (owner, admin).
    pub async fn list_channels(&self) -> Result<Vec<Channel>> {
        self.get_all_pages(&["notifications"], &[]).await
    }

    /// `DELETE /v1/notifications/{id-or-name}` (owner).
    pub async fn delete_channel(&self, id_or_name: &str) -> Result<Channel> {
        self.delete(&["notifications", id_or_name]).await
    }

    /// `PATCH /v1/notifications/{id-or-name}` (owner): another name or
    /// webhook; the signing secret stays, and deliveries not yet sent go
    /// to the new webhook.
    pub async fn update_channel(&self, id_or_name: &str, change: &UpdateChannel) -> Result<Channel> {
        self.with_body(Method::PATCH, &["notifications", id_or_name], change).await
    }

    /// `GET /v1/notifications/deliveries` (owner, admin): newest first.
    pub async fn list_deliveries(&self, limit: Option<u32>) -> Result<Vec<Delivery>> {
        let mut url = self.url(&["notifications", "deliveries"])?;
        if let Some(limit) = limit {
            url.query_pairs_mut().append_pair("limit", &limit.to_string());
        }
        self.send(self.authed(Method::GET, url)).await
    }
}
