//! The OpenAPI schemas of `heimdall_core::dbusers`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;
use time::OffsetDateTime;

/// `PATCH /v1/databases/{database}`: where the database is, how its admin
/// connection is secured, which secret holds the admin login; what is
/// absent stays. The engine, database name and environment never change
/// (its users and their secrets live there).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateDatabase {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsMode>,
    /// CA certificates (PEM); an empty string removes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_pem: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_secret: Option<String>,
}

/// The database engines a service user can live in.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    Postgres,
    Mariadb,
}

/// What the secret's value holds (JSON): which login is current, with its
/// password and where to connect.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    pub engine: Engine,
    pub username: String,
    pub password: String,
    pub host: String,
    pub port: u16,
    pub database: String,
}

/// A database the Agent manages service users in. The API keeps where it
/// is and the name of the secret with its administrative credential
/// (`{"username","password"}`, written with `secret set`); never a password.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Database {
    pub id: DatabaseId,
    pub org_id: OrgId,
    pub name: String,
    pub engine: Engine,
    pub host: String,
    pub port: u16,
    /// The database (schema, on MariaDB) applications connect to.
    pub database: String,
    pub environment_id: CatalogId,
    pub environment: String,
    pub admin_secret: String,
    /// How the Agent's admin connection proves the server ([`check_tls`]).
    #[serde(default)]
    pub tls: TlsMode,
    /// The CA certificates (PEM) the server's certificate may chain to,
    /// besides the system's roots (a managed database's own CA bundle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_pem: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
}

/// How the Agent's admin connection to a database is secured: it carries
/// the administrator's password, so it goes only to a server that proved
/// who it is, or to this machine.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TlsMode {
    /// TLS, with the server's certificate checked against the system's
    /// roots (and the database's `ca_pem`) and its name against the host.
    VerifyFull,
    /// No TLS: only for a database on the Agent's own machine (a loopback
    /// address or `localhost`), where nothing crosses a network.
    Disable,
}

/// A service user and its schedule, as the API keeps it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ServiceUser {
    pub id: ServiceUserId,
    pub org_id: OrgId,
    pub database_id: DatabaseId,
    pub database: String,
    pub name: String,
    /// The secret that holds the current credentials ([`secret_name`]).
    pub secret: String,
    pub secret_id: SecretId,
    pub rotate_every_seconds: i64,
    pub grace_seconds: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grants: Option<String>,
    /// The version applications get; `None` until the Agent created the user.
    pub current_version: Option<i64>,
    /// The version a rotation in flight stores (numbered once, kept across
    /// retries and crashes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_version: Option<i64>,
    /// The previous version, whose login works until `grace_until`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retiring_version: Option<i64>,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub grace_until: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub last_rotated_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub next_rotation_at: OffsetDateTime,
    /// `database user rotate` asked for a rotation before its time.
    #[serde(default)]
    pub rotate_requested: bool,
    /// After a failure, nothing is tried again before this.
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<OffsetDateTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
    /// Who created it, by member id: the admin secret is used for this
    /// user as her read (`crate::on_behalf::may_use`), at every task.
    /// `None` for a user created before it was recorded by someone who is
    /// no longer a member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by_id: Option<MemberId>,
    /// `database user delete` was asked: nothing rotates any more, and
    /// from this time an Agent drops both logins ([`request_deletion`]).
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub drop_after: Option<OffsetDateTime>,
    /// Who asked for the deletion, by member id: the drop uses the admin
    /// secret as her read, not the creator's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_by_id: Option<MemberId>,
    /// The claim an Agent works under, if any (never shown).
    #[serde(skip)]
    pub lease_id: Option<LeaseId>,
}

/// What the API offers an Agent for a user.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// Make the roles and the first password.
    Create,
    /// Put a new password on the other login.
    Rotate,
    /// The grace is over: lock the previous login.
    Retire,
    /// The user is deleted: drop both logins and the group role.
    Drop,
}

/// Where a rotation stands, as the Agent records it (sealed, in its store)
/// before each step that changes something.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(tag = "phase", rename_all = "snake_case", deny_unknown_fields)]
pub enum Phase {
    /// Nothing in flight: `version` is stored, naming login `current`.
    Idle { current: usize, version: i64 },
    /// Version `version`'s password for login `next` is committed here;
    /// the database may or may not have it yet.
    Pending { next: usize, version: i64, password: String },
    /// The database has it; the version is still to be stored.
    Altered { next: usize, version: i64, password: String },
}
