//! The OpenAPI documents, generated from the code: each handler's
//! `#[utoipa::path]` names its route, parameters, body, answer and error
//! codes; core's wire types derive their schemas. The routers are built
//! from the same attributes (`utoipa_axum::routes!`), so a route and its
//! document cannot drift (`tests/api/openapi.rs` checks both ways).
//!
//! Error codes are listed per status: a status's description names every
//! code the route can answer with it, and its body is an [`ErrorBody`].

use std::collections::BTreeMap;

use heimdall_core::wire::ErrorBody;
use heimdall_core::ErrorCode;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi};

/// Codes any route can answer: the values guard judges every query string
/// and refuses a body on a route that takes none; a store can fail.
pub(crate) const EVERY_ROUTE: &[ErrorCode] = &[
    ErrorCode::BadRequest,
    ErrorCode::ValueNotAccepted,
    ErrorCode::PayloadTooLarge,
    ErrorCode::Internal,
    ErrorCode::Unavailable,
];

/// And every route behind a token: a missing or revoked token, a role or
/// policy that does not permit the action.
pub(crate) const SIGNED_IN: &[ErrorCode] = &[ErrorCode::Unauthenticated, ErrorCode::Forbidden];

/// And every route that reads a JSON body: a field of the wrong shape.
pub(crate) const WITH_BODY: &[ErrorCode] = &[ErrorCode::InvalidInput];

/// One response per status, naming each code, with the error body.
pub(crate) fn error_responses(sets: &[&[ErrorCode]]) -> BTreeMap<String, RefOr<Response>> {
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

/// `errors!(Name: Code, ...)`: a type for `responses(...)` naming the
/// codes a route answers besides those of every signed-in route;
/// `errors!(public Name: ...)` for a route that takes no token;
/// `errors!(body Name: ...)` / `errors!(public body Name: ...)` when the
/// route reads a JSON body.
macro_rules! errors {
    (@impl $name:ident [$($set:expr),*] $($code:ident),*) => {
        #[derive(Debug)]
        pub(crate) struct $name;
        impl utoipa::IntoResponses for $name {
            fn responses() -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::Response>> {
                $crate::http::openapi::error_responses(&[
                    $($set,)*
                    &[$(heimdall_core::ErrorCode::$code),*],
                ])
            }
        }
    };
    (public body $name:ident $(: $($code:ident),+)?) => {
        errors!(@impl $name [$crate::http::openapi::EVERY_ROUTE, $crate::http::openapi::WITH_BODY] $($($code),+)?);
    };
    (public $name:ident $(: $($code:ident),+)?) => {
        errors!(@impl $name [$crate::http::openapi::EVERY_ROUTE] $($($code),+)?);
    };
    (body $name:ident $(: $($code:ident),+)?) => {
        errors!(@impl $name [
            $crate::http::openapi::EVERY_ROUTE,
            $crate::http::openapi::SIGNED_IN,
            $crate::http::openapi::WITH_BODY
        ] $($($code),+)?);
    };
    ($name:ident $(: $($code:ident),+)?) => {
        errors!(@impl $name [$crate::http::openapi::EVERY_ROUTE, $crate::http::openapi::SIGNED_IN] $($($code),+)?);
    };
}
pub(crate) use errors;

/// The people-facing API: what `GET /v1/openapi.json` serves.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Heimdall API",
        description = "The people-facing API of Heimdall's control plane. It keeps names, versions, \
                       policies and the access trail; it never receives a secret value \
                       (`400 VALUE_NOT_ACCEPTED`). Every error is `{\"error\": {\"code\", \"message\"}}`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    modifiers(&BearerToken),
    security(("token" = [])),
    components(schemas(ErrorBody, ErrorCode)),
)]
pub(crate) struct PeopleApi;

/// The Agent channel (mTLS, an Agent's certificate): what
/// `GET /v1/agent/openapi.json` serves on that listener.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Heimdall Agent channel",
        description = "What an enrolled Agent calls over mutual TLS: claims, job reports, the sync \
                       of metadata and program writes. The client certificate is the Agent's \
                       identity (its URI SAN names the Agent's id); there is no token.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    components(schemas(ErrorBody, ErrorCode))
)]
pub(crate) struct AgentChannelApi;

/// The `token` security scheme: `Authorization: Bearer hmd_…`.
#[derive(Debug)]
struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("An API token (`heimdall token create`), `hmd_…`."))
                    .build(),
            ),
        );
    }
}

/// A document as served.
pub(crate) fn to_json(document: &utoipa::openapi::OpenApi) -> String {
    serde_json::to_string(document).unwrap_or_else(|e| {
        // A document of strings and maps always serializes; say so if not.
        tracing::error!(error = %e, "the OpenAPI document does not serialize");
        String::new()
    })
}

pub(crate) fn serve(document: &str) -> axum::response::Response {
    use axum::response::IntoResponse;
    ([(axum::http::header::CONTENT_TYPE, "application/json")], document.to_owned()).into_response()
}
