//! Configuration as code: an organization's configuration as one typed
//! description that can live in a repository.
//!
//! - [`Config`] is what a file says (`heimdall.config.yaml`, or JSON);
//!   [`current`] reads the same description from an organization.
//! - [`plan`] is a pure diff of the two: per object, create, update (with
//!   the fields that change) or delete; it reads nothing and writes
//!   nothing.
//! - [`apply`] runs a plan in dependency order (domains before their
//!   systems, deletions after every creation and in reverse), stops at
//!   the first refusal and says what was done.
//!
//! Objects are addressed by kind and name (a member by email, a schema by
//! its type), or by
//! `id` where one is given (a catalog entry renamed in the file keeps its
//! id). A section the file leaves out is not managed: it is neither
//! compared nor pruned. Applying the same description twice changes
//! nothing the second time. A description never holds a secret's value:
//! secrets appear by their metadata only.
//!
//! ```no_run
//! # async fn demo(client: heimdall_sdk::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use heimdall_sdk::config::{self, Config, PlanOptions};
//! let desired = Config::parse("domains:\n  - name: payments\n")?;
//! let current = config::current(&client).await?;
//! let plan = config::plan(&desired, &current, &PlanOptions::default())?;
//! for change in &plan.changes {
//!     println!("{change}");
//! }
//! config::apply(&client, &plan, |_| {}).await?;
//! # Ok(())
//! # }
//! ```

mod apply;
mod current;
mod plan;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::wire::Role;

pub use apply::{apply, Applied, ApplyError, ShownOnce};
pub use current::current;
pub use plan::{plan, Change, FieldChange, Kind, Op, Plan, PlanError, PlanOptions};

/// What an organization's configuration should be. Every section is
/// optional: one left out is not managed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domains: Option<Vec<Domain>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub systems: Option<Vec<System>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Vec<Component>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environments: Option<Vec<Environment>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schemas: Option<Vec<Schema>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<Vec<Policy>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<Member>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets: Option<Vec<Secret>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification_channels: Option<Vec<NotificationChannel>>,
}

/// A domain: the top of the catalog.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Domain {
    /// Pins the entry: a different `name` renames it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    /// Set when it is made; it cannot change afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A system, in a domain (by name).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct System {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    /// Its domain; it cannot move to another.
    pub domain: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A component, in a system (by name).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    /// Its system; it cannot move to another.
    pub system: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// An environment and, when `agents` is given, exactly the Agents that
/// hold its secrets (by name; an Agent is enrolled, never made here).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
}

/// A resource schema, as its newest version should be: a file that says
/// otherwise makes a new version (Resources on older ones stay there until
/// upgraded); a field left out is kept from the newest version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    #[serde(rename = "type")]
    pub type_name: String,
    /// The JSON Schema a Resource's inputs must meet.
    pub input_schema: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<BTreeMap<String, serde_json::Value>>,
    /// The pinned module: its source among those allowed, and its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<crate::wire::ModuleRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_approval: Option<bool>,
    /// E.g. `24h`: how often each Resource is checked for drift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_check_every: Option<String>,
}

/// A Cedar policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub text: String,
}

/// A member and their role. `id`, when given, must be the member who holds
/// the email now: an email removed and added again is another member, and
/// the plan refuses rather than hand them the role.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Member {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub email: String,
    pub role: Role,
}

/// A secret's metadata; never a value (there is no field for one, and
/// unknown fields are refused). Personal secrets are their owners' and are
/// not managed here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Secret {
    pub name: String,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub secret_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
    /// Components that use it, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Vec<String>>,
}

/// A schedule in seconds as one number and its largest whole unit
/// (`86400` is `1d`), the spelling `heimdall_core::drift::parse_every` reads.
pub(crate) fn every_text(seconds: i64) -> String {
    let (number, unit) = [(86_400, "d"), (3_600, "h"), (60, "m")]
        .into_iter()
        .find(|(unit, _)| seconds % unit == 0)
        .map_or((seconds, "s"), |(size, unit)| (seconds / size, unit));
    format!("{number}{unit}")
}

/// Where audit events are posted. Its webhook URL is itself a credential:
/// it is never in a file, a plan or an export. `webhook_env` names the
/// environment variable `apply` reads it from when it makes the channel
/// (change it later with `heimdall notification update --webhook`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotificationChannel {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_env: Option<String>,
}

/// A description that could not be read, with where.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(String);

impl Config {
    /// Reads YAML (or JSON, which is YAML) strictly: unknown fields and
    /// duplicate keys are refused, naming where.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let options =
            serde_saphyr::options! { duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::Error };
        let config: Option<Config> = serde_saphyr::from_str_with_options(text, options)
            .map_err(|e| ParseError(e.without_snippet().to_string()))?;
        Ok(config.unwrap_or_default())
    }

    /// The description as YAML, in the shape [`Config::parse`] reads.
    pub fn to_yaml(&self) -> Result<String, ParseError> {
        serde_saphyr::to_string(self).map_err(|e| ParseError(e.to_string()))
    }
}
