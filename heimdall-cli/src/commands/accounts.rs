//! `cloud-account create|link|list|show`.

use std::collections::HashMap;

use heimdall_core::ids::CatalogId;
use heimdall_sdk::Client;
use heimdall_wire::{
    AccountAuth, AccountLink, CatalogKind, CloudAccount, CreateCloudAccount, LinkCloudAccount, LinkScope,
    OidcTarget, Provider, UpdateCloudAccount,
};

use super::Context;
use crate::args::{AuthArg, CloudAccountCommand, OidcArgs};
use crate::error::{CliError, Result};
use crate::output::timestamp;

pub async fn run(ctx: &Context, cmd: CloudAccountCommand) -> Result<()> {
    let out = &ctx.out;
    match cmd {
        CloudAccountCommand::Create {
            name,
            provider,
            region,
            state_bucket,
            state_endpoint,
            state_backend,
            state_storage_account,
            drift_check_every,
            auth,
            oidc,
            secret,
        } => {
            if let Some(every) = &drift_check_every {
                heimdall_core::drift::parse_every(every).map_err(|e| CliError::usage(e.message))?;
            }
            let provider = provider.into();
            let auth = account_auth(auth, provider, *oidc, secret)?;
            let request = CreateCloudAccount {
                name,
                provider,
                region,
                state_bucket,
                state_endpoint,
                state_backend: state_backend.map(Into::into),
                state_storage_account,
                auth,
                drift_check_every,
            };
            let account = ctx.client()?.create_cloud_account(&request).await?;
            out.done(&account, &format!("Cloud account created: {} ({})", account.name, account.id), &[])
        }
        CloudAccountCommand::Link { account, scope, environment } => {
            let client = ctx.client()?;
            let request =
                LinkCloudAccount { scope: scope.scope, scope_id: scope.target.clone(), environment };
            let link = client.link_cloud_account(&account, &request).await?;
            let scope_label = scope_label(&scope);
            out.done(
                &link,
                &format!("Cloud account linked: {account} serves {scope_label} in {}", request.environment),
                &[],
            )
        }
        CloudAccountCommand::Update {
            account,
            region,
            state_bucket,
            state_endpoint,
            state_storage_account,
            drift_check_every,
            auth,
            oidc,
            secret,
        } => {
            if let Some(every) = drift_check_every.as_deref().filter(|e| *e != "off") {
                heimdall_core::drift::parse_every(every).map_err(|e| CliError::usage(e.message))?;
            }
            let client = ctx.client()?;
            let auth = match auth {
                Some(kind) => {
                    let provider = client.get_cloud_account(&account).await?.account.provider;
                    Some(account_auth(kind, provider, *oidc, secret)?)
                }
                None if oidc.any() || secret.is_some() => {
                    return Err(CliError::usage(
                        "new credentials take --auth oidc (with its flags) or --auth static --secret NAME",
                    ));
                }
                None => None,
            };
            let change = UpdateCloudAccount {
                region,
                auth,
                state_bucket,
                state_endpoint,
                state_storage_account,
                drift_check_every,
            };
            if change == UpdateCloudAccount::default() {
                return Err(CliError::usage("nothing to change: name at least one of --region, --auth, --state-bucket, --drift-check-every…"));
            }
            let updated = client.update_cloud_account(&account, &change).await?;
            out.done(&updated, &format!("Cloud account updated: {} ({})", updated.name, updated.id), &[])
        }
        CloudAccountCommand::Unlink { account, scope, environment } => {
            let request =
                LinkCloudAccount { scope: scope.scope, scope_id: scope.target.clone(), environment };
            ctx.client()?.unlink_cloud_account(&account, &request).await?;
            let scope_label = scope_label(&scope);
            let message = format!(
                "Cloud account unlinked: {account} no longer serves {scope_label} in {}",
                request.environment
            );
            out.done(&request, &message, &[])
        }
        CloudAccountCommand::Delete { account } => {
            let client = ctx.client()?;
            let detail = client.get_cloud_account(&account).await?;
            client.delete_cloud_account(&detail.account.id.to_string()).await?;
            let a = &detail.account;
            out.done(a, &format!("Cloud account deleted: {} ({})", a.name, a.id), &[])
        }
        CloudAccountCommand::List => {
            let accounts = ctx.client()?.list_cloud_accounts().await?;
            out.list(
                &accounts,
                &["ID", "NAME", "PROVIDER", "REGION", "STATE BUCKET", "AUTH", "CREATED AT"],
                |a: &CloudAccount| {
                    vec![
                        a.id.to_string(),
                        a.name.clone(),
                        a.provider.to_string(),
                        a.region.clone(),
                        a.state_bucket.clone(),
                        auth_kind(&a.auth).to_owned(),
                        timestamp(a.created_at),
                    ]
                },
            )
        }
        CloudAccountCommand::Show { account } => {
            let client = ctx.client()?;
            let detail = client.get_cloud_account(&account).await?;
            let a = &detail.account;
            let mut fields = vec![
                ("ID", a.id.to_string()),
                ("NAME", a.name.clone()),
                ("PROVIDER", a.provider.to_string()),
                ("REGION", a.region.clone()),
                ("STATE BACKEND", a.state_backend.to_string()),
                ("STATE BUCKET", a.state_bucket.clone()),
            ];
            if let Some(storage) = &a.state_storage_account {
                fields.push(("STATE STORAGE ACCOUNT", storage.clone()));
            }
            fields.push(("STATE ENDPOINT", a.state_endpoint.clone().unwrap_or_default()));
            fields.push(("AUTH", auth_kind(&a.auth).to_owned()));
            fields.extend(auth_fields(&a.auth));
            if let Some(every) = a.drift_check_every_seconds {
                fields.push(("DRIFT CHECK EVERY", format!("{every}s")));
            }
            fields.push(("CREATED BY", a.created_by.clone()));
            fields.push(("CREATED AT", timestamp(a.created_at)));
            out.record(&detail, &fields)?;
            if out.is_json() {
                return Ok(());
            }
            let names = catalog_names(&client).await;
            let rows = detail.links.iter().map(|l| link_row(&names, l)).collect();
            out.section(&["SCOPE", "ENVIRONMENT", "LINKED BY", "LINKED AT"], rows)
        }
    }
}

/// `organization`, or `domain:payments` as given.
fn scope_label(scope: &crate::args::ScopeArg) -> String {
    match &scope.target {
        Some(target) => format!("{}:{target}", scope.scope),
        None => scope.scope.to_string(),
    }
}

/// `--auth` with exactly the flags it needs, checked before any request
/// by the rule the API applies (`heimdall_core::accounts::check_oidc`).
fn account_auth(
    auth: AuthArg,
    provider: Provider,
    oidc: OidcArgs,
    secret: Option<String>,
) -> Result<AccountAuth> {
    match auth {
        AuthArg::Oidc => {
            if secret.is_some() {
                return Err(CliError::usage("--secret goes with --auth static; --auth oidc takes the provider's --role-arn, --workload-identity-provider, --client-id…"));
            }
            let cluster_ca = match &oidc.cluster_ca_file {
                Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
                    CliError::usage(format!("cannot read --cluster-ca-file {}: {e}", path.display()))
                })?),
                None => None,
            };
            let target = oidc.target(cluster_ca);
            heimdall_core::accounts::check_oidc(provider, &target)
                .map_err(|e| CliError::usage(flag_names(&e.message)))?;
            Ok(AccountAuth::Oidc(target))
        }
        AuthArg::Static => {
            if oidc.any() {
                return Err(CliError::usage("--role-arn and the other federation flags go with --auth oidc; --auth static takes --secret"));
            }
            match secret {
                Some(secret) if !secret.trim().is_empty() => Ok(AccountAuth::Static { secret }),
                _ => Err(CliError::usage(
                    "--auth static needs --secret NAME (the secret, in the Agent, that holds the credentials)",
                )),
            }
        }
    }
}

/// The API's field names (`auth.role_arn`) as the flags that set them.
fn flag_names(message: &str) -> String {
    let mut out = message.to_owned();
    for (field, _) in OidcTarget::default().fields() {
        let flag = if field == "cluster_ca" {
            "--cluster-ca-file".to_owned()
        } else {
            format!("--{}", field.replace('_', "-"))
        };
        out = out.replace(&format!("auth.{field}"), &flag);
    }
    out
}

/// What `show` prints of where an account's token or secret is.
fn auth_fields(auth: &AccountAuth) -> Vec<(&'static str, String)> {
    match auth {
        AccountAuth::Static { secret } => vec![("SECRET", secret.clone())],
        AccountAuth::Oidc(t) => [
            ("ROLE ARN", &t.role_arn),
            ("WORKLOAD IDENTITY PROVIDER", &t.workload_identity_provider),
            ("SERVICE ACCOUNT", &t.service_account),
            ("CLIENT ID", &t.client_id),
            ("TENANT ID", &t.tenant_id),
            ("SUBSCRIPTION ID", &t.subscription_id),
            ("CLUSTER URL", &t.cluster_url),
            ("AUDIENCE", &t.audience),
        ]
        .into_iter()
        .filter_map(|(label, value)| value.clone().map(|v| (label, v)))
        .collect(),
    }
}

fn auth_kind(auth: &AccountAuth) -> &'static str {
    match auth {
        AccountAuth::Oidc { .. } => "oidc",
        AccountAuth::Static { .. } => "static",
    }
}

/// Names of domains, systems and environments, for readable links. Best
/// effort: on any error the table shows ids.
async fn catalog_names(client: &Client) -> HashMap<CatalogId, String> {
    let mut names = HashMap::new();
    for kind in [CatalogKind::Domain, CatalogKind::System, CatalogKind::Environment] {
        if let Ok(entries) = client.list_catalog(kind, None).await {
            names.extend(entries.into_iter().map(|e| (e.id, e.name)));
        }
    }
    names
}

fn link_row(names: &HashMap<CatalogId, String>, link: &AccountLink) -> Vec<String> {
    let name = |id: CatalogId| names.get(&id).cloned().unwrap_or_else(|| id.to_string());
    let scope = match (link.scope, link.scope_id) {
        (LinkScope::Organization, _) | (_, None) => link.scope.to_string(),
        (scope, Some(id)) => format!("{scope}:{}", name(id)),
    };
    vec![scope, name(link.environment_id), link.created_by.clone(), timestamp(link.created_at)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_flags_must_match_the_kind() {
        let s = |v: &str| Some(v.to_owned());
        let role = |arn: Option<String>| OidcArgs { role_arn: arn, ..OidcArgs::default() };
        assert_eq!(
            account_auth(AuthArg::Oidc, Provider::Aws, role(s("arn:aws:iam::1:role/x")), None).unwrap(),
            AccountAuth::Oidc(OidcTarget::aws("arn:aws:iam::1:role/x"))
        );
        assert_eq!(
            account_auth(AuthArg::Static, Provider::Aws, OidcArgs::default(), s("aws-creds")).unwrap(),
            AccountAuth::Static { secret: "aws-creds".into() }
        );
        let pool = "projects/1/locations/global/workloadIdentityPools/p/providers/h";
        let gcp = OidcArgs { workload_identity_provider: s(pool), ..OidcArgs::default() };
        assert!(matches!(
            account_auth(AuthArg::Oidc, Provider::Gcp, gcp.clone(), None),
            Ok(AccountAuth::Oidc(_))
        ));
        for (auth, provider, oidc, secret) in [
            (AuthArg::Oidc, Provider::Aws, role(None), None),
            (AuthArg::Oidc, Provider::Aws, role(s(" ")), None),
            (AuthArg::Oidc, Provider::Aws, role(s("arn")), s("creds")),
            (AuthArg::Oidc, Provider::Aws, role(None), s("creds")),
            (AuthArg::Oidc, Provider::Aws, gcp.clone(), None),
            (AuthArg::Oidc, Provider::Gcp, role(s("arn")), None),
            (AuthArg::Oidc, Provider::Azure, role(None), None),
            (AuthArg::Static, Provider::Aws, role(None), None),
            (AuthArg::Static, Provider::Aws, role(s("arn")), None),
            (AuthArg::Static, Provider::Aws, role(s("arn")), s("creds")),
        ] {
            let err = account_auth(auth, provider, oidc.clone(), secret.clone()).unwrap_err();
            assert_eq!(err.exit_code(), crate::error::exit::USAGE, "{auth:?} {provider} {oidc:?} {secret:?}");
        }
        let err = account_auth(AuthArg::Oidc, Provider::Aws, role(None), None).unwrap_err();
        assert!(err.to_string().contains("--role-arn"), "{err}");
    }
}
