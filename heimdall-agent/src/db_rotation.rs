//! Database service users' passwords: created and rotated here, never sent
//! to the API (`heimdall_core::dbusers` has the rules).
//!
//! The loop claims what the API says is due for a database in an
//! environment this Agent holds, then carries it out with
//! [`dbusers::plan`]: it records each [`Phase`] in its own store (sealed
//! under the master key) *before* the step that changes the database, so
//! after a crash anywhere the next claim rolls the rotation forward with
//! the password it recorded. Applications keep the previous login until
//! the new version is stored; the API retires that login after the grace.
//! A deleted user's logins are dropped here too, once its grace is over,
//! with the admin secret used as a read by whoever deleted it.

use std::sync::Arc;
use std::time::Duration;

use heimdall_core::clock::Clock;
use heimdall_core::dbusers::{self, Credential, Engine, Phase, Statement, Step, Task, TaskKind, TlsMode};
use heimdall_core::ids::AgentId;
use heimdall_core::Redacted;
use heimdall_wire::{DatabaseTask, DatabaseTaskOutcome, DatabaseTaskReport};
use sqlx::Connection;
use tokio::sync::watch;
use zeroize::Zeroizing;

use crate::access::SharedPolicy;
use crate::channel::Channel;
use crate::values::crypto::ValueAddress;
use crate::values::recorder::Recorder;
use crate::values::store::{ServedRead, ValueStoreError, Vault};

/// The longest a connection or one statement may take: a database that
/// hangs fails the task (it is offered again) instead of stalling the loop.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(15);

/// Where this Agent's reads of admin credentials say they came from.
const SOURCE: &str = "database-rotation";

/// How long a task waits for the sync it asked for.
const REFRESH_WAIT: Duration = Duration::from_secs(5);

/// Why a database task failed: reported to the API as the user's
/// `last_error`, which every reader of the user sees, so no variant holds
/// a password or the admin login.
#[derive(Debug, thiserror::Error)]
pub enum RotationError {
    /// A rule of `heimdall_core::dbusers` refused the task or its phase.
    #[error("{}", .0.message)]
    Refused(heimdall_core::ApiError),
    /// The admin secret may not be used on the task's behalf.
    #[error("{}: {}", .0.code, .0.message)]
    NotAllowed(heimdall_core::ApiError),
    #[error("cannot connect to {database} at {host}:{port}: {why}")]
    Connect { database: String, host: String, port: u16, why: String },
    #[error("connecting to {database} at {host}:{port} timed out")]
    ConnectTimeout { database: String, host: String, port: u16 },
    /// A statement the database refused (its kind, never its text).
    #[error("{kind} failed: {why}")]
    Statement { kind: String, why: String },
    #[error("{kind} timed out")]
    StatementTimeout { kind: String },
    /// This Agent's store: what was being done, and its error.
    #[error("cannot {what}: {source}")]
    Store {
        what: &'static str,
        #[source]
        source: ValueStoreError,
    },
    #[error("cannot read the admin secret {secret}: {source}")]
    AdminSecret {
        secret: String,
        #[source]
        source: ValueStoreError,
    },
    #[error(
        "the admin secret {secret} has no value on this Agent in {environment}; `heimdall secret set` it"
    )]
    NoAdminValue { secret: String, environment: String },
    #[error("the read of the admin secret could not be recorded, so it was not used: {0}")]
    NotRecorded(String),
    /// Two rotations of one user at once: the other recorded first.
    #[error("another rotation of this user recorded a phase meanwhile")]
    Raced,
    /// What is recorded, held or sent does not have the shape it must.
    #[error("{0}")]
    Malformed(String),
}

/// What rotating takes: the store, the recorder every read goes through,
/// the policies the admin secret's use is decided with, and the channel to
/// the API.
#[derive(Debug)]
pub struct Rotator {
    pub vault: Arc<Vault>,
    pub recorder: Recorder,
    pub policy: SharedPolicy,
    pub channel: Channel,
    pub agent: AgentId,
    pub clock: Arc<dyn Clock>,
    /// How often to ask the API what is due.
    pub poll: Duration,
}

/// Asks for due tasks every `poll` and carries each out, until `stop`.
pub async fn run(rotator: Rotator, mut stop: watch::Receiver<bool>) {
    loop {
        loop {
            match rotator.channel.claim_database_task().await {
                Ok(Some(task)) => rotator.carry_out(task).await,
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "could not ask the API for database tasks; will retry");
                    break;
                }
            }
            if *stop.borrow() {
                return;
            }
        }
        tokio::select! {
            () = tokio::time::sleep(rotator.poll) => {}
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            return;
        }
    }
}

/// The admin login, from the secret the database names.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AdminCredential {
    username: String,
    password: Redacted<String>,
}

/// A connection with the admin credential.
enum Admin {
    Postgres(sqlx::PgConnection),
    Mariadb(sqlx::MySqlConnection),
}

impl Admin {
    async fn connect(task: &DatabaseTask, credential: &AdminCredential) -> Result<Self, RotationError> {
        tokio::time::timeout(STATEMENT_TIMEOUT, Self::dial(task, credential)).await.map_err(|_| {
            RotationError::ConnectTimeout {
                database: task.database.clone(),
                host: task.host.clone(),
                port: task.port,
            }
        })?
    }

    /// Connects with TLS as the task says (`verify-full`: the system's
    /// roots and the database's CA, the host name checked), or in
    /// cleartext to this machine only (`dbusers::check_tls`, decided again
    /// here before any password leaves). Errors name neither the admin
    /// login nor its password.
    async fn dial(task: &DatabaseTask, credential: &AdminCredential) -> Result<Self, RotationError> {
        dbusers::check_tls(&task.host, task.tls).map_err(RotationError::Refused)?;
        // The server's message may name the login it refused: not shown
        // (it lands in `last_error`, which every reader of the user sees).
        let failed = |e: sqlx::Error| {
            let mut message = database_message(&e);
            if !credential.username.is_empty() {
                message = message.replace(credential.username.as_str(), "<admin login>");
            }
            let fix = "`database create --tls verify-full --ca-file`";
            let mut message = heimdall_tls::database::explain(&message, fix);
            // MariaDB refuses a cleartext login to a server that requires
            // TLS as it refuses a wrong password.
            if task.tls == TlsMode::Disable && message.contains("Access denied") {
                message.push_str(&format!("; if the server requires TLS, register it with {fix}"));
            }
            let (database, host, port) = (task.database.clone(), task.host.clone(), task.port);
            RotationError::Connect { database, host, port, why: message }
        };
        let ca = task.ca_pem.as_deref().map(|pem| pem.as_bytes().to_vec());
        Ok(match task.engine {
            Engine::Postgres => {
                use sqlx::postgres::PgSslMode;
                let mut options = sqlx::postgres::PgConnectOptions::new()
                    .host(&task.host)
                    .port(task.port)
                    .username(&credential.username)
                    .password(credential.password.expose())
                    .database(&task.database_name)
                    .ssl_mode(match task.tls {
                        TlsMode::VerifyFull => PgSslMode::VerifyFull,
                        TlsMode::Disable => PgSslMode::Disable,
                    });
                if let Some(ca) = ca {
                    options = options.ssl_root_cert_from_pem(ca);
                }
                Admin::Postgres(sqlx::PgConnection::connect_with(&options).await.map_err(failed)?)
            }
            Engine::Mariadb => {
                use sqlx::mysql::MySqlSslMode;
                let mut options = sqlx::mysql::MySqlConnectOptions::new()
                    .host(&task.host)
                    .port(task.port)
                    .username(&credential.username)
                    .database(&task.database_name)
                    .ssl_mode(match task.tls {
                        TlsMode::VerifyFull => MySqlSslMode::VerifyIdentity,
                        TlsMode::Disable => MySqlSslMode::Disabled,
                    });
                if let Some(ca) = ca {
                    options = options.ssl_ca_from_pem(ca);
                }
                // An empty password is no password (MariaDB tells the two apart).
                if !credential.password.expose().is_empty() {
                    options = options.password(credential.password.expose());
                }
                Admin::Mariadb(sqlx::MySqlConnection::connect_with(&options).await.map_err(failed)?)
            }
        })
    }

    /// Runs one statement (text protocol: DDL is not preparable
    /// everywhere). The error names the statement's kind, never its text.
    async fn run(&mut self, statement: &Statement) -> Result<(), RotationError> {
        let sql = statement.sql.expose().as_str();
        let run = async {
            match self {
                Admin::Postgres(c) => sqlx::Executor::execute(&mut *c, sql).await.map(|_| ()),
                Admin::Mariadb(c) => sqlx::Executor::execute(&mut *c, sql).await.map(|_| ()),
            }
        };
        tokio::time::timeout(STATEMENT_TIMEOUT, run)
            .await
            .map_err(|_| RotationError::StatementTimeout { kind: statement.kind.to_string() })?
            .map_err(|e| RotationError::Statement {
                kind: statement.kind.to_string(),
                why: scrubbed(&database_message(&e), sql),
            })
    }

    async fn close(self) {
        let _ = match self {
            Admin::Postgres(c) => c.close().await,
            Admin::Mariadb(c) => c.close().await,
        };
    }
}

/// A database error's own message (which names roles, never passwords).
fn database_message(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(db) => db.message().to_owned(),
        other => other.to_string(),
    }
}

/// `message` without the passwords quoted in `sql`: a database may quote
/// the statement around the place it refused. (Names stay: they help.)
fn scrubbed(message: &str, sql: &str) -> String {
    let mut out = message.to_owned();
    let quoted = sql.split('\'').skip(1).step_by(2);
    for literal in quoted.filter(|l| dbusers::is_generated_password(l)) {
        out = out.replace(literal, "<redacted>");
    }
    out
}

/// A password from the OS CSPRNG: [`dbusers::PASSWORD_LEN`] letters and
/// digits (no quoting in any engine's SQL), by rejection sampling.
fn generate_password() -> Redacted<String> {
    use aes_gcm::aead::rand_core::RngCore;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(dbusers::PASSWORD_LEN);
    let mut bytes = Zeroizing::new([0u8; 64]);
    while out.len() < dbusers::PASSWORD_LEN {
        aes_gcm::aead::OsRng.fill_bytes(bytes.as_mut());
        for b in bytes.iter() {
            // 248 = 4 × 62: below it every letter is equally likely.
            if *b < 248 && out.len() < dbusers::PASSWORD_LEN {
                out.push(char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]));
            }
        }
    }
    Redacted::new(out)
}

/// Test builds only: `HEIMDALL_TEST_CRASH_AT=<point>` aborts the process
/// there, as `kill -9` would, so tests can stop a rotation at each step.
fn crash_point(point: &str) {
    #[cfg(debug_assertions)]
    if std::env::var("HEIMDALL_TEST_CRASH_AT").is_ok_and(|at| at == point) {
        tracing::warn!(point, "HEIMDALL_TEST_CRASH_AT: aborting here");
        std::process::abort();
    }
    #[cfg(not(debug_assertions))]
    let _ = point;
}

impl Rotator {
    async fn carry_out(&self, task: DatabaseTask) {
        tracing::info!(database = %task.database, user = %task.user, kind = ?task.kind, "database task");
        let outcome = match self.perform(&task).await {
            Ok(login) => DatabaseTaskOutcome::Done { login },
            Err(e) => {
                let reason = e.to_string();
                tracing::warn!(database = %task.database, user = %task.user, %reason, "database task failed");
                DatabaseTaskOutcome::Failed { reason }
            }
        };
        let retired = matches!(outcome, DatabaseTaskOutcome::Done { .. }) && task.kind == TaskKind::Retire;
        let report = DatabaseTaskReport { lease_id: task.lease_id, outcome };
        if let Err(e) = self.channel.report_database_task(task.user_id, &report).await {
            tracing::warn!(error = %e, user = %task.user, "could not report a database task; it is offered again");
            return;
        }
        // The API deactivated the retired version for every holder; this
        // store needs no sync to stop serving it.
        if let (true, Some(version)) = (retired, task.retiring_version.and_then(|v| u32::try_from(v).ok())) {
            let at = self.address(&task, &task.secret, version);
            if let Err(e) = self.vault.deactivate(&at).await {
                tracing::warn!(error = %e, "could not deactivate the retired version here; the next sync does");
            }
        }
    }

    fn address(&self, task: &DatabaseTask, secret: &str, version: u32) -> ValueAddress {
        ValueAddress {
            org: task.org_id,
            secret: secret.to_owned(),
            environment: task.environment_id,
            version,
        }
    }

    /// The last phase recorded for the user, and its number.
    async fn phase(&self, task: &DatabaseTask) -> Result<(u32, Option<Phase>), RotationError> {
        let name = dbusers::phase_name(task.user_id);
        match self.vault.latest_value(task.org_id, &name, task.environment_id).await {
            Ok(None) => Ok((0, None)),
            Ok(Some((seq, bytes))) => {
                let phase = serde_json::from_slice(&bytes).map_err(|e| {
                    RotationError::Malformed(format!("the recorded rotation phase does not parse: {e}"))
                })?;
                Ok((seq, Some(phase)))
            }
            Err(source) => {
                Err(RotationError::Store { what: "read the rotation phase from this Agent's store", source })
            }
        }
    }

    /// The phase the user's newest credential held here implies (it may
    /// have come from another holder by transfer), if this store holds one.
    async fn held_phase(&self, task: &DatabaseTask) -> Result<Option<Phase>, RotationError> {
        let held = match self.vault.latest_value(task.org_id, &task.secret, task.environment_id).await {
            Ok(held) => held,
            Err(ValueStoreError::Deactivated { .. } | ValueStoreError::Superseded { .. }) => None,
            Err(source) => {
                let what = "read the user's credentials from this Agent's store";
                return Err(RotationError::Store { what, source });
            }
        };
        let Some((version, bytes)) = held else { return Ok(None) };
        let credential: Credential = serde_json::from_slice(&bytes).map_err(|_| {
            RotationError::Malformed(format!(
                "version {version} of {} here is not a service user's credentials",
                task.secret
            ))
        })?;
        Ok(dbusers::held_phase(&task.user, i64::from(version), &credential.username))
    }

    /// Records `phase` as number `seq` (durable before it returns).
    async fn record(&self, task: &DatabaseTask, seq: u32, phase: &Phase) -> Result<(), RotationError> {
        let at = self.address(task, &dbusers::phase_name(task.user_id), seq);
        let bytes =
            Zeroizing::new(serde_json::to_vec(phase).map_err(|e| RotationError::Malformed(e.to_string()))?);
        self.vault.put_value(&at, &bytes).await.map_err(|e| match e {
            ValueStoreError::AlreadyExists { .. } => RotationError::Raced,
            source => {
                RotationError::Store { what: "record the rotation phase in this Agent's store", source }
            }
        })
    }

    /// The admin credential, read as every read is: decided as a read by
    /// the member the task acts for (the user's creator), with the
    /// policies of a sync asked for now (the last one's, if the API does
    /// not answer within [`REFRESH_WAIT`]), then recorded as
    /// `database-rotation DB/USER for <email>` before use.
    async fn admin(&self, task: &DatabaseTask) -> Result<AdminCredential, RotationError> {
        dbusers::check_tls(&task.host, task.tls).map_err(RotationError::Refused)?;
        let what = format!("the task of service user {}/{}", task.database, task.user);
        let on_behalf = task.on_behalf_of.as_ref();
        let decide = |snapshot: &crate::access::PolicySnapshot| {
            snapshot.may_use(on_behalf, &what, &task.admin_secret, task.environment_id, self.clock.now())
        };
        // Tasks are rare (a rotation every few days): each asks for a sync.
        let than = self.policy.current().map_or(time::OffsetDateTime::UNIX_EPOCH, |s| s.received_at());
        let decided = match self.policy.refresh(than, REFRESH_WAIT).await {
            Some(snapshot) => decide(&snapshot),
            None => Err(heimdall_core::ApiError::new(
                heimdall_core::ErrorCode::PolicyStale,
                "this Agent has not synced with the API yet",
            )),
        };
        decided.map_err(RotationError::NotAllowed)?;
        let found = self
            .vault
            .latest_value(task.org_id, &task.admin_secret, task.environment_id)
            .await
            .map_err(|source| RotationError::AdminSecret { secret: task.admin_secret.clone(), source })?;
        let Some((version, value)) = found else {
            return Err(RotationError::NoAdminValue {
                secret: task.admin_secret.clone(),
                environment: task.environment.clone(),
            });
        };
        let now = self.clock.now();
        let part = format!("database-rotation {}/{}", task.database, task.user);
        let record = ServedRead {
            // Decided above: `on_behalf` is some.
            accessor: on_behalf.map_or(part.clone(), |who| heimdall_core::on_behalf::accessor(&part, who)),
            at_micros: i64::try_from(now.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX),
            secret: task.admin_secret.clone(),
            environment: task.environment_id,
            version,
            source: SOURCE.into(),
            served_by: self.agent,
        };
        self.recorder.record(record).await.map_err(|e| RotationError::NotRecorded(e.to_string()))?;
        serde_json::from_slice(&value).map_err(|_| {
            RotationError::Malformed(format!(
                "the admin secret {} is not JSON {{\"username\":…,\"password\":…}}",
                task.admin_secret
            ))
        })
    }

    /// Carries the task out; the login the user's current version names.
    async fn perform(&self, task: &DatabaseTask) -> Result<String, RotationError> {
        let plan_task = match (task.kind, task.version) {
            (TaskKind::Create, Some(version)) => Task::Create { version },
            (TaskKind::Rotate, Some(version)) => Task::Rotate { version },
            (TaskKind::Retire, _) => Task::Retire,
            (TaskKind::Drop, _) => Task::Drop,
            (_, None) => return Err(RotationError::Malformed("the task carries no version".into())),
        };
        let (mut seq, recorded) = self.phase(task).await?;
        let mut phase = match task.kind {
            // Another store may have rotated last: resume from the newer of
            // this store's record and the credential held here.
            TaskKind::Rotate | TaskKind::Retire => {
                let held = self.held_phase(task).await?;
                dbusers::resume_from(recorded, held, task.current_version).map_err(RotationError::Refused)?
            }
            TaskKind::Create | TaskKind::Drop => recorded,
        };
        let steps = dbusers::plan(plan_task, phase.as_ref()).map_err(RotationError::Refused)?;
        let logins = dbusers::logins(&task.user);
        let mut admin = None;
        let mut login = match &phase {
            Some(Phase::Idle { current, .. }) => logins[current & 1].clone(),
            _ => String::new(),
        };
        for step in steps {
            if admin.is_none()
                && matches!(step, Step::Prepare | Step::AlterLogin { .. } | Step::Retire { .. } | Step::Drop)
            {
                admin = Some(Admin::connect(task, &self.admin(task).await?).await?);
            }
            match step {
                Step::RecordPending { next, version } => {
                    let pending = Phase::Pending { next, version, password: generate_password() };
                    crash_point("generated");
                    seq += 1;
                    self.record(task, seq, &pending).await?;
                    phase = Some(pending);
                    crash_point("pending");
                }
                Step::Prepare => {
                    for statement in
                        dbusers::create_statements(task.engine, &task.user, task.grants.as_deref())
                            .map_err(RotationError::Refused)?
                    {
                        run_admin(&mut admin, &statement).await?;
                    }
                }
                Step::AlterLogin { login: next } => {
                    let Some(Phase::Pending { password, .. }) = &phase else {
                        return Err(no_pending());
                    };
                    let statement =
                        dbusers::alter_statement(task.engine, &task.user, next, password.expose())
                            .map_err(RotationError::Refused)?;
                    run_admin(&mut admin, &statement).await?;
                    crash_point("altered");
                }
                Step::RecordAltered => {
                    let Some(Phase::Pending { next, version, password }) = phase.take() else {
                        return Err(no_pending());
                    };
                    let altered = Phase::Altered { next, version, password };
                    seq += 1;
                    self.record(task, seq, &altered).await?;
                    phase = Some(altered);
                }
                Step::Activate { version } => {
                    let (Some(Phase::Pending { next, password, .. })
                    | Some(Phase::Altered { next, password, .. })) = &phase
                    else {
                        return Err(no_pending());
                    };
                    let next = *next & 1;
                    let credential = Credential {
                        engine: task.engine,
                        username: logins[next].clone(),
                        password: password.clone(),
                        host: task.host.clone(),
                        port: task.port,
                        database: task.database_name.clone(),
                    };
                    let value =
                        serde_json::to_vec(&credential).map_err(|e| RotationError::Malformed(e.to_string()));
                    let value = Zeroizing::new(value?);
                    let out_of_range = |_| RotationError::Malformed("a version out of range".into());
                    let number = u32::try_from(version).map_err(out_of_range)?;
                    match self.vault.put_value(&self.address(task, &task.secret, number), &value).await {
                        Ok(()) | Err(ValueStoreError::AlreadyExists { .. }) => {}
                        Err(source) => {
                            return Err(RotationError::Store { what: "store the new version", source })
                        }
                    }
                    crash_point("stored");
                    seq += 1;
                    let idle = Phase::Idle { current: next, version };
                    self.record(task, seq, &idle).await?;
                    phase = Some(idle);
                    login = logins[next].clone();
                    tracing::info!(database = %task.database, user = %task.user, login = %login, version, "new credentials stored");
                }
                Step::Retire { login: old } => {
                    let statement =
                        dbusers::retire_statement(task.engine, &task.user, old, generate_password().expose())
                            .map_err(RotationError::Refused)?;
                    run_admin(&mut admin, &statement).await?;
                    login = logins[old & 1].clone();
                }
                Step::Drop => {
                    for statement in dbusers::drop_statements(task.engine, &task.user, task.grants.as_deref())
                        .map_err(RotationError::Refused)?
                    {
                        run_admin(&mut admin, &statement).await?;
                    }
                    // Nothing of the user stays here: its recorded phases
                    // (and passwords) go; its secret's values go with the
                    // secret's deletion at the next sync.
                    let phases = dbusers::phase_name(task.user_id);
                    self.vault.delete_secret(task.org_id, &phases).await.map_err(|source| {
                        RotationError::Store { what: "forget the user's rotation phases", source }
                    })?;
                    login = logins.join(", ");
                    tracing::info!(database = %task.database, user = %task.user, "logins dropped");
                }
            }
        }
        if let Some(admin) = admin {
            admin.close().await;
        }
        Ok(login)
    }
}

async fn run_admin(admin: &mut Option<Admin>, statement: &Statement) -> Result<(), RotationError> {
    match admin {
        Some(admin) => admin.run(statement).await,
        None => Err(RotationError::Malformed("no admin connection".into())),
    }
}

fn no_pending() -> RotationError {
    RotationError::Malformed("no pending password recorded".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_error_never_repeats_a_password() {
        let pw = generate_password();
        let sql = format!("ALTER USER `app_a`@'%' IDENTIFIED BY '{}' ACCOUNT UNLOCK", pw.expose());
        let message = format!("You have an error in your SQL syntax near '{}' ACCOUNT UNLOCK'", pw.expose());
        let out = scrubbed(&message, &sql);
        assert!(!out.contains(pw.expose().as_str()), "{out}");
        assert!(out.contains("<redacted>"));
    }

    #[test]
    fn generated_passwords_are_what_the_statements_accept() {
        let a = generate_password();
        let b = generate_password();
        assert!(dbusers::is_generated_password(a.expose()));
        assert_ne!(a.expose(), b.expose());
    }
}
