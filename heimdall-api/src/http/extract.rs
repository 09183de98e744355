//! Extractors: the authenticated caller, and JSON bodies and queries whose
//! errors never echo what was sent.

use axum::body::Bytes;
use axum::extract::{FromRef, FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use heimdall_core::domain::{Member, Organization};
use heimdall_core::token::{looks_like_token, TokenHash};
use heimdall_core::{ApiError, ErrorCode};
use serde::de::DeserializeOwned;

use super::{AppState, HttpError};

/// The member a valid bearer token belongs to, and their organization.
#[derive(Debug, Clone)]
pub struct Caller {
    pub member: Member,
    pub org: Organization,
}

impl<S> FromRequestParts<S> for Caller
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let state = AppState::from_ref(state);
        let unauthenticated =
            || HttpError(ApiError::new(ErrorCode::Unauthenticated, "missing, unknown or revoked API token"));
        let header = parts.headers.get(header::AUTHORIZATION).ok_or_else(unauthenticated)?;
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| looks_like_token(t))
            .ok_or_else(unauthenticated)?;
        let (member, org) =
            state.store.authenticate(&TokenHash::of(token)).await?.ok_or_else(unauthenticated)?;
        Ok(Caller { member, org })
    }
}

/// A JSON request body. Unknown fields are refused by the wire types;
/// errors name the field and the expectation, never the value sent.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = HttpError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(ErrorCode::PayloadTooLarge, "request body is too large")
            } else {
                ApiError::new(ErrorCode::BadRequest, "could not read the request body")
            }
        })?;
        Ok(JsonBody(decode_json(&bytes)?))
    }
}

/// Query-string parameters, with the same no-echo errors.
#[derive(Debug)]
pub struct QueryParams<T>(pub T);

impl<S, T> FromRequestParts<S> for QueryParams<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        serde_urlencoded::from_str(query).map(QueryParams).map_err(|e| {
            HttpError(ApiError::new(
                ErrorCode::BadRequest,
                format!("invalid query string: {}", describe_serde_error(&e.to_string())),
            ))
        })
    }
}

pub(crate) fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let message = match inner.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                format!("request body is not valid JSON (line {}, column {})", inner.line(), inner.column())
            }
            _ => {
                let what = describe_serde_error(&inner.to_string());
                if path == "." {
                    what
                } else {
                    format!("`{path}`: {what}")
                }
            }
        };
        ApiError::new(ErrorCode::BadRequest, message)
    })
}

/// Keeps the part of a serde message that names what was expected and drops
/// the part that quotes the input (`invalid type: string "…"`).
pub(crate) fn describe_serde_error(message: &str) -> String {
    let message = message.split(" at line ").next().unwrap_or(message);
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let field = rest.split('`').next().unwrap_or_default();
        return format!("unknown field `{field}`");
    }
    if message.starts_with("missing field `") {
        return message.split(", expected").next().unwrap_or(message).to_owned();
    }
    if let Some((_, expected)) = message.split_once(", expected ") {
        return format!("invalid value, expected {expected}");
    }
    if message.starts_with("invalid length") || message.starts_with("duplicate field") {
        return message.split(", expected").next().unwrap_or(message).to_owned();
    }
    "invalid value".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use heimdall_core::wire::AddMember;

    #[test]
    fn body_errors_do_not_echo_values() {
        let marker = "SECRET-MARKER-42";
        let cases = [
            format!(r#"{{"email":"a@b.co","role":"{marker}"}}"#),
            format!(r#"{{"email":"a@b.co","role":"member","x":"{marker}"}}"#),
            format!(r#"{{"email":{{"k":"{marker}"}},"role":"member"}}"#),
            format!(r#"{{"email":["{marker}"],"role":"member"}}"#),
            format!(r#"{{"email":"{marker}"#),
            format!(r#"["{marker}"]"#),
            format!(r#""{marker}""#),
        ];
        for body in cases {
            let err = decode_json::<AddMember>(body.as_bytes()).unwrap_err();
            assert_eq!(err.code, ErrorCode::BadRequest);
            assert!(!err.message.contains(marker), "{body} -> {}", err.message);
        }
        let err = decode_json::<AddMember>(br#"{"email":"a@b.co","role":"root"}"#).unwrap_err();
        assert!(err.message.contains("`role`") && err.message.contains("expected"), "{}", err.message);
        assert!(!err.message.contains("root"));
        // An unknown key is named: it is the caller's field name, not a value.
        let err = decode_json::<AddMember>(br#"{"email":"a@b.co","role":"member","colour":1}"#).unwrap_err();
        assert!(err.message.contains("unknown field `colour`"), "{}", err.message);
    }
}
