//! Each operation once, as an `async fn` over heimdall-sdk: the sync client
//! blocks on it, the async one hands it to asyncio. Nothing here speaks
//! HTTP; only the SDK does.

use std::collections::BTreeMap;
use std::time::Duration;

use heimdall_core::ids::{CatalogId, JobId};
use heimdall_sdk::wire::{
    CatalogKind, CreateCatalogEntry, CreateResource, CreateSecret, Resource, ResourceStatus, UpdateSecret,
    UpgradeResource,
};
use heimdall_sdk::{AgentClient, Client, Identity, JobQuery, ResourceQuery, Timeouts};
use pyo3::Python;

use crate::convert::{json, Failure, Reply};

pub(crate) type Outcome = Result<Reply, Failure>;

// ---- set-up ------------------------------------------------------------------

/// Seconds (a Python float) as a `Duration`, or `default` for `None`.
pub(crate) fn seconds(value: Option<f64>, default: Duration, what: &str) -> Result<Duration, Failure> {
    match value {
        None => Ok(default),
        Some(secs) => Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| Failure::invalid(format!("{what} must be a positive number of seconds"))),
    }
}

pub(crate) fn timeouts(connect: Option<f64>, request: Option<f64>) -> Result<Timeouts, Failure> {
    let default = Timeouts::default();
    Ok(Timeouts {
        connect: seconds(connect, default.connect, "connect_timeout")?,
        request: seconds(request, default.request, "request_timeout")?,
    })
}

/// The SDK client: with the installation CA when `ca_pem` is given (what
/// `heimdall dev` and its profile use), else the system's roots.
pub(crate) fn api_client(
    url: &str,
    token: Option<&str>,
    ca_pem: Option<&str>,
    connect: Option<f64>,
    request: Option<f64>,
) -> Result<Client, Failure> {
    let client = match (ca_pem, token) {
        (Some(ca), token) => Client::with_ca(url, token, ca)?,
        (None, Some(token)) => Client::new(url, token)?,
        (None, None) => Client::unauthenticated(url)?,
    };
    Ok(client.with_timeouts(timeouts(connect, request)?)?)
}

pub(crate) fn agent_with_program_token(
    url: &str,
    token: &str,
    ca_pem: &str,
    connect: Option<f64>,
    request: Option<f64>,
) -> Result<AgentClient, Failure> {
    Ok(AgentClient::with_program_token(url, token, ca_pem)?.with_timeouts(timeouts(connect, request)?)?)
}

pub(crate) fn agent_with_certificate(
    url: &str,
    identity: &Identity,
    agent_id: &str,
    pins: Option<&[String]>,
    connect: Option<f64>,
    request: Option<f64>,
) -> Result<AgentClient, Failure> {
    let agent = agent_id.parse().map_err(|_| Failure::invalid("agent_id is not an Agent id (a UUID)"))?;
    let pins = pins
        .map(|pins| pins.iter().map(|p| heimdall_core::Sha256Hex::parse(p)).collect::<Result<Vec<_>, _>>())
        .transpose()
        .map_err(|_| Failure::invalid("each certificate pin is a SHA-256 (64 hex digits)"))?;
    Ok(AgentClient::new(url, identity, agent, pins.as_deref())?.with_timeouts(timeouts(connect, request)?)?)
}

// ---- the API -----------------------------------------------------------------

fn kind(kind: &str) -> Result<CatalogKind, Failure> {
    kind.parse().map_err(Failure::invalid)
}

pub(crate) async fn health(sdk: Client) -> Outcome {
    json(&sdk.health().await?)
}

pub(crate) async fn whoami(sdk: Client) -> Outcome {
    json(&sdk.whoami().await?)
}

/// A new catalog entry; `parent` (the domain of a system, the system of a
/// component) is an id or a name, looked up with the SDK.
pub(crate) async fn create_catalog_entry(
    sdk: Client,
    kind_name: String,
    name: String,
    description: Option<String>,
    parent: Option<String>,
) -> Outcome {
    let kind = kind(&kind_name)?;
    let parent_id = match (kind.parent_kind(), parent) {
        (_, None) => None,
        (None, Some(_)) => return Err(Failure::invalid(format!("a {kind} has no parent"))),
        (Some(parent_kind), Some(parent)) => Some(match parent.parse::<CatalogId>() {
            Ok(id) => id,
            Err(_) => sdk.get_catalog_entry(parent_kind, &parent).await?.id,
        }),
    };
    json(&sdk.create_catalog_entry(kind, &CreateCatalogEntry { name, description, parent_id }).await?)
}

pub(crate) async fn list_catalog(sdk: Client, kind_name: String, parent: Option<String>) -> Outcome {
    json(&sdk.list_catalog(kind(&kind_name)?, parent.as_deref()).await?)
}

pub(crate) async fn get_catalog_entry(sdk: Client, kind_name: String, id_or_name: String) -> Outcome {
    json(&sdk.get_catalog_entry(kind(&kind_name)?, &id_or_name).await?)
}

pub(crate) async fn rename_catalog_entry(
    sdk: Client,
    kind_name: String,
    id_or_name: String,
    new_name: String,
) -> Outcome {
    json(&sdk.rename_catalog_entry(kind(&kind_name)?, &id_or_name, &new_name).await?)
}

pub(crate) async fn delete_catalog_entry(sdk: Client, kind_name: String, id_or_name: String) -> Outcome {
    sdk.delete_catalog_entry(kind(&kind_name)?, &id_or_name).await?;
    Ok(Reply::Nothing)
}

/// Requests a Resource; with `wait` (seconds), polls it until it settles.
#[allow(clippy::too_many_arguments, reason = "one per field of the request, from Python")]
pub(crate) async fn create_resource(
    sdk: Client,
    component: String,
    schema: String,
    environment: String,
    name: String,
    input_json: String,
    region: Option<String>,
    wait: Option<f64>,
    interruptible: bool,
) -> Outcome {
    let input = serde_json::from_str(&input_json)
        .map_err(|err| Failure::invalid(format!("input is not JSON: {err}")))?;
    let wait = wait.map(|w| seconds(Some(w), Duration::ZERO, "timeout")).transpose()?;
    let request = CreateResource { component, schema, environment, name, input, region, imports: Vec::new() };
    let created = sdk.create_resource(&request).await?;
    match wait {
        Some(timeout) => json(&settle(&sdk, created, timeout, interruptible).await?),
        None => json(&created),
    }
}

pub(crate) async fn wait_for_resource(
    sdk: Client,
    id_or_name: String,
    timeout: f64,
    interruptible: bool,
) -> Outcome {
    let timeout = seconds(Some(timeout), Duration::ZERO, "timeout")?;
    let start = sdk.get_resource(&id_or_name).await?.resource;
    json(&settle(&sdk, start, timeout, interruptible).await?)
}

pub(crate) async fn list_resources(
    sdk: Client,
    component: Option<String>,
    environment: Option<String>,
    status: Option<String>,
    schema_type: Option<String>,
    outdated: bool,
) -> Outcome {
    let status = status
        .map(|s| s.parse::<ResourceStatus>())
        .transpose()
        .map_err(|_| Failure::invalid("status is not a Resource status (queued, provisioned, ...)"))?;
    json(&sdk.list_resources(&ResourceQuery { component, environment, status, schema_type, outdated }).await?)
}

pub(crate) async fn get_resource(sdk: Client, id_or_name: String) -> Outcome {
    json(&sdk.get_resource(&id_or_name).await?)
}

pub(crate) async fn delete_resource(
    sdk: Client,
    id_or_name: String,
    wait: Option<f64>,
    interruptible: bool,
) -> Outcome {
    let wait = wait.map(|w| seconds(Some(w), Duration::ZERO, "timeout")).transpose()?;
    let deleting = sdk.delete_resource(&id_or_name).await?;
    match wait {
        Some(timeout) => json(&settle(&sdk, deleting, timeout, interruptible).await?),
        None => json(&deleting),
    }
}

/// Stops managing the Resource without a destroy (`heimdall resource abandon`).
pub(crate) async fn abandon_resource(sdk: Client, id_or_name: String) -> Outcome {
    json(&sdk.abandon_resource(&id_or_name).await?)
}

pub(crate) async fn upgrade_resource(
    sdk: Client,
    id_or_name: String,
    schema_version: i64,
    input_json: Option<String>,
    allow_downgrade: bool,
    wait: Option<f64>,
    interruptible: bool,
) -> Outcome {
    let input = input_json
        .map(|text| serde_json::from_str(&text))
        .transpose()
        .map_err(|err| Failure::invalid(format!("input is not JSON: {err}")))?;
    let wait = wait.map(|w| seconds(Some(w), Duration::ZERO, "timeout")).transpose()?;
    let request = UpgradeResource { schema_version, input, allow_downgrade };
    let upgraded = sdk.upgrade_resource(&id_or_name, &request).await?;
    match wait {
        Some(timeout) => json(&settle(&sdk, upgraded, timeout, interruptible).await?),
        None => json(&upgraded),
    }
}

/// Follows the Resource with the SDK's wait (`heimdall_sdk::flows::wait_for_resource`,
/// as `heimdall resource create --wait` does: long polls, retried while the
/// API does not answer) until it settles or `timeout` passes.
/// `interruptible`: Ctrl-C ends it (the sync client, which runs this on
/// the calling thread).
async fn settle(
    sdk: &Client,
    start: Resource,
    timeout: Duration,
    interruptible: bool,
) -> Result<Resource, Failure> {
    let wait = heimdall_sdk::flows::wait_for_resource(sdk, start, timeout, |_| {});
    tokio::pin!(wait);
    let waited = loop {
        tokio::select! {
            waited = &mut wait => break waited?,
            () = tokio::time::sleep(Duration::from_millis(100)), if interruptible => {
                Python::attach(|py| py.check_signals()).map_err(Failure::Python)?;
            }
        }
    };
    match waited {
        heimdall_sdk::flows::Waited::Settled(resource) => Ok(resource),
        heimdall_sdk::flows::Waited::TimedOut(last) => Err(Failure::local(
            "timeout",
            format!(
                "timed out after {:.0} s waiting for Resource {}: it is still {}; its job goes on",
                timeout.as_secs_f64(),
                last.name,
                last.status
            ),
        )),
    }
}

fn job_id(id: &str) -> Result<JobId, Failure> {
    id.parse().map_err(|_| Failure::invalid("a job id is a UUID"))
}

pub(crate) async fn list_jobs(sdk: Client, resource: Option<String>, component: Option<String>) -> Outcome {
    json(&sdk.list_jobs(&JobQuery { resource, component, ..Default::default() }).await?)
}

pub(crate) async fn get_job(sdk: Client, id: String) -> Outcome {
    json(&sdk.get_job(job_id(&id)?).await?)
}

pub(crate) async fn get_job_log(sdk: Client, id: String) -> Outcome {
    json(&sdk.get_job_log(job_id(&id)?).await?)
}

// ---- secrets (metadata) and values -------------------------------------------

pub(crate) async fn create_secret(
    sdk: Client,
    name: String,
    secret_type: Option<String>,
    description: Option<String>,
    tags: Option<BTreeMap<String, String>>,
    components: Option<Vec<String>>,
) -> Outcome {
    let secret = CreateSecret { name, secret_type, description, tags, components, ..Default::default() };
    json(&sdk.create_secret(&secret).await?)
}

pub(crate) async fn list_secrets(sdk: Client) -> Outcome {
    json(&sdk.list_secrets().await?)
}

pub(crate) async fn get_secret(sdk: Client, id_or_name: String) -> Outcome {
    json(&sdk.get_secret(&id_or_name).await?)
}

pub(crate) async fn update_secret(
    sdk: Client,
    id_or_name: String,
    secret_type: Option<String>,
    description: Option<String>,
    tags: Option<BTreeMap<String, String>>,
    components: Option<Vec<String>>,
) -> Outcome {
    let change = UpdateSecret { secret_type, description, tags, components };
    json(&sdk.update_secret(&id_or_name, &change).await?)
}

pub(crate) async fn delete_secret(sdk: Client, id_or_name: String, environment: Option<String>) -> Outcome {
    json(&sdk.delete_secret(&id_or_name, environment.as_deref()).await?)
}

pub(crate) async fn access_log(
    sdk: Client,
    id_or_name: String,
    environment: Option<String>,
    limit: Option<u32>,
    after: Option<String>,
) -> Outcome {
    let (entries, next) =
        sdk.access_log_page(&id_or_name, environment.as_deref(), limit, after.as_deref()).await?;
    let entries = match json(&entries)? {
        Reply::Json(value) => value,
        _ => serde_json::Value::Null,
    };
    Ok(Reply::Page(entries, next))
}

pub(crate) async fn secret_holders(sdk: Client, secret: String, environment: String) -> Outcome {
    json(&sdk.secret_holders(&secret, &environment).await?)
}

/// `heimdall secret get` as a person (`heimdall_sdk::flows::read_values`):
/// the API names the Agents holding `environment`, and the value comes from
/// the first that answers, over mTLS with `identity`. An Agent's refusal is
/// final; one that cannot be reached passes to the next.
pub(crate) async fn get_secret_value(
    sdk: Client,
    secret: String,
    environment: String,
    identity: Identity,
    version: Option<i64>,
    connect: Option<f64>,
    request: Option<f64>,
) -> Outcome {
    let options = heimdall_sdk::flows::AgentOptions {
        timeouts: Some(timeouts(connect, request)?),
        ..Default::default()
    };
    let ask = heimdall_sdk::flows::Ask::One { secret: &secret, version };
    let mut read = heimdall_sdk::flows::read_values(&sdk, &identity, &environment, ask, options).await?;
    match read.answers.pop() {
        Some(answer) => Ok(Reply::Value(answer)),
        None => Err(Failure::local("transport", "the Agent answered with no value")),
    }
}

// ---- an Agent's local API -----------------------------------------------------

pub(crate) async fn agent_health(agent: AgentClient) -> Outcome {
    Ok(Reply::Json(agent.health().await?))
}

pub(crate) async fn get_value(
    agent: AgentClient,
    secret: String,
    environment: String,
    version: Option<i64>,
) -> Outcome {
    Ok(Reply::Value(agent.get_value(&secret, &environment, version).await?))
}

pub(crate) async fn get_values(agent: AgentClient, environment: String, secrets: Vec<String>) -> Outcome {
    Ok(Reply::Values(agent.get_values(&environment, &secrets).await?))
}

pub(crate) async fn write_as_program(
    agent: AgentClient,
    secret: String,
    environment: String,
    value: String,
) -> Outcome {
    let value = heimdall_core::Redacted::new(value);
    Ok(Reply::Json(agent.write_as_program(&secret, &environment, value.expose()).await?))
}
