//! Runs a [`Plan`] against the API, one change after another in the plan's
//! order, and stops at the first refusal.

use std::collections::BTreeSet;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::plan::{Change, Kind, Op, Plan};
use crate::wire::{
    CreateCatalogEntry, CreatePolicy, CreateSchema, CreateSecret, ResourceStatus, Role, UpdatePolicy,
    UpdateSecret,
};
use heimdall_core::Redacted;

use crate::{Client, Error, Result};

/// How long deleting a secret waits for the Agents that hold it to erase
/// their copies (they do at their next sync); past it the apply goes on.
const SECRET_DELETION_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// What an apply did.
#[derive(Debug, Default)]
pub struct Applied {
    /// The changes made, in order.
    pub done: Vec<Change>,
    /// What the API shows once, by what it is for: a new member's first
    /// token (to hand over a safe channel), a new channel's signing secret.
    pub shown_once: Vec<ShownOnce>,
}

/// A credential the API gave back once, for the person who applies.
#[derive(Debug)]
pub struct ShownOnce {
    /// E.g. `member bo@example.com's token`.
    pub what: String,
    pub value: Redacted<String>,
}

/// The change the API refused, and what was done before it (kept: the
/// plan is not rolled back, and planning again shows what is left).
#[derive(Debug, thiserror::Error)]
#[error("{} {}: {error}", failed.kind, failed.key)]
pub struct ApplyError {
    pub applied: Applied,
    pub failed: Change,
    pub error: Error,
}

/// Runs `plan`; `on_change` hears of each change before it runs.
pub async fn apply(
    client: &Client,
    plan: &Plan,
    mut on_change: impl FnMut(&Change),
) -> std::result::Result<Applied, ApplyError> {
    let mut applied = Applied::default();
    // Every webhook is read before the first change runs: a variable not
    // set stops the apply with nothing done.
    for change in plan.changes.iter().filter(|c| c.kind == Kind::Channel && c.op == Op::Create) {
        if let Err(error) = webhook(change) {
            return Err(ApplyError { applied, failed: change.clone(), error });
        }
    }
    // A Component deleted after a secret that named it can go only once
    // no Agent holds a copy of the secret: then each secret's deletion is
    // waited for.
    let components_go = plan.changes.iter().any(|c| c.kind == Kind::Component && c.op == Op::Delete);
    for change in &plan.changes {
        on_change(change);
        match run(client, change, components_go).await {
            Ok(shown) => {
                applied.shown_once.extend(shown);
                applied.done.push(change.clone());
            }
            Err(error) => return Err(ApplyError { applied, failed: change.clone(), error }),
        }
    }
    Ok(applied)
}

/// One change; what the API shows once comes back.
async fn run(client: &Client, change: &Change, wait_for_deletions: bool) -> Result<Option<ShownOnce>> {
    // By id where the organization gave one, else by name (policies,
    // secrets: unique by name).
    let key = change.id.as_deref().unwrap_or(&change.key);
    match (change.kind, change.op) {
        (Kind::Domain | Kind::System | Kind::Component | Kind::Environment, op) => {
            catalog(client, change, op, key).await?;
        }
        (Kind::Schema, Op::Create | Op::Update) => {
            let schema: CreateSchema = serde_json::from_value(Value::Object(change.object.clone()))
                .map_err(|e| Error::Invalid(format!("schema {}: {e}", change.key)))?;
            client.create_schema(&schema).await?;
        }
        (Kind::Schema, Op::Delete) => {
            // Refused whole while a Resource is on the type: no version is
            // deleted before the one it uses would be refused.
            let query = crate::ResourceQuery { schema_type: Some(change.key.clone()), ..Default::default() };
            let live = |r: &crate::wire::Resource| {
                !matches!(r.status, ResourceStatus::Deleted | ResourceStatus::Abandoned)
            };
            let using = client.list_resources(&query).await?.iter().filter(|r| live(r)).count();
            if using > 0 {
                let message =
                    format!("schema {}: {using} Resource(s) use it; no version was deleted", change.key);
                return Err(Error::Api(heimdall_core::ApiError::new(
                    heimdall_core::ErrorCode::NotEmpty,
                    message,
                )));
            }
            let mut versions = client.list_schemas(Some(&change.key)).await?;
            versions.sort_by_key(|s| std::cmp::Reverse(s.version));
            for version in versions {
                client.delete_schema(&version.id.to_string()).await?;
            }
        }
        (Kind::Policy, Op::Create) => {
            client.create_policy(&body::<CreatePolicy>(change, true)?).await?;
        }
        (Kind::Policy, Op::Update) => {
            client.update_policy(key, &body::<UpdatePolicy>(change, false)?).await?;
        }
        (Kind::Policy, Op::Delete) => client.delete_policy(key).await?,
        (Kind::Member, Op::Create) => {
            let added = client.add_member(&change.key, role(change)?).await?;
            let what = format!("member {}'s token", change.key);
            return Ok(Some(ShownOnce { what, value: Redacted::new(added.token.clone()) }));
        }
        (Kind::Member, Op::Update) => {
            client.change_role(key, role(change)?).await?;
        }
        (Kind::Member, Op::Delete) => {
            client.remove_member(key).await?;
        }
        (Kind::Secret, Op::Create) => {
            client.create_secret(&body::<CreateSecret>(change, true)?).await?;
        }
        (Kind::Secret, Op::Update) => {
            client.update_secret(key, &body::<UpdateSecret>(change, false)?).await?;
        }
        (Kind::Secret, Op::Delete) if wait_for_deletions => {
            crate::flows::delete_secret_and_wait(client, key, SECRET_DELETION_WAIT).await?;
        }
        (Kind::Secret, Op::Delete) => {
            client.delete_secret(key, None).await?;
        }
        (Kind::Channel, Op::Create) => {
            let url = webhook(change)?;
            let made = client.create_channel(&change.key, url.expose()).await?;
            let what = format!("notification channel {}'s signing secret", change.key);
            return Ok(Some(ShownOnce { what, value: Redacted::new(made.secret.clone()) }));
        }
        // Nothing of a channel is compared but its name.
        (Kind::Channel, Op::Update) => {}
        (Kind::Channel, Op::Delete) => {
            client.delete_channel(key).await?;
        }
    }
    Ok(None)
}

async fn catalog(client: &Client, change: &Change, op: Op, key: &str) -> Result<()> {
    let Some(kind) = change.kind.catalog() else { return Ok(()) };
    match op {
        Op::Create => {
            // The parent by the API's own rule for a name (refused when two
            // share it).
            let parent_id = match change.kind.parent() {
                Some((field, parent)) => {
                    let name = text(change.to(field)).unwrap_or_default();
                    let parent = parent.catalog().unwrap_or(kind);
                    Some(client.get_catalog_entry(parent, &name).await?.id)
                }
                None => None,
            };
            let entry = CreateCatalogEntry {
                name: change.key.clone(),
                description: text(change.to("description")),
                parent_id,
            };
            let made = client.create_catalog_entry(kind, &entry).await?;
            for agent in names(change.to("agents")) {
                client.assign_agent(&made.id.to_string(), &agent).await?;
            }
        }
        Op::Update => {
            if let Some(name) = text(change.to("name")) {
                client.rename_catalog_entry(kind, key, &name).await?;
            }
            if let Some(agents) = change.fields.iter().find(|f| f.field == "agents") {
                let (before, after) = (names(agents.from.as_ref()), names(agents.to.as_ref()));
                for agent in after.difference(&before) {
                    client.assign_agent(key, agent).await?;
                }
                for agent in before.difference(&after) {
                    client.unassign_agent(key, agent).await?;
                }
            }
        }
        Op::Delete => client.delete_catalog_entry(kind, key).await?,
    }
    Ok(())
}

/// The request a change's fields make (with its name, for a creation).
fn body<T: DeserializeOwned>(change: &Change, named: bool) -> Result<T> {
    let mut fields: Map<String, Value> =
        change.fields.iter().filter_map(|f| Some((f.field.clone(), f.to.clone()?))).collect();
    if named {
        fields.insert(change.kind.key_field().to_owned(), Value::String(change.key.clone()));
    }
    serde_json::from_value(Value::Object(fields))
        .map_err(|e| Error::Invalid(format!("{} {}: {e}", change.kind, change.key)))
}

/// A new channel's webhook URL, from the variable the file names.
fn webhook(change: &Change) -> Result<Redacted<String>> {
    let name = text(change.to("webhook_env")).unwrap_or_default();
    match std::env::var(&name) {
        Ok(url) if !url.trim().is_empty() => Ok(Redacted::new(url)),
        _ => Err(Error::Invalid(format!(
            "notification channel {}: {name} is not set (it holds the webhook URL)",
            change.key
        ))),
    }
}

fn role(change: &Change) -> Result<Role> {
    serde_json::from_value(change.to("role").cloned().unwrap_or_default())
        .map_err(|e| Error::Invalid(format!("member {}: role: {e}", change.key)))
}

fn text(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_owned)
}

fn names(value: Option<&Value>) -> BTreeSet<String> {
    match value {
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => BTreeSet::new(),
    }
}
