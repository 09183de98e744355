//! The client for an Agent's local API, where values are written and read.
//! It authenticates with the person's client certificate (from
//! `POST /v1/me/certificate`), or as a program with a token the Agent made,
//! and trusts only the installation CA.

use std::fmt;

use heimdall_core::ids::AgentId;
use heimdall_core::{Redacted, Sha256Hex};
use heimdall_wire::{
    AgentLocation, FetchTransfer, ProgramDeletion, ProgramValue, ReadValues, ValueAnswer, ValuesAnswer,
    WatchAnswer, WatchValues, WriteValue,
};
use reqwest::Method;

use crate::client::Timeouts;
use crate::{Client, Error, Result};

/// A person's client certificate and key (PEM), and the CA that issued it.
#[derive(Clone)]
pub struct Identity {
    pub certificate_pem: String,
    pub key_pem: Redacted<String>,
    pub ca_pem: String,
}

impl Identity {
    /// The SHA-256 (hex) of the certificate: how the API names it.
    pub fn certificate_sha256(&self) -> Result<Sha256Hex> {
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
///     let url = holder.location.url.as_deref().unwrap_or_default();
///     let agent = heimdall_sdk::AgentClient::for_holder(&holder.location, url, &me)?;
///     agent.put_value("db-password", "dev", created.version, holder.grant.expose(), "s3cret").await?;
/// }
/// let holders = api.secret_holders("db-password", "dev").await?;
/// let agent = heimdall_sdk::AgentClient::for_holder(&holders[0], "https://localhost:7482", &me)?;
/// let read = agent.get_value("db-password", "dev", None).await?;
/// println!("version {}", read.version); // read.value.expose() is the value
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct AgentClient {
    inner: Client,
    /// For a program: the client that carries its token, made only once
    /// the Agent showed the CA's statement of its certificates.
    program: Option<std::sync::Arc<ProgramPins>>,
}

/// How long a program client keeps the certificates it pinned before it
/// asks the Agent for its statement again (it also does after a failed
/// connection: the Agent may have renewed its certificate).
const PINS_KEPT: std::time::Duration = std::time::Duration::from_secs(300);

/// A program client's trust: the installation CA, the Agent its token
/// names, and what that Agent's latest statement listed.
struct ProgramPins {
    url: String,
    token: Redacted<String>,
    ca_pem: String,
    agent: AgentId,
    ca: heimdall_tls::verify::CaSignatures,
    timeouts: std::sync::Mutex<Option<Timeouts>>,
    pinned: std::sync::Mutex<Option<(Client, std::time::Instant)>>,
}

impl fmt::Debug for ProgramPins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgramPins")
            .field("url", &self.url)
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl ProgramPins {
    /// A client trusting the CA and a certificate naming the Agent, with
    /// `pins` (and then the token) or without (and no token).
    fn client(&self, pins: Option<&[Sha256Hex]>) -> Result<Client> {
        let roots = heimdall_tls::verify::roots(&self.ca_pem)
            .map_err(|e| Error::Invalid(format!("the CA certificate is not valid: {e}")))?;
        let verifier = heimdall_tls::verify::ExpectIdentity::new(
            roots,
            heimdall_tls::identity::agent_uri(self.agent),
            pins.map(<[Sha256Hex]>::to_vec),
        )
        .map_err(Error::tls)?;
        let tls = heimdall_tls::verify::client_config(std::sync::Arc::new(verifier), None)
            .map_err(|e| Error::Invalid(format!("the TLS settings are not valid: {e}")))?;
        let mut client = match pins {
            Some(_) => Client::new(&self.url, self.token.expose().clone())?,
            None => Client::unauthenticated(&self.url)?,
        };
        client.set_tls(tls)?;
        match *self.timeouts.lock().map_err(|_| Error::Invalid("a poisoned lock".into()))? {
            Some(timeouts) => client.with_timeouts(timeouts),
            None => Ok(client),
        }
    }

    /// The client that carries the token: pinned to the certificates the
    /// Agent's statement lists, once that statement is the CA's, for this
    /// Agent, and current (`heimdall_core::local_api_status`).
    async fn pinned(&self) -> Result<Client> {
        let kept = self.pinned.lock().map_err(|_| Error::Invalid("a poisoned lock".into()))?.clone();
        if let Some((client, at)) = kept.filter(|(_, at)| at.elapsed() < PINS_KEPT) {
            let _ = at;
            return Ok(client);
        }
        let bootstrap = self.client(None)?;
        let url = bootstrap.url(&["certificate-status"])?;
        let shown: serde_json::Value = bootstrap.send(bootstrap.authed(Method::GET, url)).await?;
        let token = shown["status"]
            .as_str()
            .ok_or_else(|| Error::Decode("the Agent's certificate status has no statement".to_owned()))?;
        let refused = |e: heimdall_core::local_api_status::StatusError| {
            Error::Api(heimdall_core::ApiError::new(heimdall_core::ErrorCode::Unauthenticated, e.to_string()))
        };
        let parsed = heimdall_core::local_api_status::parse(token).map_err(refused)?;
        if !self.ca.verify(&parsed.signed_message, &parsed.signature) {
            return Err(refused(heimdall_core::local_api_status::StatusError::BadSignature));
        }
        parsed.claims.check(self.agent, time::OffsetDateTime::now_utc()).map_err(refused)?;
        let client = self.client(Some(&parsed.claims.certificates))?;
        *self.pinned.lock().map_err(|_| Error::Invalid("a poisoned lock".into()))? =
            Some((client.clone(), std::time::Instant::now()));
        Ok(client)
    }

    fn forget(&self) {
        if let Ok(mut pinned) = self.pinned.lock() {
            *pinned = None;
        }
    }
}

impl AgentClient {
    /// A client for the local API at `url` of the Agent `agent`, as the
    /// person of `identity`. It trusts only the installation CA, and only a
    /// certificate that names that Agent (`urn:heimdall:agent:<id>`) and,
    /// with `pins`, is one of those certificates (the holders list gives
    /// both; an empty list accepts none): a host name proves nothing, since
    /// any Agent can get a CA-signed certificate for the names it likes.
    pub fn new(url: &str, identity: &Identity, agent: AgentId, pins: Option<&[Sha256Hex]>) -> Result<Self> {
        if !url.starts_with("https://") {
            return Err(Error::Invalid("an Agent's local API URL starts with https://".to_owned()));
        }
        let roots = heimdall_tls::verify::roots(&identity.ca_pem)
            .map_err(|e| Error::Invalid(format!("the CA certificate is not valid: {e}")))?;
        let verifier = heimdall_tls::verify::ExpectIdentity::new(
            roots,
            heimdall_tls::identity::agent_uri(agent),
            pins.map(<[Sha256Hex]>::to_vec),
        )
        .map_err(Error::tls)?;
        let tls = heimdall_tls::verify::client_config(
            std::sync::Arc::new(verifier),
            Some((&identity.certificate_pem, identity.key_pem.expose())),
        )
        .map_err(|e| Error::Invalid(format!("the client certificate or key is not valid: {e}")))?;
        let mut inner = Client::unauthenticated(url)?;
        inner.set_tls(tls)?;
        Ok(Self { inner, program: None })
    }

    /// A client for the local API at `url` as a program, with a token from
    /// `heimdall-agent token create` (sent as `Authorization: Bearer`, no
    /// client certificate). It trusts only `ca_pem` (the installation CA),
    /// only a certificate naming the Agent the token says made it
    /// (`urn:heimdall:agent:<id>`), and, before the token is ever sent, only
    /// the certificates that Agent's current statement from the CA lists
    /// (`GET /v1/certificate-status`): a revoked certificate, its key
    /// leaked, gets no token once the statements that listed it expire.
    ///
    /// ```
    /// let err = heimdall_sdk::AgentClient::with_program_token("https://agent:7482", "hdp_nope", "")
    ///     .unwrap_err();
    /// assert!(!err.to_string().contains("hdp_nope"));
    /// ```
    pub fn with_program_token(url: &str, token: &str, ca_pem: &str) -> Result<Self> {
        if !url.starts_with("https://") {
            return Err(Error::Invalid("an Agent's local API URL starts with https://".to_owned()));
        }
        let parts = heimdall_core::program::parse_token(token).ok_or_else(|| {
            Error::Invalid(
                "that is not a program token (hdp_…, from `heimdall-agent token create`)".to_owned(),
            )
        })?;
        let pins = ProgramPins {
            url: url.to_owned(),
            token: Redacted::new(token.to_owned()),
            ca_pem: ca_pem.to_owned(),
            agent: parts.agent,
            ca: heimdall_tls::verify::CaSignatures::from_ca_pem(ca_pem).map_err(Error::tls)?,
            timeouts: std::sync::Mutex::new(None),
            pinned: std::sync::Mutex::new(None),
        };
        // Without a token and unpinned: only for the statement and health.
        let inner = pins.client(None)?;
        Ok(Self { inner, program: Some(std::sync::Arc::new(pins)) })
    }

    /// This client, waiting as long as `timeouts` says.
    pub fn with_timeouts(self, timeouts: Timeouts) -> Result<Self> {
        if let Some(program) = &self.program {
            *program.timeouts.lock().map_err(|_| Error::Invalid("a poisoned lock".into()))? = Some(timeouts);
            program.forget();
        }
        Ok(Self { inner: self.inner.with_timeouts(timeouts)?, program: self.program })
    }

    /// Runs `request` with the client that may carry the credential: a
    /// person's, or a program's pinned one (asked for its pins again, once,
    /// after a failed connection: the Agent may have a new certificate).
    async fn call<T, F, Fut>(&self, request: F) -> Result<T>
    where
        F: Fn(Client) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let Some(program) = &self.program else { return request(self.inner.clone()).await };
        match request(program.pinned().await?).await {
            Err(Error::Transport(_)) => {
                program.forget();
                request(program.pinned().await?).await
            }
            other => other,
        }
    }

    /// [`AgentClient::new`] for a holder from the API's holders list.
    pub fn for_holder(holder: &AgentLocation, url: &str, identity: &Identity) -> Result<Self> {
        Self::new(url, identity, holder.agent_id, holder.certificates.as_deref())
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
        self.call(|c| {
            let body = body.clone();
            async move { c.send(c.authed(Method::PUT, c.url(&["secrets", secret, "value"])?).json(&body)).await }
        })
        .await
    }

    /// `POST /v1/transfers`, as an Agent (its own certificate as the
    /// identity): the current version another holder lacks, with the CA's
    /// grant naming that Agent (`heimdall_core::transfer`).
    pub async fn fetch_transfer(&self, grant: &str) -> Result<ValueAnswer> {
        let body = FetchTransfer { grant: grant.to_owned() };
        self.call(|c| {
            let body = body.clone();
            async move { c.send(c.authed(Method::POST, c.url(&["transfers"])?).json(&body)).await }
        })
        .await
    }

    /// `PUT /v1/secrets/{name}/value` with a program token that may write:
    /// the Agent asks the API for the next version on the program's behalf
    /// and stores `value` under it; the answer names the version.
    pub async fn write_as_program(
        &self,
        secret: &str,
        environment: &str,
        value: &str,
    ) -> Result<serde_json::Value> {
        let body =
            ProgramValue { environment: environment.to_owned(), value: Redacted::new(value.to_owned()) };
        self.call(|c| {
            let body = body.clone();
            async move { c.send(c.authed(Method::PUT, c.url(&["secrets", secret, "value"])?).json(&body)).await }
        })
        .await
    }

    /// `DELETE /v1/secrets/{name}?environment=` with a program token that
    /// may delete: the API starts deleting every version there, and each
    /// holder drops them on its next sync.
    pub async fn delete_as_program(&self, secret: &str, environment: &str) -> Result<ProgramDeletion> {
        self.call(|c| async move {
            let url = c.url_with_query(&["secrets", secret], &[("environment", Some(environment))])?;
            c.send(c.authed(Method::DELETE, url)).await
        })
        .await
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
        let version = version.as_deref();
        self.call(|c| async move {
            let url = c.url_with_query(
                &["secrets", secret, "value"],
                &[("environment", Some(environment)), ("version", version)],
            )?;
            c.send(c.authed(Method::GET, url)).await
        })
        .await
    }

    /// `POST /v1/values`: the latest version of each of `secrets` in
    /// `environment`, in that order, all or none: every read is recorded
    /// in one commit before any value is sent, and one refusal (naming its
    /// secret) refuses them all.
    pub async fn get_values(&self, environment: &str, secrets: &[String]) -> Result<Vec<ValueAnswer>> {
        let body = ReadValues { environment: environment.to_owned(), secrets: secrets.to_vec() };
        let answer: ValuesAnswer = self
            .call(|c| {
                let body = body.clone();
                async move { c.send(c.authed(Method::POST, c.url(&["values"])?).json(&body)).await }
            })
            .await?;
        Ok(answer.values)
    }

    /// `POST /v1/values/watch`: waits (about 25 s at most) until the
    /// versions of `secrets` differ from the fingerprint `since` (`None`:
    /// answers at once with the current one). Sends and records no value.
    pub async fn watch_values(
        &self,
        environment: &str,
        secrets: &[String],
        since: Option<&str>,
    ) -> Result<WatchAnswer> {
        let body = WatchValues {
            environment: environment.to_owned(),
            secrets: secrets.to_vec(),
            since: since.map(str::to_owned),
        };
        self.call(|c| {
            let body = body.clone();
            async move { c.send(c.authed(Method::POST, c.url(&["values", "watch"])?).json(&body)).await }
        })
        .await
    }

    /// `GET /v1/health` of the Agent.
    pub async fn health(&self) -> Result<serde_json::Value> {
        let url = self.inner.url(&["health"])?;
        self.inner.send(self.inner.http.request(Method::GET, url)).await
    }
}
