//! Typed async client for the Heimdall API.
//!
//! One [`Client`] per API URL and token. Every route of the API has one
//! method here; bodies are the [`heimdall_core::wire`] types, so the SDK and
//! the server cannot drift. Errors carry the API's stable code
//! ([`Error::code`]).
//!
//! ```no_run
//! use heimdall_sdk::wire::{CatalogKind, CreateCatalogEntry};
//! use heimdall_sdk::{Client, ErrorCode};
//!
//! # async fn tour() -> Result<(), heimdall_sdk::Error> {
//! let client = Client::new("http://127.0.0.1:7480", "hmd_…")?;
//! let me = client.whoami().await?;
//! println!("{} ({}) in {}", me.member.email, me.member.role, me.organization.name);
//!
//! let payments = client
//!     .create_catalog_entry(
//!         CatalogKind::Domain,
//!         &CreateCatalogEntry { name: "payments".into(), ..Default::default() },
//!     )
//!     .await?;
//! println!("created {} {}", payments.kind, payments.id);
//!
//! match client.get_catalog_entry(CatalogKind::Domain, "billing").await {
//!     Err(err) if err.code() == Some(ErrorCode::NotFound) => println!("no billing domain yet"),
//!     other => println!("{other:?}"),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Architecture Invariant: the token lives in a [`Redacted`] and reaches
//! the wire only as a sensitive `Authorization` header; no error, log or
//! `Debug` output contains it.
#![forbid(unsafe_code)]

mod agent;
mod error;

use std::fmt;
use std::time::Duration;

use heimdall_core::ids::{JobId, PolicyId, TokenId};
use heimdall_core::Redacted;
use reqwest::header::{HeaderValue, AUTHORIZATION};
use reqwest::{Method, RequestBuilder, Url};
use serde::de::DeserializeOwned;
use serde::Serialize;
use time::OffsetDateTime;

pub use agent::{AgentClient, Identity};
pub use error::Error;
pub use heimdall_core::wire;
pub use heimdall_core::{ApiError, ErrorCode, FieldError};

use wire::{
    AccessLogEntry, AccountLink, AddMember, AddedMember, Agent, AssignAgent, Assignment, AuditEvent,
    CatalogEntry, CatalogKind, ChangeResource, ChangeRole, CloudAccount, CloudAccountDetail,
    CreateCatalogEntry, CreateCloudAccount, CreatePolicy, CreateRegistration, CreateResource, CreateSchema,
    CreateSecret, CreateToken, CreatedToken, Decide, ErrorBody, Health, Job, JobLog, LinkCloudAccount,
    Member, Policy, Registration, Rename, Resource, ResourceDetail, ResourceSchema, ResourceStatus, Role,
    Secret, SecretDetail, TokenInfo, UpdateSecret, WhoAmI,
};
use wire::{
    AgentLocation, CertificateRequest, CreateVersion, CreatedVersion, DeactivateVersion, IssuedCertificate,
    SecretVersion,
};

/// `Result` with the SDK's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

const USER_AGENT: &str = concat!("heimdall-sdk/", env!("CARGO_PKG_VERSION"));
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Filters for [`Client::list_events`]. All optional; the server applies
/// its own default and maximum `limit`.
///
/// ```
/// let query = heimdall_sdk::EventQuery { limit: Some(20), action: Some("member.".into()), ..Default::default() };
/// assert_eq!(query.before, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventQuery {
    /// At most this many events, newest first.
    pub limit: Option<u32>,
    /// Only events strictly before this instant (sent as RFC 3339).
    pub before: Option<OffsetDateTime>,
    /// Only events whose action starts with this prefix, e.g. `member.`.
    pub action: Option<String>,
}

/// Filters for [`Client::list_resources`]. All optional; `component` and
/// `environment` are ids or names.
///
/// ```
/// use heimdall_sdk::wire::ResourceStatus;
/// let query = heimdall_sdk::ResourceQuery { environment: Some("prod".into()), status: Some(ResourceStatus::Failed), ..Default::default() };
/// assert_eq!(query.component, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceQuery {
    /// Only Resources of this component (id or name).
    pub component: Option<String>,
    /// Only Resources for this environment (id or name).
    pub environment: Option<String>,
    /// Only Resources in this status (`deleted` ones stay listed as history).
    pub status: Option<ResourceStatus>,
}

/// Filters for [`Client::list_jobs`]. All optional.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobQuery {
    /// Only jobs of this Resource (id, or name when only one Resource has it).
    pub resource: Option<String>,
    /// Only jobs of Resources of this component (id or name). With
    /// `resource`, the Resource must belong to it (else `NOT_FOUND`).
    pub component: Option<String>,
}

/// A client for one Heimdall API and one identity. Cheap to clone (the
/// connection pool is shared).
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: Url,
    token: Option<Redacted<String>>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.base.as_str())
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Client {
    /// A client that sends `token` as a bearer token. `base_url` is the
    /// server's root (`http://127.0.0.1:7480`); routes go under its `/v1`.
    ///
    /// ```
    /// let client = heimdall_sdk::Client::new("http://127.0.0.1:7480", "hmd_example")?;
    /// assert_eq!(client.base_url(), "http://127.0.0.1:7480/");
    /// assert!(!format!("{client:?}").contains("hmd_example"));
    ///
    /// let err = heimdall_sdk::Client::new("not a url", "hmd_example").unwrap_err();
    /// assert!(matches!(err, heimdall_sdk::Error::Invalid(_)));
    /// # Ok::<(), heimdall_sdk::Error>(())
    /// ```
    pub fn new(base_url: &str, token: impl Into<String>) -> Result<Self> {
        let token = Redacted::new(token.into());
        bearer(&token)?;
        Self::build(base_url, Some(token))
    }

    /// A client without a token: enough for [`Client::health`]; every other
    /// route answers `UNAUTHENTICATED`.
    pub fn unauthenticated(base_url: &str) -> Result<Self> {
        Self::build(base_url, None)
    }

    /// A client for an API whose HTTPS certificate comes from its
    /// installation CA (`ca_pem`, e.g. what `heimdall dev` or
    /// [`Client::installation_ca`] gives): only that CA is trusted, and only
    /// a certificate that names the API itself (`urn:heimdall:api`), so an
    /// Agent's certificate from the same CA does not pass for the API.
    pub fn with_ca(base_url: &str, token: Option<&str>, ca_pem: &str) -> Result<Self> {
        let token = token.map(|t| Redacted::new(t.to_owned()));
        if let Some(t) = &token {
            bearer(t)?;
        }
        let mut client = Self::build(base_url, token)?;
        let roots = heimdall_tls::verify::roots(ca_pem).map_err(Error::Invalid)?;
        let verifier =
            heimdall_tls::verify::ExpectIdentity::new(roots, heimdall_tls::identity::API_URI, None)
                .map_err(Error::Invalid)?;
        let tls = heimdall_tls::verify::client_config(std::sync::Arc::new(verifier), None)
            .map_err(Error::Invalid)?;
        client.http = Self::http(Some(tls))?;
        Ok(client)
    }

    /// A client without a token that trusts the API only if the chain it
    /// presents holds the CA with SHA-256 `ca_sha256`: enough to fetch that
    /// CA with [`Client::installation_ca`] before trusting it.
    pub fn pinned(base_url: &str, ca_sha256: &str) -> Result<Self> {
        let mut client = Self::build(base_url, None)?;
        let verifier = heimdall_tls::verify::PinnedRoot::new(ca_sha256).map_err(Error::Invalid)?;
        let tls = heimdall_tls::verify::client_config(std::sync::Arc::new(verifier), None)
            .map_err(Error::Invalid)?;
        client.http = Self::http(Some(tls))?;
        Ok(client)
    }

    /// `GET /v1/ca` (no token): the installation CA's certificate (PEM).
    pub async fn installation_ca(&self) -> Result<String> {
        let url = self.url(&["ca"])?;
        let ca: wire::CaCertificate = self.send(self.http.get(url)).await?;
        Ok(ca.certificate)
    }

    /// The installation CA of the API at `base_url`, trusted only if the
    /// server's chain holds a CA with SHA-256 `ca_sha256` and the CA it
    /// sends is that one: how a person (or script) who was given the
    /// fingerprint gets the CA to pass to [`Client::with_ca`].
    pub async fn fetch_pinned_ca(base_url: &str, ca_sha256: &str) -> Result<String> {
        let pem = Self::pinned(base_url, ca_sha256)?.installation_ca().await?;
        let pinned = heimdall_tls::verify::PinnedRoot::new(ca_sha256).map_err(Error::Invalid)?;
        if !pinned.matches_pem(&pem) {
            return Err(Error::Invalid("the API's CA does not have the fingerprint given".to_owned()));
        }
        Ok(pem)
    }

    fn http(tls: Option<rustls::ClientConfig>) -> Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            // An API does not redirect; following one could carry the token elsewhere.
            .redirect(reqwest::redirect::Policy::none());
        if let Some(tls) = tls {
            builder = builder.use_preconfigured_tls(tls);
        }
        builder
            .build()
            .map_err(|err| Error::Transport(format!("cannot set up the HTTP client: {}", chain(&err))))
    }

    /// A client over a prepared `http` (the Agent client's, with a client
    /// certificate), without a token.
    fn with_http(http: reqwest::Client, base_url: &str) -> Result<Self> {
        let mut client = Self::build(base_url, None)?;
        client.http = http;
        Ok(client)
    }

    fn build(base_url: &str, token: Option<Redacted<String>>) -> Result<Self> {
        let base = Url::parse(base_url.trim())
            .map_err(|err| Error::Invalid(format!("API URL is not a valid URL: {err}")))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(Error::Invalid("API URL must start with http:// or https://".to_owned()));
        }
        if base.query().is_some() || base.fragment().is_some() {
            return Err(Error::Invalid("API URL must not have a query or a fragment".to_owned()));
        }
        let http = Self::http(None)?;
        Ok(Self { http, base, token })
    }

    /// The API root this client talks to.
    pub fn base_url(&self) -> &str {
        self.base.as_str()
    }

    /// `GET /v1/health`: is the server up? Sends no token.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), heimdall_sdk::Error> {
    /// let health = heimdall_sdk::Client::unauthenticated("http://127.0.0.1:7480")?.health().await?;
    /// println!("{} {}", health.status, health.version);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn health(&self) -> Result<Health> {
        let url = self.url(&["health"])?;
        self.send(self.http.get(url)).await
    }

    /// `GET /v1/whoami`: the member this token belongs to, and their organization.
    pub async fn whoami(&self) -> Result<WhoAmI> {
        self.get(&["whoami"]).await
    }

    // ---- members ---------------------------------------------------------

    /// `GET /v1/members`.
    pub async fn list_members(&self) -> Result<Vec<Member>> {
        self.get(&["members"]).await
    }

    /// `POST /v1/members`: adds a member and returns their first API token,
    /// which the server shows this once.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::Role;
    /// let added = client.add_member("ana@example.com", Role::Admin).await?;
    /// println!("{} can now log in with the token shown once", added.member.email);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn add_member(&self, email: &str, role: Role) -> Result<AddedMember> {
        self.with_body(Method::POST, &["members"], &AddMember { email: email.to_owned(), role }).await
    }

    /// `GET /v1/members/{id-or-email}`.
    pub async fn get_member(&self, id_or_email: &str) -> Result<Member> {
        self.get(&["members", id_or_email]).await
    }

    /// `PATCH /v1/members/{id-or-email}`: changes a member's role. The last
    /// owner cannot be demoted (`LAST_OWNER`).
    pub async fn change_role(&self, id_or_email: &str, role: Role) -> Result<Member> {
        self.with_body(Method::PATCH, &["members", id_or_email], &ChangeRole { role }).await
    }

    /// `DELETE /v1/members/{id-or-email}`: removes a member and revokes their tokens.
    pub async fn remove_member(&self, id_or_email: &str) -> Result<Member> {
        self.delete(&["members", id_or_email]).await
    }

    // ---- tokens (the caller's own) ---------------------------------------

    /// `GET /v1/tokens`: the caller's own tokens (metadata only).
    pub async fn list_tokens(&self) -> Result<Vec<TokenInfo>> {
        self.get(&["tokens"]).await
    }

    /// `POST /v1/tokens`: a new token for the caller, shown this once.
    pub async fn create_token(&self, name: &str) -> Result<CreatedToken> {
        self.with_body(Method::POST, &["tokens"], &CreateToken { name: name.to_owned() }).await
    }

    /// `DELETE /v1/tokens/{id}`.
    pub async fn revoke_token(&self, id: TokenId) -> Result<TokenInfo> {
        self.delete(&["tokens", &id.to_string()]).await
    }

    // ---- catalog: domains, systems, components, environments ---------------

    /// `POST /v1/{kind}s`. `entry.parent_id` names the domain of a new
    /// system or the system of a new component.
    pub async fn create_catalog_entry(
        &self,
        kind: CatalogKind,
        entry: &CreateCatalogEntry,
    ) -> Result<CatalogEntry> {
        self.with_body(Method::POST, &[kind.plural()], entry).await
    }

    /// `GET /v1/{kind}s`, for systems optionally `?domain=`, for components
    /// `?system=` (the parent's id or name). `parent` is ignored for domains
    /// and environments, which live directly in the organization.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::CatalogKind;
    /// for system in client.list_catalog(CatalogKind::System, Some("payments")).await? {
    ///     println!("{} {}", system.id, system.name);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_catalog(&self, kind: CatalogKind, parent: Option<&str>) -> Result<Vec<CatalogEntry>> {
        let mut url = self.url(&[kind.plural()])?;
        if let (Some(parent_kind), Some(parent)) = (kind.parent_kind(), parent) {
            url.query_pairs_mut().append_pair(parent_kind.as_str(), parent);
        }
        self.send(self.authed(Method::GET, url)).await
    }

    /// `GET /v1/{kind}s/{id-or-name}`.
    pub async fn get_catalog_entry(&self, kind: CatalogKind, id_or_name: &str) -> Result<CatalogEntry> {
        self.get(&[kind.plural(), id_or_name]).await
    }

    /// `PATCH /v1/{kind}s/{id-or-name}`: renames an entry; its id stays.
    pub async fn rename_catalog_entry(
        &self,
        kind: CatalogKind,
        id_or_name: &str,
        new_name: &str,
    ) -> Result<CatalogEntry> {
        let body = Rename { name: new_name.to_owned() };
        self.with_body(Method::PATCH, &[kind.plural(), id_or_name], &body).await
    }

    /// `DELETE /v1/{kind}s/{id-or-name}`: refused with `NOT_EMPTY` while
    /// anything lives in it. The server answers `204 No Content`.
    pub async fn delete_catalog_entry(&self, kind: CatalogKind, id_or_name: &str) -> Result<()> {
        let url = self.url(&[kind.plural(), id_or_name])?;
        self.send_ignoring_body(self.authed(Method::DELETE, url)).await
    }

    // ---- policies ----------------------------------------------------------

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

    /// `GET /v1/policies`.
    pub async fn list_policies(&self) -> Result<Vec<Policy>> {
        self.get(&["policies"]).await
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

    // ---- events ------------------------------------------------------------

    /// `GET /v1/events`: the organization's audit feed, newest first.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// let query = heimdall_sdk::EventQuery { limit: Some(10), action: Some("member.".into()), ..Default::default() };
    /// for event in client.list_events(&query).await? {
    ///     println!("{} {} {} {}", event.at, event.actor, event.action, event.target);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_events(&self, query: &EventQuery) -> Result<Vec<AuditEvent>> {
        let mut url = self.url(&["events"])?;
        {
            let mut pairs = url.query_pairs_mut();
            if let Some(limit) = query.limit {
                pairs.append_pair("limit", &limit.to_string());
            }
            if let Some(before) = query.before {
                let before = before
                    .to_offset(time::UtcOffset::UTC)
                    .format(&time::format_description::well_known::Rfc3339)
                    .map_err(|err| {
                        Error::Invalid(format!("`before` cannot be written as RFC 3339: {err}"))
                    })?;
                pairs.append_pair("before", &before);
            }
            if let Some(action) = &query.action {
                pairs.append_pair("action", action);
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        self.send(self.authed(Method::GET, url)).await
    }

    // ---- resource schemas ----------------------------------------------------

    /// `POST /v1/schemas`: a new version of a resource schema. The server
    /// compiles `input_schema` (JSON Schema draft 2020-12) and refuses an
    /// invalid one with `INVALID_INPUT`, saying where it is wrong. The first
    /// schema of a type is version 1; each create of the same type adds one.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::CreateSchema;
    /// let schema = client
    ///     .create_schema(&CreateSchema {
    ///         type_name: "s3-bucket".into(),
    ///         input_schema: serde_json::json!({
    ///             "type": "object",
    ///             "required": ["bucket"],
    ///             "properties": { "bucket": { "type": "string", "pattern": "^[a-z0-9-]{3,63}$" } },
    ///             "additionalProperties": false
    ///         }),
    ///         defaults: None,
    ///         module: None,
    ///         requires_approval: false,
    ///     })
    ///     .await?;
    /// println!("{} v{} ({})", schema.type_name, schema.version, schema.id);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_schema(&self, schema: &CreateSchema) -> Result<ResourceSchema> {
        self.with_body(Method::POST, &["schemas"], schema).await
    }

    /// `GET /v1/schemas`, every version of every type, or `?type=` only the
    /// versions of one type.
    pub async fn list_schemas(&self, type_name: Option<&str>) -> Result<Vec<ResourceSchema>> {
        let url = self.url_with_query(&["schemas"], &[("type", type_name)])?;
        self.send(self.authed(Method::GET, url)).await
    }

    /// `GET /v1/schemas/{id-or-type}`: one version by id, or a type's newest
    /// version by its name.
    pub async fn get_schema(&self, id_or_type: &str) -> Result<ResourceSchema> {
        self.get(&["schemas", id_or_type]).await
    }

    // ---- cloud accounts ------------------------------------------------------

    /// `POST /v1/cloud-accounts` (owner, admin). An account holds no
    /// credential: a role to assume (`oidc`) or the name of a secret in the
    /// Agent (`static`).
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::{AccountAuth, CreateCloudAccount, LinkCloudAccount, LinkScope, Provider};
    /// let account = client
    ///     .create_cloud_account(&CreateCloudAccount {
    ///         name: "aws-dev".into(),
    ///         provider: Provider::Aws,
    ///         region: "eu-west-1".into(),
    ///         state_bucket: "acme-tf-state".into(),
    ///         state_endpoint: None,
    ///         auth: AccountAuth::Oidc { role_arn: "arn:aws:iam::123456789012:role/heimdall".into() },
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
        self.get(&["cloud-accounts"]).await
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

    // ---- resources -------------------------------------------------------------

    /// `POST /v1/resources`: requests a Resource (revision 1). Without
    /// approval an `apply` job is queued and the Resource is `queued`; under
    /// a schema that requires approval it is `pending_approval`.
    ///
    /// Refusals happen before anything is stored: `SCHEMA_VIOLATION` (its
    /// [`ApiError::fields`] name each field and rule, never the value),
    /// `NO_CLOUD_ACCOUNT`, `NOT_FOUND` for an unknown component, schema or
    /// environment.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::CreateResource;
    /// use heimdall_sdk::ErrorCode;
    /// let request = CreateResource {
    ///     component: "api".into(),
    ///     schema: "s3-bucket".into(),
    ///     environment: "dev".into(),
    ///     name: "recibos".into(),
    ///     input: serde_json::json!({ "bucket": "checkout-recibos" }),
    ///     region: None,
    /// };
    /// match client.create_resource(&request).await {
    ///     Ok(resource) => println!("{} is {}", resource.id, resource.status),
    ///     Err(err) if err.code() == Some(ErrorCode::SchemaViolation) => {
    ///         for field in err.api().and_then(|e| e.fields.as_ref()).into_iter().flatten() {
    ///             println!("{}: {}", field.path, field.rule);
    ///         }
    ///     }
    ///     Err(err) => return Err(err),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_resource(&self, resource: &CreateResource) -> Result<Resource> {
        self.with_body(Method::POST, &["resources"], resource).await
    }

    /// `GET /v1/resources?component=&environment=&status=`, deleted ones included.
    pub async fn list_resources(&self, query: &ResourceQuery) -> Result<Vec<Resource>> {
        let status = query.status.map(ResourceStatus::as_str);
        let url = self.url_with_query(
            &["resources"],
            &[
                ("component", query.component.as_deref()),
                ("environment", query.environment.as_deref()),
                ("status", status),
            ],
        )?;
        self.send(self.authed(Method::GET, url)).await
    }

    /// `GET /v1/resources/{id-or-name}`: the Resource and every revision.
    /// A name must be unambiguous among Resources not deleted.
    pub async fn get_resource(&self, id_or_name: &str) -> Result<ResourceDetail> {
        self.get(&["resources", id_or_name]).await
    }

    /// `PATCH /v1/resources/{id-or-name}`: a change is a new revision, queued
    /// or waiting for approval as the schema says. A change while another
    /// revision is pending supersedes it.
    pub async fn change_resource(&self, id_or_name: &str, change: &ChangeResource) -> Result<Resource> {
        self.with_body(Method::PATCH, &["resources", id_or_name], change).await
    }

    /// `DELETE /v1/resources/{id-or-name}`: cancels any apply still queued.
    /// A Resource that never ran is `deleted` at once (`200`); otherwise a
    /// `destroy` job is queued and it is `deleting` (`202`). Either way it
    /// stays listed.
    pub async fn delete_resource(&self, id_or_name: &str) -> Result<Resource> {
        self.delete(&["resources", id_or_name]).await
    }

    /// `POST /v1/resources/{id-or-name}/approve`: `decision.revision` is the
    /// revision the approver read; any other is `STALE_REVISION`. The
    /// requester can never decide on their own request (`SELF_APPROVAL`).
    pub async fn approve_resource(&self, id_or_name: &str, decision: &Decide) -> Result<Resource> {
        self.with_body(Method::POST, &["resources", id_or_name, "approve"], decision).await
    }

    /// `POST /v1/resources/{id-or-name}/refuse`: same rules as
    /// [`Client::approve_resource`]; nothing is queued.
    pub async fn refuse_resource(&self, id_or_name: &str, decision: &Decide) -> Result<Resource> {
        self.with_body(Method::POST, &["resources", id_or_name, "refuse"], decision).await
    }

    /// `POST /v1/resources/{id-or-name}/retry`: queues the last operation of
    /// a `failed` Resource again (`202`); anything else is `CONFLICT`.
    pub async fn retry_resource(&self, id_or_name: &str) -> Result<Resource> {
        let url = self.url(&["resources", id_or_name, "retry"])?;
        self.send(self.authed(Method::POST, url)).await
    }

    // ---- jobs ----------------------------------------------------------------

    /// `GET /v1/jobs?resource=&component=`, oldest first.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// let query = heimdall_sdk::JobQuery { resource: Some("recibos".into()), ..Default::default() };
    /// for job in client.list_jobs(&query).await? {
    ///     println!("{} {} {} {}/{}", job.id, job.operation, job.status, job.attempts, job.max_attempts);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_jobs(&self, query: &JobQuery) -> Result<Vec<Job>> {
        let url = self.url_with_query(
            &["jobs"],
            &[("resource", query.resource.as_deref()), ("component", query.component.as_deref())],
        )?;
        self.send(self.authed(Method::GET, url)).await
    }

    /// `GET /v1/jobs/{id}`.
    pub async fn get_job(&self, id: JobId) -> Result<Job> {
        self.get(&["jobs", &id.to_string()]).await
    }

    /// `GET /v1/jobs/{id}/log`: the Terraform output kept for the job (up
    /// to 1 MiB; `truncated` says whether later output was dropped).
    pub async fn get_job_log(&self, id: JobId) -> Result<JobLog> {
        self.get(&["jobs", &id.to_string(), "log"]).await
    }

    // ---- agents ----------------------------------------------------------------

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
        self.get(&["agents"]).await
    }

    /// `DELETE /v1/agents/{id-or-name}` (owner): revokes an Agent; its
    /// certificate is refused from the next request on, even a claim already
    /// waiting. A name names an Agent not yet revoked; revoking by id again
    /// changes nothing.
    pub async fn revoke_agent(&self, id_or_name: &str) -> Result<Agent> {
        self.delete(&["agents", id_or_name]).await
    }

    // ---- secrets (metadata only) -----------------------------------------------
    //
    // The API never receives a secret's value: these routes carry its name,
    // type, description, tags and links, and the server refuses any body
    // with a value-like key (`VALUE_NOT_ACCEPTED`), tags included. Values
    // go only to the Agent that holds the environment.

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
    /// the organization's; personal ones only their owner).
    pub async fn list_secrets(&self) -> Result<Vec<Secret>> {
        self.get(&["secrets"]).await
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

    /// `PATCH /v1/secrets/{id-or-name}` (owner, admin): fields left `None`
    /// are unchanged; `tags` and `components`, when given, replace the
    /// whole set (`Some(empty)` clears it).
    pub async fn update_secret(&self, id_or_name: &str, change: &UpdateSecret) -> Result<Secret> {
        self.with_body(Method::PATCH, &["secrets", id_or_name], change).await
    }

    /// `GET /v1/secrets/{id-or-name}/access-log?environment=` (owner,
    /// admin; a personal secret: only its owner): the reads Agents have
    /// reported, one entry per accessor, version, Agent, address and
    /// second, newest first.
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
        let url =
            self.url_with_query(&["secrets", id_or_name, "access-log"], &[("environment", environment)])?;
        self.send(self.authed(Method::GET, url)).await
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

    /// `GET /v1/environments/{id-or-name}/agents`: the Agents that hold
    /// `environment`'s values, who assigned each and when.
    pub async fn list_assignments(&self, environment: &str) -> Result<Vec<Assignment>> {
        self.get(&["environments", environment, "agents"]).await
    }

    // ---- values: versions, grants, holders, certificates -----------------------

    /// `POST /v1/secrets/{id-or-name}/versions` (owner, admin; a personal
    /// secret: its owner): numbers the next version in `environment` and
    /// returns one signed write grant per Agent that holds it, issued to
    /// the caller. Send the value with [`AgentClient::put_value`]; it never
    /// goes to the API. `writer` is the client certificate the value will
    /// be sent with: for a personal secret the API checks (or, for one
    /// created before keys were bound, binds) its key.
    pub async fn create_version(
        &self,
        secret: &str,
        environment: &str,
        writer: Option<&Identity>,
    ) -> Result<CreatedVersion> {
        let body = CreateVersion {
            environment: environment.to_owned(),
            certificate_sha256: writer.map(Identity::certificate_sha256).transpose()?,
        };
        self.with_body(Method::POST, &["secrets", secret, "versions"], &body).await
    }

    /// `POST /v1/secrets/{id-or-name}/deactivate`: a leaked version. Every
    /// Agent replaces it with a tombstone on its next sync and answers
    /// `VERSION_DEACTIVATED` for it.
    pub async fn deactivate_version(
        &self,
        secret: &str,
        environment: &str,
        version: i64,
    ) -> Result<SecretVersion> {
        let body = DeactivateVersion { environment: environment.to_owned(), version };
        self.with_body(Method::POST, &["secrets", secret, "deactivate"], &body).await
    }

    /// `GET /v1/secrets/{id-or-name}/holders?environment=`: the Agents to
    /// read `secret` from in `environment`, with their local API URLs.
    pub async fn secret_holders(&self, secret: &str, environment: &str) -> Result<Vec<AgentLocation>> {
        let url =
            self.url_with_query(&["secrets", secret, "holders"], &[("environment", Some(environment))])?;
        self.send(self.authed(Method::GET, url)).await
    }

    /// `POST /v1/me/certificate`: a client certificate for the CSR's public
    /// key (make the key locally; only the CSR is sent).
    pub async fn issue_certificate(&self, csr_pem: &str) -> Result<IssuedCertificate> {
        let body = CertificateRequest { csr: csr_pem.to_owned() };
        self.with_body(Method::POST, &["me", "certificate"], &body).await
    }

    /// `GET /v1/certificates`: the certificates the installation CA issued
    /// (people's, and Agents' local API ones), newest first; a member sees
    /// only her own.
    pub async fn list_certificates(&self) -> Result<Vec<heimdall_core::secrets::IssuedCertificateInfo>> {
        self.get(&["certificates"]).await
    }

    /// `DELETE /v1/certificates/{sha256}`: revokes one certificate (owner,
    /// admin; a member, her own). Agents refuse a person's from their next
    /// sync; clients refuse an Agent's local API certificate at once.
    pub async fn revoke_certificate(
        &self,
        sha256: &str,
    ) -> Result<heimdall_core::secrets::IssuedCertificateInfo> {
        self.delete(&["certificates", sha256]).await
    }

    // ---- plumbing ------------------------------------------------------------

    /// `base` + `/v1/` + each segment, percent-encoded (so an email's `@`
    /// or a `/` in a name cannot change the route).
    fn url(&self, segments: &[&str]) -> Result<Url> {
        let mut url = self.base.clone();
        {
            let mut path = url
                .path_segments_mut()
                .map_err(|()| Error::Invalid("API URL cannot have a path".to_owned()))?;
            path.pop_if_empty().push("v1");
            for segment in segments {
                // `url` drops `.` and `..` segments and an empty one would
                // route elsewhere: refuse rather than ask the wrong question.
                if segment.is_empty() || *segment == "." || *segment == ".." {
                    return Err(Error::Invalid(format!(
                        "`{segment}` cannot name anything: use an id or a name"
                    )));
                }
                path.push(segment);
            }
        }
        Ok(url)
    }

    /// [`Client::url`] plus the query pairs that have a value; no `?` when
    /// none has.
    fn url_with_query(&self, segments: &[&str], pairs: &[(&str, Option<&str>)]) -> Result<Url> {
        let mut url = self.url(segments)?;
        if pairs.iter().any(|(_, value)| value.is_some()) {
            let mut query = url.query_pairs_mut();
            for (name, value) in pairs {
                if let Some(value) = value {
                    query.append_pair(name, value);
                }
            }
        }
        Ok(url)
    }

    fn authed(&self, method: Method, url: Url) -> RequestBuilder {
        let request = self.http.request(method, url);
        match self.token.as_ref().map(bearer) {
            Some(Ok(header)) => request.header(AUTHORIZATION, header),
            // Checked in `new`; without a token the server answers 401.
            Some(Err(_)) | None => request,
        }
    }

    async fn get<T: DeserializeOwned>(&self, segments: &[&str]) -> Result<T> {
        let url = self.url(segments)?;
        self.send(self.authed(Method::GET, url)).await
    }

    async fn delete<T: DeserializeOwned>(&self, segments: &[&str]) -> Result<T> {
        let url = self.url(segments)?;
        self.send(self.authed(Method::DELETE, url)).await
    }

    async fn with_body<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        segments: &[&str],
        body: &B,
    ) -> Result<T> {
        let url = self.url(segments)?;
        self.send(self.authed(method, url).json(body)).await
    }

    async fn send<T: DeserializeOwned>(&self, request: RequestBuilder) -> Result<T> {
        let (what, body) = self.exchange(request).await?;
        let de = &mut serde_json::Deserializer::from_slice(&body);
        serde_path_to_error::deserialize(de)
            .map_err(|err| Error::Decode(format!("{what}: response {}", error::describe_decode_error(&err))))
    }

    /// For routes that answer `204 No Content` (any 2xx body is ignored).
    async fn send_ignoring_body(&self, request: RequestBuilder) -> Result<()> {
        self.exchange(request).await.map(drop)
    }

    /// Sends; a 2xx answer's body, or the server's error.
    async fn exchange(&self, request: RequestBuilder) -> Result<(String, Vec<u8>)> {
        let request = request.build().map_err(|err| Error::Invalid(chain(&err)))?;
        let what = describe_request(request.method(), request.url());
        let response = self
            .http
            .execute(request)
            .await
            .map_err(|err| Error::Transport(format!("{what}: {}", transport_cause(&err))))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|err| Error::Transport(format!("{what}: {}", transport_cause(&err))))?;
        if status.is_success() {
            Ok((what, body.to_vec()))
        } else {
            Err(Error::Api(api_error(status, &body, &what)))
        }
    }
}

/// The server's error from a non-2xx answer. A code this SDK does not know
/// (a newer server) keeps its message, under the status's code.
fn api_error(status: reqwest::StatusCode, body: &[u8], what: &str) -> ApiError {
    if let Ok(parsed) = serde_json::from_slice::<ErrorBody>(body) {
        return parsed.error;
    }
    #[derive(serde::Deserialize)]
    struct Loose {
        error: LooseError,
    }
    #[derive(serde::Deserialize)]
    struct LooseError {
        code: String,
        message: String,
    }
    let fallback = error::code_for_status(status.as_u16());
    match serde_json::from_slice::<Loose>(body) {
        Ok(Loose { error }) => ApiError::new(fallback, format!("{}: {}", error.code, error.message)),
        Err(_) => {
            ApiError::new(fallback, format!("{what}: the server answered {status} without an error body"))
        }
    }
}

fn bearer(token: &Redacted<String>) -> Result<HeaderValue> {
    let mut value = HeaderValue::try_from(format!("Bearer {}", token.expose()))
        // The error names the rule, never the token.
        .map_err(|_| {
            Error::Invalid("the token contains characters not allowed in an HTTP header".to_owned())
        })?;
    value.set_sensitive(true);
    Ok(value)
}

/// `GET http://host:port/v1/members/x`: no credentials, no query.
fn describe_request(method: &Method, url: &Url) -> String {
    let mut shown = url.clone();
    // Cannot fail for http(s) URLs; if it did, the URL keeps what it had.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    format!("{method} {shown}")
}

fn transport_cause(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        return "timed out".to_owned();
    }
    if err.is_connect() {
        // The innermost cause says it best: "Connection refused (os error 111)".
        let mut cause: &dyn std::error::Error = err;
        while let Some(next) = cause.source() {
            cause = next;
        }
        return format!("cannot connect: {cause}");
    }
    // reqwest renders "error sending request for url (…)"; the request
    // description already names the URL.
    let text = err.to_string();
    let head = text.split_once(" for url (").map_or(text.as_str(), |(head, _)| head);
    chain_from(head.to_owned(), std::error::Error::source(err))
}

/// An error and its sources, `a: b: c`, skipping repeats.
fn chain(err: &dyn std::error::Error) -> String {
    chain_from(err.to_string(), err.source())
}

fn chain_from(head: String, mut source: Option<&(dyn std::error::Error + 'static)>) -> String {
    let mut parts = vec![head];
    while let Some(cause) = source {
        let text = cause.to_string();
        if parts.last().is_none_or(|last| !last.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_percent_encoded_under_v1() {
        let client = Client::new("http://127.0.0.1:7480", "hmd_x").unwrap();
        let url = client.url(&["members", "ana+ops@example.com"]).unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:7480/v1/members/ana+ops@example.com");
        let url = client.url(&["domains", "a/b c?d#e%"]).unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:7480/v1/domains/a%2Fb%20c%3Fd%23e%25");
        assert!(matches!(client.url(&["domains", ".."]), Err(Error::Invalid(_))));
        assert!(matches!(client.url(&["domains", ""]), Err(Error::Invalid(_))));

        let prefixed = Client::new("https://example.com/heimdall/", "hmd_x").unwrap();
        assert_eq!(prefixed.url(&["whoami"]).unwrap().as_str(), "https://example.com/heimdall/v1/whoami");
    }

    #[test]
    fn queries_carry_only_the_filters_given() {
        let client = Client::new("http://127.0.0.1:7480", "hmd_x").unwrap();
        let url = client.url_with_query(&["resources"], &[("component", None), ("status", None)]).unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:7480/v1/resources");
        let url = client
            .url_with_query(
                &["jobs"],
                &[("resource", Some("recibos")), ("component", Some("a b&c=d")), ("x", None)],
            )
            .unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:7480/v1/jobs?resource=recibos&component=a+b%26c%3Dd");
        let url = client.url_with_query(&["schemas"], &[("type", Some("s3-bucket"))]).unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:7480/v1/schemas?type=s3-bucket");
        let url = client.url(&["cloud-accounts", "aws dev", "links"]).unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:7480/v1/cloud-accounts/aws%20dev/links");
    }

    #[test]
    fn bad_urls_and_tokens_are_refused_without_echoing_the_token() {
        assert!(matches!(Client::new("ftp://x", "t"), Err(Error::Invalid(_))));
        assert!(matches!(Client::new("http://x?a=b", "t"), Err(Error::Invalid(_))));
        let err = Client::new("http://x", "hmd_sec\nret").unwrap_err();
        assert!(!err.to_string().contains("hmd_sec"), "{err}");
        let client = Client::new("http://x", "hmd_secret").unwrap();
        assert!(!format!("{client:?}").contains("hmd_secret"));
    }

    #[test]
    fn request_descriptions_drop_credentials_and_query() {
        let url = Url::parse("http://user:pw@h:1/v1/events?action=x").unwrap();
        assert_eq!(describe_request(&Method::GET, &url), "GET http://h:1/v1/events");
    }

    #[test]
    fn error_bodies() {
        let what = "GET http://h/v1/x";
        let typed = br#"{"error":{"code":"NOT_FOUND","message":"domain x not found"}}"#;
        assert_eq!(api_error(reqwest::StatusCode::NOT_FOUND, typed, what).code, ErrorCode::NotFound);
        let unknown = br#"{"error":{"code":"SHINY_NEW","message":"m"}}"#;
        let err = api_error(reqwest::StatusCode::CONFLICT, unknown, what);
        assert_eq!((err.code, err.message.as_str()), (ErrorCode::Conflict, "SHINY_NEW: m"));
        let err = api_error(reqwest::StatusCode::BAD_GATEWAY, unknown, what);
        assert_eq!(err.code, ErrorCode::Internal);
        let html = b"<html>bad gateway</html>";
        let err = api_error(reqwest::StatusCode::UNAUTHORIZED, html, what);
        assert_eq!(err.code, ErrorCode::Unauthenticated);
        assert!(err.message.contains("401"), "{}", err.message);
    }
}
