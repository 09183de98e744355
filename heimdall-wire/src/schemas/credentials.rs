//! The OpenAPI schemas of `heimdall_core::credentials`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// Temporary credentials for one job, from OIDC federation. Never stored,
/// logged or shown: `Debug` redacts the secret parts.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum JobCredentials {
    /// AWS STS `AssumeRoleWithWebIdentity`'s answer.
    Aws {
        access_key_id: String,
        secret_access_key: String,
        session_token: String,
        #[serde(with = "time::serde::rfc3339")]
        expires_at: time::OffsetDateTime,
    },
    /// The job's identity token itself, for a provider that trades it
    /// where Terraform runs (GCP, Azure) or takes it as is (Kubernetes).
    IdentityToken {
        token: String,
        #[serde(with = "time::serde::rfc3339")]
        expires_at: time::OffsetDateTime,
    },
}
