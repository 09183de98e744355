//! The client for an Agent's local API, where values are written and read.
//! It authenticates with the person's client certificate (from
//! `POST /v1/me/certificate`) and trusts only the installation CA.

use std::fmt;

use heimdall_core::wire::{ValueAnswer, WriteValue};
use heimdall_core::Redacted;
use reqwest::Method;

use crate::{chain, Client, Error, Result, CONNECT_TIMEOUT, REQUEST_TIMEOUT, USER_AGENT};

/// A person's client certificate and key (PEM), and the CA that issued it.
#[derive(Clone)]
pub struct Identity {
    pub certificate_pem: String,
    pub key_pem: Redacted<String>,
    pub ca_pem: String,
}

impl Identity {
    /// The SHA-256 (hex) of the certificate: how the API names it.
    pub fn certificate_sha256(&self) -> Result<String> {
        heimdall_tls::identity::first_der(&self.certificate_pem)
            .map(|der| heimdall_tls::identity::sha256_hex(&der))
            .ok_or_else(|| Error::Invalid("the client certificate is not PEM".to_owned()))
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity").field("key_pem", &self.key_pem).finish_non_exhaustive()
    }
}

/// One Agent's local API (`https://…`), as one person.
///
/// ```no_run
/// # async fn demo(api: heimdall_sdk::Client, me: heimdall_sdk::Identity) -> Result<(), heimdall_sdk::Error> {
/// let created = api.create_version("db-password", "dev", Some(&me)).await?;
/// for holder in &created.holders {
///     let agent = heimdall_sdk::AgentClient::new(holder.location.url.as_deref().unwrap_or_default(), &me)?;
///     agent.put_value("db-password", "dev", created.version, holder.grant.expose(), "s3cret").await?;
/// }
/// let agent = heimdall_sdk::AgentClient::new("https://localhost:7482", &me)?;
/// let read = agent.get_value("db-password", "dev", None).await?;
/// println!("version {}", read.version); // read.value.expose() is the value
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct AgentClient {
    inner: Client,
}

impl AgentClient {
    pub fn new(url: &str, identity: &Identity) -> Result<Self> {
        if !url.starts_with("https://") {
            return Err(Error::Invalid("an Agent's local API URL starts with https://".to_owned()));
        }
        let mut pem = Redacted::new(format!("{}\n{}", identity.certificate_pem, identity.key_pem.expose()));
        let client_identity = reqwest::Identity::from_pem(pem.expose().as_bytes()).map_err(|e| {
            Error::Invalid(format!("the client certificate or key is not valid: {}", chain(&e)))
        });
        zeroize::Zeroize::zeroize(pem.expose_mut());
        let ca = reqwest::Certificate::from_pem(identity.ca_pem.as_bytes())
            .map_err(|e| Error::Invalid(format!("the CA certificate is not valid: {}", chain(&e))))?;
        let http = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(ca)
            .identity(client_identity?)
            .user_agent(USER_AGENT)
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Transport(format!("cannot set up the HTTP client: {}", chain(&e))))?;
        Ok(Self { inner: Client::with_http(http, url)? })
    }

    /// `PUT /v1/secrets/{name}/value`: stores `value` as `version` in
    /// `environment`, with the grant the API signed for this Agent.
    pub async fn put_value(
        &self,
        secret: &str,
        environment: &str,
        version: i64,
        grant: &str,
        value: &str,
    ) -> Result<serde_json::Value> {
        let body = WriteValue {
            environment: environment.to_owned(),
            version,
            grant: Redacted::new(grant.to_owned()),
            value: Redacted::new(value.to_owned()),
        };
        let url = self.inner.url(&["secrets", secret, "value"])?;
        self.inner.send(self.inner.http.request(Method::PUT, url).json(&body)).await
    }

    /// `GET /v1/secrets/{name}/value?environment=[&version=]`: the value,
    /// served only after the Agent durably recorded this read.
    pub async fn get_value(
        &self,
        secret: &str,
        environment: &str,
        version: Option<i64>,
    ) -> Result<ValueAnswer> {
        let version = version.map(|v| v.to_string());
        let url = self.inner.url_with_query(
            &["secrets", secret, "value"],
            &[("environment", Some(environment)), ("version", version.as_deref())],
        )?;
        self.inner.send(self.inner.http.request(Method::GET, url)).await
    }

    /// `GET /v1/health` of the Agent.
    pub async fn health(&self) -> Result<serde_json::Value> {
        let url = self.inner.url(&["health"])?;
        self.inner.send(self.inner.http.request(Method::GET, url)).await
    }
}
