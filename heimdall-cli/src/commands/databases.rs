//! `database create|list` and `database user create|list|show|rotate`.

use heimdall_core::dbusers::{Database, Engine, ServiceUser, TlsMode};
use heimdall_wire::{CreateDatabase, CreateServiceUser};

use super::Context;
use crate::args::{DatabaseCommand, DatabaseUserCommand, EngineArg, TlsArg};
use crate::error::Result;
use crate::output::timestamp;

pub async fn run(ctx: &Context, cmd: DatabaseCommand) -> Result<()> {
    let (client, out) = (ctx.client()?, &ctx.out);
    match cmd {
        DatabaseCommand::Update { name, host, port, tls, ca_file, no_ca, admin_secret } => {
            let ca_pem = match (ca_file, no_ca) {
                (Some(path), _) => Some(std::fs::read_to_string(&path).map_err(|e| {
                    crate::error::CliError::usage(format!("--ca-file {}: {e}", path.display()))
                })?),
                (None, true) => Some(String::new()),
                (None, false) => None,
            };
            let tls = tls.map(|t| match t {
                TlsArg::VerifyFull => TlsMode::VerifyFull,
                TlsArg::Disable => TlsMode::Disable,
            });
            let change = heimdall_wire::UpdateDatabase { host, port, tls, ca_pem, admin_secret };
            if change == heimdall_wire::UpdateDatabase::default() {
                return Err(crate::error::CliError::usage(
                    "nothing to change: name at least one of --host, --port, --tls, --ca-file, --no-ca, --admin-secret",
                ));
            }
            let updated = client.update_database(&name, &change).await?;
            let line = format!(
                "Database updated: {} ({}:{}, TLS {})",
                updated.name,
                updated.host,
                updated.port,
                updated.tls.as_str()
            );
            out.done(&updated, &line, &[])
        }
        DatabaseCommand::Delete { name } => {
            client.delete_database(&name).await?;
            out.done(&serde_json::json!({ "deleted": name }), &format!("Database deleted: {name}"), &[])
        }
        DatabaseCommand::Create {
            name,
            engine,
            host,
            port,
            database,
            environment,
            admin_secret,
            tls,
            ca_file,
        } => {
            let engine = match engine {
                EngineArg::Postgres => Engine::Postgres,
                EngineArg::Mariadb => Engine::Mariadb,
            };
            let port = port.unwrap_or(match engine {
                Engine::Postgres => 5432,
                Engine::Mariadb => 3306,
            });
            let tls = tls.map(|t| match t {
                TlsArg::VerifyFull => TlsMode::VerifyFull,
                TlsArg::Disable => TlsMode::Disable,
            });
            // Checked here too, so the flag is named before anything is sent.
            heimdall_core::dbusers::check_tls(&host, tls.unwrap_or_else(|| TlsMode::default_for(&host)))
                .map_err(crate::error::CliError::Coded)?;
            let ca_pem = match ca_file {
                Some(path) => Some(std::fs::read_to_string(&path).map_err(|e| {
                    crate::error::CliError::usage(format!("--ca-file {}: {e}", path.display()))
                })?),
                None => None,
            };
            let request =
                CreateDatabase { name, engine, host, port, database, environment, admin_secret, tls, ca_pem };
            let created = client.create_database(&request).await?;
            let line = format!(
                "Database created: {} ({} at {}:{}, in {}, TLS {})",
                created.name,
                engine_name(created.engine),
                created.host,
                created.port,
                created.environment,
                created.tls.as_str()
            );
            out.done(&created, &line, &[])
        }
        DatabaseCommand::List => {
            let databases = client.list_databases().await?;
            let headers = ["NAME", "ENGINE", "ADDRESS", "DATABASE", "ENVIRONMENT", "ADMIN SECRET"];
            out.list(&databases, &headers, |d: &Database| {
                vec![
                    d.name.clone(),
                    engine_name(d.engine).into(),
                    format!("{}:{}", d.host, d.port),
                    d.database.clone(),
                    d.environment.clone(),
                    d.admin_secret.clone(),
                ]
            })
        }
        DatabaseCommand::User(cmd) => user(ctx, cmd).await,
    }
}

fn engine_name(engine: Engine) -> &'static str {
    match engine {
        Engine::Postgres => "postgres",
        Engine::Mariadb => "mariadb",
    }
}

fn version(v: Option<i64>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn status(u: &ServiceUser) -> String {
    heimdall_core::dbusers::status(u).as_str().into()
}

async fn user(ctx: &Context, cmd: DatabaseUserCommand) -> Result<()> {
    let (client, out) = (ctx.client()?, &ctx.out);
    match cmd {
        DatabaseUserCommand::Create { user, database, rotate_every, grace, grant } => {
            let request = CreateServiceUser { name: user, rotate_every, grace, grants: grant };
            let created = client.create_service_user(&database, &request).await?;
            let line = format!("Service user created: {} in database {}", created.name, created.database);
            let extra = [format!(
                "The Agent holding the database's environment creates it and stores its credentials as secret {} \
                 (`heimdall secret get {}`).",
                created.secret, created.secret
            )];
            out.done(&created, &line, &extra)
        }
        DatabaseUserCommand::List { database } => {
            let users = client.list_service_users(&database).await?;
            let headers =
                ["USER", "SECRET", "STATUS", "VERSION", "LAST ROTATION", "NEXT ROTATION", "GRACE UNTIL"];
            out.list(&users, &headers, |u: &ServiceUser| {
                vec![
                    u.name.clone(),
                    u.secret.clone(),
                    status(u),
                    version(u.current_version),
                    u.last_rotated_at.map_or_else(|| "-".into(), timestamp),
                    timestamp(u.next_rotation_at),
                    u.grace_until.map_or_else(|| "-".into(), timestamp),
                ]
            })
        }
        DatabaseUserCommand::Show { user, database } => {
            let u = client.get_service_user(&database, &user).await?;
            let mut fields = vec![
                ("User", u.name.clone()),
                ("Database", u.database.clone()),
                ("Logins", heimdall_core::dbusers::logins(&u.name).join(", ")),
                ("Secret", u.secret.clone()),
                ("Status", status(&u)),
                ("Current version", version(u.current_version)),
                ("Rotating to", version(u.pending_version)),
                ("Retiring version", version(u.retiring_version)),
                ("Grace until", u.grace_until.map_or_else(|| "-".into(), timestamp)),
                ("Last rotation", u.last_rotated_at.map_or_else(|| "-".into(), timestamp)),
                ("Next rotation", timestamp(u.next_rotation_at)),
                ("Rotates every", seconds(u.rotate_every_seconds)),
                ("Grace", seconds(u.grace_seconds)),
                ("Grants", u.grants.clone().unwrap_or_else(|| "-".into())),
                ("Last error", u.last_error.clone().unwrap_or_else(|| "-".into())),
            ];
            if let Some(at) = u.drop_after {
                fields.insert(5, ("Logins dropped at", timestamp(at)));
            }
            out.record(&u, &fields)
        }
        DatabaseUserCommand::Delete { user, database, grace } => {
            let u = client.delete_service_user(&database, &user, grace.as_deref()).await?;
            let [a, b] = heimdall_core::dbusers::logins(&u.name);
            let when = u.drop_after.map_or_else(|| "-".into(), timestamp);
            let line = format!("Deletion requested: {} in database {}", u.name, u.database);
            let extra = [format!(
                "It rotates no more; from {when} the Agent drops logins {a} and {b}, then secret {} is deleted.",
                u.secret
            )];
            out.done(&u, &line, &extra)
        }
        DatabaseUserCommand::Rotate { user, database } => {
            let u = client.rotate_service_user(&database, &user).await?;
            out.done(
                &u,
                &format!(
                    "Rotation requested: {} in database {} (at the Agent's next poll)",
                    u.name, u.database
                ),
                &[],
            )
        }
    }
}

/// 2592000 → `30d`, 3600 → `1h`, 90 → `90s`.
fn seconds(s: i64) -> String {
    match s {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3_600 == 0 => format!("{}h", s / 3_600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}
