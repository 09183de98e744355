//! `heimdall._native`: heimdall-sdk for Python, built with PyO3 and
//! maturin into the `heimdall` package (python/heimdall wraps it in typed
//! classes; that is the public API).
//!
//! Every operation is written once, in `ops`, over the SDK. Each client
//! class comes in two flavours made from one list (the `flavours!` macro):
//! the sync one blocks on a tokio runtime it owns, with the GIL released
//! while it waits; the async one returns an asyncio awaitable running on
//! pyo3-async-runtimes' tokio runtime.
//!
//! Architecture Invariant: tokens and values never reach a `repr()`, a
//! `str()` or an exception: tokens live only inside the SDK's clients
//! (`Redacted`), a value only inside a `SecretValue` until `reveal()`, and
//! every exception message comes from the SDK, which never holds either.

use std::future::Future;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

mod convert;
mod ops;
mod registrations;
mod values;

use convert::{finish, to_pyerr, Failure};
use ops::Outcome;
use values::{Identity, SecretValue};

/// Blocks the calling thread (GIL released) on `fut`, then converts.
fn block<F>(rt: &tokio::runtime::Runtime, py: Python<'_>, fut: F) -> PyResult<Py<PyAny>>
where
    F: Future<Output = Outcome> + Send,
{
    let outcome = py.detach(|| rt.block_on(fut));
    finish(py, outcome)
}

/// An asyncio awaitable for `fut`, run on pyo3-async-runtimes' tokio runtime.
fn spawn<'py, F>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Outcome> + Send + 'static,
{
    pyo3_async_runtimes::tokio::future_into_py(py, async move {
        let outcome = fut.await;
        Python::attach(|py| finish(py, outcome))
    })
}

fn runtime(py: Python<'_>) -> PyResult<Arc<tokio::runtime::Runtime>> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("heimdall-client")
        .enable_all()
        .build()
        .map(Arc::new)
        .map_err(|err| {
            to_pyerr(py, Failure::local("invalid", format!("cannot start a tokio runtime: {err}")))
        })
}

/// The two flavours of one client: `$sync` (blocking) and `$async_`
/// (awaitable), each method's body written once. `$inner` names the SDK
/// client in each body; `$interruptible` is true for the sync flavour.
macro_rules! flavours {
    (
        $sync:ident, $async_:ident, $sdk:ty;
        $(
            fn $name:ident($($arg:ident: $ty:ty),*) |$inner:ident, $interruptible:ident| $body:expr;
        )*
    ) => {
        #[doc = concat!("Blocking `", stringify!($sync), "`: each call waits on this client's own tokio runtime, with the GIL released.")]
        #[pyclass(module = "heimdall._native", frozen)]
        pub(crate) struct $sync {
            inner: $sdk,
            shown: String,
            rt: Arc<tokio::runtime::Runtime>,
        }

        #[doc = concat!("`", stringify!($sync), "` for asyncio: each call returns an awaitable.")]
        #[pyclass(module = "heimdall._native", frozen)]
        pub(crate) struct $async_ {
            inner: $sdk,
            shown: String,
        }

        impl std::fmt::Debug for $sync {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.shown)
            }
        }

        impl std::fmt::Debug for $async_ {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.shown)
            }
        }

        impl $sync {
            fn make(py: Python<'_>, inner: $sdk, shown: String) -> PyResult<Py<PyAny>> {
                Self { inner, shown, rt: runtime(py)? }.into_py_any(py)
            }
        }

        impl $async_ {
            fn make(py: Python<'_>, inner: $sdk, shown: String) -> PyResult<Py<PyAny>> {
                Self { inner, shown }.into_py_any(py)
            }
        }

        #[pymethods]
        impl $sync {
            fn __repr__(&self) -> String {
                self.shown.clone()
            }
            $(
                #[allow(clippy::too_many_arguments, reason = "one per parameter of the Python method")]
                fn $name(&self, py: Python<'_>, $($arg: $ty),*) -> PyResult<Py<PyAny>> {
                    let $inner = self.inner.clone();
                    let $interruptible = true;
                    let _ = $interruptible;
                    block(&self.rt, py, async move { $body.await })
                }
            )*
        }

        #[pymethods]
        impl $async_ {
            fn __repr__(&self) -> String {
                self.shown.clone()
            }
            $(
                #[allow(clippy::too_many_arguments, reason = "one per parameter of the Python method")]
                fn $name<'py>(&self, py: Python<'py>, $($arg: $ty),*) -> PyResult<Bound<'py, PyAny>> {
                    let $inner = self.inner.clone();
                    let $interruptible = false;
                    let _ = $interruptible;
                    spawn(py, async move { $body.await })
                }
            )*
        }
    };
}

type Tags = Option<std::collections::BTreeMap<String, String>>;

flavours! {
    Client, AsyncClient, heimdall_sdk::Client;
    fn health() |sdk, _i| ops::health(sdk);
    fn whoami() |sdk, _i| ops::whoami(sdk);
    fn create_catalog_entry(kind: String, name: String, description: Option<String>, parent: Option<String>)
        |sdk, _i| ops::create_catalog_entry(sdk, kind, name, description, parent);
    fn list_catalog(kind: String, parent: Option<String>) |sdk, _i| ops::list_catalog(sdk, kind, parent);
    fn get_catalog_entry(kind: String, id_or_name: String) |sdk, _i| ops::get_catalog_entry(sdk, kind, id_or_name);
    fn rename_catalog_entry(kind: String, id_or_name: String, new_name: String)
        |sdk, _i| ops::rename_catalog_entry(sdk, kind, id_or_name, new_name);
    fn delete_catalog_entry(kind: String, id_or_name: String)
        |sdk, _i| ops::delete_catalog_entry(sdk, kind, id_or_name);
    fn create_resource(component: String, schema: String, environment: String, name: String, input_json: String,
        region: Option<String>, wait: Option<f64>)
        |sdk, interruptible| ops::create_resource(sdk, component, schema, environment, name, input_json, region, wait, interruptible);
    fn wait_for_resource(id_or_name: String, timeout: f64)
        |sdk, interruptible| ops::wait_for_resource(sdk, id_or_name, timeout, interruptible);
    fn list_resources(component: Option<String>, environment: Option<String>, status: Option<String>,
        schema_type: Option<String>, outdated: bool)
        |sdk, _i| ops::list_resources(sdk, component, environment, status, schema_type, outdated);
    fn get_resource(id_or_name: String) |sdk, _i| ops::get_resource(sdk, id_or_name);
    fn delete_resource(id_or_name: String, wait: Option<f64>)
        |sdk, interruptible| ops::delete_resource(sdk, id_or_name, wait, interruptible);
    fn abandon_resource(id_or_name: String) |sdk, _i| ops::abandon_resource(sdk, id_or_name);
    fn upgrade_resource(id_or_name: String, schema_version: i64, input_json: Option<String>, allow_downgrade: bool,
        wait: Option<f64>)
        |sdk, interruptible| ops::upgrade_resource(sdk, id_or_name, schema_version, input_json, allow_downgrade, wait, interruptible);
    fn list_jobs(resource: Option<String>, component: Option<String>) |sdk, _i| ops::list_jobs(sdk, resource, component);
    fn get_job(id: String) |sdk, _i| ops::get_job(sdk, id);
    fn get_job_log(id: String) |sdk, _i| ops::get_job_log(sdk, id);
    fn create_secret(name: String, secret_type: Option<String>, description: Option<String>, tags: Tags,
        components: Option<Vec<String>>)
        |sdk, _i| ops::create_secret(sdk, name, secret_type, description, tags, components);
    fn list_secrets() |sdk, _i| ops::list_secrets(sdk);
    fn get_secret(id_or_name: String) |sdk, _i| ops::get_secret(sdk, id_or_name);
    fn update_secret(id_or_name: String, secret_type: Option<String>, description: Option<String>, tags: Tags,
        components: Option<Vec<String>>)
        |sdk, _i| ops::update_secret(sdk, id_or_name, secret_type, description, tags, components);
    fn delete_secret(id_or_name: String, environment: Option<String>)
        |sdk, _i| ops::delete_secret(sdk, id_or_name, environment);
    fn access_log(id_or_name: String, environment: Option<String>, limit: Option<u32>, after: Option<String>)
        |sdk, _i| ops::access_log(sdk, id_or_name, environment, limit, after);
    fn secret_holders(secret: String, environment: String) |sdk, _i| ops::secret_holders(sdk, secret, environment);
    fn get_secret_value(secret: String, environment: String, identity: Identity, version: Option<i64>,
        connect_timeout: Option<f64>, request_timeout: Option<f64>)
        |sdk, _i| ops::get_secret_value(sdk, secret, environment, identity.inner, version, connect_timeout, request_timeout);
    fn list_schemas(type_name: Option<String>) |sdk, _i| registrations::list_schemas(sdk, type_name);
    fn deprecate_schema(type_name: String, version: i64, deprecated: bool)
        |sdk, _i| registrations::deprecate_schema(sdk, type_name, version, deprecated);
    fn delete_schema(type_name: String, version: i64) |sdk, _i| registrations::delete_schema(sdk, type_name, version);
    fn list_cloud_accounts() |sdk, _i| registrations::list_cloud_accounts(sdk);
    fn update_cloud_account(id_or_name: String, change_json: String)
        |sdk, _i| registrations::update_cloud_account(sdk, id_or_name, change_json);
    fn unlink_cloud_account(id_or_name: String, link_json: String)
        |sdk, _i| registrations::unlink_cloud_account(sdk, id_or_name, link_json);
    fn delete_cloud_account(id_or_name: String) |sdk, _i| registrations::delete_cloud_account(sdk, id_or_name);
    fn list_policies() |sdk, _i| registrations::list_policies(sdk);
    fn update_policy(key: String, change_json: String) |sdk, _i| registrations::update_policy(sdk, key, change_json);
    fn list_databases() |sdk, _i| registrations::list_databases(sdk);
    fn update_database(name: String, change_json: String)
        |sdk, _i| registrations::update_database(sdk, name, change_json);
    fn delete_database(name: String) |sdk, _i| registrations::delete_database(sdk, name);
    fn list_service_users(database: String) |sdk, _i| registrations::list_service_users(sdk, database);
    fn delete_service_user(database: String, user: String, grace: Option<String>)
        |sdk, _i| registrations::delete_service_user(sdk, database, user, grace);
    fn list_notifications() |sdk, _i| registrations::list_notifications(sdk);
    fn update_notification(id_or_name: String, change_json: String)
        |sdk, _i| registrations::update_notification(sdk, id_or_name, change_json);
}

flavours! {
    AgentClient, AsyncAgentClient, heimdall_sdk::AgentClient;
    fn health() |agent, _i| ops::agent_health(agent);
    fn get_value(secret: String, environment: String, version: Option<i64>)
        |agent, _i| ops::get_value(agent, secret, environment, version);
    fn get_values(environment: String, secrets: Vec<String>) |agent, _i| ops::get_values(agent, environment, secrets);
    fn write_as_program(secret: String, environment: String, value: String)
        |agent, _i| ops::write_as_program(agent, secret, environment, value);
}

fn shown(class: &str, url: &str, how: &str) -> String {
    format!("{class}(url={url:?}{how})")
}

/// `Client` or `AsyncClient` for the API at `url` (the token is optional:
/// without one only `health()` answers).
#[pyfunction]
#[pyo3(signature = (url, token, ca_pem, connect_timeout, request_timeout, asynchronous))]
fn api_client(
    py: Python<'_>,
    url: &str,
    token: Option<String>,
    ca_pem: Option<String>,
    connect_timeout: Option<f64>,
    request_timeout: Option<f64>,
    asynchronous: bool,
) -> PyResult<Py<PyAny>> {
    let token = token.map(heimdall_core::Redacted::new);
    let sdk = ops::api_client(
        url,
        token.as_ref().map(|t| t.expose().as_str()),
        ca_pem.as_deref(),
        connect_timeout,
        request_timeout,
    )
    .map_err(|failure| to_pyerr(py, failure))?;
    let how = if token.is_some() { ", token=<redacted>" } else { "" };
    if asynchronous {
        AsyncClient::make(py, sdk.clone(), shown("AsyncClient", sdk.base_url(), how))
    } else {
        Client::make(py, sdk.clone(), shown("Client", sdk.base_url(), how))
    }
}

/// `AgentClient` or `AsyncAgentClient` for a program, with a token from
/// `heimdall-agent token create`.
#[pyfunction]
#[pyo3(signature = (url, token, ca_pem, connect_timeout, request_timeout, asynchronous))]
fn agent_with_program_token(
    py: Python<'_>,
    url: &str,
    token: String,
    ca_pem: &str,
    connect_timeout: Option<f64>,
    request_timeout: Option<f64>,
    asynchronous: bool,
) -> PyResult<Py<PyAny>> {
    let token = heimdall_core::Redacted::new(token);
    let agent = ops::agent_with_program_token(url, token.expose(), ca_pem, connect_timeout, request_timeout)
        .map_err(|failure| to_pyerr(py, failure))?;
    make_agent(py, agent, url, ", token=<redacted>", asynchronous)
}

/// `AgentClient` or `AsyncAgentClient` for a person, with her client certificate.
#[pyfunction]
#[pyo3(signature = (url, identity, agent_id, pins, connect_timeout, request_timeout, asynchronous))]
#[allow(clippy::too_many_arguments, reason = "one per parameter of the Python constructor")]
fn agent_with_certificate(
    py: Python<'_>,
    url: &str,
    identity: Identity,
    agent_id: &str,
    pins: Option<Vec<String>>,
    connect_timeout: Option<f64>,
    request_timeout: Option<f64>,
    asynchronous: bool,
) -> PyResult<Py<PyAny>> {
    let agent = ops::agent_with_certificate(
        url,
        &identity.inner,
        agent_id,
        pins.as_deref(),
        connect_timeout,
        request_timeout,
    )
    .map_err(|failure| to_pyerr(py, failure))?;
    make_agent(py, agent, url, ", identity=<client certificate>", asynchronous)
}

fn make_agent(
    py: Python<'_>,
    agent: heimdall_sdk::AgentClient,
    url: &str,
    how: &str,
    asynchronous: bool,
) -> PyResult<Py<PyAny>> {
    if asynchronous {
        AsyncAgentClient::make(py, agent, shown("AsyncAgentClient", url, how))
    } else {
        AgentClient::make(py, agent, shown("AgentClient", url, how))
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Client>()?;
    m.add_class::<AsyncClient>()?;
    m.add_class::<AgentClient>()?;
    m.add_class::<AsyncAgentClient>()?;
    m.add_class::<Identity>()?;
    m.add_class::<SecretValue>()?;
    m.add_function(wrap_pyfunction!(api_client, m)?)?;
    m.add_function(wrap_pyfunction!(agent_with_program_token, m)?)?;
    m.add_function(wrap_pyfunction!(agent_with_certificate, m)?)?;
    Ok(())
}
