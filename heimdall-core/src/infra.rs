//! Infrastructure Manager records: resource schemas, resources
//! and their revisions, cloud accounts, jobs.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::ids::{CatalogId, CloudAccountId, JobId, OrgId, ResourceId, SchemaId};

macro_rules! string_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| {
                    let all: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                    format!("must be one of {}", all.join(", "))
                })
            }
        }
    };
}

/// Where the Terraform module of a schema comes from. The Agent decides
/// whether a source is allowed; the API only records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleRef {
    pub source: String,
    pub version: String,
}

/// One version of a resource schema defined by the platform team.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceSchema {
    pub id: SchemaId,
    pub org_id: OrgId,
    /// E.g. `s3-bucket`. Versions of one type share it.
    #[serde(rename = "type")]
    pub type_name: String,
    pub version: i64,
    /// JSON Schema draft 2020-12, enforced in full.
    pub input_schema: serde_json::Value,
    /// Per environment name: an object laid under every request's input.
    /// The name is the environment's as of the read: the store keeps each
    /// under the environment's id, so that a rename keeps them.
    #[serde(default)]
    pub defaults: BTreeMap<String, serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<ModuleRef>,
    pub requires_approval: bool,
    /// Seconds between drift checks of each provisioned Resource; none if unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_check_every_seconds: Option<i64>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
    /// Deprecated: no new Resource is requested on this version
    /// (`schemas::check_requestable`); the Resources on it go on.
    #[serde(default, with = "time::serde::rfc3339::option", skip_serializing_if = "Option::is_none")]
    pub deprecated_at: Option<OffsetDateTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated_by: Option<String>,
    /// Deleted once no Resource used it: gone from lists and lookups, kept
    /// for the history of Resources that were on it.
    #[serde(default, with = "time::serde::rfc3339::option", skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<OffsetDateTime>,
}

string_enum!(
    /// A Resource's life: `pending_approval` → `queued` → `applying` →
    /// `provisioned` | `failed`; `deleting` → `deleted`. `refused` is a
    /// create that an approver turned down (nothing was ever queued).
    /// `abandoned`: no longer managed, nothing destroyed; its state stays
    /// where it was (`resources::abandon`).
    ResourceStatus {
        PendingApproval = "pending_approval",
        Queued = "queued",
        Applying = "applying",
        Provisioned = "provisioned",
        Failed = "failed",
        Refused = "refused",
        Deleting = "deleting",
        Deleted = "deleted",
        Abandoned = "abandoned",
    }
);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resource {
    pub id: ResourceId,
    pub org_id: OrgId,
    pub name: String,
    pub component_id: CatalogId,
    pub environment_id: CatalogId,
    /// The schema version of its newest revision (`resource upgrade`
    /// moves it; each revision names its own).
    pub schema_id: SchemaId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    pub status: ResourceStatus,
    /// The newest revision (pending, queued or applied).
    pub revision: i64,
    /// Why the last job failed, when `status` is `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Terraform outputs of the last successful apply; sensitive ones are
    /// the string `<sensitive>`.
    #[serde(default)]
    pub outputs: serde_json::Value,
    /// Since when a drift check found that what exists differs from what
    /// was applied; cleared by a clean check or an apply.
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub drifted_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

string_enum!(
    /// Where a revision stands in the approval flow.
    RevisionState {
        PendingApproval = "pending_approval",
        Approved = "approved",
        NotRequired = "not_required",
        Refused = "refused",
        Superseded = "superseded",
        Expired = "expired",
    }
);

/// Every create or change of a Resource is a revision: number + content hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Revision {
    pub resource_id: ResourceId,
    pub number: i64,
    /// SHA-256 of the canonical effective input and region.
    pub hash: String,
    /// The schema version it was requested on: every job of this
    /// revision runs that version's module, under its rules.
    pub schema_id: SchemaId,
    pub schema_version: i64,
    /// What the requester sent.
    pub input: serde_json::Value,
    /// Defaults overlaid by the input: what Terraform receives.
    pub effective_input: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// The objects its first apply imports (an imported Resource's first revision).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<ImportTarget>,
    /// Under a schema that requires approval: the plan its plan job saved,
    /// which an approval must name (`crate::plan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::plan::RevisionPlan>,
    pub state: RevisionState,
    pub requested_by: String,
    #[serde(with = "time::serde::rfc3339")]
    pub requested_at: OffsetDateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<OffsetDateTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_reason: Option<String>,
}

string_enum!(
    /// Where Terraform runs.
    Provider {
        Aws = "aws",
        Gcp = "gcp",
        Azure = "azure",
        Kubernetes = "kubernetes",
        Helm = "helm",
        Cloudflare = "cloudflare",
    }
);

string_enum!(
    /// Where a Resource's state lives, each with its cloud's own lock: S3
    /// or any S3-compatible store such as Cloudflare R2 (`use_lockfile`),
    /// Google Cloud Storage (a conditional write), Azure Blob (a lease).
    StateBackend {
        S3 = "s3",
        Gcs = "gcs",
        Azurerm = "azurerm",
    }
);

impl StateBackend {
    /// Each provider's own store: GCS for GCP, Azure Blob for Azure, S3
    /// for the rest (Cloudflare R2 is S3-compatible; Kubernetes and Helm
    /// have no bucket of their own).
    pub fn default_for(provider: Provider) -> Self {
        match provider {
            Provider::Gcp => StateBackend::Gcs,
            Provider::Azure => StateBackend::Azurerm,
            Provider::Aws | Provider::Cloudflare | Provider::Kubernetes | Provider::Helm => StateBackend::S3,
        }
    }
}

/// Accounts and jobs from before backends were chosen all used S3.
fn s3() -> StateBackend {
    StateBackend::S3
}

/// How the Agent obtains credentials for an account. Neither holds a
/// credential: where to federate to, or the *name* of a secret in the Agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum AccountAuth {
    /// The job's identity token, traded by the API (AWS) or placed where
    /// the provider reads a federated token (the rest). Which fields a
    /// provider needs: `heimdall_core::accounts::check_auth`.
    Oidc(OidcTarget),
    Static {
        secret: String,
    },
}

/// Where an `oidc` account's token is trusted; none of it is secret.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcTarget {
    /// AWS: the role to assume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_arn: Option<String>,
    /// GCP: `projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_identity_provider: Option<String>,
    /// GCP: a service account to impersonate (else the pool's principal is used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    /// Azure: the application (client) id with the federated credential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Azure: the directory (tenant) id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// Azure: the subscription.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<String>,
    /// Kubernetes, Helm: the API server's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_url: Option<String>,
    /// Kubernetes, Helm: the cluster's CA certificate (PEM), if the system's roots do not hold it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ca: Option<String>,
    /// The token's `aud`, instead of the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
}

impl OidcTarget {
    /// An AWS target: the role to assume.
    pub fn aws(role_arn: impl Into<String>) -> Self {
        Self { role_arn: Some(role_arn.into()), ..Self::default() }
    }

    /// Every field, by its wire name.
    pub fn fields(&self) -> [(&'static str, &Option<String>); 9] {
        [
            ("role_arn", &self.role_arn),
            ("workload_identity_provider", &self.workload_identity_provider),
            ("service_account", &self.service_account),
            ("client_id", &self.client_id),
            ("tenant_id", &self.tenant_id),
            ("subscription_id", &self.subscription_id),
            ("cluster_url", &self.cluster_url),
            ("cluster_ca", &self.cluster_ca),
            ("audience", &self.audience),
        ]
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloudAccount {
    pub id: CloudAccountId,
    pub org_id: OrgId,
    pub name: String,
    pub provider: Provider,
    pub region: String,
    /// The S3 or GCS bucket, or the Azure container.
    pub state_bucket: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_endpoint: Option<String>,
    #[serde(default = "s3")]
    pub state_backend: StateBackend,
    /// Azure: the storage account that holds the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_storage_account: Option<String>,
    pub auth: AccountAuth,
    /// Seconds between drift checks of each provisioned Resource placed on
    /// this account; none if unset (`drift::every` picks the schedule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_check_every_seconds: Option<i64>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
}

string_enum!(
    /// What a link attaches an account to.
    LinkScope {
        Organization = "organization",
        Domain = "domain",
        System = "system",
    }
);

/// "This account serves this scope in this environment."
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountLink {
    pub account_id: CloudAccountId,
    pub scope: LinkScope,
    /// The domain or system; `None` for the organization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_id: Option<CatalogId>,
    pub environment_id: CatalogId,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
}

string_enum!(
    /// What a job does. A drift check plans against what exists and is
    /// never applied; a plan saves the plan an approver reads
    /// (`crate::plan`).
    JobOperation {
        Apply = "apply",
        Destroy = "destroy",
        Import = "import",
        DriftCheck = "drift_check",
        Plan = "plan",
    }
);

string_enum!(
    /// `queued` → `running` → `completed` | `failed`; `cancelled` when a
    /// delete overtook a queued apply.
    JobStatus {
        Queued = "queued",
        Running = "running",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
    }
);

/// The account a job runs in, as the Agent needs it. Never a credential.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountRef {
    pub id: CloudAccountId,
    pub provider: Provider,
    pub region: String,
    /// The S3 or GCS bucket, or the Azure container.
    pub state_bucket: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_endpoint: Option<String>,
    #[serde(default = "s3")]
    pub state_backend: StateBackend,
    /// Azure: the storage account that holds the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_storage_account: Option<String>,
    pub auth: AccountAuth,
}

/// Everything an Agent needs to run a job, frozen when the job is queued.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRequest {
    pub resource_id: ResourceId,
    pub resource_name: String,
    pub revision: i64,
    pub operation: JobOperation,
    pub effective_input: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<ModuleRef>,
    /// The schema's type: which module to run when the schema names none
    /// (the Agent's operator maps types to modules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_type: Option<String>,
    pub account: AccountRef,
    /// The Resource's environment: where a static credential's value is
    /// read from (absent in jobs queued before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<CatalogId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// Module arguments given secrets' values by the Agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_inputs: Vec<SecretInput>,
    /// For an `import` job: the objects to bring under management.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<ImportTarget>,
    /// The Resource's region, else the account's.
    pub region: String,
    /// `heimdall/<resource-id>.tfstate`
    pub state_key: String,
    /// A `plan` job saves its plan file here, in the state bucket; an
    /// apply of an approved plan reads it from here (`crate::plan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_key: Option<String>,
    /// An apply of an approved plan: the SHA-256 the approver named. The
    /// Agent applies that file only if it hashes to this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_sha256: Option<String>,
    /// The member the job acts for: the Agent uses its account's static
    /// secret and its secret inputs only as her reads
    /// (`crate::on_behalf::may_use`). Absent in jobs queued before it was
    /// recorded: those use no secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<crate::on_behalf::OnBehalfOf>,
}

impl JobRequest {
    /// Every secret the job reads from the Agent's store, with what for:
    /// the account's static credential, then each secret input.
    pub fn secrets_used(&self) -> Vec<(&str, String)> {
        let mut used = Vec::new();
        if let AccountAuth::Static { secret } = &self.account.auth {
            used.push((
                secret.as_str(),
                format!("the static credential of cloud account {}", self.account.id),
            ));
        }
        for input in &self.secret_inputs {
            used.push((input.secret.as_str(), format!("the input {}", input.variable)));
        }
        used
    }
}

/// An object created outside Heimdall, to import: its resource address
/// inside the schema's module (`aws_s3_bucket.this`) and the provider's id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportTarget {
    pub address: String,
    pub id: String,
}

/// A module argument whose value is a secret's, named in the input and
/// read by the Agent at run time (`input::SECRET_REFERENCE`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretInput {
    /// The input key (the module's variable).
    pub variable: String,
    /// The secret it names, in the Resource's environment.
    pub secret: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub id: JobId,
    pub org_id: OrgId,
    pub resource_id: ResourceId,
    pub operation: JobOperation,
    pub status: JobStatus,
    /// Claims so far (an attempt is counted when it is claimed).
    pub attempts: i64,
    pub max_attempts: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub request: JobRequest,
    #[serde(with = "time::serde::rfc3339")]
    pub queued_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub lease_expires_at: Option<OffsetDateTime>,
    /// Which Agent holds (or last held) the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The Terraform state lock the current (or last) attempt holds, as it
    /// reported with its heartbeat: the next attempt may take over exactly
    /// this lock and no other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_lock_id: Option<String>,
}

/// An Agent: runs in the customer's network, dials out to the API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    pub id: crate::ids::AgentId,
    pub org_id: OrgId,
    pub name: String,
    /// SHA-256 of the DER certificate the API issued at enrollment; only
    /// that certificate authenticates the Agent.
    pub cert_sha256: crate::Sha256Hex,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub last_seen_at: Option<OffsetDateTime>,
    /// Where people reach the Agent's local API, as it last reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_url: Option<String>,
}

/// The state object key of a Resource, in the account's bucket.
pub fn state_key(resource: ResourceId) -> String {
    format!("heimdall/{resource}.tfstate")
}
