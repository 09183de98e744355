//! `heimdall cloud-account`.

use clap::{Subcommand, ValueEnum};
use heimdall_wire::{LinkScope, Provider};

#[derive(Debug, Subcommand)]
pub enum CloudAccountCommand {
    /// Register an account: where to federate (oidc) or a secret's name in the Agent (static), and where state lives
    Create {
        /// The account's name in Heimdall
        name: String,
        /// The cloud
        #[arg(long, value_enum)]
        provider: ProviderArg,
        /// Default region of the account's Resources
        #[arg(long)]
        region: String,
        /// Bucket holding Terraform state, one per Resource (for azurerm: the container)
        #[arg(long, value_name = "BUCKET")]
        state_bucket: String,
        /// The state store's endpoint: an S3-compatible one (Cloudflare R2), or a private endpoint
        #[arg(long, value_name = "URL")]
        state_endpoint: Option<String>,
        /// Where state lives (default: the provider's own: gcs for gcp, azurerm for azure, else s3)
        #[arg(long, value_enum, value_name = "BACKEND")]
        state_backend: Option<StateBackendArg>,
        /// With the azurerm backend: the storage account holding the container (--state-bucket)
        #[arg(long, value_name = "NAME")]
        state_storage_account: Option<String>,
        /// Check each provisioned Resource placed on this account for drift
        /// this often, e.g. 24h (s, m, h, d); a schema's shorter schedule still applies
        #[arg(long, value_name = "DURATION")]
        drift_check_every: Option<String>,
        /// How the Agent gets credentials
        #[arg(long, value_enum)]
        auth: AuthArg,
        #[command(flatten)]
        oidc: Box<OidcArgs>,
        /// With --auth static: the name of the secret, in the Agent, that holds the credentials
        #[arg(long, value_name = "NAME")]
        secret: Option<String>,
    },
    /// Link an account to the organization, a domain or a system, for one environment
    Link {
        /// The account (id or name)
        account: String,
        /// `organization`, `domain:<id-or-name>` or `system:<id-or-name>`
        #[arg(long, value_parser = parse_scope)]
        scope: ScopeArg,
        /// The environment (id or name)
        #[arg(long)]
        environment: String,
    },
    /// Change an account in place: region, credentials, drift schedule; where it keeps state only
    /// while no Resource keeps state there
    Update {
        /// The account (id or name)
        account: String,
        /// Default region of the account's Resources
        #[arg(long)]
        region: Option<String>,
        /// Bucket holding Terraform state (refused while a Resource keeps state on the account)
        #[arg(long, value_name = "BUCKET")]
        state_bucket: Option<String>,
        /// The state store's endpoint (refused while a Resource keeps state on the account)
        #[arg(long, value_name = "URL")]
        state_endpoint: Option<String>,
        /// With the azurerm backend: the storage account (refused while a Resource keeps state on the account)
        #[arg(long, value_name = "NAME")]
        state_storage_account: Option<String>,
        /// Check each provisioned Resource for drift this often (s, m, h, d), or `off`
        #[arg(long, value_name = "DURATION")]
        drift_check_every: Option<String>,
        /// New credentials: how the Agent gets them, with the provider's flags or --secret
        #[arg(long, value_enum)]
        auth: Option<AuthArg>,
        #[command(flatten)]
        oidc: Box<OidcArgs>,
        /// With --auth static: the name of the secret, in the Agent, that holds the credentials
        #[arg(long, value_name = "NAME")]
        secret: Option<String>,
    },
    /// Remove one link of an account, named as it was made (refused while a Resource of that
    /// environment keeps state on the account)
    Unlink {
        /// The account (id or name)
        account: String,
        /// `organization`, `domain:<id-or-name>` or `system:<id-or-name>`
        #[arg(long, value_parser = parse_scope)]
        scope: ScopeArg,
        /// The environment (id or name)
        #[arg(long)]
        environment: String,
    },
    /// Delete an account nothing links and no Resource keeps state on
    Delete {
        /// The account (id or name)
        account: String,
    },
    /// List accounts
    List,
    /// Show an account and its links (by id or name)
    Show {
        /// The account (id or name)
        account: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    Aws,
    Gcp,
    Azure,
    Kubernetes,
    Helm,
    Cloudflare,
}

impl From<ProviderArg> for Provider {
    fn from(provider: ProviderArg) -> Self {
        match provider {
            ProviderArg::Aws => Provider::Aws,
            ProviderArg::Gcp => Provider::Gcp,
            ProviderArg::Azure => Provider::Azure,
            ProviderArg::Kubernetes => Provider::Kubernetes,
            ProviderArg::Helm => Provider::Helm,
            ProviderArg::Cloudflare => Provider::Cloudflare,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AuthArg {
    /// Federate with an identity token the API signs (AWS --role-arn, GCP --workload-identity-provider, Azure --client-id…, Kubernetes --cluster-url)
    Oidc,
    /// Read credentials from the secret --secret in the Agent
    Static,
}

/// `--scope`: where a link attaches an account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeArg {
    pub scope: LinkScope,
    /// The domain or system (id or name); `None` for the organization.
    pub target: Option<String>,
}

fn parse_scope(text: &str) -> Result<ScopeArg, String> {
    const EXPECTED: &str = "expected `organization`, `domain:<id-or-name>` or `system:<id-or-name>`";
    let (kind, target) = match text.split_once(':') {
        Some((kind, target)) => (kind, Some(target.trim())),
        None => (text, None),
    };
    let scope = match kind.trim() {
        "organization" => LinkScope::Organization,
        "domain" => LinkScope::Domain,
        "system" => LinkScope::System,
        _ => return Err(EXPECTED.to_owned()),
    };
    match (scope, target) {
        (LinkScope::Organization, None) => Ok(ScopeArg { scope, target: None }),
        (LinkScope::Organization, Some(_)) => Err(format!("organization takes no id; {EXPECTED}")),
        (_, Some(target)) if !target.is_empty() => Ok(ScopeArg { scope, target: Some(target.to_owned()) }),
        (_, _) => Err(format!("{scope} needs an id or a name, e.g. `{scope}:payments`; {EXPECTED}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes() {
        let org = parse_scope("organization").unwrap();
        assert_eq!(org, ScopeArg { scope: LinkScope::Organization, target: None });
        let domain = parse_scope("domain:payments").unwrap();
        assert_eq!(domain, ScopeArg { scope: LinkScope::Domain, target: Some("payments".into()) });
        let system = parse_scope("system:0b7c3a0e-8f4e-4d0a-9c43-2d7f1c1e9a55").unwrap();
        assert_eq!(system.scope, LinkScope::System);
        for bad in ["", "org", "domain", "domain:", "organization:x", "team:a"] {
            assert!(parse_scope(bad).is_err(), "{bad}");
        }
    }
}

/// Where an `--auth oidc` account's token is trusted, per provider.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct OidcArgs {
    /// AWS: the role to assume
    #[arg(long, value_name = "ARN")]
    pub role_arn: Option<String>,
    /// GCP: projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>
    #[arg(long, value_name = "NAME")]
    pub workload_identity_provider: Option<String>,
    /// GCP: a service account to impersonate (optional)
    #[arg(long, value_name = "EMAIL")]
    pub service_account: Option<String>,
    /// Azure: the application (client) id with the federated credential
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,
    /// Azure: the directory (tenant) id
    #[arg(long, value_name = "ID")]
    pub tenant_id: Option<String>,
    /// Azure: the subscription id
    #[arg(long, value_name = "ID")]
    pub subscription_id: Option<String>,
    /// Kubernetes, Helm: the API server's URL
    #[arg(long, value_name = "URL")]
    pub cluster_url: Option<String>,
    /// Kubernetes, Helm: a PEM file with the cluster's CA certificate (optional)
    #[arg(long, value_name = "FILE")]
    pub cluster_ca_file: Option<std::path::PathBuf>,
    /// The token's audience, instead of the provider's default
    #[arg(long, value_name = "AUD")]
    pub audience: Option<String>,
}

impl OidcArgs {
    /// The target these flags name, with the CA as read from its file.
    pub fn target(self, cluster_ca: Option<String>) -> heimdall_wire::OidcTarget {
        heimdall_wire::OidcTarget {
            role_arn: self.role_arn,
            workload_identity_provider: self.workload_identity_provider,
            service_account: self.service_account,
            client_id: self.client_id,
            tenant_id: self.tenant_id,
            subscription_id: self.subscription_id,
            cluster_url: self.cluster_url,
            cluster_ca,
            audience: self.audience,
        }
    }

    /// Whether any federation flag is given.
    pub fn any(&self) -> bool {
        let ca = self.cluster_ca_file.as_ref().map(|_| String::new());
        self.clone().target(ca).fields().iter().any(|(_, value)| value.is_some())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StateBackendArg {
    S3,
    Gcs,
    Azurerm,
}

impl From<StateBackendArg> for heimdall_wire::StateBackend {
    fn from(backend: StateBackendArg) -> Self {
        match backend {
            StateBackendArg::S3 => Self::S3,
            StateBackendArg::Gcs => Self::Gcs,
            StateBackendArg::Azurerm => Self::Azurerm,
        }
    }
}
