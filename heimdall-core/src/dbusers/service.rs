//! The databases' and service users' use cases as people run them, once
//! for every adapter: ask the policies in the database's environment
//! (`secret.read`, `secret.write`), decide the admin secret as the
//! caller's use whenever an Agent will use it for her
//! ([`crate::secrets::service::check_use`]), plan, apply. Generic over the
//! store ports ([`DatabaseRecordStore`], [`HoldingStore`],
//! [`SecretRecordStore`], [`CatalogStore`]) and the caller ([`Actor`]).
//! A CA bundle is checked by the adapter (parsing certificates is its
//! part) before it calls here.

use time::Duration;

use super::{Database, NewDatabase, NewUser, ServiceUser, UpdateDatabase};
use crate::authz::{Action, Target};
use crate::domain::CatalogKind;
use crate::error::{ApiError, ErrorCode};
use crate::ids::{DatabaseId, SecretId, ServiceUserId};
use crate::on_behalf::OnBehalfOf;
use crate::ports::{Actor, CatalogStore, DatabaseRecordStore, HoldingStore, SecretRecordStore, StoreError};

/// The database called `name` in the caller's organization.
pub async fn resolve<S: DatabaseRecordStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    name: &str,
) -> Result<Database, ApiError> {
    store.find_database(actor.org(), name).await?.ok_or_else(|| ApiError::not_found("database"))
}

async fn allowed(actor: &dyn Actor, action: Action, environment: &str) -> Result<(), ApiError> {
    actor.authorize_in(action, &Target::organization(actor.org()), environment).await
}

/// The database `name` names, once the caller may do `action` in its
/// environment.
async fn database_for<S: DatabaseRecordStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    name: &str,
    action: Action,
) -> Result<Database, ApiError> {
    let database = resolve(store, actor, name).await?;
    allowed(actor, action, &database.environment).await?;
    Ok(database)
}

/// Whoever an Agent uses the admin secret for (registering the database,
/// creating, rotating or dropping its users) must be allowed its use
/// there; its name as stored.
async fn admin_secret<S: SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    secret: &str,
    environment: &str,
) -> Result<String, ApiError> {
    match crate::secrets::service::check_use(store, actor, secret, environment).await {
        Ok(admin) => Ok(admin.name),
        Err(e) if e.code == ErrorCode::NotFound => Err(ApiError::new(
            ErrorCode::NotFound,
            format!(
                "no organization secret named {secret:?}: create it and set the admin credential \
                 ({{\"username\",\"password\"}}) in {environment} first"
            ),
        )),
        Err(e) => Err(e),
    }
}

/// The databases in the environments where the caller may read secrets.
pub async fn list<S: DatabaseRecordStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
) -> Result<Vec<Database>, ApiError> {
    let mut visible = Vec::new();
    for database in store.list_databases(actor.org()).await? {
        if allowed(actor, Action::SecretRead, &database.environment).await.is_ok() {
            visible.push(database);
        }
    }
    Ok(visible)
}

/// Registers database `id` in `environment` with its admin credential in
/// `admin_secret` ([`super::register`]).
pub async fn create<S: DatabaseRecordStore + SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    new: NewDatabase,
    (environment, admin): (&str, &str),
    id: DatabaseId,
) -> Result<Database, ApiError> {
    let env =
        crate::catalog::service::resolve(store, actor.org(), CatalogKind::Environment, environment).await?;
    allowed(actor, Action::SecretWrite, &env.name).await?;
    let admin = admin_secret(store, actor, admin, &env.name).await?;
    let plan = super::register(new, &env, admin, id, actor.org(), actor.name(), actor.now())?;
    store.create_database(&plan.database, actor.event(plan.event)).await?;
    Ok(plan.database)
}

/// Changes the database `name` names ([`super::update`]); the database as
/// it stands when nothing changes. A new admin secret is decided as at
/// registration.
pub async fn update<S: DatabaseRecordStore + SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    name: &str,
    change: &UpdateDatabase,
) -> Result<Database, ApiError> {
    let current = database_for(store, actor, name, Action::SecretWrite).await?;
    let Some((mut next, changed)) = super::update(&current, change)? else {
        return Ok(current);
    };
    if changed.contains(&"admin_secret") {
        next.admin_secret = admin_secret(store, actor, &next.admin_secret, &next.environment).await?;
    }
    store.update_database(&next, actor.event(super::updated(&next, &changed))).await?;
    Ok(next)
}

/// Deletes the database `name` names; the store refuses it while it has
/// service users.
pub async fn delete<S: DatabaseRecordStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    name: &str,
) -> Result<(), ApiError> {
    let database = database_for(store, actor, name, Action::SecretWrite).await?;
    Ok(store.delete_database(&database, actor.event(super::delete_database(&database))).await?)
}

/// The caller as the one the Agent acts for.
fn on_behalf(actor: &dyn Actor) -> OnBehalfOf {
    OnBehalfOf { member_id: actor.member(), email: actor.name().to_owned() }
}

/// Creates service user `ids.0` (and its secret, `ids.1`) on the database
/// `database` names ([`super::create_user`]); its grants are made with
/// the admin secret on the caller's behalf at every task.
pub async fn create_user<S: DatabaseRecordStore + SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    database: &str,
    new: NewUser,
    ids: (ServiceUserId, SecretId),
) -> Result<ServiceUser, ApiError> {
    let database = database_for(store, actor, database, Action::SecretWrite).await?;
    crate::secrets::service::check_use(store, actor, &database.admin_secret, &database.environment).await?;
    let plan = super::create_user(&database, new, ids, &on_behalf(actor), actor.now())?;
    let (user, secret) = (plan.user, plan.secret);
    store.create_service_user(&user, &secret, actor.event(plan.event)).await.map_err(|e| match e {
        StoreError::AlreadyExists(what) => ApiError::new(
            ErrorCode::AlreadyExists,
            format!("that {what} already exists (or a secret named {} does)", user.secret),
        ),
        other => other.into(),
    })?;
    Ok(user)
}

async fn user_named<S: DatabaseRecordStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    database: &Database,
    name: &str,
) -> Result<ServiceUser, ApiError> {
    let users = store.list_service_users(actor.org(), database.id).await?;
    users.into_iter().find(|u| u.name == name).ok_or_else(|| ApiError::not_found("service user"))
}

/// The service users of the database `database` names.
pub async fn list_users<S: DatabaseRecordStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    database: &str,
) -> Result<Vec<ServiceUser>, ApiError> {
    let database = database_for(store, actor, database, Action::SecretRead).await?;
    Ok(store.list_service_users(actor.org(), database.id).await?)
}

/// One service user of the database `database` names.
pub async fn show_user<S: DatabaseRecordStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    (database, user): (&str, &str),
) -> Result<ServiceUser, ApiError> {
    let database = database_for(store, actor, database, Action::SecretRead).await?;
    user_named(store, actor, &database, user).await
}

/// Asks for a rotation now ([`super::request_rotation`]), which uses the
/// admin secret for the caller; the user as it stands after.
pub async fn rotate<S: DatabaseRecordStore + SecretRecordStore + CatalogStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    (database, user): (&str, &str),
) -> Result<ServiceUser, ApiError> {
    let database = database_for(store, actor, database, Action::SecretWrite).await?;
    crate::secrets::service::check_use(store, actor, &database.admin_secret, &database.environment).await?;
    let user = user_named(store, actor, &database, user).await?;
    let planned = super::request_rotation(&database, &user, actor.now())?;
    store.request_rotation(actor.org(), user.id, actor.event(planned)).await?;
    Ok(store.get_service_user(actor.org(), user.id).await?)
}

/// Asks for the user to be dropped after `grace` (its own by default)
/// ([`super::delete_user`]): the drop uses the admin secret for the caller,
/// and is refused while an Agent that will not sync again (none for
/// `stale_after`) holds its password. The user as it stands after.
pub async fn delete_user<
    S: DatabaseRecordStore + HoldingStore + SecretRecordStore + CatalogStore + ?Sized,
>(
    store: &S,
    actor: &dyn Actor,
    (database, user): (&str, &str),
    grace: Option<Duration>,
    stale_after: Duration,
) -> Result<ServiceUser, ApiError> {
    let database = database_for(store, actor, database, Action::SecretWrite).await?;
    crate::secrets::service::check_use(store, actor, &database.admin_secret, &database.environment).await?;
    let user = user_named(store, actor, &database, user).await?;
    let holders: Vec<crate::deletion::Holder> =
        store.holdings_of_secret(actor.org(), &user.secret).await?.iter().map(Into::into).collect();
    let plan = super::delete_user(&database, &user, grace, &holders, actor.now(), stale_after)?;
    let event = actor.event(plan.event);
    store.request_user_deletion(actor.org(), plan.user, plan.drop_after, &on_behalf(actor), event).await?;
    Ok(store.get_service_user(actor.org(), user.id).await?)
}
