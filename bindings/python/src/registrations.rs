//! What a platform team changes on the second day, as `async fn`s over
//! heimdall-sdk (`ops.rs` has the shape): schema versions retired, cloud
//! accounts, policies, databases and their service users, notification
//! channels. A change arrives as the JSON of its wire type, built by the
//! Python method from its keyword arguments; unknown fields are refused.

use heimdall_sdk::wire::{LinkCloudAccount, UpdateChannel, UpdateCloudAccount, UpdateDatabase, UpdatePolicy};
use heimdall_sdk::Client;
use serde::de::DeserializeOwned;

use crate::convert::{json, Failure, Reply};
use crate::ops::Outcome;

/// A change's JSON as its wire type (one parse; an unknown field is refused).
fn change<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, Failure> {
    serde_json::from_str(text).map_err(|err| Failure::invalid(format!("{what}: {err}")))
}

// ---- schemas -----------------------------------------------------------------------

pub(crate) async fn list_schemas(sdk: Client, type_name: Option<String>) -> Outcome {
    json(&sdk.list_schemas(type_name.as_deref()).await?)
}

/// Deprecates (no new Resources on it) or un-deprecates one version of a type.
pub(crate) async fn deprecate_schema(
    sdk: Client,
    type_name: String,
    version: i64,
    deprecated: bool,
) -> Outcome {
    let schema = sdk.schema_version(&type_name, version).await?;
    json(&sdk.set_schema_deprecated(&schema.id.to_string(), deprecated).await?)
}

/// Deletes one version of a type (`NOT_EMPTY` while a Resource uses it).
pub(crate) async fn delete_schema(sdk: Client, type_name: String, version: i64) -> Outcome {
    let schema = sdk.schema_version(&type_name, version).await?;
    sdk.delete_schema(&schema.id.to_string()).await?;
    Ok(Reply::Nothing)
}

// ---- cloud accounts ----------------------------------------------------------------

pub(crate) async fn list_cloud_accounts(sdk: Client) -> Outcome {
    json(&sdk.list_cloud_accounts().await?)
}

pub(crate) async fn update_cloud_account(sdk: Client, id_or_name: String, change_json: String) -> Outcome {
    let update: UpdateCloudAccount = change(&change_json, "a cloud account's change")?;
    json(&sdk.update_cloud_account(&id_or_name, &update).await?)
}

pub(crate) async fn unlink_cloud_account(sdk: Client, id_or_name: String, link_json: String) -> Outcome {
    let link: LinkCloudAccount = change(&link_json, "the link")?;
    sdk.unlink_cloud_account(&id_or_name, &link).await?;
    Ok(Reply::Nothing)
}

pub(crate) async fn delete_cloud_account(sdk: Client, id_or_name: String) -> Outcome {
    sdk.delete_cloud_account(&id_or_name).await?;
    Ok(Reply::Nothing)
}

// ---- policies ----------------------------------------------------------------------

pub(crate) async fn list_policies(sdk: Client) -> Outcome {
    json(&sdk.list_policies().await?)
}

pub(crate) async fn update_policy(sdk: Client, key: String, change_json: String) -> Outcome {
    let update: UpdatePolicy = change(&change_json, "a policy's change")?;
    json(&sdk.update_policy(&key, &update).await?)
}

// ---- databases ---------------------------------------------------------------------

pub(crate) async fn list_databases(sdk: Client) -> Outcome {
    json(&sdk.list_databases().await?)
}

pub(crate) async fn update_database(sdk: Client, name: String, change_json: String) -> Outcome {
    let update: UpdateDatabase = change(&change_json, "a database's change")?;
    json(&sdk.update_database(&name, &update).await?)
}

pub(crate) async fn delete_database(sdk: Client, name: String) -> Outcome {
    sdk.delete_database(&name).await?;
    Ok(Reply::Nothing)
}

pub(crate) async fn list_service_users(sdk: Client, database: String) -> Outcome {
    json(&sdk.list_service_users(&database).await?)
}

pub(crate) async fn delete_service_user(
    sdk: Client,
    database: String,
    user: String,
    grace: Option<String>,
) -> Outcome {
    json(&sdk.delete_service_user(&database, &user, grace.as_deref()).await?)
}

// ---- notification channels ---------------------------------------------------------

pub(crate) async fn list_notifications(sdk: Client) -> Outcome {
    json(&sdk.list_channels().await?)
}

pub(crate) async fn update_notification(sdk: Client, id_or_name: String, change_json: String) -> Outcome {
    let update: UpdateChannel = change(&change_json, "a channel's change")?;
    json(&sdk.update_channel(&id_or_name, &update).await?)
}
