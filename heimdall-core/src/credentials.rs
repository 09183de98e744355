//! A static cloud credential, read from the Agent's own store for a job,
//! turned into what each provider's Terraform reads. The value goes into
//! files in the job's directory (mode 0600, removed with it); Terraform's
//! environment gets only their paths and ids that are not secret, and
//! loses the Agent's own credentials so that the account's are the ones
//! used. Nothing secret is ever in a child process's environment.
//!
//! The secret's value, per provider:
//!
//! | provider | value | Terraform gets |
//! |---|---|---|
//! | `aws` | `{"access_key_id", "secret_access_key", "session_token"?}` | a shared credentials file, `AWS_SHARED_CREDENTIALS_FILE`, `AWS_PROFILE=heimdall` |
//! | `gcp` | a service-account key (JSON, as Google gives it) | `GOOGLE_APPLICATION_CREDENTIALS` |
//! | `azure` | `{"client_id", "client_secret", "tenant_id", "subscription_id", "storage_access_key"?}` | `ARM_CLIENT_ID`, `ARM_TENANT_ID`, `ARM_SUBSCRIPTION_ID`, `ARM_CLIENT_SECRET_FILE_PATH`; the storage key in a `-backend-config` file |
//! | `kubernetes`, `helm` | a kubeconfig | `KUBE_CONFIG_PATH` |
//! | `cloudflare` | `{"api_token"}` | a `provider "cloudflare"` block reading a sensitive variable from a `.auto.tfvars.json` file |

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::error::{ApiError, ErrorCode};
use crate::infra::{AccountAuth, Provider};
use crate::Redacted;

/// Temporary credentials for one job, from OIDC federation. Never stored,
/// logged or shown: `Debug` redacts the secret parts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum JobCredentials {
    /// AWS STS `AssumeRoleWithWebIdentity`'s answer.
    Aws {
        access_key_id: String,
        secret_access_key: Redacted<String>,
        session_token: Redacted<String>,
        #[serde(with = "time::serde::rfc3339")]
        expires_at: time::OffsetDateTime,
    },
    /// The job's identity token itself, for a provider that trades it
    /// where Terraform runs (GCP, Azure) or takes it as is (Kubernetes).
    IdentityToken {
        token: Redacted<String>,
        #[serde(with = "time::serde::rfc3339")]
        expires_at: time::OffsetDateTime,
    },
}

/// The profile the AWS credentials file defines.
pub const AWS_PROFILE: &str = "heimdall";

/// Bytes written to a file: secret, so `Debug` shows none of them.
pub type SecretBytes = Redacted<Zeroizing<Vec<u8>>>;

/// An environment variable's value: plain text (an id, a profile name) or
/// the absolute path of one of [`Credentials::files`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvValue {
    Text(String),
    File(&'static str),
}

/// What a job's Terraform gets from a static credential.
#[derive(Debug)]
pub struct Credentials {
    /// Files to write, by path relative to the job's directory, mode 0600
    /// (in `.heimdall-credentials/`, but for a `.auto.tfvars.json` file,
    /// which Terraform reads only beside the root module).
    pub files: Vec<(&'static str, SecretBytes)>,
    /// Variables to set.
    pub env: Vec<(&'static str, EnvValue)>,
    /// Variables of the Agent's environment that would override the
    /// account's credentials: removed from Terraform's.
    pub unset: &'static [&'static str],
    /// Configuration to add to the root module (a file of its own), for
    /// providers that read a credential only from their configuration.
    pub root_config: Option<&'static str>,
    /// One of `files` to give `terraform init` as `-backend-config`: a
    /// credential the state backend takes only from its configuration.
    pub backend_config: Option<&'static str>,
}

const AWS_UNSET: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
];
const GCP_UNSET: &[&str] =
    &["GOOGLE_CREDENTIALS", "GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS"];
const AZURE_UNSET: &[&str] = &[
    "ARM_CLIENT_SECRET",
    "ARM_CLIENT_CERTIFICATE_PATH",
    "ARM_CLIENT_CERTIFICATE_PASSWORD",
    "ARM_USE_MSI",
    "ARM_USE_OIDC",
    "ARM_OIDC_TOKEN",
    "ARM_OIDC_TOKEN_FILE_PATH",
    "ARM_OIDC_REQUEST_TOKEN",
    "ARM_OIDC_REQUEST_URL",
    "ARM_CLIENT_SECRET_FILE_PATH",
    "ARM_ACCESS_KEY",
];
const KUBE_UNSET: &[&str] = &["KUBECONFIG", "KUBE_CONFIG_PATHS", "KUBE_TOKEN"];
const CLOUDFLARE_UNSET: &[&str] = &["CLOUDFLARE_API_TOKEN", "CLOUDFLARE_API_KEY", "CLOUDFLARE_EMAIL"];

/// The Cloudflare provider takes its token only from its configuration or
/// the environment: a root-module block reads it from a variable instead.
const CLOUDFLARE_ROOT: &str = "terraform {\n  required_providers {\n    cloudflare = {\n      source = \"cloudflare/cloudflare\"\n    }\n  }\n}\n\nvariable \"heimdall_cloudflare_api_token\" {\n  type      = string\n  sensitive = true\n}\n\nprovider \"cloudflare\" {\n  api_token = var.heimdall_cloudflare_api_token\n}\n";

#[derive(Deserialize)]
struct AwsKey {
    access_key_id: Redacted<String>,
    secret_access_key: Redacted<String>,
    #[serde(default)]
    session_token: Option<Redacted<String>>,
}

#[derive(Deserialize)]
struct GcpKey {
    #[serde(rename = "type")]
    _kind: Redacted<String>,
}

#[derive(Deserialize)]
struct AzureSecret {
    client_id: Redacted<String>,
    client_secret: Redacted<String>,
    tenant_id: Redacted<String>,
    subscription_id: Redacted<String>,
    /// The state storage account's key, for an azurerm backend reached by
    /// key instead of through Entra ID.
    #[serde(default)]
    storage_access_key: Option<Redacted<String>>,
}

/// The azurerm backend's settings file when the value carries the storage
/// account's key (read by `init -backend-config`, never the environment).
const AZURE_BACKEND: &str = ".heimdall-credentials/azurerm-backend.tfbackend";

#[derive(Deserialize)]
struct CloudflareToken {
    api_token: Redacted<String>,
}

/// Turns the secret `name`'s value into what `provider`'s Terraform reads.
/// A value of the wrong shape is `INVALID_INPUT`, naming what it should
/// be, never quoting the value. Every copy of it is zeroized on drop.
pub fn for_provider(provider: Provider, name: &str, value: &[u8]) -> Result<Credentials, ApiError> {
    let bad = |what: &str| {
        ApiError::new(
            ErrorCode::InvalidInput,
            format!("the value of secret {name} is not {what} (see docs/infrastructure.md, \"Cloud credentials\")"),
        )
    };
    let secret = |bytes: &[u8]| Redacted::new(Zeroizing::new(bytes.to_vec()));
    match provider {
        Provider::Aws => {
            let shape = "{\"access_key_id\", \"secret_access_key\", \"session_token\"?}, each on one line";
            let key: AwsKey = serde_json::from_slice(value).map_err(|_| bad(shape))?;
            let fields = [Some(&key.access_key_id), Some(&key.secret_access_key), key.session_token.as_ref()];
            if fields.iter().flatten().any(|f| !one_line(f)) {
                return Err(bad(shape));
            }
            Ok(aws(key.access_key_id.expose(), &key.secret_access_key, key.session_token.as_ref()))
        }
        Provider::Gcp => {
            let _: GcpKey = serde_json::from_slice(value)
                .map_err(|_| bad("a service-account key (JSON with a \"type\")"))?;
            Ok(Credentials {
                files: vec![(".heimdall-credentials/gcp-credentials.json", secret(value))],
                env: vec![(
                    "GOOGLE_APPLICATION_CREDENTIALS",
                    EnvValue::File(".heimdall-credentials/gcp-credentials.json"),
                )],
                unset: GCP_UNSET,
                root_config: None,
                backend_config: None,
            })
        }
        Provider::Azure => {
            let shape =
                "{\"client_id\", \"client_secret\", \"tenant_id\", \"subscription_id\", \"storage_access_key\"?}";
            let found: AzureSecret = serde_json::from_slice(value).map_err(|_| bad(shape))?;
            let text = |f: &Redacted<String>| EnvValue::Text(f.expose().clone());
            let mut files = vec![(
                ".heimdall-credentials/azure-client-secret",
                secret(found.client_secret.expose().as_bytes()),
            )];
            let mut backend_config = None;
            if let Some(key) = &found.storage_access_key {
                // A storage key is base64: nothing in it can leave the HCL string.
                let base64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=');
                if key.expose().is_empty() || !key.expose().chars().all(base64) {
                    return Err(bad(&format!(
                        "{shape} with storage_access_key a storage account key (base64)"
                    )));
                }
                let line = Zeroizing::new(format!("access_key = \"{}\"\n", key.expose()));
                files.push((AZURE_BACKEND, secret(line.as_bytes())));
                backend_config = Some(AZURE_BACKEND);
            }
            Ok(Credentials {
                files,
                env: vec![
                    ("ARM_CLIENT_ID", text(&found.client_id)),
                    ("ARM_TENANT_ID", text(&found.tenant_id)),
                    ("ARM_SUBSCRIPTION_ID", text(&found.subscription_id)),
                    (
                        "ARM_CLIENT_SECRET_FILE_PATH",
                        EnvValue::File(".heimdall-credentials/azure-client-secret"),
                    ),
                ],
                unset: AZURE_UNSET,
                root_config: None,
                backend_config,
            })
        }
        Provider::Kubernetes | Provider::Helm => {
            if value.is_empty() || std::str::from_utf8(value).is_err() {
                return Err(bad("a kubeconfig (UTF-8 text)"));
            }
            Ok(Credentials {
                files: vec![(".heimdall-credentials/kubeconfig", secret(value))],
                env: vec![("KUBE_CONFIG_PATH", EnvValue::File(".heimdall-credentials/kubeconfig"))],
                unset: KUBE_UNSET,
                root_config: None,
                backend_config: None,
            })
        }
        Provider::Cloudflare => {
            let found: CloudflareToken = serde_json::from_slice(value).map_err(|_| bad("{\"api_token\"}"))?;
            let vars = Zeroizing::new(
                serde_json::json!({ "heimdall_cloudflare_api_token": found.api_token.expose() }).to_string(),
            );
            Ok(Credentials {
                // In the root module's directory: Terraform reads *.auto.tfvars.json there.
                files: vec![("heimdall-credentials.auto.tfvars.json", secret(vars.as_bytes()))],
                env: Vec::new(),
                unset: CLOUDFLARE_UNSET,
                root_config: Some(CLOUDFLARE_ROOT),
                backend_config: None,
            })
        }
    }
}

/// AWS keys (static, or temporary ones from STS) as a shared credentials
/// file with one profile. The caller checked each is one line.
pub fn aws(
    access_key_id: &str,
    secret_access_key: &Redacted<String>,
    session_token: Option<&Redacted<String>>,
) -> Credentials {
    let mut text = Zeroizing::new(format!(
        "[{AWS_PROFILE}]\naws_access_key_id = {access_key_id}\naws_secret_access_key = {}\n",
        secret_access_key.expose()
    ));
    if let Some(token) = session_token {
        text.push_str(&format!("aws_session_token = {}\n", token.expose()));
    }
    Credentials {
        files: vec![(
            ".heimdall-credentials/aws-credentials",
            Redacted::new(Zeroizing::new(text.as_bytes().to_vec())),
        )],
        env: vec![
            ("AWS_SHARED_CREDENTIALS_FILE", EnvValue::File(".heimdall-credentials/aws-credentials")),
            ("AWS_PROFILE", EnvValue::Text(AWS_PROFILE.into())),
        ],
        unset: AWS_UNSET,
        root_config: None,
        backend_config: None,
    }
}

/// Google's token exchange, which an `external_account` file names.
pub const GCP_TOKEN_URL: &str = "https://sts.googleapis.com/v1/token";

/// Where the job's files are, for files that name other files (Google's
/// `external_account` reads its token from a path), and Google's STS.
#[derive(Clone, Copy, Debug)]
pub struct JobPlace<'a> {
    /// The job's directory, absolute.
    pub dir: &'a str,
    /// [`GCP_TOKEN_URL`] unless the Agent's operator names another.
    pub gcp_token_url: &'a str,
}

const TOKEN_FILE: &str = ".heimdall-credentials/oidc-token";
const GCP_EXTERNAL_ACCOUNT: &str = ".heimdall-credentials/gcp-external-account.json";
const KUBECONFIG: &str = ".heimdall-credentials/kubeconfig";

/// What a job of an `oidc` account runs with: what the API obtained. AWS
/// keys become a credentials file; the identity token itself goes where
/// each provider reads a federated token: GCP an `external_account` file
/// reading it from a file, Azure `ARM_USE_OIDC` with
/// `ARM_OIDC_TOKEN_FILE_PATH` (a file, never the token in the
/// environment), Kubernetes and Helm a kubeconfig with it as the bearer
/// token. Every file is 0600 in the job's directory.
pub fn federated(
    credentials: &crate::credentials::JobCredentials,
    provider: Provider,
    auth: &AccountAuth,
    place: JobPlace<'_>,
) -> Result<Credentials, ApiError> {
    let malformed = |what: &str| {
        ApiError::new(ErrorCode::InvalidInput, format!("the federated credentials are malformed: {what}"))
    };
    let token = match credentials {
        crate::credentials::JobCredentials::Aws {
            access_key_id, secret_access_key, session_token, ..
        } => {
            let lines = [secret_access_key, session_token].iter().all(|f| one_line(f));
            if provider != Provider::Aws
                || access_key_id.is_empty()
                || access_key_id.contains(['\n', '\r'])
                || !lines
            {
                return Err(malformed("temporary AWS keys"));
            }
            return Ok(aws(access_key_id, secret_access_key, Some(session_token)));
        }
        crate::credentials::JobCredentials::IdentityToken { token, .. } => token,
    };
    let AccountAuth::Oidc(target) = auth else {
        return Err(malformed("an identity token for a static account"));
    };
    // A JWT is three base64url parts: nothing that could break a file's syntax.
    let jwt_ok = token.expose().split('.').count() == 3
        && token.expose().chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !jwt_ok {
        return Err(malformed("not a JWT"));
    }
    let bytes = |text: &str| Redacted::new(Zeroizing::new(text.as_bytes().to_vec()));
    let missing = |field: &str| malformed(&format!("the account has no {field}"));
    match provider {
        Provider::Gcp => {
            let pool = target
                .workload_identity_provider
                .as_deref()
                .ok_or_else(|| missing("workload_identity_provider"))?;
            let mut file = serde_json::json!({
                "type": "external_account",
                "audience": format!("//iam.googleapis.com/{pool}"),
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": place.gcp_token_url,
                "credential_source": { "file": format!("{}/{TOKEN_FILE}", place.dir) },
            });
            if let Some(account) = &target.service_account {
                file["service_account_impersonation_url"] = format!(
                    "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/{account}:generateAccessToken"
                )
                .into();
            }
            Ok(Credentials {
                files: vec![
                    (TOKEN_FILE, bytes(token.expose())),
                    (GCP_EXTERNAL_ACCOUNT, bytes(&file.to_string())),
                ],
                env: vec![("GOOGLE_APPLICATION_CREDENTIALS", EnvValue::File(GCP_EXTERNAL_ACCOUNT))],
                unset: GCP_UNSET,
                root_config: None,
                backend_config: None,
            })
        }
        Provider::Azure => {
            let text = |field: &Option<String>, name: &str| {
                field.clone().map(EnvValue::Text).ok_or_else(|| missing(name))
            };
            Ok(Credentials {
                files: vec![(TOKEN_FILE, bytes(token.expose()))],
                env: vec![
                    ("ARM_USE_OIDC", EnvValue::Text("true".into())),
                    ("ARM_OIDC_TOKEN_FILE_PATH", EnvValue::File(TOKEN_FILE)),
                    ("ARM_CLIENT_ID", text(&target.client_id, "client_id")?),
                    ("ARM_TENANT_ID", text(&target.tenant_id, "tenant_id")?),
                    ("ARM_SUBSCRIPTION_ID", text(&target.subscription_id, "subscription_id")?),
                ],
                unset: AZURE_UNSET,
                root_config: None,
                backend_config: None,
            })
        }
        Provider::Kubernetes | Provider::Helm => {
            let server = target.cluster_url.as_deref().ok_or_else(|| missing("cluster_url"))?;
            let mut cluster = serde_json::json!({ "server": server });
            if let Some(ca) = &target.cluster_ca {
                use base64::Engine as _;
                cluster["certificate-authority-data"] =
                    base64::engine::general_purpose::STANDARD.encode(ca.as_bytes()).into();
            }
            // JSON is YAML: a kubeconfig without a YAML writer.
            let config = Zeroizing::new(
                serde_json::json!({
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{ "name": "heimdall", "cluster": cluster }],
                    "users": [{ "name": "heimdall", "user": { "token": token.expose() } }],
                    "contexts": [{ "name": "heimdall", "context": { "cluster": "heimdall", "user": "heimdall" } }],
                    "current-context": "heimdall",
                })
                .to_string(),
            );
            Ok(Credentials {
                files: vec![(KUBECONFIG, bytes(&config))],
                env: vec![("KUBE_CONFIG_PATH", EnvValue::File(KUBECONFIG))],
                unset: KUBE_UNSET,
                root_config: None,
                backend_config: None,
            })
        }
        Provider::Aws | Provider::Cloudflare => {
            Err(malformed(&format!("an identity token for a {provider} account")))
        }
    }
}

/// Non-empty and without line breaks (it goes into an INI file).
fn one_line(field: &Redacted<String>) -> bool {
    let text = field.expose();
    !text.is_empty() && !text.contains(['\n', '\r'])
}

#[cfg(test)]
mod tests;
