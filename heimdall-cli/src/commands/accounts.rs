//! `cloud-account create|link|list|show`.

use std::collections::HashMap;

use heimdall_core::ids::CatalogId;
use heimdall_core::wire::{
    AccountAuth, AccountLink, CatalogKind, CloudAccount, CreateCloudAccount, LinkCloudAccount, LinkScope,
};
use heimdall_sdk::Client;

use super::Context;
use crate::args::{AuthArg, CloudAccountCommand};
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
            auth,
            role_arn,
            secret,
        } => {
            let auth = account_auth(auth, role_arn, secret)?;
            let request = CreateCloudAccount {
                name,
                provider: provider.into(),
                region,
                state_bucket,
                state_endpoint,
                auth,
            };
            let account = ctx.client()?.create_cloud_account(&request).await?;
            out.done(&account, &format!("Cloud account created: {} ({})", account.name, account.id), &[])
        }
        CloudAccountCommand::Link { account, scope, environment } => {
            let client = ctx.client()?;
            let request =
                LinkCloudAccount { scope: scope.scope, scope_id: scope.target.clone(), environment };
            let link = client.link_cloud_account(&account, &request).await?;
            let scope_label = match &scope.target {
                Some(target) => format!("{}:{target}", scope.scope),
                None => scope.scope.to_string(),
            };
            out.done(
                &link,
                &format!("Cloud account linked: {account} serves {scope_label} in {}", request.environment),
                &[],
            )
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
            let (auth_key, auth_value) = match &a.auth {
                AccountAuth::Oidc { role_arn } => ("ROLE ARN", role_arn.clone()),
                AccountAuth::Static { secret } => ("SECRET", secret.clone()),
            };
            out.record(
                &detail,
                &[
                    ("ID", a.id.to_string()),
                    ("NAME", a.name.clone()),
                    ("PROVIDER", a.provider.to_string()),
                    ("REGION", a.region.clone()),
                    ("STATE BUCKET", a.state_bucket.clone()),
                    ("STATE ENDPOINT", a.state_endpoint.clone().unwrap_or_default()),
                    ("AUTH", auth_kind(&a.auth).to_owned()),
                    (auth_key, auth_value),
                    ("CREATED BY", a.created_by.clone()),
                    ("CREATED AT", timestamp(a.created_at)),
                ],
            )?;
            if out.is_json() {
                return Ok(());
            }
            let names = catalog_names(&client).await;
            let rows = detail.links.iter().map(|l| link_row(&names, l)).collect();
            out.section(&["SCOPE", "ENVIRONMENT", "LINKED BY", "LINKED AT"], rows)
        }
    }
}

/// `--auth` with exactly the flag it needs, checked before any request.
fn account_auth(auth: AuthArg, role_arn: Option<String>, secret: Option<String>) -> Result<AccountAuth> {
    match auth {
        AuthArg::Oidc => {
            if secret.is_some() {
                return Err(CliError::usage(
                    "--secret goes with --auth static; --auth oidc takes --role-arn",
                ));
            }
            match role_arn {
                Some(role_arn) if !role_arn.trim().is_empty() => Ok(AccountAuth::Oidc { role_arn }),
                _ => Err(CliError::usage("--auth oidc needs --role-arn ARN (the role to assume)")),
            }
        }
        AuthArg::Static => {
            if role_arn.is_some() {
                return Err(CliError::usage(
                    "--role-arn goes with --auth oidc; --auth static takes --secret",
                ));
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
        assert_eq!(
            account_auth(AuthArg::Oidc, s("arn:aws:iam::1:role/x"), None).unwrap(),
            AccountAuth::Oidc { role_arn: "arn:aws:iam::1:role/x".into() }
        );
        assert_eq!(
            account_auth(AuthArg::Static, None, s("aws-creds")).unwrap(),
            AccountAuth::Static { secret: "aws-creds".into() }
        );
        for (auth, role_arn, secret) in [
            (AuthArg::Oidc, None, None),
            (AuthArg::Oidc, s(" "), None),
            (AuthArg::Oidc, s("arn"), s("creds")),
            (AuthArg::Oidc, None, s("creds")),
            (AuthArg::Static, None, None),
            (AuthArg::Static, s("arn"), None),
            (AuthArg::Static, s("arn"), s("creds")),
        ] {
            let err = account_auth(auth, role_arn.clone(), secret.clone()).unwrap_err();
            assert_eq!(err.exit_code(), crate::error::exit::USAGE, "{auth:?} {role_arn:?} {secret:?}");
        }
    }
}
