//! The `Client` type: its constructors, and the plumbing every route goes
//! through (URLs, authentication, sending, errors).

use std::fmt;
use std::time::Duration;

use heimdall_core::Redacted;
use reqwest::header::{HeaderValue, AUTHORIZATION};
use reqwest::{Method, RequestBuilder, Url};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::wire::{self, ErrorBody, Health, WhoAmI};
use crate::{error, ApiError, Error, ErrorCode, Result};

pub(crate) const USER_AGENT: &str = concat!("heimdall-sdk/", env!("CARGO_PKG_VERSION"));

/// How long a client waits. A server that accepts connections but never
/// answers (stopped, overloaded, a black-holed port) fails within these,
/// as [`Error::Transport`], instead of holding the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// For the TCP connection and the TLS handshake (5 s by default).
    pub connect: Duration,
    /// For a whole request, from sending to the end of the answer (30 s by default).
    pub request: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self { connect: Duration::from_secs(5), request: Duration::from_secs(30) }
    }
}

/// A client for one Heimdall API and one identity. Cheap to clone (the
/// connection pool is shared).
#[derive(Clone)]
pub struct Client {
    pub(crate) http: reqwest::Client,
    base: Url,
    token: Option<Redacted<String>>,
    /// The TLS settings `http` was made with, to make it again with other [`Timeouts`].
    tls: Option<rustls::ClientConfig>,
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
        let roots = heimdall_tls::verify::roots(ca_pem).map_err(Error::tls)?;
        let verifier =
            heimdall_tls::verify::ExpectIdentity::new(roots, heimdall_tls::identity::API_URI, None)
                .map_err(Error::tls)?;
        let tls =
            heimdall_tls::verify::client_config(std::sync::Arc::new(verifier), None).map_err(Error::tls)?;
        client.set_tls(tls)?;
        Ok(client)
    }

    /// A client without a token that trusts the API only if the chain it
    /// presents holds the CA with SHA-256 `ca_sha256`: enough to fetch that
    /// CA with [`Client::installation_ca`] before trusting it.
    pub fn pinned(base_url: &str, ca_sha256: &str) -> Result<Self> {
        let mut client = Self::build(base_url, None)?;
        let verifier = heimdall_tls::verify::PinnedRoot::new(ca_sha256).map_err(Error::tls)?;
        let tls =
            heimdall_tls::verify::client_config(std::sync::Arc::new(verifier), None).map_err(Error::tls)?;
        client.set_tls(tls)?;
        Ok(client)
    }

    /// `GET /v1/ca` (no token): the installation CA's certificate (PEM).
    pub async fn installation_ca(&self) -> Result<String> {
        let url = self.url(&["ca"])?;
        let ca: wire::CaCertificate = self.send(self.http.get(url)).await?;
        Ok(ca.certificate)
    }

    /// The SHA-256 of a CA certificate (PEM), as [`Client::fetch_pinned_ca`]
    /// and `heimdall login --ca-sha256` take it.
    pub fn ca_sha256(ca_pem: &str) -> Option<heimdall_core::Sha256Hex> {
        heimdall_tls::identity::first_der(ca_pem).map(|der| heimdall_tls::identity::sha256_hex(&der))
    }

    /// The installation CA of the API at `base_url`, trusted only if the
    /// server's chain holds a CA with SHA-256 `ca_sha256` and the CA it
    /// sends is that one: how a person (or script) who was given the
    /// fingerprint gets the CA to pass to [`Client::with_ca`].
    pub async fn fetch_pinned_ca(base_url: &str, ca_sha256: &str) -> Result<String> {
        let pem = Self::pinned(base_url, ca_sha256)?.installation_ca().await?;
        let pinned = heimdall_tls::verify::PinnedRoot::new(ca_sha256).map_err(Error::tls)?;
        if !pinned.matches_pem(&pem) {
            return Err(Error::Invalid("the API's CA does not have the fingerprint given".to_owned()));
        }
        Ok(pem)
    }

    /// This client, waiting as long as `timeouts` says (the defaults are
    /// [`Timeouts::default`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// let timeouts = heimdall_sdk::Timeouts { connect: Duration::from_secs(2), request: Duration::from_secs(10) };
    /// let client = heimdall_sdk::Client::new("https://heimdall.example.com", "hmd_example")?.with_timeouts(timeouts)?;
    /// # Ok::<(), heimdall_sdk::Error>(())
    /// ```
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Result<Self> {
        self.http = Self::http(self.tls.clone(), timeouts)?;
        Ok(self)
    }

    /// Trusts what `tls` trusts (and presents its client certificate, if any).
    pub(crate) fn set_tls(&mut self, tls: rustls::ClientConfig) -> Result<()> {
        self.http = Self::http(Some(tls.clone()), Timeouts::default())?;
        self.tls = Some(tls);
        Ok(())
    }

    fn http(tls: Option<rustls::ClientConfig>, timeouts: Timeouts) -> Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .connect_timeout(timeouts.connect)
            .timeout(timeouts.request)
            // An API does not redirect; following one could carry the token elsewhere.
            .redirect(reqwest::redirect::Policy::none());
        if let Some(tls) = tls {
            builder = builder.use_preconfigured_tls(tls);
        }
        builder
            .build()
            .map_err(|err| Error::Transport(format!("cannot set up the HTTP client: {}", chain(&err))))
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
        let http = Self::http(None, Timeouts::default())?;
        Ok(Self { http, base, token, tls: None })
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

    // ---- plumbing ------------------------------------------------------------

    /// `base` + `/v1/` + each segment, percent-encoded (so an email's `@`
    /// or a `/` in a name cannot change the route).
    pub(crate) fn url(&self, segments: &[&str]) -> Result<Url> {
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
    pub(crate) fn url_with_query(&self, segments: &[&str], pairs: &[(&str, Option<&str>)]) -> Result<Url> {
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

    pub(crate) fn authed(&self, method: Method, url: Url) -> RequestBuilder {
        let request = self.http.request(method, url);
        match self.token.as_ref().map(bearer) {
            Some(Ok(header)) => request.header(AUTHORIZATION, header),
            // Checked in `new`; without a token the server answers 401.
            Some(Err(_)) | None => request,
        }
    }

    pub(crate) async fn get<T: DeserializeOwned>(&self, segments: &[&str]) -> Result<T> {
        let url = self.url(segments)?;
        self.send(self.authed(Method::GET, url)).await
    }

    pub(crate) async fn delete<T: DeserializeOwned>(&self, segments: &[&str]) -> Result<T> {
        let url = self.url(segments)?;
        self.send(self.authed(Method::DELETE, url)).await
    }

    pub(crate) async fn with_body<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        segments: &[&str],
        body: &B,
    ) -> Result<T> {
        let url = self.url(segments)?;
        self.send(self.authed(method, url).json(body)).await
    }

    pub(crate) async fn send<T: DeserializeOwned>(&self, request: RequestBuilder) -> Result<T> {
        let (what, body) = self.exchange(request).await?;
        let de = &mut serde_json::Deserializer::from_slice(&body);
        serde_path_to_error::deserialize(de)
            .map_err(|err| Error::Decode(format!("{what}: response {}", error::describe_decode_error(&err))))
    }

    /// For routes that answer `204 No Content` (any 2xx body is ignored).
    pub(crate) async fn send_ignoring_body(&self, request: RequestBuilder) -> Result<()> {
        self.exchange(request).await.map(drop)
    }

    /// Every page of the list at `segments` (with the query `pairs`),
    /// followed to its end, the most a page holds at a time.
    pub(crate) async fn get_all_pages<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        pairs: &[(&str, Option<&str>)],
    ) -> Result<Vec<T>> {
        self.follow_pages(segments, pairs, Some(heimdall_wire::page::MAX_LIMIT)).await
    }

    /// Every page of the list at `segments`, `limit` at a time (`None`: the
    /// server's default, and the first request exactly as an API from
    /// before pages took it: it sends `after` only when told to go on).
    pub(crate) async fn follow_pages<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        pairs: &[(&str, Option<&str>)],
        limit: Option<u32>,
    ) -> Result<Vec<T>> {
        let limit = limit.map(|l| l.to_string());
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let mut query = pairs.to_vec();
            query.push(("limit", limit.as_deref()));
            query.push(("after", after.as_deref()));
            let url = self.url_with_query(segments, &query)?;
            let (page, next): (Vec<T>, Option<String>) =
                self.send_page(self.authed(Method::GET, url)).await?;
            all.extend(page);
            match next {
                Some(next) => after = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// [`Self::send`] for a page of a list: the page, and where the next
    /// one starts (the `Heimdall-Next-After` header), if there is one.
    pub(crate) async fn send_page<T: DeserializeOwned>(
        &self,
        request: RequestBuilder,
    ) -> Result<(T, Option<String>)> {
        let (what, body, next) = self.exchange_with_next(request).await?;
        let de = &mut serde_json::Deserializer::from_slice(&body);
        let page = serde_path_to_error::deserialize(de).map_err(|err| {
            Error::Decode(format!("{what}: response {}", error::describe_decode_error(&err)))
        })?;
        Ok((page, next))
    }

    /// Sends; a 2xx answer's body, or the server's error.
    async fn exchange(&self, request: RequestBuilder) -> Result<(String, Vec<u8>)> {
        self.exchange_with_next(request).await.map(|(what, body, _)| (what, body))
    }

    async fn exchange_with_next(&self, request: RequestBuilder) -> Result<(String, Vec<u8>, Option<String>)> {
        let request = request.build().map_err(|err| Error::Invalid(chain(&err)))?;
        let what = describe_request(request.method(), request.url());
        let scheme = request.url().scheme().to_owned();
        let response = self.http.execute(request).await.map_err(|err| {
            let cause = transport_cause(&err);
            Error::Transport(format!("{what}: {cause}{}", protocol_hint(&scheme, &cause)))
        })?;
        let status = response.status();
        let next = response
            .headers()
            .get(heimdall_wire::page::NEXT_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response
            .bytes()
            .await
            .map_err(|err| Error::Transport(format!("{what}: {}", transport_cause(&err))))?;
        if status.is_success() {
            Ok((what, body.to_vec(), next))
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
    let fallback = ErrorCode::for_status(status.as_u16());
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

/// What to change when the URL's scheme is not what the server speaks:
/// a TLS server's bytes read as HTTP, or plain HTTP read as TLS.
fn protocol_hint(scheme: &str, cause: &str) -> &'static str {
    if scheme == "http" && cause.contains("invalid HTTP version") {
        "; this address speaks HTTPS: use https://"
    } else if scheme == "https" && cause.contains("InvalidContentType") {
        "; this address speaks plain HTTP, not HTTPS: check the URL and port"
    } else {
        ""
    }
}

/// An error and its sources, `a: b: c`, skipping repeats.
pub(crate) fn chain(err: &dyn std::error::Error) -> String {
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
    use crate::ErrorCode;

    #[test]
    fn a_scheme_the_server_does_not_speak_says_what_to_change() {
        let hint = protocol_hint("http", "error sending request: invalid HTTP version parsed");
        assert!(hint.contains("use https://"), "{hint}");
        let hint = protocol_hint("https", "tls: received corrupt message of type InvalidContentType");
        assert!(hint.contains("plain HTTP"), "{hint}");
        assert_eq!(protocol_hint("https", "cannot connect: Connection refused (os error 111)"), "");
    }

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
