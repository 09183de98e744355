//! heimdall-wire: the HTTP transport's shapes, apart from the rules. The
//! JSON bodies of the API and of an Agent's local API (shared by the
//! servers, the SDK, the CLI and the bindings so they cannot drift), their
//! OpenAPI schemas, the strict body and query parsing ([`body`]) and the
//! page cursors ([`page`]). `heimdall-core` keeps the domain, the rules,
//! `ErrorCode` and the ports and knows nothing of OpenAPI: its types'
//! schemas are in [`schemas`]. Request bodies refuse unknown fields.
//!
//! Routes (all under `/v1`, bearer token unless noted):
//!
//! | method | path | body → response |
//! |---|---|---|
//! | GET | `/health` (no auth) | → [`Health`] |
//! | GET | `/whoami` | → [`WhoAmI`] |
//! | GET, POST | `/members` | [`AddMember`] → [`AddedMember`] |
//! | GET, PATCH, DELETE | `/members/{id-or-email}` | [`ChangeRole`] → `Member` |
//! | GET, POST | `/tokens` | [`CreateToken`] → [`CreatedToken`] (the caller's own) |
//! | DELETE | `/tokens/{id}` | → `TokenInfo` |
//! | GET, POST | `/domains`, `/systems?domain=`, `/components?system=`, `/environments` | [`CreateCatalogEntry`] → `CatalogEntry` |
//! | GET, PATCH, DELETE | `/{domains,systems,components,environments}/{id-or-name}` | [`Rename`] → `CatalogEntry` |
//! | GET, POST | `/policies` | [`CreatePolicy`] → `Policy` |
//! | GET, PATCH, DELETE | `/policies/{id or name}` | [`UpdatePolicy`] → `Policy` |
//! | GET | `/policies/{id or name}/versions` | → `[PolicyVersion]` |
//! | GET | `/events?limit=&before=&action=` | → `[AuditEvent]` |
//! | GET | `/secrets/{id-or-name}/access-log?environment=` | → `[AccessLogEntry]` (owner, admin; personal: its owner) |
//! | POST | `/secrets/{id-or-name}/versions` | [`CreateVersion`] → [`CreatedVersion`] (a number and one signed grant per holding Agent) |
//! | POST | `/secrets/{id-or-name}/deactivate` | [`DeactivateVersion`] → `SecretVersion` |
//! | GET | `/secrets/{id-or-name}/holders?environment=` | → `[AgentLocation]` |
//! | POST | `/me/certificate` | [`CertificateRequest`] → [`IssuedCertificate`] |
//! | POST | `/agent/sync` (Agent channel, mTLS) | [`SyncRequest`] → [`SyncResponse`] |
//! | POST | `/agent/server-certificate` (Agent channel, mTLS) | [`ServerCertificateRequest`] → [`IssuedCertificate`] |
//!
//! An Agent's local API (HTTPS, a person's client certificate; never the
//! API): `PUT /secrets/{name}/value` ([`WriteValue`]) and
//! `GET /secrets/{name}/value?environment=&version=` (→ [`ValueAnswer`]).

pub mod body;
pub mod page;
pub mod schemas;

use serde::{Deserialize, Serialize};

use crate::body::{Body, ValuePolicy};
pub use heimdall_core::accounts::{CreateCloudAccount, UpdateCloudAccount};
pub use heimdall_core::credentials::JobCredentials;
pub use heimdall_core::dbusers::UpdateDatabase;
pub use heimdall_core::domain::{
    AuditEvent, CatalogEntry, CatalogKind, Member, Organization, Policy, PolicyVersion, Role, TokenInfo,
};
use heimdall_core::error::ApiError;
use heimdall_core::ids::CatalogId;
use heimdall_core::Sha256Hex;

/// Every error response: `{"error": {"code", "message", "fields"?}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorBody {
    #[schema(value_type = crate::schemas::ApiError)]
    pub error: ApiError,
}

/// `GET /v1/ca` (no token): the installation CA, for clients that pinned
/// its fingerprint to trust it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CaCertificate {
    pub certificate: String,
    #[schema(value_type = crate::schemas::Sha256Hex)]
    pub sha256: Sha256Hex,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Health {
    pub status: String,
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WhoAmI {
    #[schema(value_type = crate::schemas::Member)]
    pub member: Member,
    #[schema(value_type = crate::schemas::Organization)]
    pub organization: Organization,
}

/// The output of `heimdall-api bootstrap --output json`. `token` is shown once.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Bootstrapped {
    #[schema(value_type = crate::schemas::Organization)]
    pub organization: Organization,
    #[schema(value_type = crate::schemas::Member)]
    pub owner: Member,
    pub token: String,
}

impl std::fmt::Debug for Bootstrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bootstrapped")
            .field("organization", &self.organization)
            .field("owner", &self.owner)
            .field("token", &"<redacted>")
            .finish()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddMember {
    pub email: String,
    #[schema(value_type = crate::schemas::Role)]
    pub role: Role,
}

/// A new member and their first API token, shown this once.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AddedMember {
    #[schema(value_type = crate::schemas::Member)]
    pub member: Member,
    pub token: String,
}

impl std::fmt::Debug for AddedMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddedMember").field("member", &self.member).field("token", &"<redacted>").finish()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeRole {
    #[schema(value_type = crate::schemas::Role)]
    pub role: Role,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    pub name: String,
}

/// `POST /v1/agents/{key}/forget` (owner): the Agent's store is destroyed,
/// so what its last inventory listed is held nowhere any more.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetAgent {
    pub confirm_store_destroyed: bool,
}

/// `GET /v1/agents/{key}`: the Agent and what its last inventory listed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AgentDetail {
    #[schema(value_type = crate::schemas::Agent)]
    pub agent: heimdall_core::infra::Agent,
    #[schema(value_type = Vec<crate::schemas::Holding>)]
    pub holdings: Vec<heimdall_core::ports::Holding>,
    /// The current versions it lacks in the environments it holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub behind: Vec<HolderBehind>,
    /// Host names an owner approved for its local-API certificate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::schemas::ApprovedName>)]
    pub names: Vec<heimdall_core::server_names::ApprovedName>,
}

/// `POST /v1/agents/{agent}/names` (owner): a host name the Agent's
/// local-API certificate may carry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AllowName {
    pub name: String,
}

/// `POST /v1/notifications` (owner): a webhook the organization's
/// notified events go to (`AuditAction::is_notified`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateChannel {
    pub name: String,
    pub webhook: String,
}

/// A change to a channel: another name, another webhook (checked as at
/// creation); what is absent stays. Its signing secret stays too.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateChannel {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
}

/// The channel and its signing secret, shown this once.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CreatedChannel {
    #[schema(value_type = crate::schemas::Channel)]
    pub channel: heimdall_core::notify::Channel,
    pub secret: String,
}

impl std::fmt::Debug for CreatedChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatedChannel").field("channel", &self.channel).finish_non_exhaustive()
    }
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CreatedToken {
    #[schema(value_type = crate::schemas::TokenInfo)]
    pub info: TokenInfo,
    pub token: String,
}

/// `POST /v1/console/sign-in-links`: where the browser goes to sign in
/// as the caller, once, before `expires_at`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConsoleSignInLink {
    /// `/console/#sign-in=…`, under the API's URL.
    pub path: String,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: time::OffsetDateTime,
}

impl std::fmt::Debug for ConsoleSignInLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleSignInLink")
            .field("path", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// `POST /v1/console/sessions`: the code from a sign-in link.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RedeemSignIn {
    pub code: String,
}

impl std::fmt::Debug for RedeemSignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedeemSignIn").field("code", &"<redacted>").finish()
    }
}

/// The Console session a sign-in link was traded for: a token that ends
/// at `expires_at`, for the tab alone.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConsoleSession {
    pub token: String,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: time::OffsetDateTime,
    /// Who signed in.
    pub email: String,
}

impl std::fmt::Debug for ConsoleSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleSession")
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .field("email", &self.email)
            .finish()
    }
}

impl std::fmt::Debug for CreatedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatedToken").field("info", &self.info).field("token", &"<redacted>").finish()
    }
}

/// Create a domain, system, component or environment. `parent_id` names
/// the domain of a new system or the system of a new component, and must
/// be absent for domains and environments.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateCatalogEntry {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schemas::CatalogId>)]
    pub parent_id: Option<CatalogId>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Rename {
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePolicy {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Cedar policy text.
    pub text: String,
}

/// Deprecate a schema version (`true`: no new Resource on it) or take
/// that back (`false`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSchema {
    pub deprecated: bool,
}

/// A change to a policy; what is absent stays as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdatePolicy {
    /// The new Cedar text, validated as a new policy's is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Refuse `STALE_REVISION` unless the policy is still at this version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_version: Option<i64>,
}

// ---- Infrastructure Manager -------------------------------------------------
//
// | method | path | body → response |
// |---|---|---|
// | GET, POST | `/schemas?type=` | [`CreateSchema`] → `ResourceSchema` |
// | GET | `/schemas/{id}` | → `ResourceSchema` |
// | GET, POST | `/cloud-accounts` | [`CreateCloudAccount`] → `CloudAccount` |
// | GET | `/cloud-accounts/{id-or-name}` | → [`CloudAccountDetail`] |
// | POST | `/cloud-accounts/{id-or-name}/links` | [`LinkCloudAccount`] → `AccountLink` |
// | GET, POST | `/resources?component=&environment=&status=` | [`CreateResource`] → `Resource` |
// | GET, PATCH, DELETE | `/resources/{id-or-name}` | [`ChangeResource`] → [`ResourceDetail`] / `Resource` |
// | POST | `/resources/{id}/approve`, `/resources/{id}/refuse` | [`Decide`] → `Resource` |
// | POST | `/resources/{id}/retry` | → `Resource` |
// | POST | `/resources/{id-or-name}/upgrade` | [`UpgradeResource`] → `Resource` |
// | GET | `/resources/{id-or-name}/export` | → [`ExportPackage`] |
// | GET | `/jobs?resource=&component=` | → `[Job]` |
// | GET | `/jobs/{id}`, `/jobs/{id}/log` | → `Job`, [`JobLog`] |

pub use heimdall_core::infra::{
    AccountAuth, AccountLink, CloudAccount, ImportTarget, Job, JobOperation, JobStatus, LinkScope, ModuleRef,
    OidcTarget, Provider, Resource, ResourceSchema, ResourceStatus, Revision, RevisionState, StateBackend,
};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSchema {
    #[serde(rename = "type")]
    pub type_name: String,
    pub input_schema: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schemas::ModuleRef>)]
    pub module: Option<ModuleRef>,
    #[serde(default)]
    pub requires_approval: bool,
    /// E.g. `24h`: check each provisioned Resource for drift that often
    /// (`heimdall_core::drift::parse_every`). Off when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_check_every: Option<String>,
}

/// Link an account: `scope` `organization` (no `scope_id`), or `domain` /
/// `system` with `scope_id` (id or name); `environment` is an id or name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkCloudAccount {
    #[schema(value_type = crate::schemas::LinkScope)]
    pub scope: LinkScope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_id: Option<String>,
    pub environment: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CloudAccountDetail {
    #[schema(value_type = crate::schemas::CloudAccount)]
    pub account: CloudAccount,
    #[schema(value_type = Vec<crate::schemas::AccountLink>)]
    pub links: Vec<AccountLink>,
}

/// Request a Resource. `component` and `environment` are ids or names;
/// `schema` is a schema id, or a type name meaning its newest version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateResource {
    pub component: String,
    pub schema: String,
    pub environment: String,
    pub name: String,
    pub input: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Objects created outside Heimdall to bring under management
    /// (`heimdall resource import`): the first apply is an `import` job.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::schemas::ImportTarget>)]
    pub imports: Vec<heimdall_core::infra::ImportTarget>,
}

/// Change a Resource's input (a new revision).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeResource {
    pub input: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

/// Move a Resource to another version of its schema's type (a new
/// revision): the new version's module runs under the existing state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpgradeResource {
    /// The version of the Resource's schema type to move to.
    pub schema_version: i64,
    /// The input under that version; left out, the current revision's
    /// input is kept (and the new version's defaults apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
    /// Move to an older version (refused without it: an older module may
    /// not read the state a newer one wrote).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_downgrade: bool,
}

/// Approve or refuse: the approver names the revision they read and, to
/// approve under a schema that requires approval, its plan's SHA-256 (at
/// least its first 12 hex digits).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Decide {
    pub revision: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ResourceDetail {
    #[schema(value_type = crate::schemas::Resource)]
    pub resource: Resource,
    #[schema(value_type = Vec<crate::schemas::Revision>)]
    pub revisions: Vec<Revision>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JobLog {
    pub content: String,
    pub truncated: bool,
}

// ---- Agents -------------------------------------------------------------------
//
// People (bearer token): `POST /v1/agents/registrations` ([`CreateRegistration`]
// → [`Registration`]), `GET /v1/agents`, `DELETE /v1/agents/{id-or-name}`.
// Enrollment (registration token in the body): `POST /v1/agents/enroll`.
// Agents, on the mTLS listener only: `POST /v1/agent/claim`,
// `POST /v1/agent/jobs/{id}/heartbeat|log|finish`.

pub use heimdall_core::export::{ExportFile, ExportPackage};
pub use heimdall_core::infra::Agent;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRegistration {
    pub name: String,
}

/// A one-time registration token, shown once.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Registration {
    pub name: String,
    pub token: String,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: time::OffsetDateTime,
    /// The installation CA's SHA-256: what the Agent pins to enroll
    /// (`heimdall-agent enroll --ca-sha256`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schemas::Sha256Hex>)]
    pub ca_sha256: Option<Sha256Hex>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("name", &self.name)
            .field("token", &"<redacted>")
            .field("ca_sha256", &self.ca_sha256)
            .finish()
    }
}

/// The Agent's certificate signing request; its private key never leaves it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Enroll {
    pub token: String,
    pub csr_pem: String,
}

impl std::fmt::Debug for Enroll {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Enroll").field("token", &"<redacted>").finish_non_exhaustive()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Enrolled {
    #[schema(value_type = crate::schemas::Agent)]
    pub agent: Agent,
    pub certificate_pem: String,
    pub ca_pem: String,
    /// Where the Agent dials: the API's mTLS listener.
    pub agent_api_url: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// How long to hold the request open when nothing is queued (≤ 30 s).
    pub wait_seconds: u32,
    /// How this Agent's Terraform names itself in a state lock (`Who`,
    /// `user@host`), kept with the attempt so that a later one can tell
    /// this attempt's lock from anyone else's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_holder: Option<String>,
}

/// A claimed job: the request, the lease that every later call must carry,
/// the state lock a dead earlier attempt left behind, if it reported one,
/// and the attempts of the Resource's jobs whose Agent died
/// (`heimdall_core::state_lock::takeover`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ClaimedJob {
    #[schema(value_type = crate::schemas::Job)]
    pub job: Job,
    #[schema(value_type = crate::schemas::LeaseId)]
    pub lease: heimdall_core::ids::LeaseId,
    #[serde(with = "time::serde::rfc3339")]
    pub lease_expires_at: time::OffsetDateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_lock_id: Option<String>,
    /// The attempts of this Resource's jobs whose Agent died (the most
    /// recent few), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::schemas::Attempt>)]
    pub dead_attempts: Vec<heimdall_core::state_lock::Attempt>,
    /// For a job of an `oidc` account: what the API obtained with the
    /// job's identity token. In memory only, on either side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schemas::JobCredentials>)]
    pub credentials: Option<JobCredentials>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Heartbeat {
    #[schema(value_type = crate::schemas::LeaseId)]
    pub lease: heimdall_core::ids::LeaseId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_lock_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LeaseExtended {
    #[serde(with = "time::serde::rfc3339")]
    pub lease_expires_at: time::OffsetDateTime,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LogChunk {
    #[schema(value_type = crate::schemas::LeaseId)]
    pub lease: heimdall_core::ids::LeaseId,
    pub chunk: String,
}

/// How an attempt ended. `code` is a stable error code for refusals the
/// Agent made itself (`MODULE_NOT_ALLOWED`, `TERRAFORM_CHECKSUM_MISMATCH`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "result", rename_all = "lowercase", deny_unknown_fields)]
pub enum FinishOutcome {
    Completed {
        outputs: serde_json::Value,
    },
    Failed {
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(value_type = Option<crate::schemas::ErrorCode>)]
        code: Option<heimdall_core::error::ErrorCode>,
        retryable: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FinishJob {
    #[schema(value_type = crate::schemas::LeaseId)]
    pub lease: heimdall_core::ids::LeaseId,
    pub outcome: FinishOutcome,
    /// The log's last lines not sent yet: appended before the attempt
    /// ends, saving the run one more round trip.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub log_tail: String,
}

// ---- Secret Manager (metadata only: the API never receives a value) ----------
//
// `POST/GET /v1/secrets`, `GET/PATCH /v1/secrets/{name}`;
// `POST/GET /v1/environments/{env}/agents` (assign an Agent to hold an
// environment's values; owner only).

pub use heimdall_core::program::{ProgramAllowance, RegisteredToken, Verb};
pub use heimdall_core::secrets::{Assignment, Secret, SecretVersion};
pub use heimdall_core::server_names::ApprovedName;

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSecret {
    pub name: String,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub secret_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<std::collections::BTreeMap<String, String>>,
    /// Component ids or names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Vec<String>>,
    /// Only the creator reaches a personal secret.
    #[serde(default)]
    pub personal: bool,
    /// For a personal secret: the SHA-256 of the creator's client
    /// certificate (one the API issued her); its key is bound to the secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schemas::Sha256Hex>)]
    pub certificate_sha256: Option<Sha256Hex>,
}

/// Fields left out are unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSecret {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub secret_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SecretDetail {
    #[schema(value_type = crate::schemas::Secret)]
    pub secret: Secret,
    #[schema(value_type = Vec<crate::schemas::SecretVersion>)]
    pub versions: Vec<SecretVersion>,
    /// What each Agent's last inventory lists of it (environments you may read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::schemas::Holding>)]
    pub holdings: Vec<heimdall_core::ports::Holding>,
    /// Holders of an environment that lack its current version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub behind: Vec<HolderBehind>,
    /// Where it is being (or was) deleted on its own (`secret delete --environment`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::schemas::EnvironmentDeletion>)]
    pub environment_deletions: Vec<heimdall_core::ports::EnvironmentDeletion>,
}

/// An Agent assigned an environment that lacks the current version of a
/// secret there (`heimdall_core::lagging::behind`): it fetches it from
/// another holder at its next syncs, and serves no older one as the latest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HolderBehind {
    #[schema(value_type = crate::schemas::AgentId)]
    pub agent_id: heimdall_core::ids::AgentId,
    pub agent: String,
    pub secret: String,
    /// The environment's name.
    pub environment: String,
    /// The current version it lacks.
    pub current: i64,
    /// The newest version it holds there (none: nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<i64>,
    /// Since when it could have had it.
    #[serde(with = "time::serde::rfc3339")]
    pub since: time::OffsetDateTime,
    /// Behind for longer than three sync periods (`secret.holder_lagging`).
    pub lagging: bool,
}

impl From<heimdall_core::standing::HolderBehind> for HolderBehind {
    fn from(b: heimdall_core::standing::HolderBehind) -> Self {
        let heimdall_core::standing::HolderBehind {
            agent_id,
            agent,
            secret,
            environment,
            current,
            held,
            since,
            lagging,
        } = b;
        Self { agent_id, agent, secret, environment, current, held, since, lagging }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignAgent {
    /// Agent id or name.
    pub agent: String,
}

// ---- Agent sync and the access log -------------------------------------------
//
// `POST /v1/agent/sync` (Agent channel, mTLS only): [`SyncRequest`] →
// [`SyncResponse`]. `GET /v1/secrets/{name}/access-log?environment=`
// (owner, admin; a personal secret: only its owner) → `[AccessLogEntry]`.
//
// Nothing here has a place for a secret's value: the sync reports *that* a
// value was read or is held, never what it is.

pub use heimdall_core::access::AccessRecord;

/// A secret being deleted in one environment (by id, as Agents key it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeletedInEnvironment {
    pub secret: String,
    #[schema(value_type = crate::schemas::CatalogId)]
    pub environment: CatalogId,
    /// The highest version numbered there when the deletion started: the
    /// Agent deletes up to it and refuses a late write up to it (`None`
    /// from an older API: every version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_version: Option<i64>,
}

/// One version an Agent's store holds (or holds as a tombstone).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InventoryItem {
    pub secret: String,
    pub environment: String,
    pub version: i64,
    pub deactivated: bool,
}

impl InventoryItem {
    /// As `heimdall_core::current_delta` reads a report, on the API and on
    /// the Agent alike; `None` for an environment that is not an id.
    pub fn reported(&self) -> Option<heimdall_core::current_delta::Reported<'_>> {
        Some(heimdall_core::current_delta::Reported {
            secret: &self.secret,
            environment: self.environment.parse().ok()?,
            version: self.version,
            deactivated: self.deactivated,
        })
    }
}

/// What an Agent sends on each sync: its new access records and what its
/// store holds. Unknown fields are refused, so a value has nowhere to go.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncRequest {
    /// The epoch of the Agent's numbering in its store (absent from Agents
    /// older than epochs: `legacy`). `records[].seq` count within it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<String>,
    /// The number `records` follow in the epoch: how far the API last said
    /// it held it. An API that holds less (its database was restored) takes
    /// none of them and says how far it holds, for the Agent to send again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_after: Option<i64>,
    #[serde(default)]
    #[schema(value_type = Vec<crate::schemas::AccessRecord>)]
    pub records: Vec<AccessRecord>,
    #[serde(default)]
    pub inventory: Vec<InventoryItem>,
    /// Where people reach this Agent's local API, e.g. `https://agent-1.internal:7482`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_url: Option<String>,
    /// Ids of program tokens revoked on this Agent that the API still
    /// holds as live (a `token revoke` the API did not hear): it revokes
    /// them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revoked_program_tokens: Vec<String>,
    /// The API's `at` of the last answer this Agent applied before it took
    /// `inventory`: a deletion started before it was in it, so the
    /// inventory says whether the Agent still holds a copy
    /// (`heimdall_core::deletion::is_done`).
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub applied_through: Option<time::OffsetDateTime>,
    /// What the Agent found wrong on its side since its last sync: each
    /// becomes an audit event.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alerts: Vec<AgentAlert>,
    /// The generation the Agent's list of secrets is complete through (the
    /// last answer's `secrets_generation`): the answer carries only what
    /// changed after it (`heimdall_core::sync_delta`). Absent: the whole list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets_known: Option<i64>,
    /// The Agent takes its own newest value as current wherever the answer
    /// says nothing: the answer lists only the current versions that differ
    /// from `inventory` (`heimdall_core::current_delta`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub current_omits_held: bool,
}

/// Something an Agent found wrong on its own side, for the audit feed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AgentAlert {
    /// One of its sealed files (`policy-snapshot`, `program-tokens`) is
    /// older than one it already wrote: copied back from a backup, and
    /// refused.
    SealedFileRolledBack { file: String, generation: u64, expected_at_least: u64 },
}

impl AgentAlert {
    /// The audit event's action.
    pub fn action(&self) -> heimdall_core::audit::AuditAction {
        match self {
            AgentAlert::SealedFileRolledBack { .. } => {
                heimdall_core::audit::AuditAction::AgentSealedFileRolledBack
            }
        }
    }

    /// What raising it records: the alert's fields, and which Agent (by id
    /// in the target, by name for people).
    pub fn event(&self, agent: &heimdall_core::infra::Agent) -> heimdall_core::audit::EventPlan {
        let mut detail = serde_json::to_value(self).unwrap_or_default();
        detail["agent"] = serde_json::json!(agent.name);
        heimdall_core::audit::EventPlan {
            action: self.action(),
            target: format!("agent:{}", agent.id),
            detail,
        }
    }

    /// Its fields are short: what a sync may carry of them.
    pub fn check(&self) -> Result<(), ApiError> {
        match self {
            AgentAlert::SealedFileRolledBack { file, .. } => {
                heimdall_core::names::validate_text("alerts[].file", file, 64)
            }
        }
    }
}

/// A member as an Agent needs to know them: to decide reads. A read is
/// served only to a client certificate whose SHA-256 is listed here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SyncMember {
    #[schema(value_type = crate::schemas::MemberId)]
    pub id: heimdall_core::ids::MemberId,
    pub email: String,
    #[schema(value_type = crate::schemas::Role)]
    pub role: Role,
    /// SHA-256 (hex) of each unexpired, unrevoked client certificate.
    #[serde(default)]
    #[schema(value_type = Vec<crate::schemas::Sha256Hex>)]
    pub certificates: Vec<Sha256Hex>,
}

/// A secret as an Agent needs to know it: its id and Components (for
/// policies) and, for a personal secret, its owner and the keys bound to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SyncSecret {
    #[schema(value_type = crate::schemas::SecretId)]
    pub id: heimdall_core::ids::SecretId,
    pub name: String,
    /// Kept for Agents older than `owner_id`: for a personal secret it is
    /// `member:<id>`, which matches no email, so such an Agent serves it to
    /// nobody rather than to whoever holds the email.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub personal_owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schemas::MemberId>)]
    pub owner_id: Option<heimdall_core::ids::MemberId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::schemas::Sha256Hex>)]
    pub owner_keys: Vec<Sha256Hex>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::schemas::CatalogId>)]
    pub components: Vec<CatalogId>,
}

/// A domain, system or component and its parent: what a policy scoped to
/// the catalog needs to match a secret linked to a Component.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SyncCatalogEntry {
    #[schema(value_type = crate::schemas::CatalogId)]
    pub id: CatalogId,
    #[schema(value_type = crate::schemas::CatalogKind)]
    pub kind: CatalogKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schemas::CatalogId>)]
    pub parent_id: Option<CatalogId>,
}

/// An environment's id and name (the store keys by id; people and
/// policies speak names).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SyncEnvironment {
    #[schema(value_type = crate::schemas::CatalogId)]
    pub id: heimdall_core::ids::CatalogId,
    pub name: String,
}

/// A version every Agent must replace with a tombstone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DeactivatedVersion {
    pub secret: String,
    pub environment: String,
    pub version: i64,
}

/// What the API answers a sync with: who may do what, which Agents hold
/// which environment, which versions are deactivated, and the highest
/// sequence number it has stored for this Agent (records up to it may be
/// pruned).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SyncResponse {
    #[schema(value_type = crate::schemas::OrgId)]
    pub org_id: heimdall_core::ids::OrgId,
    /// The API's clock when it answered.
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
    pub members: Vec<SyncMember>,
    /// Every secret not deleted or, when `secrets_since` is set, those
    /// changed after that generation.
    pub secrets: Vec<SyncSecret>,
    /// The generation `secrets` is complete through, for the Agent's next
    /// `secrets_known` (`None` from an API older than deltas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets_generation: Option<i64>,
    /// Set when `secrets` is a delta: the generation it follows, which is
    /// the Agent's `secrets_known`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets_since: Option<i64>,
    /// With a delta: the secrets deleted after `secrets_since`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::schemas::SecretId>)]
    pub removed_secrets: Vec<heimdall_core::ids::SecretId>,
    pub environments: Vec<SyncEnvironment>,
    /// Domains, systems and components.
    #[serde(default)]
    pub catalog: Vec<SyncCatalogEntry>,
    #[schema(value_type = Vec<crate::schemas::Policy>)]
    pub policies: Vec<Policy>,
    #[schema(value_type = Vec<crate::schemas::Assignment>)]
    pub assignments: Vec<heimdall_core::secrets::Assignment>,
    pub deactivated: Vec<DeactivatedVersion>,
    /// The current version of each secret in the environments this Agent
    /// holds (`heimdall_core::current`): it never serves an older one as
    /// the latest. Empty from an API older than this list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::schemas::CurrentVersion>)]
    pub current_versions: Vec<heimdall_core::current::CurrentVersion>,
    /// Set when the request asked for it: `current_versions` lists only
    /// those that differ from the newest value the request's inventory
    /// reported, and `no_current` where it reported a value and nothing is
    /// current; the Agent restores the whole list from its report
    /// (`heimdall_core::current_delta::restored`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub current_omits_held: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::schemas::NoCurrent>)]
    pub no_current: Vec<heimdall_core::current_delta::NoCurrent>,
    /// Secrets being deleted (or deleted): the Agent deletes every value
    /// and tombstone it holds of them, and its next inventory says so.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted_secrets: Vec<String>,
    /// Secrets being deleted in one environment: the Agent deletes what it
    /// holds of each there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted_in_environments: Vec<DeletedInEnvironment>,
    /// Environments this Agent was unassigned from: it deletes what it
    /// holds there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::schemas::CatalogId>)]
    pub released_environments: Vec<CatalogId>,
    pub received_through: i64,
    /// SHA-256 of this Agent's unrevoked local API certificates: one it
    /// serves with that is not here was revoked, and it gets a new one.
    /// (`None` from an API older than this list.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<crate::schemas::Sha256Hex>>)]
    pub local_api_certificates: Option<Vec<Sha256Hex>>,
    /// The ids of this Agent's program tokens that are registered with the
    /// API and live: the Agent accepts no other token, whatever its token
    /// list says (a list copied back from a backup revives nothing).
    /// `None` from an API older than registration: no token is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_program_tokens: Option<Vec<String>>,
    /// Those local-API certificates, as a statement the CA signed
    /// (`heimdall_core::local_api_status`): the Agent shows it to program
    /// clients, which pin what it lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_api_status: Option<String>,
    /// Current versions this Agent lacks, each with the holders to fetch
    /// it from and the CA's grant (`heimdall_core::transfer`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transfers: Vec<Transfer>,
    /// Values this Agent holds that a newer current version replaced and
    /// whose overlap is over (`heimdall_core::retention`): it erases them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::schemas::Superseded>)]
    pub superseded: Vec<heimdall_core::retention::Superseded>,
}

/// A current version to fetch from another holder's local API
/// (`POST /v1/transfers` there, with this Agent's certificate).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Transfer {
    /// The secret's name as stored.
    pub secret: String,
    #[schema(value_type = crate::schemas::CatalogId)]
    pub environment_id: CatalogId,
    pub version: i64,
    /// Holders that have it, to ask in order.
    pub sources: Vec<AgentLocation>,
    /// The CA-signed grant naming this Agent (`ht1.…`).
    pub grant: String,
}

/// `POST /v1/transfers` on an Agent's local API, from another Agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchTransfer {
    pub grant: String,
}

pub use heimdall_core::access::AccessLogEntry;

// ---- Writing and reading values -----------------------------------------------
//
// People-facing API (token): `POST /v1/secrets/{name}/versions`
// ([`CreateVersion`] → [`CreatedVersion`]: a number and one signed grant per
// Agent that holds the environment), `POST /v1/secrets/{name}/deactivate`
// ([`DeactivateVersion`]), `GET /v1/secrets/{name}/holders?environment=`
// (→ `[AgentLocation]`), `POST /v1/me/certificate` ([`CertificateRequest`]
// → [`IssuedCertificate`]). Agent channel (mTLS):
// `POST /v1/agent/server-certificate` ([`ServerCertificateRequest`] →
// [`IssuedCertificate`]).
//
// The Agent's local API (HTTPS, a person's client certificate):
// `PUT /v1/secrets/{name}/value` ([`WriteValue`]) and
// `GET /v1/secrets/{name}/value?environment=E[&version=N]` (→ [`ValueAnswer`]).
// These two are the only wire types with a place for a value, and the API
// serves neither.

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateVersion {
    /// Environment id or name.
    pub environment: String,
    /// For a personal secret created before keys were bound: the SHA-256
    /// of the writer's client certificate, whose key is then bound to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schemas::Sha256Hex>)]
    pub certificate_sha256: Option<Sha256Hex>,
    /// How long the version this one replaces stays readable in the
    /// Agents' stores: `0` (the default) or a period such as `1h`, at most
    /// `30d`. After it the older version is erased everywhere and answers
    /// `410 VERSION_SUPERSEDED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_previous: Option<String>,
}

/// An Agent that holds an environment, and where people reach it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AgentLocation {
    #[schema(value_type = crate::schemas::AgentId)]
    pub agent_id: heimdall_core::ids::AgentId,
    pub agent: String,
    /// The local API's URL as the Agent last reported it; `None` until it has synced.
    #[serde(default)]
    pub url: Option<String>,
    /// SHA-256 of each unrevoked, unexpired certificate of its local API:
    /// a client accepts that Agent only with one of these (none listed:
    /// none accepted), and only if it names `urn:heimdall:agent:<agent_id>`.
    /// `None` from an API older than this list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<crate::schemas::Sha256Hex>>)]
    pub certificates: Option<Vec<Sha256Hex>>,
}

/// Where to send the value of a new version, with the grant to send along.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VersionHolder {
    #[serde(flatten)]
    pub location: AgentLocation,
    #[schema(value_type = String)]
    pub grant: heimdall_core::Redacted<String>,
}

impl std::fmt::Debug for VersionHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionHolder").field("location", &self.location).field("grant", &self.grant).finish()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CreatedVersion {
    pub secret: String,
    pub environment: String,
    #[schema(value_type = crate::schemas::CatalogId)]
    pub environment_id: heimdall_core::ids::CatalogId,
    pub version: i64,
    #[serde(with = "time::serde::rfc3339")]
    pub grant_expires_at: time::OffsetDateTime,
    pub holders: Vec<VersionHolder>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeactivateVersion {
    pub environment: String,
    pub version: i64,
}

/// A certificate signing request (PEM). Only its public key is used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CertificateRequest {
    pub csr: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerCertificateRequest {
    pub csr: String,
    /// DNS names or IP addresses the Agent's local API answers on.
    pub names: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct IssuedCertificate {
    /// The certificate (PEM).
    pub certificate: String,
    /// The installation CA (PEM), to trust Agents' local APIs.
    pub ca: String,
    #[schema(value_type = crate::schemas::Sha256Hex)]
    pub sha256: Sha256Hex,
    #[serde(with = "time::serde::rfc3339")]
    pub not_after: time::OffsetDateTime,
}

/// A value and the grant to store it (Agent local API only).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteValue {
    /// Environment id or name.
    pub environment: String,
    pub version: i64,
    #[schema(value_type = String)]
    pub grant: heimdall_core::Redacted<String>,
    #[schema(value_type = String)]
    pub value: heimdall_core::Redacted<String>,
}

impl std::fmt::Debug for WriteValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteValue")
            .field("environment", &self.environment)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// A value, as the Agent serves it after recording the read.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ValueAnswer {
    pub name: String,
    pub environment: String,
    pub version: i64,
    #[schema(value_type = String)]
    pub value: heimdall_core::Redacted<String>,
}

impl std::fmt::Debug for ValueAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueAnswer")
            .field("name", &self.name)
            .field("environment", &self.environment)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// A program's write (`PUT /v1/secrets/{name}/value` on an Agent's local
/// API with a program token that may write): no version and no grant,
/// the Agent asks the API for both on the program's behalf.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramValue {
    /// Environment id or name.
    pub environment: String,
    #[schema(value_type = String)]
    pub value: heimdall_core::Redacted<String>,
}

impl std::fmt::Debug for ProgramValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramValue").field("environment", &self.environment).finish_non_exhaustive()
    }
}

/// A program as the Agent that holds its token vouches for it to the API:
/// by its token's id, with its name for records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramCaller {
    pub token_id: String,
    pub name: String,
}

/// `POST /v1/agent/program-tokens`: the Agent registers a token it made
/// (its id and scope, never the token). Tokens that write or delete must
/// fit inside an owner's allowance for this Agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterProgramToken {
    pub id: String,
    pub name: String,
    /// The environment's name or id; the answer names it by id.
    pub environment: String,
    pub secrets: Vec<String>,
    #[schema(value_type = Vec<crate::schemas::Verb>)]
    pub verbs: Vec<heimdall_core::program::Verb>,
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub expires_at: Option<time::OffsetDateTime>,
}

/// `POST /v1/agents/{agent}/program-allowances` (owner): what that
/// Agent's programs may write or delete in one environment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AllowPrograms {
    /// The environment's name or id.
    pub environment: String,
    /// A secret name or glob (`billing-*`).
    pub secret: String,
    /// `write`, `delete` or both.
    #[schema(value_type = Vec<crate::schemas::Verb>)]
    pub verbs: Vec<heimdall_core::program::Verb>,
}

/// `POST /v1/agent/program-versions`: the next version of a secret in an
/// environment (both by id), for a program whose token this Agent accepted. The
/// API numbers it and signs a grant for this Agent and program only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramVersionRequest {
    pub program: ProgramCaller,
    #[schema(value_type = crate::schemas::SecretId)]
    pub secret_id: heimdall_core::ids::SecretId,
    #[schema(value_type = crate::schemas::CatalogId)]
    pub environment_id: heimdall_core::ids::CatalogId,
}

/// The answer to a [`ProgramVersionRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramVersion {
    pub secret: String,
    pub environment: String,
    #[schema(value_type = crate::schemas::CatalogId)]
    pub environment_id: heimdall_core::ids::CatalogId,
    pub version: i64,
    #[schema(value_type = String)]
    pub grant: heimdall_core::Redacted<String>,
}

/// `POST /v1/agent/program-deletions`: delete a secret in an environment
/// (both by id; every version, on every Agent), for a program whose token this Agent
/// accepted; as `heimdall secret delete NAME --environment E` does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramDeletionRequest {
    pub program: ProgramCaller,
    #[schema(value_type = crate::schemas::SecretId)]
    pub secret_id: heimdall_core::ids::SecretId,
    #[schema(value_type = crate::schemas::CatalogId)]
    pub environment_id: heimdall_core::ids::CatalogId,
}

/// The answer to a [`ProgramDeletionRequest`], and to the program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramDeletion {
    pub secret: String,
    pub environment: String,
    /// `deleting`: every holder drops the values on its next sync.
    #[schema(value_type = crate::schemas::Lifecycle)]
    pub status: heimdall_core::deletion::Lifecycle,
}

/// `POST /v1/values` on an Agent's local API: the latest version of each
/// of `secrets` in `environment`, all or none (what `heimdall run` asks).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadValues {
    pub environment: String,
    pub secrets: Vec<String>,
}

/// `POST /v1/values/watch` on an Agent's local API: wait (up to about
/// 25 s) until the versions of `secrets` in `environment` differ from
/// `since` (a fingerprint from an earlier answer); no value is sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchValues {
    pub environment: String,
    pub secrets: Vec<String>,
    #[serde(default)]
    pub since: Option<String>,
}

/// The answer of a [`WatchValues`]: the current fingerprint, and whether
/// it differs from `since`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WatchAnswer {
    pub fingerprint: String,
    pub changed: bool,
}

/// The values of a [`ReadValues`], in its order, served only after every
/// read was recorded in one commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ValuesAnswer {
    pub values: Vec<ValueAnswer>,
}

// ---- What counts as a value in each request body (see `crate::body`) ---------

macro_rules! bodies {
    ($policy:expr => $($t:ty),+ $(,)?) => {
        $(impl Body for $t { const VALUES: ValuePolicy = $policy; })+
    };
}

bodies!(ValuePolicy::Metadata =>
    AddMember, ChangeRole, CreateToken, CreateChannel, UpdateChannel, ForgetAgent, CreateCatalogEntry, Rename, CreatePolicy, UpdatePolicy, UpdateSchema, CreateCloudAccount, UpdateCloudAccount, UpdateDatabase,
    LinkCloudAccount, Decide, CreateRegistration, Enroll, CertificateRequest, AllowPrograms, AllowName,
    RedeemSignIn,
);
// The secret routes: closed. Anything they do not define is where a value would go.
bodies!(ValuePolicy::Closed =>
    CreateSecret, UpdateSecret, CreateVersion, DeactivateVersion, AssignAgent, ReadValues, WatchValues,
    ProgramVersionRequest, ProgramDeletionRequest, CreateDatabase, CreateServiceUser,
);
// Resource inputs and schemas are judged by their JSON Schema, not by key names.
bodies!(ValuePolicy::SchemaGoverned(&["input"]) => CreateResource, ChangeResource, UpgradeResource);
bodies!(ValuePolicy::SchemaGoverned(&["input_schema", "defaults"]) => CreateSchema);
// The Agent channel: machines, not people, write these.
bodies!(ValuePolicy::NotScanned =>
    Claim, Heartbeat, LogChunk, FinishJob, SyncRequest, ServerCertificateRequest, DatabaseTaskReport,
    RegisterProgramToken, FetchTransfer,
);
// The Agent's local API write: the one body with a place for a value.
bodies!(ValuePolicy::Carries("value") => WriteValue, ProgramValue);

// ---- Databases and service users -------------------------------------------------

/// `POST /v1/databases`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateDatabase {
    pub name: String,
    #[schema(value_type = crate::schemas::Engine)]
    pub engine: heimdall_core::dbusers::Engine,
    pub host: String,
    pub port: u16,
    pub database: String,
    /// The environment's name or id: its Agents run the statements.
    pub environment: String,
    /// The secret (in that environment) holding `{"username","password"}`
    /// of the administrative login. The caller must be able to read it
    /// there: the Agent uses it on her behalf.
    pub admin_secret: String,
    /// How the admin connection is secured; by default `disable` on the
    /// Agent's own machine and `verify-full` anywhere else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schemas::TlsMode>)]
    pub tls: Option<heimdall_core::dbusers::TlsMode>,
    /// CA certificates (PEM) the server's certificate may chain to,
    /// besides the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_pem: Option<String>,
}

/// `POST /v1/databases/{database}/users`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateServiceUser {
    pub name: String,
    /// `30d`, `12h`, `90m`.
    pub rotate_every: String,
    pub grace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grants: Option<String>,
}

/// `POST /v1/agent/database-tasks/claim` answers this (or 204 when nothing
/// is due): one task of one service user, leased to the asking Agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DatabaseTask {
    #[schema(value_type = crate::schemas::ServiceUserId)]
    pub user_id: heimdall_core::ids::ServiceUserId,
    #[schema(value_type = crate::schemas::LeaseId)]
    pub lease_id: heimdall_core::ids::LeaseId,
    #[schema(value_type = crate::schemas::TaskKind)]
    pub kind: heimdall_core::dbusers::TaskKind,
    /// The version a creation or rotation stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    /// The version whose login a retirement locks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retiring_version: Option<i64>,
    /// The version applications get now (`None` before the creation): an
    /// Agent resumes from it when another store rotated last
    /// (`dbusers::resume_from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_version: Option<i64>,
    #[schema(value_type = crate::schemas::OrgId)]
    pub org_id: heimdall_core::ids::OrgId,
    pub user: String,
    pub secret: String,
    #[schema(value_type = crate::schemas::CatalogId)]
    pub environment_id: CatalogId,
    pub environment: String,
    pub database: String,
    #[schema(value_type = crate::schemas::Engine)]
    pub engine: heimdall_core::dbusers::Engine,
    pub host: String,
    pub port: u16,
    pub database_name: String,
    pub admin_secret: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grants: Option<String>,
    /// How the admin connection is secured (`dbusers::check_tls`, decided
    /// again by the Agent).
    #[serde(default)]
    #[schema(value_type = crate::schemas::TlsMode)]
    pub tls: heimdall_core::dbusers::TlsMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_pem: Option<String>,
    /// The member the admin secret is used for (the user's creator; for a
    /// drop, whoever deleted it): the Agent decides the use as her read
    /// before it connects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schemas::OnBehalfOf>)]
    pub on_behalf_of: Option<heimdall_core::on_behalf::OnBehalfOf>,
}

impl DatabaseTask {
    /// The `kind` of task on `user` of `database`, leased as `lease_id`,
    /// storing `version` (`dbusers::task_version`).
    pub fn leased(
        user: heimdall_core::dbusers::ServiceUser,
        database: heimdall_core::dbusers::Database,
        (lease_id, kind): (heimdall_core::ids::LeaseId, heimdall_core::dbusers::TaskKind),
        version: Option<i64>,
    ) -> Self {
        let on_behalf_of = user.on_behalf_of();
        Self {
            user_id: user.id,
            lease_id,
            kind,
            version,
            retiring_version: user.retiring_version,
            current_version: user.current_version,
            org_id: database.org_id,
            user: user.name,
            secret: user.secret,
            environment_id: database.environment_id,
            environment: database.environment,
            database: database.name,
            engine: database.engine,
            host: database.host,
            port: database.port,
            database_name: database.database,
            admin_secret: database.admin_secret,
            on_behalf_of,
            grants: user.grants,
            tls: database.tls,
            ca_pem: database.ca_pem,
        }
    }
}

/// How a [`DatabaseTask`] ended, as the Agent reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum DatabaseTaskOutcome {
    /// Done: for a creation or rotation, `login` is the login the new
    /// version names; for a retirement, the login locked; for a drop, the
    /// logins dropped.
    Done { login: String },
    /// Nothing changed for readers; the reason has no password in it.
    Failed { reason: String },
}

/// `POST /v1/agent/database-tasks/{user}/report`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DatabaseTaskReport {
    #[schema(value_type = crate::schemas::LeaseId)]
    pub lease_id: heimdall_core::ids::LeaseId,
    pub outcome: DatabaseTaskOutcome,
}
