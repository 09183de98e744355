//! Cloud accounts: what a new one must say, per provider and backend, and
//! which one serves a Resource (the System's link for the Resource's
//! environment, else the Domain's, else the organization's).

use crate::error::ApiError;
use crate::ids::{CatalogId, CloudAccountId};
use crate::infra::{AccountAuth, AccountLink, LinkScope, OidcTarget, Provider, StateBackend};
use crate::names::{validate_name, validate_region, validate_text};
use crate::wire::CreateCloudAccount;

/// Checks a new account and settles its state backend (the provider's
/// own unless it names one). Everything refused is `INVALID_INPUT`, before
/// anything is stored.
pub fn check_new_account(body: &CreateCloudAccount) -> Result<StateBackend, ApiError> {
    validate_name("name", &body.name)?;
    validate_region(&body.region)?;
    let backend = body.state_backend.unwrap_or_else(|| StateBackend::default_for(body.provider));
    // S3 and GCS bucket names, which Azure container names also meet (but for '.').
    let bucket_ok = (3..=63).contains(&body.state_bucket.len())
        && body
            .state_bucket
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && !body.state_bucket.starts_with(['-', '.'])
        && !(backend == StateBackend::Azurerm && body.state_bucket.contains('.'));
    if !bucket_ok {
        return Err(ApiError::invalid_input(
            "state_bucket must be a bucket (or Azure container) name: 3-63 lowercase letters, digits, '-' or '.' (no '.' for azurerm)",
        ));
    }
    if let Some(endpoint) = &body.state_endpoint {
        check_url("state_endpoint", endpoint)?;
    }
    match (backend, &body.state_storage_account) {
        (StateBackend::Azurerm, Some(account)) => {
            let ok = (3..=24).contains(&account.len())
                && account.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
            if !ok {
                return Err(ApiError::invalid_input(
                    "state_storage_account must be an Azure storage account name: 3-24 lowercase letters and digits",
                ));
            }
        }
        (StateBackend::Azurerm, None) => {
            return Err(ApiError::invalid_input(
                "the azurerm state backend needs state_storage_account (the storage account holding state_bucket, the container)",
            ));
        }
        (_, Some(_)) => {
            return Err(ApiError::invalid_input(
                "state_storage_account is for the azurerm state backend only",
            ));
        }
        (_, None) => {}
    }
    match &body.auth {
        AccountAuth::Oidc(target) => check_oidc(body.provider, target)?,
        AccountAuth::Static { secret } => validate_name("auth.secret (a secret's name)", secret)?,
    }
    Ok(backend)
}

/// Each provider's federation needs its own fields, and only those.
pub fn check_oidc(provider: Provider, target: &OidcTarget) -> Result<(), ApiError> {
    let fields = target.fields();
    let (required, optional): (&[&str], &[&str]) = match provider {
        Provider::Aws => (&["role_arn"], &["audience"]),
        Provider::Gcp => (&["workload_identity_provider"], &["service_account", "audience"]),
        Provider::Azure => (&["client_id", "tenant_id", "subscription_id"], &["audience"]),
        Provider::Kubernetes | Provider::Helm => (&["cluster_url"], &["cluster_ca", "audience"]),
        Provider::Cloudflare => {
            return Err(ApiError::invalid_input(
                "Cloudflare has no OIDC federation: use --auth static with an API token secret",
            ))
        }
    };
    for (name, value) in fields {
        let known = required.contains(&name) || optional.contains(&name);
        match value {
            Some(_) if !known => {
                return Err(ApiError::invalid_input(format!(
                    "auth.{name} is not used by {provider} accounts"
                )))
            }
            Some(v) => {
                let max = if name == "cluster_ca" { 16 * 1024 } else { 300 };
                validate_text(&format!("auth.{name}"), v, max)?;
                if v.trim().is_empty() {
                    return Err(ApiError::invalid_input(format!("auth.{name} must not be empty")));
                }
                if name != "cluster_ca" && v.contains(char::is_whitespace) {
                    return Err(ApiError::invalid_input(format!("auth.{name} must not contain whitespace")));
                }
            }
            None if required.contains(&name) => {
                return Err(ApiError::invalid_input(format!("{provider} OIDC accounts need auth.{name}")))
            }
            None => {}
        }
    }
    // A job's token is handed to its Terraform: with another cloud's
    // audience it could be traded there instead (an AWS role's, say).
    if let Some(audience) = &target.audience {
        let elsewhere = match provider {
            Provider::Aws => {
                audience == "api://AzureADTokenExchange"
                    || audience.starts_with("https://iam.googleapis.com/")
            }
            Provider::Gcp => audience == "sts.amazonaws.com" || audience == "api://AzureADTokenExchange",
            Provider::Azure => {
                audience == "sts.amazonaws.com" || audience.starts_with("https://iam.googleapis.com/")
            }
            Provider::Kubernetes | Provider::Helm | Provider::Cloudflare => {
                audience == "sts.amazonaws.com"
                    || audience == "api://AzureADTokenExchange"
                    || audience.starts_with("https://iam.googleapis.com/")
            }
        };
        if elsewhere {
            return Err(ApiError::invalid_input(format!(
                "auth.audience {audience} is another cloud's: a {provider} job's token must not be one it would take"
            )));
        }
    }
    if let Some(pool) = &target.workload_identity_provider {
        let parts: Vec<&str> = pool.split('/').collect();
        let shape = parts.len() == 8
            && parts[0] == "projects"
            && parts[2] == "locations"
            && parts[4] == "workloadIdentityPools"
            && parts[6] == "providers"
            && parts.iter().all(|p| !p.is_empty());
        if !shape {
            return Err(ApiError::invalid_input(
                "auth.workload_identity_provider must be projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>",
            ));
        }
    }
    if let Some(url) = &target.cluster_url {
        check_url("auth.cluster_url", url)?;
    }
    Ok(())
}

fn check_url(field: &str, url: &str) -> Result<(), ApiError> {
    let ok = (url.starts_with("https://") || url.starts_with("http://"))
        && url.len() <= 300
        && !url.contains(|c: char| c.is_whitespace() || c == '"' || c == '\\');
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_input(format!("{field} must be an http(s) URL")))
    }
}

/// Resolves the account for a component in `system` (in `domain`) and
/// `environment`. `None` means `NO_CLOUD_ACCOUNT`.
pub fn resolve_account(
    links: &[AccountLink],
    system: CatalogId,
    domain: CatalogId,
    environment: CatalogId,
) -> Option<CloudAccountId> {
    let find = |scope: LinkScope, id: Option<CatalogId>| {
        links
            .iter()
            .find(|l| l.environment_id == environment && l.scope == scope && l.scope_id == id)
            .map(|l| l.account_id)
    };
    find(LinkScope::System, Some(system))
        .or_else(|| find(LinkScope::Domain, Some(domain)))
        .or_else(|| find(LinkScope::Organization, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::OffsetDateTime;
    use uuid::Uuid;

    fn id(n: u128) -> CatalogId {
        CatalogId::from_uuid(Uuid::from_u128(n))
    }
    fn acct(n: u128) -> CloudAccountId {
        CloudAccountId::from_uuid(Uuid::from_u128(n))
    }
    fn link(account: u128, scope: LinkScope, scope_id: Option<u128>, env: u128) -> AccountLink {
        AccountLink {
            account_id: acct(account),
            scope,
            scope_id: scope_id.map(id),
            environment_id: id(env),
            created_at: OffsetDateTime::UNIX_EPOCH,
            created_by: "o@example.com".into(),
        }
    }

    fn account(provider: Provider, auth: serde_json::Value) -> CreateCloudAccount {
        serde_json::from_value(serde_json::json!({ "name": "a", "provider": provider, "region": "eu-west-1",
            "state_bucket": "state", "auth": auth }))
        .unwrap()
    }

    #[test]
    fn each_provider_gets_its_own_backend_and_federation_fields() {
        let pool = "projects/1/locations/global/workloadIdentityPools/p/providers/h";
        let cases = [
            (
                Provider::Aws,
                serde_json::json!({ "kind": "oidc", "role_arn": "arn:aws:iam::1:role/x" }),
                StateBackend::S3,
            ),
            (
                Provider::Gcp,
                serde_json::json!({ "kind": "oidc", "workload_identity_provider": pool }),
                StateBackend::Gcs,
            ),
            (Provider::Cloudflare, serde_json::json!({ "kind": "static", "secret": "cf" }), StateBackend::S3),
            (
                Provider::Kubernetes,
                serde_json::json!({ "kind": "oidc", "cluster_url": "https://k8s:6443", "audience": "k8s" }),
                StateBackend::S3,
            ),
        ];
        for (provider, auth, backend) in cases {
            assert_eq!(check_new_account(&account(provider, auth)).unwrap(), backend, "{provider}");
        }
        let mut azure = account(
            Provider::Azure,
            serde_json::json!({ "kind": "oidc", "client_id": "c", "tenant_id": "t", "subscription_id": "s" }),
        );
        assert!(check_new_account(&azure).is_err(), "azurerm needs the storage account");
        azure.state_storage_account = Some("acmestate".into());
        assert_eq!(check_new_account(&azure).unwrap(), StateBackend::Azurerm);
        let refused = [
            (Provider::Aws, serde_json::json!({ "kind": "oidc" })),
            (Provider::Aws, serde_json::json!({ "kind": "oidc", "role_arn": "x", "client_id": "c" })),
            (Provider::Gcp, serde_json::json!({ "kind": "oidc", "workload_identity_provider": "pool-1" })),
            (Provider::Gcp, serde_json::json!({ "kind": "oidc", "role_arn": "arn:aws:iam::1:role/x" })),
            (Provider::Azure, serde_json::json!({ "kind": "oidc", "client_id": "c" })),
            (Provider::Kubernetes, serde_json::json!({ "kind": "oidc", "cluster_url": "k8s:6443" })),
            (Provider::Cloudflare, serde_json::json!({ "kind": "oidc", "audience": "x" })),
            (
                Provider::Kubernetes,
                serde_json::json!({ "kind": "oidc", "cluster_url": "https://k8s:6443", "audience": "sts.amazonaws.com" }),
            ),
            (
                Provider::Gcp,
                serde_json::json!({ "kind": "oidc", "audience": "sts.amazonaws.com",
                    "workload_identity_provider": "projects/1/locations/global/workloadIdentityPools/p/providers/q" }),
            ),
            (
                Provider::Aws,
                serde_json::json!({ "kind": "oidc", "role_arn": "arn:aws:iam::1:role/x",
                    "audience": "api://AzureADTokenExchange" }),
            ),
        ];
        for (provider, auth) in refused {
            let mut body = account(provider, auth.clone());
            if provider == Provider::Azure {
                body.state_storage_account = Some("acmestate".into());
            }
            let err = check_new_account(&body).unwrap_err();
            assert_eq!(err.code, crate::ErrorCode::InvalidInput, "{provider} {auth}");
        }
        let mut s3_with_storage =
            account(Provider::Aws, serde_json::json!({ "kind": "static", "secret": "k" }));
        s3_with_storage.state_storage_account = Some("acmestate".into());
        assert!(check_new_account(&s3_with_storage).is_err());
    }

    #[test]
    fn nearest_scope_wins_per_environment() {
        let (system, domain, dev, prod) = (10, 20, 1, 2);
        let links = vec![
            link(100, LinkScope::Organization, None, dev),
            link(101, LinkScope::Organization, None, prod),
            link(200, LinkScope::Domain, Some(domain), prod),
            link(300, LinkScope::System, Some(system), dev),
            link(999, LinkScope::System, Some(11), prod),
        ];
        assert_eq!(resolve_account(&links, id(system), id(domain), id(dev)), Some(acct(300)));
        assert_eq!(resolve_account(&links, id(system), id(domain), id(prod)), Some(acct(200)));
        assert_eq!(resolve_account(&links, id(12), id(21), id(prod)), Some(acct(101)));
        assert_eq!(resolve_account(&links, id(system), id(domain), id(3)), None);
    }
}
