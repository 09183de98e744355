//! Database service users whose passwords the Agent creates and rotates,
//! with a grace period (the alternating-users scheme): `app` owns the
//! grants and cannot log in; `app_a` and `app_b` are login roles that are
//! members of it. A rotation sets a new password on the inactive login,
//! stores it as the secret's new version, keeps the previous login working
//! until the grace ends, then gives that login a password nobody keeps
//! (and, on PostgreSQL, `NOLOGIN`).
//!
//! Who does what:
//! - The API keeps the schedule ([`ServiceUser`]) and decides what is due
//!   ([`due`]); one holding Agent claims it with a lease, so two Agents
//!   never work on the same user at once.
//! - The Agent generates the password, records the rotation's [`Phase`]
//!   in its store *before* it changes the database, runs the statements
//!   made here, and reports. On restart [`resume`] says what is left: a
//!   crash never leaves a password only the database knows.
//!
//! This module is the rules only: names, the stored value's format, the
//! schedule, the steps and their SQL. Generating passwords (randomness),
//! talking to a database and storing versions are the adapters'.

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use crate::error::{ApiError, ErrorCode};
use crate::ids::{CatalogId, DatabaseId, OrgId, SecretId, ServiceUserId};
use crate::redacted::Redacted;

pub mod agent_tasks;
mod handover;
mod plans;
mod removal;
pub mod service;
mod tasks;
pub use handover::{held_phase, may_claim, resume_from};
pub use plans::{
    create_user, delete_database, delete_user, register, request_rotation, updated, DatabasePlan,
    NewDatabase, NewUser, UserDeletion, UserPlan,
};
pub use removal::{drop_statements, request_deletion, status, UserStatus};
pub use tasks::{claimable, report, task_version, version_numbered, ReportPlan, TaskOutcome, TaskVersion};

/// `PATCH /v1/databases/{database}`: where the database is, how its admin
/// connection is secured, which secret holds the admin login; what is
/// absent stays. The engine, database name and environment never change
/// (its users and their secrets live there).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateDatabase {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<crate::dbusers::TlsMode>,
    /// CA certificates (PEM); an empty string removes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_pem: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_secret: Option<String>,
}

/// The database engines a service user can live in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    Postgres,
    Mariadb,
}

/// The two login roles of a service user, in the order they take turns.
pub fn logins(user: &str) -> [String; 2] {
    [format!("{user}_a"), format!("{user}_b")]
}

/// The secret that holds a service user's current credentials:
/// `db-<database>-<user>` (a user's name has no `-`, so the name is never
/// ambiguous).
pub fn secret_name(database: &str, user: &str) -> String {
    format!("db-{database}-{user}")
}

/// Where the Agent keeps a user's rotation [`Phase`] in its store: an
/// address no secret can have (`:` is not allowed in secret names), never
/// reported in its inventory nor served.
pub const PHASE_PREFIX: &str = "heimdall:dbuser:";

/// The store address (secret part) of `user`'s rotation phases.
pub fn phase_name(user: crate::ids::ServiceUserId) -> String {
    format!("{PHASE_PREFIX}{user}")
}

/// A role name Heimdall creates: lowercase letters, digits and `_`,
/// starting with a letter, at most 30 characters (so `_a` fits within
/// every engine's limit); anything else is refused before any SQL is made.
pub fn check_user_name(user: &str) -> Result<(), ApiError> {
    let ok = user.len() <= 30
        && user.starts_with(|c: char| c.is_ascii_lowercase())
        && user.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_input(
            "a service user's name is 1-30 lowercase letters, digits and _, starting with a letter",
        ))
    }
}

/// What the secret's value holds (JSON): which login is current, with its
/// password and where to connect.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    pub engine: Engine,
    pub username: String,
    pub password: Redacted<String>,
    pub host: String,
    pub port: u16,
    pub database: String,
}

/// A password the Agent generates: the length and alphabet it must have,
/// so that it needs no quoting in any engine's SQL.
pub const PASSWORD_LEN: usize = 40;

/// Whether `password` is one the Agent generated (alphanumeric, [`PASSWORD_LEN`]).
pub fn is_generated_password(password: &str) -> bool {
    password.len() == PASSWORD_LEN && password.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// `30d`, `12h`, `90m`, `30s`: a rotation period or a grace period.
pub fn parse_period(text: &str) -> Result<Duration, ApiError> {
    let bad =
        || ApiError::invalid_input(format!("{text:?} is not a period: a number and s, m, h or d (e.g. 30d)"));
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: i64 = number.parse().map_err(|_| bad())?;
    let period = match unit {
        "s" => Duration::seconds(number),
        "m" => Duration::minutes(number),
        "h" => Duration::hours(number),
        "d" => Duration::days(number),
        _ => return Err(bad()),
    };
    if number <= 0 || period > Duration::days(3660) {
        return Err(bad());
    }
    Ok(period)
}

/// When a user rotated at `last`, every `every`, is due again.
pub fn next_rotation_after(every: Duration, last: OffsetDateTime) -> OffsetDateTime {
    last + every
}

/// A user's schedule: rotate every `every`, the old login working for
/// `grace` after each rotation. The grace must be shorter than the period,
/// or two rotations would overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub every: Duration,
    pub grace: Duration,
}

impl Schedule {
    pub fn new(every: Duration, grace: Duration) -> Result<Self, ApiError> {
        if grace >= every {
            return Err(ApiError::invalid_input("--grace must be shorter than --rotate-every"));
        }
        Ok(Self { every, grace })
    }

    /// When the next rotation is due after one at `last` (now, if never).
    pub fn next_rotation(&self, last: Option<OffsetDateTime>, now: OffsetDateTime) -> OffsetDateTime {
        last.map_or(now, |last| next_rotation_after(self.every, last))
    }
}

/// A database the Agent manages service users in. The API keeps where it
/// is and the name of the secret with its administrative credential
/// (`{"username","password"}`, written with `secret set`); never a password.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TlsMode {
    /// TLS, with the server's certificate checked against the system's
    /// roots (and the database's `ca_pem`) and its name against the host.
    #[default]
    VerifyFull,
    /// No TLS: only for a database on the Agent's own machine (a loopback
    /// address or `localhost`), where nothing crosses a network.
    Disable,
}

impl TlsMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TlsMode::VerifyFull => "verify-full",
            TlsMode::Disable => "disable",
        }
    }

    /// What a database is registered with when nothing is said: no TLS on
    /// the Agent's own machine, verified TLS anywhere else.
    pub fn default_for(host: &str) -> Self {
        if is_loopback(host) {
            TlsMode::Disable
        } else {
            TlsMode::VerifyFull
        }
    }
}

/// `localhost`, or a literal loopback address (`127.0.0.0/8`, `::1`). A
/// name that merely resolves to one is not: what it resolves to can change.
pub fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether the admin connection to `host` may use `tls`: cleartext only to
/// the Agent's own machine. The API decides it when a database is
/// registered, the Agent again before it sends a password: a password
/// sent in cleartext goes to whoever answers at that address.
pub fn check_tls(host: &str, tls: TlsMode) -> Result<(), ApiError> {
    match tls {
        TlsMode::VerifyFull => Ok(()),
        TlsMode::Disable if is_loopback(host) => Ok(()),
        TlsMode::Disable => Err(ApiError::invalid_input(format!(
            "the admin connection to {host} would carry the administrator's password in cleartext; \
             only a database on the Agent's own machine (localhost, 127.0.0.1, ::1) goes without TLS: \
             use --tls verify-full (with --ca-file for a private CA)"
        ))),
    }
}

/// A registered database after a change (`None`: nothing changes), with
/// the fields that change, checked as at registration. The CA bundle's
/// own check (it parses) and the admin secret's (the caller may use it
/// there) are the adapter's, before this.
pub fn update(
    current: &Database,
    change: &crate::dbusers::UpdateDatabase,
) -> Result<Option<(Database, Vec<&'static str>)>, ApiError> {
    let mut next = current.clone();
    if let Some(host) = &change.host {
        check_host(host)?;
        next.host = host.clone();
    }
    if let Some(port) = change.port {
        if port == 0 {
            return Err(ApiError::invalid_input("--port must be 1-65535"));
        }
        next.port = port;
    }
    if let Some(tls) = change.tls {
        next.tls = tls;
    }
    check_tls(&next.host, next.tls)?;
    if let Some(pem) = &change.ca_pem {
        next.ca_pem = Some(pem.clone()).filter(|p| !p.is_empty());
    }
    if let Some(secret) = &change.admin_secret {
        next.admin_secret = secret.clone();
    }
    let mut changed = Vec::new();
    for (name, differs) in [
        ("admin_secret", next.admin_secret != current.admin_secret),
        ("ca_pem", next.ca_pem != current.ca_pem),
        ("host", next.host != current.host),
        ("port", next.port != current.port),
        ("tls", next.tls != current.tls),
    ] {
        if differs {
            changed.push(name);
        }
    }
    Ok((!changed.is_empty()).then_some((next, changed)))
}

/// A database goes only once it has no service users: their logins would
/// stay on the server with no one to rotate or retire them.
pub fn check_delete(database: &str, users: u64) -> Result<(), ApiError> {
    if users == 0 {
        return Ok(());
    }
    let users = if users == 1 { "1 service user".to_owned() } else { format!("{users} service users") };
    Err(ApiError::new(
        crate::ErrorCode::NotEmpty,
        format!(
            "database {database} has {users}: delete them first (`heimdall database user delete`), \
             or their logins stay on the server with no one to rotate them"
        ),
    ))
}

/// Most bytes of a database's CA bundle.
pub const MAX_CA_PEM: usize = 256 * 1024;

/// A host name or address: letters, digits, `.`, `-`, `:` (IPv6), at most 253.
pub fn check_host(host: &str) -> Result<(), ApiError> {
    let ok = !host.is_empty()
        && host.len() <= 253
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_input("--host is a host name or an IP address"))
    }
}

/// A database (or MariaDB schema) name: what [`check_user_name`] allows, up to 63.
pub fn check_database_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_input("--database is letters, digits and _, starting with a letter"))
    }
}

/// A service user and its schedule, as the API keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    pub created_by_id: Option<crate::ids::MemberId>,
    /// `database user delete` was asked: nothing rotates any more, and
    /// from this time an Agent drops both logins ([`request_deletion`]).
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub drop_after: Option<OffsetDateTime>,
    /// Who asked for the deletion, by member id: the drop uses the admin
    /// secret as her read, not the creator's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_by_id: Option<crate::ids::MemberId>,
    /// The claim an Agent works under, if any (never shown).
    #[serde(skip)]
    pub lease_id: Option<crate::ids::LeaseId>,
}

/// Who a new service user is: named `name` in `database`, its secret, its schedule.
#[derive(Clone, Debug)]
pub struct NewServiceUser<'a> {
    pub id: ServiceUserId,
    pub database: &'a Database,
    pub name: String,
    pub secret_id: SecretId,
    pub schedule: Schedule,
    pub grants: Option<String>,
}

impl ServiceUser {
    /// A user not created yet: its Agent creates it at its next claim.
    pub fn new(
        new: NewServiceUser<'_>,
        now: OffsetDateTime,
        created_by: &crate::on_behalf::OnBehalfOf,
    ) -> Self {
        let NewServiceUser { id, database, name, secret_id, schedule, grants } = new;
        Self {
            id,
            org_id: database.org_id,
            database_id: database.id,
            database: database.name.clone(),
            secret: secret_name(&database.name, &name),
            name,
            secret_id,
            rotate_every_seconds: schedule.every.whole_seconds(),
            grace_seconds: schedule.grace.whole_seconds(),
            grants,
            current_version: None,
            pending_version: None,
            retiring_version: None,
            grace_until: None,
            last_rotated_at: None,
            next_rotation_at: now,
            rotate_requested: false,
            retry_at: None,
            last_error: None,
            created_at: now,
            created_by: created_by.email.clone(),
            created_by_id: Some(created_by.member_id),
            drop_after: None,
            deleted_by: None,
            deleted_by_id: None,
            lease_id: None,
        }
    }

    /// The member the admin secret is used for, for this user's tasks:
    /// whoever asked for its deletion once she has, else its creator.
    pub fn on_behalf_of(&self) -> Option<crate::on_behalf::OnBehalfOf> {
        let (id, email) = match self.drop_after {
            Some(_) => (self.deleted_by_id, self.deleted_by.clone().unwrap_or_default()),
            None => (self.created_by_id, self.created_by.clone()),
        };
        id.map(|member_id| crate::on_behalf::OnBehalfOf { member_id, email })
    }

    pub fn schedule(&self) -> Schedule {
        Schedule {
            every: Duration::seconds(self.rotate_every_seconds),
            grace: Duration::seconds(self.grace_seconds),
        }
    }
}

/// How long a failed task waits before it is offered again.
pub const RETRY_AFTER: Duration = Duration::minutes(1);

/// How long a claim of a user's task lasts; a crashed Agent's claim runs
/// out and the task is offered again.
pub const TASK_LEASE: Duration = Duration::seconds(60);

/// What the API offers an Agent for a user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// What is due for `user` at `now`, if anything. A rotation waits for the
/// previous login's grace to end and to be retired: rotating onto it
/// earlier would cut off applications that have not moved yet.
pub fn due(user: &ServiceUser, now: OffsetDateTime) -> Option<TaskKind> {
    if user.retry_at.is_some_and(|at| at > now) {
        return None;
    }
    // Being deleted: nothing else is done, and the drop waits for its time.
    if let Some(at) = user.drop_after {
        return (at <= now).then_some(TaskKind::Drop);
    }
    if user.current_version.is_none() {
        return Some(TaskKind::Create);
    }
    if user.pending_version.is_some() {
        return Some(TaskKind::Rotate);
    }
    match user.grace_until {
        Some(until) if until <= now => return Some(TaskKind::Retire),
        Some(_) => return None,
        None => {}
    }
    (user.rotate_requested || user.next_rotation_at <= now).then_some(TaskKind::Rotate)
}

/// Why `database user rotate` cannot start a rotation now, if it cannot.
pub fn may_rotate_now(user: &ServiceUser, now: OffsetDateTime) -> Result<(), ApiError> {
    if user.drop_after.is_some() {
        return Err(ApiError::new(ErrorCode::Conflict, "the user is being deleted; it rotates no more"));
    }
    if user.current_version.is_none() {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            "the user is not created yet; its Agent creates it first",
        ));
    }
    if user.grace_until.is_some_and(|until| until > now) {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            "the previous login is still in its grace period; rotate once it ends",
        ));
    }
    Ok(())
}

/// Where a rotation stands, as the Agent records it (sealed, in its store)
/// before each step that changes something.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case", deny_unknown_fields)]
pub enum Phase {
    /// Nothing in flight: `version` is stored, naming login `current`.
    Idle { current: usize, version: i64 },
    /// Version `version`'s password for login `next` is committed here;
    /// the database may or may not have it yet.
    Pending { next: usize, version: i64, password: Redacted<String> },
    /// The database has it; the version is still to be stored.
    Altered { next: usize, version: i64, password: Redacted<String> },
}

/// The task as the Agent received it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    Create { version: i64 },
    Rotate { version: i64 },
    Retire,
    Drop,
}

/// One step of a task, in order; each is idempotent, so a crash between
/// two means doing the rest again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Record [`Phase::Pending`] with a fresh password for `next`, before
    /// the database is changed.
    RecordPending { next: usize, version: i64 },
    /// Make the group role and both logins if they are missing, and grant.
    Prepare,
    /// Set the pending password on login `login` (it works from now).
    AlterLogin { login: usize },
    /// Record [`Phase::Altered`].
    RecordAltered,
    /// Store the version (applications get it from now) and record
    /// [`Phase::Idle`].
    Activate { version: i64 },
    /// Give login `login` a password nobody keeps (and no login).
    Retire { login: usize },
    /// Drop both logins and the group role ([`drop_statements`]), then
    /// forget the phases recorded for the user.
    Drop,
}

/// The steps that carry out `task` from the phase the Agent recorded last
/// (`None`: nothing recorded). A rotation in flight is always rolled
/// forward: its password is already durable in the Agent's store.
pub fn plan(task: Task, phase: Option<&Phase>) -> Result<Vec<Step>, ApiError> {
    let conflict = |m: &str| Err(ApiError::new(ErrorCode::Conflict, m.to_owned()));
    let fresh = |next: usize, version: i64, create: bool| {
        let mut steps = vec![Step::RecordPending { next, version }];
        steps.extend(create.then_some(Step::Prepare));
        steps.extend([Step::AlterLogin { login: next }, Step::RecordAltered, Step::Activate { version }]);
        steps
    };
    let in_flight = |at: i64, version: i64, create: bool, altered: bool, next: usize| {
        if at != version {
            return conflict("the Agent's store holds another rotation in flight for this user");
        }
        Ok(if altered {
            vec![Step::Activate { version }]
        } else {
            let mut steps: Vec<Step> = create.then_some(Step::Prepare).into_iter().collect();
            steps.extend([Step::AlterLogin { login: next }, Step::RecordAltered, Step::Activate { version }]);
            steps
        })
    };
    match (task, phase) {
        // Whatever was in flight: both logins go, so no password recorded matters.
        (Task::Drop, _) => Ok(vec![Step::Drop]),
        (Task::Create { version } | Task::Rotate { version }, Some(Phase::Idle { version: at, .. }))
            if *at == version =>
        {
            Ok(Vec::new()) // done before; only the report was lost
        }
        (Task::Create { version }, None) => Ok(fresh(0, version, true)),
        (Task::Create { .. }, Some(Phase::Idle { .. })) => {
            conflict("the Agent's store already holds this user's credentials")
        }
        (Task::Rotate { .. }, None) => {
            conflict("this Agent's store has no record of the user: it was created through another store")
        }
        (Task::Rotate { version }, Some(Phase::Idle { current, version: at })) => {
            if *at > version {
                return conflict("the Agent's store holds a newer version than the one to rotate to");
            }
            Ok(fresh(1 - (current & 1), version, false))
        }
        (Task::Create { version }, Some(Phase::Pending { next, version: at, .. })) => {
            in_flight(*at, version, true, false, *next)
        }
        (Task::Rotate { version }, Some(Phase::Pending { next, version: at, .. })) => {
            in_flight(*at, version, false, false, *next)
        }
        (
            Task::Create { version } | Task::Rotate { version },
            Some(Phase::Altered { next, version: at, .. }),
        ) => in_flight(*at, version, false, true, *next),
        (Task::Retire, Some(Phase::Idle { current, .. })) => {
            Ok(vec![Step::Retire { login: 1 - (current & 1) }])
        }
        (Task::Retire, Some(_)) => {
            conflict("a rotation is in flight; it is finished before a login is retired")
        }
        (Task::Retire, None) => conflict("this Agent's store has no record of the user"),
    }
}

/// One SQL statement to run with the admin credential. Its text can hold
/// a password: it is never logged, and `Debug` shows only its kind.
pub struct Statement {
    pub kind: &'static str,
    pub sql: Redacted<String>,
}

impl std::fmt::Debug for Statement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Statement({})", self.kind)
    }
}

fn statement(kind: &'static str, sql: String) -> Statement {
    Statement { kind, sql: Redacted::new(sql) }
}

/// Makes the group role and its two logins where they are missing (the
/// logins without a usable password: [`alter_statement`] gives one its
/// first), then grants `grants` to the group. Every statement can run
/// again: a crashed creation is finished by running them all once more.
/// Names were checked by [`check_user_name`], so none needs quoting.
pub fn create_statements(
    engine: Engine,
    user: &str,
    grants: Option<&str>,
) -> Result<Vec<Statement>, ApiError> {
    check_user_name(user)?;
    let [a, b] = logins(user);
    let pg_role = |name: &str, rest: &str| {
        format!(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{name}') THEN CREATE ROLE \"{name}\" {rest}; END IF; END $$"
        )
    };
    let mut out = match engine {
        Engine::Postgres => vec![
            statement("create group role", pg_role(user, "NOLOGIN")),
            statement("create login", pg_role(&a, &format!("NOLOGIN IN ROLE \"{user}\""))),
            statement("create login", pg_role(&b, &format!("NOLOGIN IN ROLE \"{user}\""))),
        ],
        Engine::Mariadb => vec![
            statement("create group role", format!("CREATE ROLE IF NOT EXISTS `{user}`")),
            statement("create login", format!("CREATE USER IF NOT EXISTS `{a}`@'%' ACCOUNT LOCK")),
            statement("create login", format!("CREATE USER IF NOT EXISTS `{b}`@'%' ACCOUNT LOCK")),
            statement("grant group role", format!("GRANT `{user}` TO `{a}`@'%', `{b}`@'%'")),
            statement("default role", format!("SET DEFAULT ROLE `{user}` FOR `{a}`@'%'")),
            statement("default role", format!("SET DEFAULT ROLE `{user}` FOR `{b}`@'%'")),
        ],
    };
    if let Some(grants) = grants {
        out.push(statement("grant", grant_statement(engine, user, grants)?));
    }
    Ok(out)
}

/// Checks `--grant` before anything is stored.
pub fn check_grants(engine: Engine, grants: &str) -> Result<(), ApiError> {
    grant_statement(engine, "x", grants).map(|_| ())
}

/// `GRANT <privileges ON objects> TO <group>`: the privileges text is the
/// operator's (`SELECT, INSERT ON ALL TABLES IN SCHEMA public`); it may not
/// carry a statement separator or a quote.
fn grant_statement(engine: Engine, user: &str, grants: &str) -> Result<String, ApiError> {
    let upper = grants.to_ascii_uppercase();
    let shaped = grants.len() <= 512 && upper.contains(" ON ") && !grants.contains(['\n', '\r']);
    if !shaped
        || grants.contains([';', '\'', '"', '`', '\\', '$'])
        || grants.contains("--")
        || grants.contains("/*")
    {
        return Err(ApiError::invalid_input("--grant is privileges ON objects, without quotes, $ or ;"));
    }
    Ok(match engine {
        Engine::Postgres => format!("GRANT {grants} TO \"{user}\""),
        Engine::Mariadb => format!("GRANT {grants} TO `{user}`"),
    })
}

/// Sets `password` on login `login` of `user` and lets it log in.
pub fn alter_statement(
    engine: Engine,
    user: &str,
    login: usize,
    password: &str,
) -> Result<Statement, ApiError> {
    check_user_name(user)?;
    if !is_generated_password(password) {
        return Err(ApiError::invalid_input("passwords are generated by the Agent"));
    }
    let name = &logins(user)[login & 1];
    Ok(match engine {
        Engine::Postgres => {
            statement("set password", format!("ALTER ROLE \"{name}\" LOGIN PASSWORD '{password}'"))
        }
        Engine::Mariadb => statement(
            "set password",
            format!("ALTER USER `{name}`@'%' IDENTIFIED BY '{password}' ACCOUNT UNLOCK"),
        ),
    })
}

/// Retires login `login` of `user`: a password nobody keeps, and no login.
pub fn retire_statement(
    engine: Engine,
    user: &str,
    login: usize,
    unused: &str,
) -> Result<Statement, ApiError> {
    check_user_name(user)?;
    if !is_generated_password(unused) {
        return Err(ApiError::invalid_input("passwords are generated by the Agent"));
    }
    let name = &logins(user)[login & 1];
    Ok(match engine {
        Engine::Postgres => {
            statement("retire login", format!("ALTER ROLE \"{name}\" NOLOGIN PASSWORD '{unused}'"))
        }
        Engine::Mariadb => statement(
            "retire login",
            format!("ALTER USER `{name}`@'%' IDENTIFIED BY '{unused}' ACCOUNT LOCK"),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_checked_as_a_registration_and_names_what_changes() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let current = database(now);
        let change = crate::dbusers::UpdateDatabase {
            host: Some("db2.internal".into()),
            port: Some(6432),
            ..Default::default()
        };
        let (next, changed) = update(&current, &change).unwrap().unwrap();
        assert_eq!((next.host.as_str(), next.port, changed), ("db2.internal", 6432, vec!["host", "port"]));
        let cleartext = crate::dbusers::UpdateDatabase { tls: Some(TlsMode::Disable), ..Default::default() };
        assert_eq!(update(&current, &cleartext).unwrap_err().code, crate::ErrorCode::InvalidInput);
        let local = crate::dbusers::UpdateDatabase {
            host: Some("127.0.0.1".into()),
            tls: Some(TlsMode::Disable),
            ..Default::default()
        };
        assert!(update(&current, &local).is_ok(), "no TLS on the Agent's own machine");
        let same = crate::dbusers::UpdateDatabase { port: Some(5432), ..Default::default() };
        assert_eq!(update(&current, &same).unwrap(), None);
        assert!(check_delete("orders", 0).is_ok());
        assert!(check_delete("orders", 2).unwrap_err().message.contains("2 service users"));
    }

    const PW: &str = "Abcdefghij0123456789Abcdefghij0123456789";
    const UNUSED: &str = "Zyxwvutsrq9876543210Zyxwvutsrq9876543210";

    fn database(now: OffsetDateTime) -> Database {
        Database {
            id: DatabaseId::from_uuid(uuid::Uuid::from_u128(3)),
            org_id: OrgId::from_uuid(uuid::Uuid::from_u128(2)),
            name: "orders".into(),
            engine: Engine::Postgres,
            host: "db.internal".into(),
            port: 5432,
            database: "orders".into(),
            environment_id: CatalogId::from_uuid(uuid::Uuid::from_u128(5)),
            environment: "prod".into(),
            admin_secret: "orders-admin".into(),
            tls: TlsMode::VerifyFull,
            ca_pem: None,
            created_at: now,
            created_by: "o@example.com".into(),
        }
    }

    pub(super) fn user(now: OffsetDateTime) -> ServiceUser {
        let database = database(now);
        let new = NewServiceUser {
            id: ServiceUserId::from_uuid(uuid::Uuid::from_u128(1)),
            database: &database,
            name: "app".into(),
            secret_id: SecretId::from_uuid(uuid::Uuid::from_u128(4)),
            schedule: Schedule::new(Duration::hours(1), Duration::minutes(1)).unwrap(),
            grants: None,
        };
        let by = crate::on_behalf::OnBehalfOf {
            member_id: crate::ids::MemberId::from_uuid(uuid::Uuid::from_u128(9)),
            email: "o@example.com".into(),
        };
        let user = ServiceUser::new(new, now, &by);
        assert_eq!(user.on_behalf_of(), Some(by));
        assert_eq!(user.secret, "db-orders-app");
        user
    }

    #[test]
    fn cleartext_goes_only_to_this_machine() {
        for host in ["127.0.0.1", "127.3.2.1", "::1", "localhost", "LOCALHOST"] {
            assert!(check_tls(host, TlsMode::Disable).is_ok(), "{host}");
            assert_eq!(TlsMode::default_for(host), TlsMode::Disable, "{host}");
        }
        // A name that resolves to loopback today may not tomorrow; a
        // private address is still a network.
        for host in ["db.internal", "localhost.attacker.example", "10.0.0.5", "0.0.0.0", "::ffff:127.0.0.1"] {
            let err = check_tls(host, TlsMode::Disable).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidInput, "{host}");
            assert!(err.message.contains("verify-full"), "{}", err.message);
            assert_eq!(TlsMode::default_for(host), TlsMode::VerifyFull, "{host}");
            assert!(check_tls(host, TlsMode::VerifyFull).is_ok());
        }
    }

    #[test]
    fn names_and_periods() {
        assert_eq!(logins("app"), ["app_a", "app_b"]);
        assert_eq!(secret_name("orders", "app"), "db-orders-app");
        assert!(crate::names::validate_name("secret", &secret_name("orders-eu", "app_1")).is_ok());
        assert!(
            phase_name(ServiceUserId::from_uuid(uuid::Uuid::from_u128(1))).contains(':'),
            "no secret can be named like a phase"
        );
        for bad in ["", "App", "1app", "app-x", "a\"; DROP", &"a".repeat(31)] {
            assert!(check_user_name(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_period("30d").unwrap(), Duration::days(30));
        assert_eq!(parse_period("90m").unwrap(), Duration::minutes(90));
        assert_eq!(parse_period("45s").unwrap(), Duration::seconds(45));
        for bad in ["", "0d", "30", "d", "1y", "-1h"] {
            assert!(parse_period(bad).is_err(), "{bad}");
        }
        assert!(Schedule::new(Duration::hours(1), Duration::hours(1)).is_err());
        let s = Schedule::new(Duration::days(30), Duration::hours(1)).unwrap();
        let t = OffsetDateTime::UNIX_EPOCH;
        assert_eq!(s.next_rotation(None, t), t);
        assert_eq!(s.next_rotation(Some(t), t), t + Duration::days(30));
        assert!(check_host("db.internal").is_ok() && check_host("a b").is_err());
        assert!(check_database_name("orders").is_ok() && check_database_name("o;drop").is_err());
    }

    #[test]
    fn the_schedule_creates_rotates_waits_out_the_grace_then_retires() {
        let t0 = OffsetDateTime::UNIX_EPOCH + Duration::days(1);
        let mut u = user(t0);
        assert_eq!(due(&u, t0), Some(TaskKind::Create));
        u.current_version = Some(1);
        u.next_rotation_at = t0 + Duration::hours(1);
        assert_eq!(due(&u, t0), None);
        assert!(may_rotate_now(&u, t0).is_ok());
        u.rotate_requested = true;
        assert_eq!(due(&u, t0), Some(TaskKind::Rotate), "rotate now");
        u.rotate_requested = false;
        assert_eq!(due(&u, t0 + Duration::hours(1)), Some(TaskKind::Rotate), "on schedule");
        // Rotated: the old login works for the grace, and nothing else is due.
        u.current_version = Some(2);
        u.retiring_version = Some(1);
        u.grace_until = Some(t0 + Duration::minutes(61));
        u.next_rotation_at = t0 + Duration::hours(2);
        assert_eq!(due(&u, t0 + Duration::minutes(60)), None);
        assert!(may_rotate_now(&u, t0 + Duration::minutes(60)).is_err());
        assert_eq!(due(&u, t0 + Duration::minutes(61)), Some(TaskKind::Retire));
        // A failure waits before it is offered again; a rotation in flight comes back until done.
        u.grace_until = None;
        u.pending_version = Some(3);
        u.retry_at = Some(t0 + Duration::minutes(62));
        assert_eq!(due(&u, t0 + Duration::minutes(61)), None);
        assert_eq!(due(&u, t0 + Duration::minutes(62)), Some(TaskKind::Rotate));
    }

    fn pw() -> Redacted<String> {
        Redacted::new(PW.into())
    }

    #[test]
    fn a_rotation_alternates_logins_and_is_rolled_forward_after_a_crash_at_every_step() {
        // Creation: a fresh password is recorded before the roles are made.
        let create = plan(Task::Create { version: 1 }, None).unwrap();
        assert_eq!(
            create,
            [
                Step::RecordPending { next: 0, version: 1 },
                Step::Prepare,
                Step::AlterLogin { login: 0 },
                Step::RecordAltered,
                Step::Activate { version: 1 }
            ]
        );
        // Killed after the store commit: the same password is rolled forward.
        let pending = Phase::Pending { next: 0, version: 1, password: pw() };
        assert_eq!(plan(Task::Create { version: 1 }, Some(&pending)).unwrap()[0], Step::Prepare);
        // Killed after ALTER: only the activation is left.
        let altered = Phase::Altered { next: 1, version: 2, password: pw() };
        assert_eq!(
            plan(Task::Rotate { version: 2 }, Some(&altered)).unwrap(),
            [Step::Activate { version: 2 }]
        );
        // Killed after storing, before the report: nothing left but reporting.
        let idle = Phase::Idle { current: 0, version: 1 };
        assert!(plan(Task::Create { version: 1 }, Some(&idle)).unwrap().is_empty());
        // The next rotation goes to the other login, and the one after back.
        let rotate = plan(Task::Rotate { version: 2 }, Some(&idle)).unwrap();
        assert_eq!(rotate[0], Step::RecordPending { next: 1, version: 2 });
        assert!(!rotate.contains(&Step::Prepare));
        let idle_b = Phase::Idle { current: 1, version: 2 };
        assert_eq!(
            plan(Task::Rotate { version: 3 }, Some(&idle_b)).unwrap()[0],
            Step::RecordPending { next: 0, version: 3 }
        );
        assert_eq!(plan(Task::Retire, Some(&idle_b)).unwrap(), [Step::Retire { login: 0 }]);
        // What cannot be squared is refused, never guessed.
        assert!(plan(Task::Rotate { version: 3 }, Some(&altered)).is_err(), "another rotation in flight");
        assert!(plan(Task::Retire, Some(&pending)).is_err());
        assert!(plan(Task::Rotate { version: 2 }, None).is_err());
        assert!(plan(Task::Rotate { version: 1 }, Some(&idle_b)).is_err(), "older than stored");
    }

    #[test]
    fn statements_quote_nothing_they_were_not_checked_for_and_hide_passwords() {
        let made = create_statements(Engine::Postgres, "app", Some("SELECT ON ALL TABLES IN SCHEMA public"))
            .unwrap();
        assert_eq!(made.len(), 4);
        assert!(made[1].sql.expose().contains("CREATE ROLE \"app_a\" NOLOGIN IN ROLE \"app\""));
        assert_eq!(made[3].sql.expose(), "GRANT SELECT ON ALL TABLES IN SCHEMA public TO \"app\"");
        let maria = create_statements(Engine::Mariadb, "app", None).unwrap();
        assert!(maria[2].sql.expose().ends_with("ACCOUNT LOCK"));
        for bad in ["SELECT ON t; DROP TABLE t", "SELECT ON 't'", "SELECT", "SELECT ON t\nDROP"] {
            assert!(create_statements(Engine::Postgres, "app", Some(bad)).is_err(), "{bad}");
        }
        let alter = alter_statement(Engine::Postgres, "app", 1, PW).unwrap();
        assert_eq!(alter.sql.expose(), &format!("ALTER ROLE \"app_b\" LOGIN PASSWORD '{PW}'"));
        assert!(!format!("{alter:?}").contains(PW), "Debug hides the SQL");
        assert!(alter_statement(Engine::Postgres, "app", 1, "short").is_err());
        let retire = retire_statement(Engine::Mariadb, "app", 0, UNUSED).unwrap();
        assert_eq!(
            retire.sql.expose(),
            &format!("ALTER USER `app_a`@'%' IDENTIFIED BY '{UNUSED}' ACCOUNT LOCK")
        );
    }

    #[test]
    fn the_stored_value_is_documented_json() {
        let value = Credential {
            engine: Engine::Postgres,
            username: "app_b".into(),
            password: Redacted::new(PW.into()),
            host: "127.0.0.1".into(),
            port: 5432,
            database: "orders".into(),
        };
        let json = serde_json::to_value(&value).unwrap();
        assert_eq!(json["username"], "app_b");
        assert_eq!(json["password"], PW, "the value itself carries the password");
        assert!(!format!("{value:?}").contains(PW));
        let back: Credential = serde_json::from_value(json).unwrap();
        assert_eq!(back, value);
        let phase = Phase::Pending { next: 1, version: 2, password: pw() };
        assert!(!format!("{phase:?}").contains(PW));
        let back: Phase = serde_json::from_str(&serde_json::to_string(&phase).unwrap()).unwrap();
        assert_eq!(back, phase);
    }
}
