//! The API as an OpenID Connect issuer for jobs: a short-lived identity
//! token per job of an `oidc` account, which a cloud trades for temporary
//! credentials (AWS STS `AssumeRoleWithWebIdentity`), so that no long-lived
//! key exists anywhere. What a token says is decided here; signing is the
//! API's (ES256, with a key of its own, separate from the CA's).
//!
//! A token's subject names the job's place by ids, which a rename cannot
//! move: `organization:<org>:system:<system>:environment:<env>:resource:<id>`.
//! A cloud's trust policy scopes a role to it, e.g. on AWS
//! `"token.actions.example:sub": "organization:<org>:system:<system>:environment:<prod>:*"`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use time::{Duration, OffsetDateTime};

use crate::ids::{CatalogId, JobId, OrgId, ResourceId};
use crate::infra::{AccountAuth, Job, JobOperation, OidcTarget, Provider};

/// How long a job's identity token is valid.
pub const TOKEN_TTL: Duration = Duration::minutes(5);

/// The signing algorithm of every token (ECDSA P-256, SHA-256).
pub const ALGORITHM: &str = "ES256";

/// Where the JWKS is published, under the issuer URL.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

/// The discovery document's path, under the issuer URL.
pub const DISCOVERY_PATH: &str = "/.well-known/openid-configuration";

/// The audience a provider's token exchange expects, unless the account
/// names another: AWS STS `sts.amazonaws.com`; GCP the workload identity
/// provider's own name (`https://iam.googleapis.com/projects/…/providers/…`,
/// which GCP accepts by default); Azure `api://AzureADTokenExchange`;
/// Kubernetes and Helm `heimdall`, which the cluster's authentication
/// configuration names.
pub fn audience(provider: Provider, target: &OidcTarget) -> String {
    if let Some(audience) = &target.audience {
        return audience.clone();
    }
    match provider {
        Provider::Aws => "sts.amazonaws.com".into(),
        Provider::Gcp => match &target.workload_identity_provider {
            Some(pool) => format!("https://iam.googleapis.com/{pool}"),
            None => "heimdall".into(),
        },
        Provider::Azure => "api://AzureADTokenExchange".into(),
        Provider::Kubernetes | Provider::Helm | Provider::Cloudflare => "heimdall".into(),
    }
}

/// The subject: the job's place, by ids.
pub fn subject(org: OrgId, system: CatalogId, environment: CatalogId, resource: ResourceId) -> String {
    format!("organization:{org}:system:{system}:environment:{environment}:resource:{resource}")
}

/// What a job's token says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobClaims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    /// Unique per token.
    pub jti: String,
    pub job_id: JobId,
    pub operation: JobOperation,
    pub attempt: i64,
    pub resource_id: ResourceId,
    pub org_id: OrgId,
    pub environment_id: CatalogId,
}

/// The claims for `job`'s current attempt, valid from `now` for [`TOKEN_TTL`].
pub fn job_claims(
    issuer: &str,
    job: &Job,
    system: CatalogId,
    environment: CatalogId,
    now: OffsetDateTime,
    jti: String,
) -> JobClaims {
    let at = now.unix_timestamp();
    JobClaims {
        iss: issuer.to_owned(),
        sub: subject(job.org_id, system, environment, job.resource_id),
        aud: match &job.request.account.auth {
            AccountAuth::Oidc(target) => audience(job.request.account.provider, target),
            AccountAuth::Static { .. } => audience(job.request.account.provider, &OidcTarget::default()),
        },
        iat: at,
        nbf: at,
        exp: (now + TOKEN_TTL).unix_timestamp(),
        jti,
        job_id: job.id,
        operation: job.operation,
        attempt: job.attempts,
        resource_id: job.resource_id,
        org_id: job.org_id,
        environment_id: environment,
    }
}

/// `base64url(header) "." base64url(claims)`: the bytes the key signs.
pub fn signing_input(kid: &str, claims: &JobClaims) -> String {
    let header = json!({ "alg": ALGORITHM, "typ": "JWT", "kid": kid });
    format!("{}.{}", encode(header.to_string().as_bytes()), encode(json!(claims).to_string().as_bytes()))
}

/// The compact token: the signing input and the signature (r ‖ s, 64 bytes).
pub fn compact(signing_input: &str, signature: &[u8]) -> String {
    format!("{signing_input}.{}", encode(signature))
}

/// A P-256 public key (uncompressed point, 65 bytes) as a JWK; `None` for
/// anything else.
pub fn jwk(kid: &str, public_key: &[u8]) -> Option<Value> {
    let (x, y) = match public_key {
        [0x04, point @ ..] if point.len() == 64 => point.split_at(32),
        _ => return None,
    };
    Some(json!({ "kty": "EC", "crv": "P-256", "use": "sig", "alg": ALGORITHM, "kid": kid,
                 "x": encode(x), "y": encode(y) }))
}

/// The discovery document for `issuer`.
pub fn discovery(issuer: &str) -> Value {
    json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}{JWKS_PATH}"),
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [ALGORITHM],
        "claims_supported": ["iss", "sub", "aud", "iat", "nbf", "exp", "jti", "job_id", "operation", "attempt",
                             "resource_id", "org_id", "environment_id"],
    })
}

fn encode(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn id<T: From<Uuid>>(n: u128) -> T {
        Uuid::from_u128(n).into()
    }

    #[test]
    fn the_subject_names_the_place_by_ids() {
        let sub = subject(id(1), id(2), id(3), id(4));
        assert_eq!(
            sub,
            "organization:00000000-0000-0000-0000-000000000001:system:00000000-0000-0000-0000-000000000002:\
             environment:00000000-0000-0000-0000-000000000003:resource:00000000-0000-0000-0000-000000000004"
        );
    }

    #[test]
    fn tokens_are_es256_jwts_with_a_kid_and_a_public_jwk() {
        let claims = JobClaims {
            iss: "https://api.example".into(),
            sub: "s".into(),
            aud: audience(Provider::Aws, &OidcTarget::default()),
            iat: 1,
            nbf: 1,
            exp: 301,
            jti: "j".into(),
            job_id: id(5),
            operation: JobOperation::Apply,
            attempt: 1,
            resource_id: id(4),
            org_id: id(1),
            environment_id: id(3),
        };
        let input = signing_input("k1", &claims);
        let (header, body) = input.split_once('.').unwrap();
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap();
        assert_eq!(header, json!({ "alg": "ES256", "typ": "JWT", "kid": "k1" }));
        let body: JobClaims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).unwrap()).unwrap();
        assert_eq!(body, claims);
        assert_eq!(compact(&input, &[7; 64]).matches('.').count(), 2);

        let mut point = vec![4u8];
        point.extend([1u8; 32]);
        point.extend([2u8; 32]);
        let key = jwk("k1", &point).unwrap();
        assert_eq!((key["crv"].as_str(), key["kid"].as_str()), (Some("P-256"), Some("k1")));
        assert_eq!(URL_SAFE_NO_PAD.decode(key["y"].as_str().unwrap()).unwrap(), [2u8; 32]);
        assert!(jwk("k1", &point[1..]).is_none());
        assert_eq!(discovery("https://api.example")["jwks_uri"], "https://api.example/.well-known/jwks.json");
    }
}
