//! Cloud accounts and their links.

use reqwest::Method;

use crate::wire::{
    AccountLink, CloudAccount, CloudAccountDetail, CreateCloudAccount, LinkCloudAccount, UpdateCloudAccount,
};
use crate::{Client, Result};

impl Client {
    /// `POST /v1/cloud-accounts` (owner, admin). An account holds no
    /// credential: a role to assume (`oidc`) or the name of a secret in the
    /// Agent (`static`).
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::{AccountAuth, CreateCloudAccount, LinkCloudAccount, LinkScope, OidcTarget, Provider};
    /// let account = client
    ///     .create_cloud_account(&CreateCloudAccount {
    ///         name: "aws-dev".into(),
    ///         provider: Provider::Aws,
    ///         region: "eu-west-1".into(),
    ///         state_bucket: "acme-tf-state".into(),
    ///         state_endpoint: None,
    ///         state_backend: None, // the provider's own: S3 for AWS
    ///         state_storage_account: None,
    ///         auth: AccountAuth::Oidc(OidcTarget::aws("arn:aws:iam::123456789012:role/heimdall")),
    ///         drift_check_every: Some("24h".into()), // or None: no schedule of its own
    ///     })
    ///     .await?;
    /// let link = LinkCloudAccount { scope: LinkScope::Organization, scope_id: None, environment: "dev".into() };
    /// client.link_cloud_account(&account.name, &link).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_cloud_account(&self, account: &CreateCloudAccount) -> Result<CloudAccount> {
        self.with_body(Method::POST, &["cloud-accounts"], account).await
    }

    /// `GET /v1/cloud-accounts` (owner, admin: a member gets `FORBIDDEN`).
    pub async fn list_cloud_accounts(&self) -> Result<Vec<CloudAccount>> {
        self.get_all_pages(&["cloud-accounts"], &[]).await
    }

    /// `GET /v1/cloud-accounts/{id-or-name}`: the account and its links.
    pub async fn get_cloud_account(&self, id_or_name: &str) -> Result<CloudAccountDetail> {
        self.get(&["cloud-accounts", id_or_name]).await
    }

    /// `POST /v1/cloud-accounts/{id-or-name}/links`: "this account serves
    /// this scope in this environment". A Resource's account resolves
    /// System → Domain → organization.
    pub async fn link_cloud_account(&self, id_or_name: &str, link: &LinkCloudAccount) -> Result<AccountLink> {
        self.with_body(Method::POST, &["cloud-accounts", id_or_name, "links"], link).await
    }

    /// `PATCH /v1/cloud-accounts/{id-or-name}`: what the change names, in
    /// place; where the account keeps state moves only while no Resource
    /// keeps state there (`CONFLICT`). The account as it is now.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::UpdateCloudAccount;
    /// let change = UpdateCloudAccount { region: Some("eu-central-1".into()), ..Default::default() };
    /// println!("{}", client.update_cloud_account("aws-prod", &change).await?.region);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn update_cloud_account(
        &self,
        id_or_name: &str,
        change: &UpdateCloudAccount,
    ) -> Result<CloudAccount> {
        self.with_body(Method::PATCH, &["cloud-accounts", id_or_name], change).await
    }

    /// `DELETE /v1/cloud-accounts/{id-or-name}/links?scope=&scope_id=&environment=`:
    /// removes the link `link` names (as it was made); `NOT_EMPTY` while a
    /// Resource of that environment keeps state on the account.
    pub async fn unlink_cloud_account(&self, id_or_name: &str, link: &LinkCloudAccount) -> Result<()> {
        let url = self.url_with_query(
            &["cloud-accounts", id_or_name, "links"],
            &[
                ("scope", Some(link.scope.as_str())),
                ("scope_id", link.scope_id.as_deref()),
                ("environment", Some(&link.environment)),
            ],
        )?;
        self.send_ignoring_body(self.authed(Method::DELETE, url)).await
    }

    /// `DELETE /v1/cloud-accounts/{id-or-name}`: an account nothing links
    /// and no Resource keeps state on (else `NOT_EMPTY`).
    pub async fn delete_cloud_account(&self, id_or_name: &str) -> Result<()> {
        let url = self.url(&["cloud-accounts", id_or_name])?;
        self.send_ignoring_body(self.authed(Method::DELETE, url)).await
    }
}
