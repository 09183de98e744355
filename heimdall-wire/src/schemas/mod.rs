//! The OpenAPI schemas of `heimdall-core`'s types. Core keeps the
//! domain and the rules and knows nothing of OpenAPI; the API answers with
//! core's values, and each type here describes one of them under the same
//! name: its fields, its doc and its serde attributes, copied. Never
//! built: only read by `utoipa`. `same_fields` holds each to its core
//! type's fields and variants at compile time; the OpenAPI tests and
//! schemathesis check answers against them.

use serde::Serialize;
use uuid::Uuid;

mod access;
mod accounts;
mod at_risk;
mod credentials;
mod current;
mod current_delta;
mod dbusers;
mod deletion;
mod domain;
mod error;
mod export;
mod grant;
mod import;
mod infra;
mod notify;
mod on_behalf;
mod plan;
mod ports;
mod program;
mod queue;
mod retention;
mod secrets;
mod server_names;
mod state_lock;

pub use access::*;
pub use accounts::*;
pub use at_risk::*;
pub use credentials::*;
pub use current::*;
pub use current_delta::*;
pub use dbusers::*;
pub use deletion::*;
pub use domain::*;
pub use error::*;
pub use export::*;
pub use grant::*;
pub use import::*;
pub use infra::*;
pub use notify::*;
pub use on_behalf::*;
pub use plan::*;
pub use ports::*;
pub use program::*;
pub use queue::*;
pub use retention::*;
pub use secrets::*;
pub use server_names::*;
pub use state_lock::*;

mod same_fields;

/// An id: a UUID on the wire.
macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Serialize, utoipa::ToSchema)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);
    };
}

/// A closed set of lower-case words. `tt`, not `literal`: `utoipa` reads
/// a rename only as a bare string token.
macro_rules! string_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:tt),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Serialize, utoipa::ToSchema)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }
    };
}

macro_rules! error_codes {
    ($($variant:ident = $status:literal),+ $(,)?) => {
        /// A stable, machine-readable error code.
        #[derive(Debug, Serialize, utoipa::ToSchema)]
        #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
        pub enum ErrorCode {
            $($variant),+
        }
    };
}

/// A SHA-256 digest as 64 lower-case hex digits.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(value_type = String, pattern = "^[0-9a-fA-F]{64}$")]
#[serde(transparent)]
pub struct Sha256Hex(pub String);

id_type!(
    /// An organization: the tenant everything else belongs to.
    OrgId
);

id_type!(
    /// A person in an organization.
    MemberId
);

id_type!(
    /// A domain, system, component or environment (one hierarchy, one id space).
    CatalogId
);

id_type!(
    /// A stored Cedar policy.
    PolicyId
);

id_type!(
    /// An API token (its id, never its secret).
    TokenId
);

id_type!(
    /// An entry in the organization's audit feed.
    EventId
);

id_type!(
    /// One version of a resource schema (each version has its own id).
    SchemaId
);

id_type!(
    /// A Resource requested from a schema.
    ResourceId
);

id_type!(
    /// A unit of work for an Agent: apply, destroy or import.
    JobId
);

id_type!(
    /// A cloud account (where Terraform runs and keeps its state).
    CloudAccountId
);

id_type!(
    /// One claim of a job by an Agent. Heartbeats and completion must carry
    /// the current lease; a holder whose lease expired is fenced out.
    LeaseId
);

id_type!(
    /// An enrolled Agent (named by its client certificate).
    AgentId
);

id_type!(
    /// A one-time Agent registration token (its id, never the token).
    RegistrationId
);

id_type!(
    /// A secret (its metadata; the value lives only in Agents).
    SecretId
);

id_type!(
    /// A database whose service users the Agent creates and rotates.
    DatabaseId
);

id_type!(
    /// A database service user (its logins alternate; its password lives in an Agent).
    ServiceUserId
);

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

string_enum!(
    /// What a link attaches an account to.
    LinkScope {
        Organization = "organization",
        Domain = "domain",
        System = "system",
    }
);

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

error_codes! {
    ValueNotAccepted = 400,
    SchemaViolation = 422,
    SelfApproval = 403,
    StaleRevision = 409,
    Forbidden = 403,
    Unauthenticated = 401,
    NotFound = 404,
    ValueMayPersist = 409,
    VersionDeactivated = 410,
    NoCloudAccount = 422,
    ModuleNotAllowed = 422,
    TerraformChecksumMismatch = 422,
    PolicyStale = 503,
    AuditUnavailable = 503,
    // Heimdall's own additions, same rules.
    BadRequest = 400,
    InvalidInput = 422,
    InvalidPolicy = 422,
    AlreadyExists = 409,
    NotEmpty = 409,
    LastOwner = 409,
    AlreadyBootstrapped = 409,
    Conflict = 409,
    PayloadTooLarge = 413,
    Unavailable = 503,
    Internal = 500,
    GrantInvalid = 403,
    NoAgent = 409,
    AgentRevoked = 403,
    ImportWouldChange = 409,
    StalePlan = 409,
    TooManyRequests = 429,
    // An Agent lacks the current version (or the one asked for): ask the next holder.
    VersionNotHeld = 503,
    // A version replaced by a newer one, erased after its writer's overlap.
    VersionSuperseded = 410,
}
