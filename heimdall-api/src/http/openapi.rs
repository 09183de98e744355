//! The OpenAPI documents, generated from the code: each handler's
//! `#[utoipa::path]` names its route, parameters, body, answer and error
//! codes; core's wire types derive their schemas. The routers are built
//! from the same attributes (`utoipa_axum::routes!`), so a route and its
//! document cannot drift (`tests/api/openapi.rs` checks both ways).
//!
//! Error codes are listed per status (`heimdall_tls::openapi_errors!`).

pub(crate) use heimdall_tls::openapi::{serve, to_json};
pub(crate) use heimdall_tls::openapi_errors as errors;
use heimdall_wire::ErrorBody;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

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
    // Query parameters name their schemas without adding them: `JobOrder`.
    components(schemas(ErrorBody, heimdall_wire::schemas::ErrorCode, heimdall_wire::schemas::JobOrder)),
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
    components(schemas(ErrorBody, heimdall_wire::schemas::ErrorCode))
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
