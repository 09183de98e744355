//! Cloud accounts: what a new one must say, per provider and backend, and
//! which one serves a Resource (the System's link for the Resource's
//! environment, else the Domain's, else the organization's).

use serde::{Deserialize, Serialize};

mod plans;
pub mod service;

pub use plans::{link, register, scope_kind, AccountPlan, LinkPlan};

use crate::error::{ApiError, ErrorCode};
use crate::ids::{CatalogId, CloudAccountId};
use crate::infra::{AccountAuth, AccountLink, CloudAccount, LinkScope, OidcTarget, Provider, StateBackend};
use crate::names::{validate_name, validate_region, validate_text};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateCloudAccount {
    pub name: String,
    pub provider: Provider,
    pub region: String,
    pub state_bucket: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_endpoint: Option<String>,
    /// Default: the provider's own ([`crate::infra::StateBackend::default_for`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_backend: Option<crate::infra::StateBackend>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_storage_account: Option<String>,
    pub auth: AccountAuth,
    /// Check each provisioned Resource placed on this account for drift
    /// this often, e.g. `24h` (`heimdall_core::drift::parse_every`). Off when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_check_every: Option<String>,
}

/// A change to a registered account; what is absent stays. Where it
/// keeps state (`state_bucket`, `state_endpoint`, `state_storage_account`)
/// moves only while no Resource keeps state there
/// (`accounts::check_state_move`); the provider and the state backend
/// never change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateCloudAccount {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AccountAuth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_bucket: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_storage_account: Option<String>,
    /// `24h` and the like, or `off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_check_every: Option<String>,
}

/// A registered account after a change, checked as a new one is.
#[derive(Clone, Debug, PartialEq)]
pub struct AccountChange {
    pub account: CloudAccount,
    /// The fields that change, by their request names, sorted.
    pub changed: Vec<&'static str>,
    /// Whether where it keeps state moves: the store allows that only
    /// while no Resource keeps state there ([`check_state_move`]).
    pub moves_state: bool,
}

/// Decides a change to `current`: the account it becomes (validated as a
/// new account is, `INVALID_INPUT` before anything is stored) and what
/// changes; `None` when nothing does.
pub fn update(
    current: &CloudAccount,
    change: &UpdateCloudAccount,
) -> Result<Option<AccountChange>, ApiError> {
    let pick = |new: &Option<String>, old: &str| new.clone().unwrap_or_else(|| old.to_owned());
    let pick_optional = |new: &Option<String>, old: &Option<String>| new.clone().or_else(|| old.clone());
    let merged = CreateCloudAccount {
        name: current.name.clone(),
        provider: current.provider,
        region: pick(&change.region, &current.region),
        state_bucket: pick(&change.state_bucket, &current.state_bucket),
        state_endpoint: pick_optional(&change.state_endpoint, &current.state_endpoint),
        state_backend: Some(current.state_backend),
        state_storage_account: pick_optional(&change.state_storage_account, &current.state_storage_account),
        auth: change.auth.clone().unwrap_or_else(|| current.auth.clone()),
        drift_check_every: None,
    };
    check_new_account(&merged)?;
    let drift_check_every_seconds = match change.drift_check_every.as_deref() {
        None => current.drift_check_every_seconds,
        Some("off") => None,
        Some(every) => Some(crate::drift::parse_every(every)?),
    };
    let mut account = current.clone();
    account.region = merged.region;
    account.state_bucket = merged.state_bucket;
    account.state_endpoint = merged.state_endpoint;
    account.state_storage_account = merged.state_storage_account;
    account.auth = merged.auth;
    account.drift_check_every_seconds = drift_check_every_seconds;
    let mut changed = Vec::new();
    for (name, differs) in [
        ("auth", account.auth != current.auth),
        ("drift_check_every", account.drift_check_every_seconds != current.drift_check_every_seconds),
        ("region", account.region != current.region),
        ("state_bucket", account.state_bucket != current.state_bucket),
        ("state_endpoint", account.state_endpoint != current.state_endpoint),
        ("state_storage_account", account.state_storage_account != current.state_storage_account),
    ] {
        if differs {
            changed.push(name);
        }
    }
    if changed.is_empty() {
        return Ok(None);
    }
    let moves_state = changed.iter().any(|c| c.starts_with("state_"));
    Ok(Some(AccountChange { account, changed, moves_state }))
}

fn resources(n: u64) -> String {
    if n == 1 {
        "1 Resource".to_owned()
    } else {
        format!("{n} Resources")
    }
}

/// Where an account keeps state moves only while no Resource (not
/// deleted, with a job on this account) keeps state there: the next job
/// would look for its state elsewhere and make everything anew.
pub fn check_state_move(account: &str, resources_with_state: u64) -> Result<(), ApiError> {
    if resources_with_state == 0 {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::Conflict,
        format!(
            "cloud account {account} keeps the state of {}: where it keeps state cannot move while it does \
             (delete those Resources first, or register another account)",
            resources(resources_with_state)
        ),
    ))
}

/// A link goes only while no Resource of its environment keeps state on
/// the account: its next job would find no account, or another one.
pub fn check_unlink(account: &str, resources_in_environment: u64) -> Result<(), ApiError> {
    if resources_in_environment == 0 {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::NotEmpty,
        format!(
            "{} in that environment keep state on cloud account {account}: delete them before the link",
            resources(resources_in_environment)
        ),
    ))
}

/// A link replaces another account's for the same scope and environment
/// only while no Resource there keeps state on that account: its next job
/// would look for its state in another store and make everything anew.
pub fn check_relink(linked_account: &str, resources_in_environment: u64) -> Result<(), ApiError> {
    if resources_in_environment == 0 {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::Conflict,
        format!(
            "that scope and environment are linked to cloud account {linked_account}, where {} keep state: \
             linking another account would move their next jobs to another state store",
            resources(resources_in_environment)
        ),
    ))
}

/// An account goes only when nothing links it and no Resource keeps state on it.
pub fn check_delete(account: &str, links: u64, resources_with_state: u64) -> Result<(), ApiError> {
    if links > 0 {
        return Err(ApiError::new(
            ErrorCode::NotEmpty,
            format!("cloud account {account} has {links} link(s): unlink it first (`heimdall cloud-account unlink`)"),
        ));
    }
    if resources_with_state > 0 {
        return Err(ApiError::new(
            ErrorCode::NotEmpty,
            format!(
                "cloud account {account} keeps the state of {}: delete them first",
                resources(resources_with_state)
            ),
        ));
    }
    Ok(())
}

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

/// What creating `account` records (never how it authenticates).
pub fn created(account: &CloudAccount) -> crate::audit::EventPlan {
    let detail = serde_json::json!({ "name": account.name, "provider": account.provider });
    account_event(crate::audit::AuditAction::CloudAccountCreated, account, detail)
}

/// What a change [`update`] planned records: which fields changed.
pub fn updated(account: &CloudAccount, changed: &[&str]) -> crate::audit::EventPlan {
    let detail = serde_json::json!({ "name": account.name, "changed": changed });
    account_event(crate::audit::AuditAction::CloudAccountUpdated, account, detail)
}

/// What deleting `account` records.
pub fn deleted(account: &CloudAccount) -> crate::audit::EventPlan {
    account_event(
        crate::audit::AuditAction::CloudAccountDeleted,
        account,
        serde_json::json!({ "name": account.name }),
    )
}

/// What linking (or, with `linked` false, unlinking) `account` at a scope
/// for the environment `environment` records.
pub fn link_event(
    account: &CloudAccount,
    linked: bool,
    (scope, scope_id): (LinkScope, Option<CatalogId>),
    environment: &str,
) -> crate::audit::EventPlan {
    use crate::audit::AuditAction::{CloudAccountLinked, CloudAccountUnlinked};
    let detail = serde_json::json!({ "scope": scope, "scope_id": scope_id, "environment": environment });
    account_event(if linked { CloudAccountLinked } else { CloudAccountUnlinked }, account, detail)
}

fn account_event(
    action: crate::audit::AuditAction,
    account: &CloudAccount,
    detail: serde_json::Value,
) -> crate::audit::EventPlan {
    crate::audit::EventPlan { action, target: format!("cloud_account:{}", account.id), detail }
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

    fn registered() -> CloudAccount {
        serde_json::from_value(serde_json::json!({
            "id": acct(1), "org_id": id(2), "name": "aws-dev", "provider": "aws", "region": "eu-west-1",
            "state_bucket": "acme-tfstate", "state_backend": "s3",
            "auth": { "kind": "oidc", "role_arn": "arn:aws:iam::1:role/x" },
            "created_at": "2026-12-01T00:00:00Z", "created_by": "o@example.com" }))
        .unwrap()
    }

    #[test]
    fn a_change_names_what_it_changes_and_whether_the_state_moves() {
        let current = registered();
        let change = UpdateCloudAccount {
            region: Some("eu-central-1".into()),
            drift_check_every: Some("24h".into()),
            ..UpdateCloudAccount::default()
        };
        let decided = update(&current, &change).unwrap().unwrap();
        assert_eq!(decided.changed, ["drift_check_every", "region"]);
        assert!(!decided.moves_state);
        assert_eq!(
            (decided.account.region.as_str(), decided.account.drift_check_every_seconds),
            ("eu-central-1", Some(86_400))
        );
        let moved = UpdateCloudAccount {
            state_bucket: Some("other-tfstate".into()),
            ..UpdateCloudAccount::default()
        };
        assert!(update(&current, &moved).unwrap().unwrap().moves_state);
        let same = UpdateCloudAccount { region: Some("eu-west-1".into()), ..UpdateCloudAccount::default() };
        assert_eq!(update(&current, &same).unwrap(), None);
        let off =
            UpdateCloudAccount { drift_check_every: Some("off".into()), ..UpdateCloudAccount::default() };
        assert_eq!(update(&decided.account, &off).unwrap().unwrap().account.drift_check_every_seconds, None);
    }

    #[test]
    fn a_change_is_checked_as_a_new_account_is() {
        let bad = UpdateCloudAccount { region: Some("Not A Region".into()), ..UpdateCloudAccount::default() };
        assert_eq!(update(&registered(), &bad).unwrap_err().code, crate::ErrorCode::InvalidInput);
        let gcp_fields = UpdateCloudAccount {
            auth: Some(
                serde_json::from_value(
                    serde_json::json!({ "kind": "oidc", "service_account": "x@y.iam.gserviceaccount.com" }),
                )
                .unwrap(),
            ),
            ..UpdateCloudAccount::default()
        };
        assert!(
            update(&registered(), &gcp_fields).is_err(),
            "an AWS account takes AWS federation fields only"
        );
    }

    #[test]
    fn what_depends_on_an_account_keeps_it_where_it_is() {
        assert!(check_state_move("a", 0).is_ok());
        let moved = check_state_move("a", 1).unwrap_err();
        assert!(moved.message.contains("1 Resource:"), "{moved:?}");
        assert_eq!(check_unlink("a", 2).unwrap_err().code, crate::ErrorCode::NotEmpty);
        assert!(check_delete("a", 1, 0).unwrap_err().message.contains("unlink"));
        assert!(check_delete("a", 0, 3).unwrap_err().message.contains("3 Resources"));
        assert!(check_delete("a", 0, 0).is_ok());
        assert!(check_relink("a", 0).is_ok());
        assert_eq!(check_relink("a", 1).unwrap_err().code, crate::ErrorCode::Conflict);
    }
}
