//! Extractors: the authenticated caller, and JSON bodies and queries whose
//! errors never echo what was sent.

use axum::body::Bytes;
use axum::extract::{FromRef, FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use heimdall_core::domain::{Member, Organization};
use heimdall_core::token::{looks_like_token, TokenHash};
use heimdall_core::{ApiError, ErrorCode};
use heimdall_wire::body::{self, Body};

use super::{AppState, ErrorAnswer};

/// The member a valid bearer token belongs to, and their organization.
#[derive(Debug, Clone)]
pub struct Caller {
    pub member: Member,
    pub org: Organization,
    /// The member as a job or task she queues names her
    /// (`heimdall_core::on_behalf`).
    pub on_behalf: heimdall_core::on_behalf::OnBehalfOf,
}

impl<S> FromRequestParts<S> for Caller
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ErrorAnswer;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let state = AppState::from_ref(state);
        let unauthenticated = || {
            ErrorAnswer(ApiError::new(
                ErrorCode::Unauthenticated,
                "missing, unknown, expired or revoked API token",
            ))
        };
        let header = parts.headers.get(header::AUTHORIZATION).ok_or_else(unauthenticated)?;
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| looks_like_token(t))
            .ok_or_else(unauthenticated)?;
        let (member, org) = state
            .store
            .authenticate(&TokenHash::of(token), state.clock.now())
            .await?
            .ok_or_else(unauthenticated)?;
        let on_behalf =
            heimdall_core::on_behalf::OnBehalfOf { member_id: member.id, email: member.email.clone() };
        Ok(Caller { member, org, on_behalf })
    }
}

/// A JSON request body: parsed once, strictly, judged by its type's value
/// policy and decoded from the same tree (`heimdall_wire::body::decode`).
/// Errors name the field and the expectation, never the value sent.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: Body,
{
    type Rejection = ErrorAnswer;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(ErrorCode::PayloadTooLarge, "request body is too large")
            } else {
                ApiError::new(ErrorCode::BadRequest, "could not read the request body")
            }
        })?;
        Ok(JsonBody(body::decode(&bytes)?))
    }
}

/// For a POST that takes no body: any body is refused.
#[derive(Debug)]
pub struct NoBody;

impl<S: Send + Sync> FromRequest<S> for NoBody {
    type Rejection = ErrorAnswer;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|_| ApiError::new(ErrorCode::BadRequest, "could not read the request body"))?;
        if bytes.is_empty() {
            Ok(NoBody)
        } else {
            Err(ApiError::new(ErrorCode::BadRequest, "this route takes no request body").into())
        }
    }
}

/// Query-string parameters: the one strict decoder both servers use.
pub use heimdall_tls::server::QueryParams;

#[cfg(test)]
mod tests {
    use super::*;
    use heimdall_wire::AddMember;

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
        for text in cases {
            let err = body::decode::<AddMember>(text.as_bytes()).unwrap_err();
            assert_eq!(err.code, ErrorCode::BadRequest);
            assert!(!err.message.contains(marker), "{text} -> {}", err.message);
        }
        let err = body::decode::<AddMember>(br#"{"email":"a@b.co","role":"root"}"#).unwrap_err();
        assert!(err.message.contains("`role`") && err.message.contains("expected"), "{}", err.message);
        assert!(!err.message.contains("root"));
        // An unknown key is not repeated (it may be a value pasted in the
        // wrong place): the error says what the body takes instead.
        let err = body::decode::<AddMember>(br#"{"email":"a@b.co","role":"member","colour":1}"#).unwrap_err();
        assert!(err.message.contains("unknown field; expected `email` or `role`"), "{}", err.message);
        assert!(!err.message.contains("colour"), "{}", err.message);
    }
}
