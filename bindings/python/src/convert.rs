//! What crosses the boundary: the SDK's answers as Python objects, its
//! errors as `heimdall.HeimdallError`.

use heimdall_sdk::Error as SdkError;
use heimdall_wire::ValueAnswer;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::values::SecretValue;

/// What an operation answers, before it becomes a Python object.
#[derive(Debug)]
pub(crate) enum Reply {
    /// A wire type, as its JSON (plain `dict`s and `list`s in Python; the
    /// package's dataclasses are made from them).
    Json(serde_json::Value),
    /// A page of a list and the cursor of the next page: `(list, str | None)`.
    Page(serde_json::Value, Option<String>),
    /// One value from an Agent: a `SecretValue`, never a `str`.
    Value(ValueAnswer),
    /// Several values (`get_values`), in the order asked.
    Values(Vec<ValueAnswer>),
    /// `None`.
    Nothing,
}

/// The JSON of a wire type.
pub(crate) fn json<T: serde::Serialize>(value: &T) -> Result<Reply, Failure> {
    serde_json::to_value(value)
        .map(Reply::Json)
        .map_err(|err| Failure::local("decode", format!("cannot convert the answer: {err}")))
}

/// Why an operation failed: the SDK's error (the API's code, if it is one),
/// a local refusal, or a Python exception (Ctrl-C during a wait).
#[derive(Debug)]
pub(crate) enum Failure {
    Heimdall {
        kind: &'static str,
        code: Option<&'static str>,
        message: String,
        fields: Vec<(String, String)>,
    },
    Python(PyErr),
}

impl Failure {
    /// Not the API's: `kind` is `invalid`, `timeout`, `transport` or `decode`, and `code` is `None`.
    pub(crate) fn local(kind: &'static str, message: impl Into<String>) -> Self {
        Failure::Heimdall { kind, code: None, message: message.into(), fields: Vec::new() }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::local("invalid", message)
    }
}

impl From<SdkError> for Failure {
    fn from(err: SdkError) -> Self {
        match err {
            SdkError::Api(api) => Failure::Heimdall {
                kind: "api",
                code: Some(api.code.as_str()),
                message: api.message,
                fields: api.fields.unwrap_or_default().into_iter().map(|f| (f.path, f.rule)).collect(),
            },
            SdkError::Transport(message) => Failure::local("transport", message),
            SdkError::Decode(message) => Failure::local("decode", message),
            SdkError::Invalid(message) => Failure::local("invalid", message),
        }
    }
}

static HEIMDALL_ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `heimdall._errors.HeimdallError(kind, code, message, fields)`, raised.
pub(crate) fn to_pyerr(py: Python<'_>, failure: Failure) -> PyErr {
    let (kind, code, message, fields) = match failure {
        Failure::Python(err) => return err,
        Failure::Heimdall { kind, code, message, fields } => (kind, code, message, fields),
    };
    let made = HEIMDALL_ERROR
        .get_or_try_init(py, || {
            py.import("heimdall._errors").and_then(|m| m.getattr("HeimdallError")).map(Bound::unbind)
        })
        .and_then(|class| class.bind(py).call1((kind, code, message, fields)));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        Err(err) => err,
    }
}

/// The Python object for a reply, or the exception for a failure.
pub(crate) fn finish(py: Python<'_>, outcome: Result<Reply, Failure>) -> PyResult<Py<PyAny>> {
    let reply = outcome.map_err(|failure| to_pyerr(py, failure))?;
    let object = match reply {
        Reply::Json(value) => json_to_py(py, &value)?,
        Reply::Page(items, next) => {
            let items = json_to_py(py, &items)?;
            PyTuple::new(py, [items, next.into_bound_py_any(py)?])?.into_any()
        }
        Reply::Value(answer) => Bound::new(py, SecretValue::from(answer))?.into_any(),
        Reply::Values(answers) => {
            let list = PyList::empty(py);
            for answer in answers {
                list.append(Bound::new(py, SecretValue::from(answer))?)?;
            }
            list.into_any()
        }
        Reply::Nothing => py.None().into_bound(py),
    };
    Ok(object.unbind())
}

fn json_to_py<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value;
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_bound_py_any(py)?
            } else if let Some(u) = n.as_u64() {
                u.into_bound_py_any(py)?
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_bound_py_any(py)?
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, json_to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}
