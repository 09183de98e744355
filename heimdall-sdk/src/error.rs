//! The SDK's one error type.

use heimdall_core::{ApiError, ErrorCode};

/// What can go wrong talking to the Heimdall API.
///
/// No variant's message ever contains the client's token: it travels only
/// in the `Authorization` header, which is marked sensitive, and transport
/// messages are built from the method, the URL (without credentials or
/// query) and the underlying cause.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server's typed refusal, parsed from `{"error": {...}}`. A non-2xx
    /// answer without a parseable body gets a code derived from its status:
    /// 400 `BAD_REQUEST`, 401 `UNAUTHENTICATED`, 403 `FORBIDDEN`, 404
    /// `NOT_FOUND`, 409 `CONFLICT`, 413 `PAYLOAD_TOO_LARGE`, 422
    /// `INVALID_INPUT`, anything else `INTERNAL`.
    #[error("{0}")]
    Api(ApiError),
    /// The request never got an answer: connection refused, DNS, TLS, timeout.
    #[error("{0}")]
    Transport(String),
    /// The server answered 2xx with a body this SDK could not read.
    #[error("{0}")]
    Decode(String),
    /// The request could not be built: a bad base URL, a token that is not a
    /// valid header value, or a path segment that cannot name anything
    /// (empty, `.` or `..`). Nothing was sent.
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// A CA, fingerprint or client certificate the client cannot be built with.
    pub(crate) fn tls(e: heimdall_tls::TlsSetupError) -> Self {
        Error::Invalid(e.to_string())
    }

    /// The API's stable error code, for [`Error::Api`]; `None` otherwise.
    ///
    /// ```
    /// use heimdall_sdk::{ApiError, Error, ErrorCode};
    ///
    /// let err = Error::Api(ApiError::not_found("domain payments"));
    /// assert_eq!(err.code(), Some(ErrorCode::NotFound));
    /// assert_eq!(err.to_string(), "NOT_FOUND: domain payments not found");
    /// assert_eq!(Error::Transport("connection refused".into()).code(), None);
    /// ```
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Api(api) => Some(api.code),
            Error::Transport(_) | Error::Decode(_) | Error::Invalid(_) => None,
        }
    }

    /// The server's error, if this is one.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Error::Api(api) => Some(api),
            _ => None,
        }
    }
}

/// Describes a deserialization failure by where it happened and which rule
/// broke, dropping any quoted value the message may echo (a response body
/// can hold a token shown once).
pub(crate) fn describe_decode_error(err: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let inner = err.inner();
    let what = match inner.classify() {
        serde_json::error::Category::Io => "could not be read".to_owned(),
        serde_json::error::Category::Syntax => "is not valid JSON".to_owned(),
        serde_json::error::Category::Eof => "ends early".to_owned(),
        serde_json::error::Category::Data => {
            let message = inner.to_string();
            let rule = message.split_once(':').map_or(message.as_str(), |(head, _)| head);
            let expected = message.split_once(", expected ").map(|(_, tail)| tail);
            match expected {
                Some(expected) if rule != message => format!("has {rule}, expected {expected}"),
                _ => format!("has {rule}"),
            }
        }
    };
    let path = err.path().to_string();
    if path == "." {
        format!("body {what}")
    } else {
        format!("body {what} at `{path}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_err<T: serde::de::DeserializeOwned + std::fmt::Debug>(json: &str) -> String {
        let de = &mut serde_json::Deserializer::from_str(json);
        let err = serde_path_to_error::deserialize::<_, T>(de).unwrap_err();
        describe_decode_error(&err)
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Shown {
        token: u32,
        name: String,
    }

    #[test]
    fn decode_messages_never_echo_values() {
        let msg = decode_err::<Shown>(r#"{"token":"hmd_secretsecret","name":"x"}"#);
        assert!(!msg.contains("hmd_secretsecret"), "{msg}");
        assert!(msg.contains("`token`"), "{msg}");
        assert!(msg.contains("invalid type"), "{msg}");
        let msg = decode_err::<Shown>(r#"{"token":1}"#);
        assert!(msg.contains("missing field `name`"), "{msg}");
        let msg = decode_err::<Shown>("{");
        assert!(msg.contains("ends early"), "{msg}");
    }
}
