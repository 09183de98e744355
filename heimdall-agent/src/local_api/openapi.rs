//! The Agent's local API document (`GET /v1/openapi.json` on the local
//! listener, `heimdall-agent openapi`), generated from the handlers'
//! `#[utoipa::path]` attributes and core's wire types; the router is built
//! from the same attributes (`local_api::router`).

use heimdall_tls::openapi_errors as errors;
use heimdall_wire::ErrorBody;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Heimdall Agent local API",
        description = "Where secret values are written and read, inside the customer's network. \
                       A person calls with the client certificate `heimdall login` issued; a program \
                       with a program token (`Authorization: Bearer …`). Every read is recorded \
                       in the access trail before it is served.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    modifiers(&Credentials),
    security(("client_certificate" = []), ("program_token" = [])),
    components(schemas(ErrorBody, heimdall_wire::schemas::ErrorCode)),
)]
pub(crate) struct AgentLocalApi;

#[derive(Debug)]
struct Credentials;

impl Modify for Credentials {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "client_certificate",
            SecurityScheme::MutualTls {
                description: Some("A person's client certificate, issued by the installation CA.".into()),
                deprecated: None,
                extensions: None,
            },
        );
        components.add_security_scheme(
            "program_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("A program token (`heimdall-agent token create`)."))
                    .build(),
            ),
        );
    }
}

/// The document, as served.
pub fn document() -> utoipa::openapi::OpenApi {
    crate::local_api::routes().split_for_parts().1
}

errors!(public HealthErrors);
errors!(ReadErrors: NotFound, InvalidInput, VersionDeactivated, VersionSuperseded, VersionNotHeld, PolicyStale, AgentRevoked, AuditUnavailable, TooManyRequests);
errors!(body WriteErrors: NotFound, AlreadyExists, Conflict, GrantInvalid, VersionDeactivated, PolicyStale, AgentRevoked);
errors!(public StatusErrors: PolicyStale, AgentRevoked);
errors!(body TransferErrors: GrantInvalid, VersionNotHeld, VersionDeactivated, VersionSuperseded, PolicyStale, AgentRevoked, AuditUnavailable);
errors!(DeleteErrors: NotFound, ValueMayPersist, Conflict, PolicyStale, AgentRevoked);

#[cfg(test)]
mod tests {
    /// Every operation of the local API's document says what it does in
    /// product words: a summary and a description, neither naming code.
    #[test]
    fn every_operation_has_a_summary_and_a_description_in_product_words() {
        let document = serde_json::to_value(super::document()).expect("serializes");
        let mut problems = Vec::new();
        for (path, item) in document["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("operations") {
                for key in ["summary", "description"] {
                    let text = operation[key].as_str().unwrap_or_default();
                    if text.trim().is_empty()
                        || ["::", "heimdall_", "Self", ".rs", "[`"].iter().any(|w| text.contains(w))
                    {
                        problems.push(format!("{method} {path}: {key} {text:?}"));
                    }
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
