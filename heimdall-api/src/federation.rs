//! OIDC federation at claim time: a job of an `oidc` account gets a
//! 5-minute identity token signed by the API's issuer, which the API trades
//! with the cloud for temporary credentials (AWS STS
//! `AssumeRoleWithWebIdentity`), or hands to the Agent as is for the
//! providers that trade it where Terraform runs (GCP, Azure) or take it as
//! a bearer token (Kubernetes, Helm). Either goes to the Agent in the
//! claim's answer, over mTLS, and is kept nowhere: not in a row, a log,
//! the job log or an error.

use std::sync::Arc;

use aws_config::{BehaviorVersion, Region};
use aws_sdk_sts::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider as TlsProvider};
use heimdall_core::infra::{AccountAuth, Job, Provider};
use heimdall_core::oidc;
use heimdall_core::ports::Store;
use heimdall_core::Redacted;
use heimdall_wire::JobCredentials;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::oidc::Issuer;

/// What federation needs: the issuer, and where STS is (`None`: AWS's).
#[derive(Clone, Debug)]
pub struct Federation {
    pub issuer: Arc<Issuer>,
    pub sts_endpoint: Option<String>,
    /// One STS client per region, made on first use and kept: making one
    /// (TLS roots, the SDK's configuration) and its first connection cost
    /// more than the call itself, on every job's claim.
    pub sts_clients: StsClients,
}

/// See [`Federation::sts_clients`].
pub type StsClients = Arc<tokio::sync::Mutex<std::collections::HashMap<String, aws_sdk_sts::Client>>>;

impl Federation {
    pub fn new(issuer: Arc<Issuer>, sts_endpoint: Option<String>) -> Self {
        Self { issuer, sts_endpoint, sts_clients: StsClients::default() }
    }

    /// The STS client for `region`, made the first time.
    async fn sts(&self, region: &str) -> aws_sdk_sts::Client {
        let mut clients = self.sts_clients.lock().await;
        if let Some(client) = clients.get(region) {
            return client.clone();
        }
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(TlsProvider::Rustls(CryptoMode::Ring))
            .build_https();
        // AssumeRoleWithWebIdentity is not signed: no credentials of the API's own.
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .http_client(http)
            .no_credentials()
            .region(Region::new(region.to_owned()));
        if let Some(url) = &self.sts_endpoint {
            loader = loader.endpoint_url(url);
        }
        let client = aws_sdk_sts::Client::new(&loader.load().await);
        clients.insert(region.to_owned(), client.clone());
        client
    }
}

/// How long the temporary credentials last: the job's attempt, its
/// heartbeats and Terraform's own retries fit in it.
const SESSION_SECONDS: i32 = 3600;

/// Why a job could not get its credentials; `retryable` is false when the
/// cloud refused the role (trying again would be refused again).
#[derive(Debug)]
pub struct Refused {
    pub reason: String,
    pub retryable: bool,
}

fn refused(reason: impl Into<String>, retryable: bool) -> Refused {
    Refused { reason: reason.into(), retryable }
}

/// The credentials `job` runs with: none for a static account (the Agent
/// reads its own secret), else what its identity token was traded for.
pub async fn credentials(
    federation: Option<&Federation>,
    store: &dyn Store,
    job: &Job,
    now: OffsetDateTime,
) -> Result<Option<JobCredentials>, Refused> {
    let AccountAuth::Oidc(target) = &job.request.account.auth else { return Ok(None) };
    let Some(federation) = federation else {
        return Err(refused("this API has no OIDC issuer (serve it with --ca-dir); nothing was run", false));
    };
    let token = identity_token(store, &federation.issuer, job, now).await?;
    match (job.request.account.provider, &target.role_arn) {
        (Provider::Aws, Some(role_arn)) => assume_role(federation, job, role_arn, &token).await.map(Some),
        (Provider::Aws, None) => {
            Err(refused("the AWS account names no role to assume; nothing was run", false))
        }
        // The others trade it where Terraform runs, or take it as is.
        (Provider::Gcp | Provider::Azure | Provider::Kubernetes | Provider::Helm, _) => {
            tracing::info!(job = %job.id, provider = %job.request.account.provider, "identity token issued for the job");
            Ok(Some(JobCredentials::IdentityToken { token, expires_at: now + oidc::TOKEN_TTL }))
        }
        (Provider::Cloudflare, _) => {
            Err(refused("Cloudflare has no OIDC federation: give the account a static API token", false))
        }
    }
}

/// The job's identity token: its place by ids, its attempt, 5 minutes.
async fn identity_token(
    store: &dyn Store,
    issuer: &Issuer,
    job: &Job,
    now: OffsetDateTime,
) -> Result<Redacted<String>, Refused> {
    let lookup = |e: heimdall_core::ports::StoreError| refused(format!("cannot place the job: {e}"), true);
    let resource = store.get_resource(job.org_id, job.resource_id).await.map_err(lookup)?;
    let component = store.get_catalog_entry(job.org_id, resource.component_id).await.map_err(lookup)?;
    let system =
        component.parent_id.ok_or_else(|| refused("the Resource's component has no system", false))?;
    let environment = job.request.environment_id.unwrap_or(resource.environment_id);
    let claims = oidc::job_claims(issuer.url(), job, system, environment, now, Uuid::new_v4().to_string());
    issuer.sign(&claims).map(Redacted::new).map_err(|e| refused(e.to_string(), true))
}

async fn assume_role(
    federation: &Federation,
    job: &Job,
    role_arn: &str,
    token: &Redacted<String>,
) -> Result<JobCredentials, Refused> {
    let client = federation.sts(&job.request.account.region).await;
    let session = format!("heimdall-job-{}", job.id.to_string().replace('-', ""));
    let answer = client
        .assume_role_with_web_identity()
        .role_arn(role_arn)
        .role_session_name(session.chars().take(64).collect::<String>())
        .web_identity_token(token.expose())
        .duration_seconds(SESSION_SECONDS)
        .send()
        .await
        .map_err(describe)?;
    let creds = answer.credentials.ok_or_else(|| refused("STS answered without credentials", true))?;
    let expires_at =
        OffsetDateTime::from_unix_timestamp(creds.expiration.secs()).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    tracing::info!(job = %job.id, role = %role_arn, "temporary AWS credentials obtained for the job");
    Ok(JobCredentials::Aws {
        access_key_id: creds.access_key_id,
        secret_access_key: Redacted::new(creds.secret_access_key),
        session_token: Redacted::new(creds.session_token),
        expires_at,
    })
}

/// STS's refusal, by its code and message (never the token); the role's
/// refusals are final, the rest may pass on a later attempt.
fn describe<E, R>(err: SdkError<E, R>) -> Refused
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    match &err {
        SdkError::ServiceError(service) => {
            let e = service.err();
            let code = e.code().unwrap_or("STS error");
            let retryable = matches!(code, "IDPCommunicationError" | "Throttling" | "ServiceUnavailable");
            let reason = match e.message() {
                Some(message) => format!("STS AssumeRoleWithWebIdentity: {code}: {message}"),
                None => format!("STS AssumeRoleWithWebIdentity: {code}"),
            };
            refused(reason, retryable)
        }
        other => refused(format!("STS AssumeRoleWithWebIdentity: {}", DisplayErrorContext(other)), true),
    }
}
