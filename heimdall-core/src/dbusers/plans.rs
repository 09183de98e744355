//! Databases and their service users as people change them, as planners:
//! register, update and delete a database; create a user, ask for its
//! rotation now, delete it. Each returns what the adapter applies with one
//! store call and the event it writes with it (`audit::EventPlan`). Whether
//! the caller may use the admin secret (`on_behalf::may_use`, as her read)
//! and a CA bundle's parse are the adapter's, before these.

use serde_json::json;
use time::{Duration, OffsetDateTime};

use super::{
    check_database_name, check_grants, check_host, check_tls, check_user_name, may_rotate_now,
    request_deletion, secret_name, Database, Engine, NewServiceUser, Schedule, ServiceUser, TlsMode,
};
use crate::audit::{AuditAction, EventPlan};
use crate::deletion::{may_delete, Holder};
use crate::domain::CatalogEntry;
use crate::error::ApiError;
use crate::ids::{DatabaseId, OrgId, SecretId, ServiceUserId};
use crate::names::validate_name;
use crate::on_behalf::OnBehalfOf;
use crate::secrets::Secret;

/// A database as people register it.
#[derive(Clone, Debug)]
pub struct NewDatabase {
    pub name: String,
    pub engine: Engine,
    pub host: String,
    pub port: u16,
    pub database: String,
    /// `verify-full` by default, except to this machine ([`TlsMode::default_for`]).
    pub tls: Option<TlsMode>,
    pub ca_pem: Option<String>,
}

/// A database to store, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct DatabasePlan {
    pub database: Database,
    pub event: EventPlan,
}

/// Registers `new` in `environment`, its admin credential in the secret
/// `admin_secret` (as stored). Refused when a name, the host, the port or
/// the TLS mode cannot be used ([`check_tls`]: cleartext only to this machine).
pub fn register(
    new: NewDatabase,
    environment: &CatalogEntry,
    admin_secret: String,
    id: DatabaseId,
    org: OrgId,
    by: &str,
    now: OffsetDateTime,
) -> Result<DatabasePlan, ApiError> {
    validate_name("name", &new.name)?;
    check_host(&new.host)?;
    check_database_name(&new.database)?;
    if new.port == 0 {
        return Err(ApiError::invalid_input("--port must be 1-65535"));
    }
    let tls = new.tls.unwrap_or_else(|| TlsMode::default_for(&new.host));
    check_tls(&new.host, tls)?;
    let database = Database {
        id,
        org_id: org,
        name: new.name,
        engine: new.engine,
        host: new.host,
        port: new.port,
        database: new.database,
        environment_id: environment.id,
        environment: environment.name.clone(),
        admin_secret,
        tls,
        ca_pem: new.ca_pem,
        created_at: now,
        created_by: by.to_owned(),
    };
    let detail = json!({
        "name": database.name, "engine": database.engine, "host": database.host,
        "port": database.port, "environment": database.environment, "tls": database.tls,
    });
    let event = database_event(AuditAction::DatabaseCreated, &database, detail);
    Ok(DatabasePlan { database, event })
}

/// The event of a change [`super::update`] planned: what changed, by name.
pub fn updated(next: &Database, changed: &[&str]) -> EventPlan {
    database_event(AuditAction::DatabaseUpdated, next, json!({ "name": next.name, "changed": changed }))
}

/// Deleting `database` (the store refuses while it has users: `NOT_EMPTY`).
pub fn delete_database(database: &Database) -> EventPlan {
    database_event(AuditAction::DatabaseDeleted, database, json!({ "name": database.name }))
}

/// A service user as people ask for it.
#[derive(Clone, Debug)]
pub struct NewUser {
    pub name: String,
    /// As given (`30d`), for the event; parsed into `schedule`.
    pub rotate_every: String,
    pub grace: String,
    pub schedule: Schedule,
    pub grants: Option<String>,
}

/// A user to store with the secret that will hold its credential, and the event.
#[derive(Clone, Debug)]
pub struct UserPlan {
    pub user: ServiceUser,
    pub secret: Secret,
    pub event: EventPlan,
}

/// A new service user of `database`, created (and rotated) by an Agent for
/// `on_behalf` (whose reads of the admin secret the tasks are). Its
/// credential goes in a new organization secret named after the database
/// and the user ([`secret_name`]).
pub fn create_user(
    database: &Database,
    new: NewUser,
    (id, secret_id): (ServiceUserId, SecretId),
    on_behalf: &OnBehalfOf,
    now: OffsetDateTime,
) -> Result<UserPlan, ApiError> {
    check_user_name(&new.name)?;
    if let Some(grants) = &new.grants {
        check_grants(database.engine, grants)?;
    }
    let secret_name = secret_name(&database.name, &new.name);
    validate_name("the user's secret name", &secret_name)?;
    let secret = Secret {
        id: secret_id,
        org_id: database.org_id,
        name: secret_name,
        secret_type: "database-credential".into(),
        description: format!(
            "Service user {} of database {}: created and rotated by the Agent",
            new.name, database.name
        ),
        tags: [("database".to_owned(), database.name.clone())].into(),
        components: Vec::new(),
        personal_owner: None,
        owner_id: None,
        owner_keys: Vec::new(),
        created_at: now,
        created_by: on_behalf.email.clone(),
        updated_at: now,
        at_risk: Vec::new(),
        status: Default::default(),
        deleted_at: None,
    };
    let user = NewServiceUser {
        id,
        database,
        name: new.name,
        secret_id,
        schedule: new.schedule,
        grants: new.grants,
    };
    let user = ServiceUser::new(user, now, on_behalf);
    let detail = json!({
        "database": database.name, "user": user.name, "secret": user.secret,
        "rotate_every": new.rotate_every, "grace": new.grace,
    });
    let event = user_event(AuditAction::DatabaseUserCreated, &user, detail);
    Ok(UserPlan { user, secret, event })
}

/// Asks for `user`'s rotation now ([`may_rotate_now`]).
pub fn request_rotation(
    database: &Database,
    user: &ServiceUser,
    now: OffsetDateTime,
) -> Result<EventPlan, ApiError> {
    may_rotate_now(user, now)?;
    Ok(user_event(
        AuditAction::DatabaseRotationRequested,
        user,
        json!({ "database": database.name, "user": user.name }),
    ))
}

/// A user to drop after `drop_after`, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct UserDeletion {
    pub user: ServiceUserId,
    pub drop_after: OffsetDateTime,
    pub event: EventPlan,
}

/// Deletes `user`: its logins are dropped after `grace` (its own by
/// default, [`request_deletion`]), then its secret is deleted, so that is
/// refused now, not then, if an Agent that will not sync again may hold a
/// copy ([`may_delete`]: `holders` of its secret).
pub fn delete_user(
    database: &Database,
    user: &ServiceUser,
    grace: Option<Duration>,
    holders: &[Holder],
    now: OffsetDateTime,
    stale_after: Duration,
) -> Result<UserDeletion, ApiError> {
    let drop_after = request_deletion(user, grace, now)?;
    may_delete(&user.secret, holders, now, stale_after)?;
    let at = drop_after.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
    let detail = json!({ "database": database.name, "user": user.name, "drop_after": at });
    Ok(UserDeletion {
        user: user.id,
        drop_after,
        event: user_event(AuditAction::DatabaseUserDeletionRequested, user, detail),
    })
}

fn database_event(action: AuditAction, database: &Database, detail: serde_json::Value) -> EventPlan {
    EventPlan { action, target: format!("database:{}", database.id), detail }
}

fn user_event(action: AuditAction, user: &ServiceUser, detail: serde_json::Value) -> EventPlan {
    EventPlan { action, target: format!("database_user:{}", user.id), detail }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::fixtures::environment;
    use crate::ids::MemberId;

    fn new(host: &str, tls: Option<TlsMode>) -> NewDatabase {
        NewDatabase {
            name: "orders".into(),
            engine: Engine::Postgres,
            host: host.into(),
            port: 5432,
            database: "orders".into(),
            tls,
            ca_pem: None,
        }
    }

    fn registered(host: &str, tls: Option<TlsMode>) -> Result<DatabasePlan, ApiError> {
        let (id, org) =
            (DatabaseId::from_uuid(uuid::Uuid::from_u128(1)), OrgId::from_uuid(uuid::Uuid::nil()));
        register(
            new(host, tls),
            &environment("dev"),
            "orders-admin".into(),
            id,
            org,
            "ana",
            OffsetDateTime::UNIX_EPOCH,
        )
    }

    fn ana() -> OnBehalfOf {
        OnBehalfOf {
            member_id: MemberId::from_uuid(uuid::Uuid::from_u128(9)),
            email: "ana@example.com".into(),
        }
    }

    #[test]
    fn a_database_elsewhere_is_verified_over_tls_unless_said_otherwise_and_refused_in_cleartext() {
        let plan = registered("db.internal", None).unwrap();
        assert_eq!(plan.database.tls, TlsMode::VerifyFull);
        assert_eq!(plan.event.action, AuditAction::DatabaseCreated);
        assert_eq!(plan.event.detail["tls"], json!(plan.database.tls));
        assert_eq!(registered("127.0.0.1", None).unwrap().database.tls, TlsMode::Disable);
        let cleartext = registered("db.internal", Some(TlsMode::Disable)).unwrap_err();
        assert_eq!(cleartext.code, ErrorCode::InvalidInput);
        assert_eq!(registered("db internal", None).unwrap_err().code, ErrorCode::InvalidInput);
    }

    #[test]
    fn a_user_gets_a_credential_secret_named_after_it_and_is_deleted_once() {
        let database = registered("db.internal", None).unwrap().database;
        let every = Duration::days(30);
        let user = NewUser {
            name: "app".into(),
            rotate_every: "30d".into(),
            grace: "1h".into(),
            schedule: Schedule::new(every, Duration::hours(1)).unwrap(),
            grants: None,
        };
        let ids = (
            ServiceUserId::from_uuid(uuid::Uuid::from_u128(2)),
            SecretId::from_uuid(uuid::Uuid::from_u128(3)),
        );
        let now = OffsetDateTime::UNIX_EPOCH;
        let plan = create_user(&database, user.clone(), ids, &ana(), now).unwrap();
        assert_eq!(
            (plan.secret.name.as_str(), plan.user.secret.as_str()),
            ("db-orders-app", "db-orders-app")
        );
        assert_eq!(plan.secret.secret_type, "database-credential");
        assert_eq!(plan.event.detail["rotate_every"], json!("30d"));
        let bad = NewUser { name: "App".into(), ..user };
        assert_eq!(create_user(&database, bad, ids, &ana(), now).unwrap_err().code, ErrorCode::InvalidInput);
        // Deleting: after its grace, once; a copy an Agent may keep refuses it now.
        let deletion = delete_user(&database, &plan.user, None, &[], now, Duration::days(7)).unwrap();
        assert_eq!(deletion.drop_after, now + Duration::hours(1));
        let mut going = plan.user.clone();
        going.drop_after = Some(deletion.drop_after);
        assert_eq!(
            delete_user(&database, &going, None, &[], now, Duration::days(7)).unwrap_err().code,
            ErrorCode::Conflict
        );
        assert_eq!(request_rotation(&database, &going, now).unwrap_err().code, ErrorCode::Conflict);
        let stale =
            Holder { agent: "edge-9".into(), revoked: false, last_seen_at: Some(now - Duration::days(30)) };
        let kept = delete_user(&database, &plan.user, None, &[stale], now, Duration::days(7)).unwrap_err();
        assert_eq!(kept.code, ErrorCode::ValueMayPersist);
    }
}
