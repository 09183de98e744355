//! What holds a secret: a value read from an Agent, and a person's client
//! certificate and key. Neither shows its secret part in `repr()` or `str()`.

use std::fmt;

use heimdall_core::Redacted;
use heimdall_wire::ValueAnswer;
use pyo3::prelude::*;

/// A value an Agent served (after recording the read). `repr()` and
/// `str()` say `<redacted>`; `reveal()` is the only way to the text. It
/// cannot be pickled.
#[pyclass(module = "heimdall", frozen)]
pub(crate) struct SecretValue {
    #[pyo3(get)]
    name: String,
    #[pyo3(get)]
    environment: String,
    #[pyo3(get)]
    version: i64,
    value: Redacted<String>,
}

impl From<ValueAnswer> for SecretValue {
    fn from(answer: ValueAnswer) -> Self {
        Self {
            name: answer.name,
            environment: answer.environment,
            version: answer.version,
            value: answer.value,
        }
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown())
    }
}

impl SecretValue {
    fn shown(&self) -> String {
        format!(
            "SecretValue(name={:?}, environment={:?}, version={}, value=<redacted>)",
            self.name, self.environment, self.version
        )
    }
}

#[pymethods]
impl SecretValue {
    /// The value itself, exactly the bytes written (as `str`).
    fn reveal(&self) -> String {
        self.value.expose().clone()
    }

    fn __repr__(&self) -> String {
        self.shown()
    }

    fn __str__(&self) -> String {
        self.shown()
    }
}

/// A person's client certificate, its private key and the installation CA
/// (all PEM), as `heimdall login` or `heimdall dev` keep them in
/// `profiles/<name>/client.pem`, `client.key` and `ca.pem`. The key is
/// never shown.
#[pyclass(module = "heimdall", frozen, from_py_object)]
#[derive(Clone)]
pub(crate) struct Identity {
    pub(crate) inner: heimdall_sdk::Identity,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

#[pymethods]
impl Identity {
    #[new]
    fn new(certificate_pem: String, key_pem: String, ca_pem: String) -> Self {
        Self { inner: heimdall_sdk::Identity { certificate_pem, key_pem: Redacted::new(key_pem), ca_pem } }
    }

    #[getter]
    fn certificate_pem(&self) -> String {
        self.inner.certificate_pem.clone()
    }

    #[getter]
    fn ca_pem(&self) -> String {
        self.inner.ca_pem.clone()
    }

    /// The SHA-256 (hex) of the certificate, as the API names it.
    #[getter]
    fn certificate_sha256(&self, py: Python<'_>) -> PyResult<String> {
        self.inner
            .certificate_sha256()
            .map(|sha| sha.to_string())
            .map_err(|err| crate::convert::to_pyerr(py, crate::convert::Failure::from(err)))
    }

    fn __repr__(&self) -> String {
        match self.inner.certificate_sha256() {
            Ok(sha) => format!("Identity(certificate_sha256={sha:?}, key=<redacted>)"),
            Err(_) => "Identity(certificate=<not PEM>, key=<redacted>)".to_owned(),
        }
    }
}
