//! What both servers' OpenAPI documents share: the error responses of a
//! route, listed per status with every code it can answer, each with the
//! one error body (`{"error": {"code", "message"}}`, component
//! `ErrorBody`); and serving a document.

use std::collections::BTreeMap;

use heimdall_core::ErrorCode;
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};

/// Codes any route can answer: a query string or body that does not parse
/// or names a value where none goes, a body too large, a store that fails.
pub const EVERY_ROUTE: &[ErrorCode] = &[
    ErrorCode::BadRequest,
    ErrorCode::ValueNotAccepted,
    ErrorCode::PayloadTooLarge,
    ErrorCode::Internal,
    ErrorCode::Unavailable,
];

/// And every route behind a credential (a token, a certificate): a missing
/// or revoked one, a role or policy that does not permit the action.
pub const SIGNED_IN: &[ErrorCode] = &[ErrorCode::Unauthenticated, ErrorCode::Forbidden];

/// And every route that reads a JSON body: a field of the wrong shape.
pub const WITH_BODY: &[ErrorCode] = &[ErrorCode::InvalidInput];

/// One response per status, naming each code, with the error body.
pub fn error_responses(sets: &[&[ErrorCode]]) -> BTreeMap<String, RefOr<Response>> {
    let mut by_status: BTreeMap<u16, Vec<&'static str>> = BTreeMap::new();
    for code in sets.iter().flat_map(|set| set.iter()) {
        let codes = by_status.entry(code.http_status()).or_default();
        if !codes.contains(&code.as_str()) {
            codes.push(code.as_str());
        }
    }
    by_status
        .into_iter()
        .map(|(status, codes)| {
            let description = codes.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
            let response = ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build(),
                )
                .build();
            (status.to_string(), RefOr::T(response))
        })
        .collect()
}

/// `openapi_errors!(Name: Code, ...)`: a type for `responses(...)` naming the
/// codes a route answers besides those of every signed-in route;
/// `openapi_errors!(public Name: ...)` for a route that takes no token;
/// `openapi_errors!(body Name: ...)` / `openapi_errors!(public body Name: ...)` when the
/// route reads a JSON body.
#[macro_export]
macro_rules! openapi_errors {
    (@impl $name:ident [$($set:expr),*] $($code:ident),*) => {
        #[derive(Debug)]
        pub(crate) struct $name;
        impl utoipa::IntoResponses for $name {
            fn responses() -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::Response>> {
                $crate::openapi::error_responses(&[
                    $($set,)*
                    &[$(heimdall_core::ErrorCode::$code),*],
                ])
            }
        }
    };
    (public body $name:ident $(: $($code:ident),+)?) => {
        $crate::openapi_errors!(@impl $name [$crate::openapi::EVERY_ROUTE, $crate::openapi::WITH_BODY] $($($code),+)?);
    };
    (public $name:ident $(: $($code:ident),+)?) => {
        $crate::openapi_errors!(@impl $name [$crate::openapi::EVERY_ROUTE] $($($code),+)?);
    };
    (body $name:ident $(: $($code:ident),+)?) => {
        $crate::openapi_errors!(@impl $name [
            $crate::openapi::EVERY_ROUTE,
            $crate::openapi::SIGNED_IN,
            $crate::openapi::WITH_BODY
        ] $($($code),+)?);
    };
    ($name:ident $(: $($code:ident),+)?) => {
        $crate::openapi_errors!(@impl $name [$crate::openapi::EVERY_ROUTE, $crate::openapi::SIGNED_IN] $($($code),+)?);
    };
}

/// A document as served.
pub fn to_json(document: &utoipa::openapi::OpenApi) -> String {
    serde_json::to_string(document).unwrap_or_else(|e| {
        // A document of strings and maps always serializes; say so if not.
        tracing::error!(error = %e, "the OpenAPI document does not serialize");
        String::new()
    })
}

pub fn serve(document: &str) -> axum::response::Response {
    use axum::response::IntoResponse;
    ([(axum::http::header::CONTENT_TYPE, "application/json")], document.to_owned()).into_response()
}
