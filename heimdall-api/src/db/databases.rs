//! Databases and their service users: where each database is, each user's
//! schedule, and the claim (a lease, like a job's) of the one Agent that
//! works on a user at a time. No password is ever in these tables.

use async_trait::async_trait;
use heimdall_core::dbusers::{Database, Engine, ServiceUser, TaskKind, TlsMode};
use heimdall_core::ids::{AgentId, CatalogId, DatabaseId, LeaseId, OrgId, ServiceUserId};
use heimdall_core::on_behalf::OnBehalfOf;
use heimdall_core::ports::{
    DatabaseRecordStore, DatabaseStore, NewEvent, ServiceUserTaskResult, StoreError, StoreResult,
};
use heimdall_core::secrets::Secret;
use sqlx::FromRow;
use time::{Duration, OffsetDateTime};

use super::events::insert_event;
use super::sql::{db_err, from_micros, parse_id, to_micros, unique_as, SqlStore};

const DATABASE_COLUMNS: &str = "d.id, d.org_id, d.name, d.engine, d.host, d.port, d.database_name, \
     d.environment_id, e.name AS environment, d.admin_secret, d.tls, d.ca_pem, d.created_at, d.created_by";

const DATABASE_FROM: &str = "databases d JOIN catalog_entries e ON e.id = d.environment_id";

const USER_COLUMNS: &str = "u.id, u.org_id, u.database_id, d.name AS database, u.name, u.secret_id, \
     u.secret_name, u.rotate_every_seconds, u.grace_seconds, u.grants, u.current_version, \
     u.pending_version, u.retiring_version, u.grace_until, u.last_rotated_at, u.next_rotation_at, \
     u.rotate_requested, u.retry_at, u.last_error, u.created_at, u.created_by, u.created_by_id, u.lease_id, \
     u.drop_after, u.deleted_by, u.deleted_by_id";

const USER_FROM: &str = "database_users u JOIN databases d ON d.id = u.database_id";

#[derive(FromRow)]
struct DatabaseRow {
    id: String,
    org_id: String,
    name: String,
    engine: String,
    host: String,
    port: i32,
    database_name: String,
    environment_id: String,
    environment: String,
    admin_secret: String,
    tls: String,
    ca_pem: Option<String>,
    created_at: i64,
    created_by: String,
}

fn engine_text(engine: Engine) -> &'static str {
    match engine {
        Engine::Postgres => "postgres",
        Engine::Mariadb => "mariadb",
    }
}

fn kind_text(kind: TaskKind) -> &'static str {
    match kind {
        TaskKind::Create => "create",
        TaskKind::Rotate => "rotate",
        TaskKind::Retire => "retire",
        TaskKind::Drop => "drop",
    }
}

impl DatabaseRow {
    fn into_domain(self) -> StoreResult<Database> {
        let engine = match self.engine.as_str() {
            "postgres" => Engine::Postgres,
            "mariadb" => Engine::Mariadb,
            other => return Err(StoreError::Backend(format!("unknown database engine {other:?}"))),
        };
        Ok(Database {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            name: self.name,
            engine,
            host: self.host,
            port: u16::try_from(self.port).map_err(|_| StoreError::Backend("a port out of range".into()))?,
            database: self.database_name,
            environment_id: parse_id(&self.environment_id)?,
            environment: self.environment,
            admin_secret: self.admin_secret,
            tls: match self.tls.as_str() {
                "verify-full" => TlsMode::VerifyFull,
                "disable" => TlsMode::Disable,
                other => return Err(StoreError::Backend(format!("unknown TLS mode {other:?}"))),
            },
            ca_pem: self.ca_pem,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
        })
    }
}

#[derive(FromRow)]
struct UserRow {
    id: String,
    org_id: String,
    database_id: String,
    database: String,
    name: String,
    secret_id: String,
    secret_name: String,
    rotate_every_seconds: i64,
    grace_seconds: i64,
    grants: Option<String>,
    current_version: Option<i64>,
    pending_version: Option<i64>,
    retiring_version: Option<i64>,
    grace_until: Option<i64>,
    last_rotated_at: Option<i64>,
    next_rotation_at: i64,
    rotate_requested: i64,
    retry_at: Option<i64>,
    last_error: Option<String>,
    created_at: i64,
    created_by: String,
    created_by_id: Option<String>,
    lease_id: Option<String>,
    drop_after: Option<i64>,
    deleted_by: Option<String>,
    deleted_by_id: Option<String>,
}

impl UserRow {
    fn into_domain(self) -> StoreResult<ServiceUser> {
        Ok(ServiceUser {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            database_id: parse_id(&self.database_id)?,
            database: self.database,
            name: self.name,
            secret: self.secret_name,
            secret_id: parse_id(&self.secret_id)?,
            rotate_every_seconds: self.rotate_every_seconds,
            grace_seconds: self.grace_seconds,
            grants: self.grants,
            current_version: self.current_version,
            pending_version: self.pending_version,
            retiring_version: self.retiring_version,
            grace_until: self.grace_until.map(from_micros),
            last_rotated_at: self.last_rotated_at.map(from_micros),
            next_rotation_at: from_micros(self.next_rotation_at),
            rotate_requested: self.rotate_requested != 0,
            retry_at: self.retry_at.map(from_micros),
            last_error: self.last_error,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
            created_by_id: self.created_by_id.as_deref().map(parse_id).transpose()?,
            lease_id: self.lease_id.as_deref().map(parse_id).transpose()?,
            drop_after: self.drop_after.map(from_micros),
            deleted_by: self.deleted_by,
            deleted_by_id: self.deleted_by_id.as_deref().map(parse_id).transpose()?,
        })
    }
}

impl SqlStore {
    async fn users_where(&self, clause: &str, binds: &[String]) -> StoreResult<Vec<ServiceUser>> {
        let sql = format!("SELECT {USER_COLUMNS} FROM {USER_FROM} WHERE {clause} ORDER BY d.name, u.name");
        let mut query = sqlx::query_as::<_, UserRow>(&sql);
        for b in binds {
            query = query.bind(b.clone());
        }
        query.fetch_all(&self.pool).await.map_err(db_err)?.into_iter().map(UserRow::into_domain).collect()
    }

    async fn databases_where(&self, clause: &str, binds: &[String]) -> StoreResult<Vec<Database>> {
        let sql = format!("SELECT {DATABASE_COLUMNS} FROM {DATABASE_FROM} WHERE {clause} ORDER BY d.name");
        let mut query = sqlx::query_as::<_, DatabaseRow>(&sql);
        for b in binds {
            query = query.bind(b.clone());
        }
        query.fetch_all(&self.pool).await.map_err(db_err)?.into_iter().map(DatabaseRow::into_domain).collect()
    }
}

#[async_trait]
impl DatabaseRecordStore for SqlStore {
    async fn create_database(&self, database: &Database, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO databases (id, org_id, name, engine, host, port, database_name, environment_id, \
             admin_secret, created_at, created_by, tls, ca_pem) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(database.id.to_string())
        .bind(database.org_id.to_string())
        .bind(database.name.clone())
        .bind(engine_text(database.engine))
        .bind(database.host.clone())
        .bind(i32::from(database.port))
        .bind(database.database.clone())
        .bind(database.environment_id.to_string())
        .bind(database.admin_secret.clone())
        .bind(to_micros(database.created_at))
        .bind(database.created_by.clone())
        .bind(database.tls.as_str())
        .bind(database.ca_pem.clone())
        .execute(&mut *tx)
        .await
        .map_err(unique_as("database"))?;
        insert_event(&mut tx, database.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn update_database(&self, database: &Database, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let updated = sqlx::query(
            "UPDATE databases SET host = $1, port = $2, tls = $3, ca_pem = $4, admin_secret = $5
             WHERE org_id = $6 AND id = $7",
        )
        .bind(database.host.clone())
        .bind(i32::from(database.port))
        .bind(database.tls.as_str())
        .bind(database.ca_pem.clone())
        .bind(database.admin_secret.clone())
        .bind(database.org_id.to_string())
        .bind(database.id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound("database"));
        }
        insert_event(&mut tx, database.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn delete_database(&self, database: &Database, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let (users,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM database_users WHERE database_id = $1")
            .bind(database.id.to_string())
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
        heimdall_core::dbusers::check_delete(&database.name, u64::try_from(users).unwrap_or(0))
            .map_err(StoreError::Refused)?;
        let deleted = sqlx::query("DELETE FROM databases WHERE org_id = $1 AND id = $2")
            .bind(database.org_id.to_string())
            .bind(database.id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound("database"));
        }
        insert_event(&mut tx, database.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn list_databases(&self, org: OrgId) -> StoreResult<Vec<Database>> {
        self.databases_where("d.org_id = $1", &[org.to_string()]).await
    }

    async fn find_database(&self, org: OrgId, name: &str) -> StoreResult<Option<Database>> {
        Ok(self
            .databases_where("d.org_id = $1 AND d.name = $2", &[org.to_string(), name.to_owned()])
            .await?
            .pop())
    }

    async fn get_database(&self, org: OrgId, id: DatabaseId) -> StoreResult<Database> {
        self.databases_where("d.org_id = $1 AND d.id = $2", &[org.to_string(), id.to_string()])
            .await?
            .pop()
            .ok_or(StoreError::NotFound("database"))
    }

    async fn create_service_user(
        &self,
        user: &ServiceUser,
        secret: &Secret,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        super::secrets::insert_secret(&mut tx, secret).await?;
        sqlx::query(
            "INSERT INTO database_users (id, org_id, database_id, name, secret_id, secret_name, \
             rotate_every_seconds, grace_seconds, grants, next_rotation_at, rotate_requested, created_at, created_by, \
             created_by_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, $11, $12, $13)",
        )
        .bind(user.id.to_string())
        .bind(user.org_id.to_string())
        .bind(user.database_id.to_string())
        .bind(user.name.clone())
        .bind(user.secret_id.to_string())
        .bind(user.secret.clone())
        .bind(user.rotate_every_seconds)
        .bind(user.grace_seconds)
        .bind(user.grants.clone())
        .bind(to_micros(user.next_rotation_at))
        .bind(to_micros(user.created_at))
        .bind(user.created_by.clone())
        .bind(user.created_by_id.map(|id| id.to_string()))
        .execute(&mut *tx)
        .await
        .map_err(unique_as("service user"))?;
        insert_event(&mut tx, user.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn list_service_users(&self, org: OrgId, database: DatabaseId) -> StoreResult<Vec<ServiceUser>> {
        self.users_where("u.org_id = $1 AND u.database_id = $2", &[org.to_string(), database.to_string()])
            .await
    }

    async fn get_service_user(&self, org: OrgId, id: ServiceUserId) -> StoreResult<ServiceUser> {
        self.users_where("u.org_id = $1 AND u.id = $2", &[org.to_string(), id.to_string()])
            .await?
            .pop()
            .ok_or(StoreError::NotFound("service user"))
    }

    async fn request_rotation(&self, org: OrgId, id: ServiceUserId, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let done = sqlx::query(
            "UPDATE database_users SET rotate_requested = 1, retry_at = NULL WHERE org_id = $1 AND id = $2",
        )
        .bind(org.to_string())
        .bind(id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("service user"));
        }
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn request_user_deletion(
        &self,
        org: OrgId,
        id: ServiceUserId,
        drop_after: OffsetDateTime,
        by: &OnBehalfOf,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let done = sqlx::query(
            "UPDATE database_users SET drop_after = $1, deleted_by = $2, deleted_by_id = $3, retry_at = NULL, \
             last_error = NULL, lease_id = NULL, lease_agent = NULL, lease_kind = NULL, lease_until = NULL \
             WHERE org_id = $4 AND id = $5 AND drop_after IS NULL",
        )
        .bind(to_micros(drop_after))
        .bind(by.email.clone())
        .bind(by.member_id.to_string())
        .bind(org.to_string())
        .bind(id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if done.rows_affected() == 0 {
            // Decided on a read before this; it changed since.
            return Err(StoreError::Conflict("the service user is already being deleted".into()));
        }
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }
}

#[async_trait]
impl DatabaseStore for SqlStore {
    async fn finish_user_drop(
        &self,
        id: ServiceUserId,
        lease: LeaseId,
        event: NewEvent,
        secret_event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let (org, secret): (String, String) =
            sqlx::query_as("SELECT org_id, secret_id FROM database_users WHERE id = $1 AND lease_id = $2")
                .bind(id.to_string())
                .bind(lease.to_string())
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?
                .ok_or(StoreError::Fenced)?;
        let org: OrgId = parse_id(&org)?;
        sqlx::query("DELETE FROM database_users WHERE id = $1")
            .bind(id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        let (actor, at) = (event.actor.clone(), event.at);
        insert_event(&mut tx, org, event).await?;
        // Someone may have deleted the secret already: then only the user goes.
        if super::inventory::mark_deleting(&mut tx, org, parse_id(&secret)?, at).await? {
            insert_event(&mut tx, org, secret_event).await?;
        }
        super::inventory::complete_deletions(&mut tx, org, &actor, at).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn service_users_in(&self, environments: &[CatalogId]) -> StoreResult<Vec<ServiceUser>> {
        if environments.is_empty() {
            return Ok(Vec::new());
        }
        let marks: Vec<String> = (1..=environments.len()).map(|i| format!("${i}")).collect();
        let clause = format!("d.environment_id IN ({})", marks.join(", "));
        let binds: Vec<String> = environments.iter().map(ToString::to_string).collect();
        self.users_where(&clause, &binds).await
    }

    async fn lease_service_user(
        &self,
        seen: &ServiceUser,
        agent: AgentId,
        lease: LeaseId,
        kind: TaskKind,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> StoreResult<bool> {
        // -1 stands for "none": the same on both backends, and no version,
        // time or flag is ever negative.
        let done = sqlx::query(
            "UPDATE database_users SET lease_id = $1, lease_agent = $2, lease_kind = $3, lease_until = $4 \
             WHERE id = $5 AND (lease_until IS NULL OR lease_until <= $6 OR lease_agent = $2) \
               AND COALESCE(current_version, -1) = $7 AND COALESCE(pending_version, -1) = $8 \
               AND COALESCE(grace_until, -1) = $9 AND rotate_requested = $10 \
               AND COALESCE(drop_after, -1) = $11",
        )
        .bind(lease.to_string())
        .bind(agent.to_string())
        .bind(kind_text(kind))
        .bind(to_micros(until))
        .bind(seen.id.to_string())
        .bind(to_micros(now))
        .bind(seen.current_version.unwrap_or(-1))
        .bind(seen.pending_version.unwrap_or(-1))
        .bind(seen.grace_until.map_or(-1, to_micros))
        .bind(i64::from(seen.rotate_requested))
        .bind(seen.drop_after.map_or(-1, to_micros))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(done.rows_affected() == 1)
    }

    async fn set_pending_version(&self, id: ServiceUserId, lease: LeaseId, version: i64) -> StoreResult<i64> {
        sqlx::query("UPDATE database_users SET pending_version = $1 WHERE id = $2 AND lease_id = $3 AND pending_version IS NULL")
            .bind(version)
            .bind(id.to_string())
            .bind(lease.to_string())
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        let (pending,): (Option<i64>,) =
            sqlx::query_as("SELECT pending_version FROM database_users WHERE id = $1 AND lease_id = $2")
                .bind(id.to_string())
                .bind(lease.to_string())
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or(StoreError::Fenced)?;
        pending.ok_or(StoreError::Fenced)
    }

    async fn finish_service_user_task(
        &self,
        id: ServiceUserId,
        lease: LeaseId,
        result: &ServiceUserTaskResult,
        event: NewEvent,
    ) -> StoreResult<ServiceUser> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let (org, every): (String, i64) = sqlx::query_as(
            "SELECT org_id, rotate_every_seconds FROM database_users WHERE id = $1 AND lease_id = $2",
        )
        .bind(id.to_string())
        .bind(lease.to_string())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::Fenced)?;
        let release = "lease_id = NULL, lease_agent = NULL, lease_kind = NULL, lease_until = NULL";
        let done = match result {
            ServiceUserTaskResult::Activated { version, at, grace_until } => {
                // The schedule's rule (`Schedule::next_rotation`), on the period stored with the lease.
                let next = heimdall_core::dbusers::next_rotation_after(Duration::seconds(every), *at);
                let sql = format!(
                    "UPDATE database_users SET retiring_version = CASE WHEN $1 IS NULL THEN NULL ELSE current_version END, \
                     grace_until = $1, current_version = $2, pending_version = NULL, last_rotated_at = $3, \
                     next_rotation_at = $4, rotate_requested = 0, retry_at = NULL, last_error = NULL, {release} \
                     WHERE id = $5"
                );
                sqlx::query(&sql)
                    .bind(grace_until.map(to_micros))
                    .bind(*version)
                    .bind(to_micros(*at))
                    .bind(to_micros(next))
                    .bind(id.to_string())
                    .execute(&mut *tx)
                    .await
            }
            ServiceUserTaskResult::Retired => {
                let sql = format!(
                    "UPDATE database_users SET retiring_version = NULL, grace_until = NULL, retry_at = NULL, \
                     last_error = NULL, {release} WHERE id = $1"
                );
                sqlx::query(&sql).bind(id.to_string()).execute(&mut *tx).await
            }
            ServiceUserTaskResult::Failed { reason, retry_at } => {
                let sql = format!(
                    "UPDATE database_users SET last_error = $1, retry_at = $2, {release} WHERE id = $3"
                );
                sqlx::query(&sql)
                    .bind(reason.clone())
                    .bind(to_micros(*retry_at))
                    .bind(id.to_string())
                    .execute(&mut *tx)
                    .await
            }
        };
        done.map_err(db_err)?;
        let org: OrgId = parse_id(&org)?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)?;
        self.get_service_user(org, id).await
    }
}
