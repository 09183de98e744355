//! Secrets (metadata only).
//!
//! The API never receives a secret's value: these routes carry its name,
//! type, description, tags and links, and the server refuses any body
//! with a value-like key (`VALUE_NOT_ACCEPTED`), tags included. Values
//! go only to the Agent that holds the environment.

use reqwest::Method;

use crate::wire::{AccessLogEntry, CreateSecret, Secret, SecretDetail, UpdateSecret};
use crate::{Client, Result};

impl Client {
    /// `POST /v1/secrets` (owner, admin): a new secret, without a value.
    /// `secret.components` are component ids or names; a `personal` secret
    /// is reachable only by its creator. A name already taken is
    /// `ALREADY_EXISTS`.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::CreateSecret;
    /// let secret = client
    ///     .create_secret(&CreateSecret {
    ///         name: "db-password".into(),
    ///         secret_type: Some("password".into()),
    ///         tags: Some([("team".to_owned(), "payments".to_owned())].into()),
    ///         components: Some(vec!["api".into()]),
    ///         ..Default::default()
    ///     })
    ///     .await?;
    /// println!("{} {}", secret.id, secret.name);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_secret(&self, secret: &CreateSecret) -> Result<Secret> {
        self.with_body(Method::POST, &["secrets"], secret).await
    }

    /// `GET /v1/secrets`: the secrets the caller may see (every member sees
    /// the organization's; personal ones only their owner), every page
    /// ([`Self::list_secrets_page`] reads one).
    pub async fn list_secrets(&self) -> Result<Vec<Secret>> {
        let (mut all, mut next) = self.list_secrets_page(Some(heimdall_wire::page::MAX_LIMIT), None).await?;
        while let Some(after) = next.take() {
            let (more, after) =
                self.list_secrets_page(Some(heimdall_wire::page::MAX_LIMIT), Some(&after)).await?;
            all.extend(more);
            next = after;
        }
        Ok(all)
    }

    /// One page of `GET /v1/secrets`, by name: at most `limit` (the
    /// server's default 100), after the cursor `after` of the previous
    /// page; and the next page's cursor, if there is one.
    pub async fn list_secrets_page(
        &self,
        limit: Option<u32>,
        after: Option<&str>,
    ) -> Result<(Vec<Secret>, Option<String>)> {
        let limit = limit.map(|l| l.to_string());
        let url = self.url_with_query(&["secrets"], &[("limit", limit.as_deref()), ("after", after)])?;
        self.send_page(self.authed(Method::GET, url)).await
    }

    /// `GET /v1/secrets/{id-or-name}`: the secret and its versions in every
    /// environment (who created each, and whether it is deactivated).
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// let detail = client.get_secret("db-password").await?;
    /// for v in &detail.versions {
    ///     println!("{} v{} by {} deactivated={}", v.environment_id, v.version, v.created_by, v.deactivated_at.is_some());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_secret(&self, id_or_name: &str) -> Result<SecretDetail> {
        self.get(&["secrets", id_or_name]).await
    }

    /// `DELETE /v1/secrets/{id-or-name}`: the secret goes `deleting`, and
    /// `deleted` once every Agent that held it reported it gone. Refused
    /// `VALUE_MAY_PERSIST` (naming the Agents) while an Agent that will not
    /// sync again may hold a copy.
    ///
    /// With `environment`, only that environment's values go (the secret
    /// stays, and takes new versions there once that is done).
    pub async fn delete_secret(&self, id_or_name: &str, environment: Option<&str>) -> Result<SecretDetail> {
        let mut url = self.url(&["secrets", id_or_name])?;
        if let Some(env) = environment {
            url.query_pairs_mut().append_pair("environment", env);
        }
        self.send(self.authed(Method::DELETE, url)).await
    }

    /// `PATCH /v1/secrets/{id-or-name}` (owner, admin): fields left `None`
    /// are unchanged; `tags` and `components`, when given, replace the
    /// whole set (`Some(empty)` clears it).
    pub async fn update_secret(&self, id_or_name: &str, change: &UpdateSecret) -> Result<Secret> {
        self.with_body(Method::PATCH, &["secrets", id_or_name], change).await
    }

    /// `GET /v1/secrets/{id-or-name}/access-log?environment=` (owner,
    /// admin; a personal secret: only its owner): the reads Agents have
    /// reported, one entry per accessor, version, Agent, address and
    /// second, newest first: the first page (100 entries;
    /// [`Client::access_log_page`] for the rest).
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// for entry in client.access_log("db-password", Some("prod")).await? {
    ///     println!("{} {} v{} ×{}", entry.accessed_at, entry.accessor, entry.version, entry.reads);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn access_log(
        &self,
        id_or_name: &str,
        environment: Option<&str>,
    ) -> Result<Vec<AccessLogEntry>> {
        Ok(self.access_log_page(id_or_name, environment, None, None).await?.0)
    }

    /// One page of the access log, newest first: at most `limit` entries
    /// (the server's default 100, at most 1000), after the cursor `after`
    /// from the previous page; and the cursor of the next page, if any.
    pub async fn access_log_page(
        &self,
        id_or_name: &str,
        environment: Option<&str>,
        limit: Option<u32>,
        after: Option<&str>,
    ) -> Result<(Vec<AccessLogEntry>, Option<String>)> {
        let limit = limit.map(|l| l.to_string());
        let url = self.url_with_query(
            &["secrets", id_or_name, "access-log"],
            &[("environment", environment), ("limit", limit.as_deref()), ("after", after)],
        )?;
        self.send_page(self.authed(Method::GET, url)).await
    }
}
