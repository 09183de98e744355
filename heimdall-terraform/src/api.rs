//! The client the provider block configures, shared by every resource, and
//! how an SDK error becomes a Terraform diagnostic.

use std::sync::{Arc, OnceLock};

use heimdall_sdk::{Client, Error, ErrorCode};
use tf_provider::schema::{Attribute, AttributeConstraint, AttributeType, Description};
use tf_provider::value::Value;
use tf_provider::{AttributePath, Diagnostic, Diagnostics};

/// Set once, by `configure`.
#[derive(Clone, Default)]
pub struct Api(Arc<OnceLock<Client>>);

impl Api {
    pub fn set(&self, client: Client) {
        // A second configure of the same process keeps the first client.
        let _ = self.0.set(client);
    }

    pub fn client(&self, diags: &mut Diagnostics) -> Option<&Client> {
        let client = self.0.get();
        if client.is_none() {
            error_on(diags, "the heimdall provider is not configured".into(), String::new(), "");
        }
        client
    }
}

/// The API's refusal as a diagnostic on `attribute`: its stable code in the
/// summary, its message (which never holds a value) in the detail.
pub fn refused(diags: &mut Diagnostics, attribute: &'static str, error: &Error) {
    let summary = match error.code() {
        Some(code) => format!("Heimdall refused: {code}"),
        None => "Heimdall could not be reached".to_owned(),
    };
    error_on(diags, summary, error.to_string(), attribute);
}

/// An error on `attribute`, built field by field: `Diagnostic::new` would
/// append this process's backtrace when `RUST_BACKTRACE` is set, and a
/// diagnostic is for the person running Terraform.
pub fn error_on(diags: &mut Diagnostics, summary: String, detail: String, attribute: &'static str) {
    let attribute = if attribute.is_empty() { AttributePath::root() } else { AttributePath::new(attribute) };
    diags.add_error(Diagnostic { summary: summary.into(), detail: detail.into(), attribute });
}

/// Whether an error says the object is gone (read: drop it from the state).
pub fn gone(error: &Error) -> bool {
    error.code() == Some(ErrorCode::NotFound)
}

/// The text a value holds, if it is known and set.
pub fn text(value: &Value<String>) -> Option<&str> {
    match value {
        Value::Value(text) => Some(text.as_str()),
        Value::Null | Value::Unknown => None,
    }
}

/// An API string as state: empty is null.
pub fn optional(text: String) -> Value<String> {
    if text.is_empty() {
        Value::Null
    } else {
        Value::Value(text)
    }
}

/// An attribute of a resource's schema.
pub fn attribute(description: &str, attr_type: AttributeType, constraint: AttributeConstraint) -> Attribute {
    Attribute { attr_type, description: Description::plain(description), constraint, ..Default::default() }
}

/// The answer, or the refusal as a diagnostic on `attribute`.
pub fn or_refused<T>(
    diags: &mut Diagnostics,
    attribute: &'static str,
    answer: Result<T, Error>,
) -> Option<T> {
    match answer {
        Ok(value) => Some(value),
        Err(error) => {
            refused(diags, attribute, &error);
            None
        }
    }
}

/// A deletion's answer: one already gone is destroyed too.
pub fn destroyed<T>(diags: &mut Diagnostics, answer: Result<T, Error>) -> Option<()> {
    match answer {
        Ok(_) => Some(()),
        Err(error) if gone(&error) => Some(()),
        Err(error) => {
            refused(diags, "id", &error);
            None
        }
    }
}
