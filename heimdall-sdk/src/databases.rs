//! Databases and their service users, whose passwords the Agent creates
//! and rotates (the API keeps only names, addresses and schedules).

use reqwest::Method;

use crate::wire::{CreateDatabase, CreateServiceUser, UpdateDatabase};
use crate::{Client, Result};
use heimdall_core::dbusers::{Database, ServiceUser};

impl Client {
    /// `POST /v1/databases` (owner, admin): a database whose service users
    /// the Agents holding `environment` manage with the admin credential in
    /// the secret `admin_secret` (`{"username","password"}`).
    pub async fn create_database(&self, request: &CreateDatabase) -> Result<Database> {
        self.with_body(Method::POST, &["databases"], request).await
    }

    /// `PATCH /v1/databases/{database}` (owner, admin): where it is, its
    /// TLS, its admin secret; the next task an Agent claims uses them.
    pub async fn update_database(&self, database: &str, change: &UpdateDatabase) -> Result<Database> {
        self.with_body(Method::PATCH, &["databases", database], change).await
    }

    /// `DELETE /v1/databases/{database}` (owner, admin): one with no
    /// service users (else `NOT_EMPTY`).
    pub async fn delete_database(&self, database: &str) -> Result<()> {
        let url = self.url(&["databases", database])?;
        self.send_ignoring_body(self.authed(Method::DELETE, url)).await
    }

    /// `GET /v1/databases`, every page.
    pub async fn list_databases(&self) -> Result<Vec<Database>> {
        self.get_all_pages(&["databases"], &[]).await
    }

    /// `POST /v1/databases/{database}/users` (owner, admin): a service
    /// user; its Agent creates it (and its password) within a poll.
    pub async fn create_service_user(
        &self,
        database: &str,
        request: &CreateServiceUser,
    ) -> Result<ServiceUser> {
        self.with_body(Method::POST, &["databases", database, "users"], request).await
    }

    /// `GET /v1/databases/{database}/users`.
    pub async fn list_service_users(&self, database: &str) -> Result<Vec<ServiceUser>> {
        self.get_all_pages(&["databases", database, "users"], &[]).await
    }

    /// `GET /v1/databases/{database}/users/{user}`.
    pub async fn get_service_user(&self, database: &str, user: &str) -> Result<ServiceUser> {
        self.get(&["databases", database, "users", user]).await
    }

    /// `DELETE /v1/databases/{database}/users/{user}[?grace=PERIOD]`
    /// (owner, admin): no more rotations; after `grace` (the user's own by
    /// default) an Agent drops both logins, then the user and its secret
    /// go. The user as it is now (`drop_after` set).
    pub async fn delete_service_user(
        &self,
        database: &str,
        user: &str,
        grace: Option<&str>,
    ) -> Result<ServiceUser> {
        let mut url = self.url(&["databases", database, "users", user])?;
        if let Some(grace) = grace {
            url.query_pairs_mut().append_pair("grace", grace);
        }
        self.send(self.authed(Method::DELETE, url)).await
    }

    /// `POST /v1/databases/{database}/users/{user}/rotate` (owner, admin):
    /// rotate at the next poll instead of on schedule.
    pub async fn rotate_service_user(&self, database: &str, user: &str) -> Result<ServiceUser> {
        self.with_body(
            Method::POST,
            &["databases", database, "users", user, "rotate"],
            &serde_json::json!({}),
        )
        .await
    }
}
