//! What `heimdall-api` does once its flags are parsed: each command checks
//! its settings, opens what it needs and acts. Errors carry a stable code
//! (`ApiError`), printed by the binary as `error: CODE: message`.

mod args;
mod bootstrap;
mod serve;

use std::path::PathBuf;

use heimdall_core::{ApiError, ErrorCode};

pub use args::{BootstrapArgs, Cli, Command, Document, Output, ServeArgs};

use crate::config::{FileConfig, ServeConfig};
use crate::db;

/// Run one command to its end.
pub async fn run(cli: Cli) -> Result<(), ApiError> {
    match cli.command {
        Command::Serve(args) => serve::serve(args).await,
        Command::Bootstrap(args) => bootstrap::bootstrap(args).await,
        Command::RotateOidcKey { ca_dir } => {
            let kid = crate::oidc::rotate(&ca_dir.join("oidc"))?;
            println!("✓ New OIDC signing key {kid}: it signs from the API's next start; the previous one stays published");
            Ok(())
        }
        Command::Openapi { document } => {
            let document = match document {
                Document::People => crate::openapi_document(),
                Document::AgentChannel => crate::agent_channel_openapi_document(),
            };
            let text = document.to_pretty_json().map_err(internal)?;
            println!("{text}");
            Ok(())
        }
        Command::Migrate { database_url, config: file } => {
            let config = config(database_url, None, file)?;
            let store = open(&config).await?;
            store.close().await;
            eprintln!("✓ migrations applied to {}", db::describe_url(config.database_url.expose()));
            Ok(())
        }
    }
}

/// The settings from flags, the environment and the config file, checked.
fn config(
    database_url: Option<String>,
    listen: Option<String>,
    file: Option<PathBuf>,
) -> Result<ServeConfig, ApiError> {
    let file = match file {
        Some(path) => FileConfig::load(&path)?,
        None => FileConfig::default(),
    };
    ServeConfig::resolve(database_url, listen, file)
}

/// The database, migrated.
async fn open(config: &ServeConfig) -> Result<db::SqlStore, ApiError> {
    db::connect(config.database_url.expose())
        .await
        .map_err(|e| ApiError::new(ErrorCode::Unavailable, e.to_string()))
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::Internal, e.to_string())
}

fn print_json(value: &impl serde::Serialize) -> Result<(), ApiError> {
    println!("{}", serde_json::to_string_pretty(value).map_err(internal)?);
    Ok(())
}
