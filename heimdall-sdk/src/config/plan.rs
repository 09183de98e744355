//! The diff of a desired [`Config`] against the current one: pure, so
//! what `heimdall plan` shows is exactly what `apply` runs.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Config;
use crate::wire::CatalogKind;

/// What kind of object a change is about, in the order creations run
/// (deletions run in the reverse order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Domain,
    System,
    Component,
    Environment,
    Schema,
    Policy,
    Member,
    Secret,
    Channel,
}

impl Kind {
    /// Parents before children, what a secret names before the secret.
    pub const ORDER: [Kind; 9] = [
        Kind::Domain,
        Kind::System,
        Kind::Component,
        Kind::Environment,
        Kind::Schema,
        Kind::Policy,
        Kind::Member,
        Kind::Secret,
        Kind::Channel,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Domain => "domain",
            Kind::System => "system",
            Kind::Component => "component",
            Kind::Environment => "environment",
            Kind::Schema => "schema",
            Kind::Policy => "policy",
            Kind::Member => "member",
            Kind::Secret => "secret",
            Kind::Channel => "notification channel",
        }
    }

    /// The catalog kind of a catalog entry.
    pub fn catalog(self) -> Option<CatalogKind> {
        match self {
            Kind::Domain => Some(CatalogKind::Domain),
            Kind::System => Some(CatalogKind::System),
            Kind::Component => Some(CatalogKind::Component),
            Kind::Environment => Some(CatalogKind::Environment),
            Kind::Schema | Kind::Policy | Kind::Member | Kind::Secret | Kind::Channel => None,
        }
    }

    /// The field that names an object of this kind.
    pub fn key_field(self) -> &'static str {
        match self {
            Kind::Member => "email",
            Kind::Schema => "type",
            _ => "name",
        }
    }

    /// A kind changed by writing a whole new version (a schema): its
    /// change carries the whole object as it will be.
    pub fn versioned(self) -> bool {
        self == Kind::Schema
    }

    /// The field naming the entry a system or component lives in.
    pub(super) fn parent(self) -> Option<(&'static str, Kind)> {
        match self {
            Kind::System => Some(("domain", Kind::Domain)),
            Kind::Component => Some(("system", Kind::System)),
            _ => None,
        }
    }

    /// Fields set when the object is made that the API cannot change.
    fn immutable(self) -> &'static [&'static str] {
        match self {
            Kind::Domain | Kind::Environment => &["description"],
            Kind::System => &["description", "domain"],
            Kind::Component => &["description", "system"],
            Kind::Schema | Kind::Policy | Kind::Member | Kind::Secret | Kind::Channel => &[],
        }
    }

    /// Fields used only to make the object, never compared: a channel's
    /// `webhook_env` names where its URL is read from when it is made.
    fn inputs(self) -> &'static [&'static str] {
        match self {
            Kind::Channel => &["webhook_env"],
            _ => &[],
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Create,
    Update,
    Delete,
}

/// One field a change sets: from what the organization has (`None` for a
/// new object) to what the file says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChange {
    pub field: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Value>,
}

/// What happens to one object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub kind: Kind,
    /// Its name (a member's email): as the file names it, or for a
    /// deletion as the organization does.
    pub key: String,
    /// The organization's id for it (`None` for a creation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub op: Op,
    /// For a creation every field the file sets; for an update those that
    /// differ; none for a deletion.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldChange>,
    /// For a kind written whole ([`Kind::versioned`]): the new version as
    /// it will be, the file's fields over the newest version's.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub object: Map<String, Value>,
}

impl Change {
    /// What the field becomes, if the change sets it.
    pub fn to(&self, field: &str) -> Option<&Value> {
        self.fields.iter().find(|f| f.field == field).and_then(|f| f.to.as_ref())
    }
}

impl fmt::Display for Change {
    /// `+ domain payments`, `~ policy readers`, `- secret old`, then one
    /// line per field.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = match self.op {
            Op::Create => '+',
            Op::Update => '~',
            Op::Delete => '-',
        };
        write!(f, "{sign} {} {}", self.kind, self.key)?;
        for field in &self.fields {
            let shown = |v: &Option<Value>| v.as_ref().map_or_else(String::new, Value::to_string);
            match (self.op, &field.from) {
                (Op::Update, Some(_)) => {
                    write!(f, "\n    {}: {} → {}", field.field, shown(&field.from), shown(&field.to))?
                }
                _ => write!(f, "\n    {}: {}", field.field, shown(&field.to))?,
            }
        }
        Ok(())
    }
}

/// Every change, in the order `apply` runs them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub changes: Vec<Change>,
    /// Objects the file names that are already as it says.
    pub unchanged: usize,
}

impl Plan {
    /// Nothing to do.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// How many creations, updates and deletions.
    pub fn counts(&self) -> (usize, usize, usize) {
        let count = |op| self.changes.iter().filter(|c| c.op == op).count();
        (count(Op::Create), count(Op::Update), count(Op::Delete))
    }
}

#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// Delete what a managed section no longer names (never without it).
    pub prune: bool,
    /// A member never deleted, even with `prune`: whoever applies.
    pub keep_member: Option<String>,
}

/// A description that cannot be planned, naming the object and the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("{kind} {key} is named twice in the file")]
    Duplicate { kind: Kind, key: String },
    #[error("{kind} {key}: no {kind} has the id {id}")]
    UnknownId { kind: Kind, key: String, id: String },
    #[error("{kind} {key}: the organization has several of that name; give its `id`")]
    Ambiguous { kind: Kind, key: String },
    #[error(
        "{kind} {key}: its {field} cannot change once it is made (it is {from}); \
         leave `{field}` out, or delete it and make it again"
    )]
    Immutable { kind: Kind, key: String, field: String, from: String },
    #[error("{kind} {key}: its {field} {name} is neither in the file nor in the organization")]
    Missing { kind: Kind, key: String, field: &'static str, name: String },
    #[error(
        "member {key} is member {now} now, not {id}: the address was removed and added again; \
         check who it is, then update the file"
    )]
    Replaced { key: String, id: String, now: String },
    #[error("{kind} {key}: to make it, give `{field}`")]
    Needed { kind: Kind, key: String, field: &'static str },
}

/// An object as the diff sees it: its key, its id, and the fields the
/// description sets (lists as sorted sets).
struct Object {
    key: String,
    id: Option<String>,
    fields: Map<String, Value>,
}

fn objects<T: Serialize>(kind: Kind, items: &[T]) -> Vec<Object> {
    let text = |v: Option<Value>| match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    items
        .iter()
        .map(|item| {
            let mut fields = match serde_json::to_value(item) {
                Ok(Value::Object(fields)) => fields,
                _ => Map::new(),
            };
            let key = text(fields.remove(kind.key_field())).unwrap_or_default();
            let id = text(fields.remove("id"));
            // One spelling of a schedule: `1440m` is `1d`.
            if let Some(Value::String(every)) = fields.get_mut("drift_check_every") {
                if let Ok(seconds) = heimdall_core::drift::parse_every(every) {
                    *every = super::every_text(seconds);
                }
            }
            for value in fields.values_mut() {
                if let Value::Array(list) = value {
                    list.sort_by_key(Value::to_string);
                    list.dedup();
                }
            }
            Object { key, id, fields }
        })
        .collect()
}

/// A section's objects; `None` for a section not managed.
fn section(config: &Config, kind: Kind) -> Option<Vec<Object>> {
    match kind {
        Kind::Domain => config.domains.as_deref().map(|s| objects(kind, s)),
        Kind::System => config.systems.as_deref().map(|s| objects(kind, s)),
        Kind::Component => config.components.as_deref().map(|s| objects(kind, s)),
        Kind::Environment => config.environments.as_deref().map(|s| objects(kind, s)),
        Kind::Schema => config.schemas.as_deref().map(|s| objects(kind, s)),
        Kind::Policy => config.policies.as_deref().map(|s| objects(kind, s)),
        Kind::Member => config.members.as_deref().map(|s| objects(kind, s)),
        Kind::Secret => config.secrets.as_deref().map(|s| objects(kind, s)),
        Kind::Channel => config.notification_channels.as_deref().map(|s| objects(kind, s)),
    }
}

/// Whether the organization already has what the file says; a field it
/// does not report is empty.
fn same(desired: &Value, current: Option<&Value>) -> bool {
    match current {
        Some(current) => current == desired,
        None => match desired {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            Value::Bool(_) | Value::Number(_) => false,
        },
    }
}

/// The current object the desired one means: by id where it gives one,
/// else by key.
fn find(kind: Kind, wanted: &Object, have: &[Object]) -> Result<Option<usize>, PlanError> {
    if let Some(id) = &wanted.id {
        if kind == Kind::Member {
            return match have.iter().position(|c| c.key == wanted.key) {
                Some(at) if have[at].id.as_ref() == Some(id) => Ok(Some(at)),
                Some(at) => Err(PlanError::Replaced {
                    key: wanted.key.clone(),
                    id: id.clone(),
                    now: have[at].id.clone().unwrap_or_default(),
                }),
                None => Err(PlanError::UnknownId { kind, key: wanted.key.clone(), id: id.clone() }),
            };
        }
        return match have.iter().position(|c| c.id.as_ref() == Some(id)) {
            Some(at) => Ok(Some(at)),
            None => Err(PlanError::UnknownId { kind, key: wanted.key.clone(), id: id.clone() }),
        };
    }
    let mut named = have.iter().enumerate().filter(|(_, c)| c.key == wanted.key).map(|(at, _)| at);
    match (named.next(), named.next()) {
        (Some(_), Some(_)) => Err(PlanError::Ambiguous { kind, key: wanted.key.clone() }),
        (found, _) => Ok(found),
    }
}

/// A versioned object as its next version will be: what the file sets over
/// what the newest version has (a field the file leaves out stays).
fn whole(kind: Kind, wanted: &Object, current: Option<&Object>) -> Map<String, Value> {
    let mut object = current.map(|c| c.fields.clone()).unwrap_or_default();
    for (field, value) in wanted.fields.iter().filter(|(_, v)| !v.is_null()) {
        object.insert(field.clone(), value.clone());
    }
    object.insert(kind.key_field().to_owned(), Value::String(wanted.key.clone()));
    object
}

/// A current field as it reads once the entries it names were renamed:
/// a system's domain, a component's system, a secret's components.
fn after_renames(kind: Kind, field: &str, value: Value, renamed: &[(Kind, String, String)]) -> Value {
    let target = match (kind.parent(), kind) {
        (Some((parent_field, parent)), _) if parent_field == field => parent,
        (_, Kind::Secret) if field == "components" => Kind::Component,
        _ => return value,
    };
    let rename = |name: Value| match name {
        Value::String(old) => Value::String(
            renamed
                .iter()
                .find(|(k, from, _)| *k == target && *from == old)
                .map_or(old, |(_, _, to)| to.clone()),
        ),
        other => other,
    };
    match value {
        Value::Array(list) => {
            let mut list: Vec<Value> = list.into_iter().map(rename).collect();
            list.sort_by_key(Value::to_string);
            Value::Array(list)
        }
        one => rename(one),
    }
}

/// The changes that make `current` what `desired` says, in the order they
/// run: creations and updates kind by kind ([`Kind::ORDER`]), then
/// deletions (only with `prune`) in the reverse order.
pub fn plan(desired: &Config, current: &Config, options: &PlanOptions) -> Result<Plan, PlanError> {
    let mut plan = Plan::default();
    let mut deletions = Vec::new();
    // Entries renamed by id so far: what their children's current fields
    // name is the old name.
    let mut renamed: Vec<(Kind, String, String)> = Vec::new();
    for kind in Kind::ORDER {
        let Some(wanted) = section(desired, kind) else { continue };
        let have = section(current, kind).unwrap_or_default();
        // Each object once: by id where the file gives one (two entries
        // may share a name under different parents), else by key.
        let (mut keys, mut ids) = (BTreeSet::new(), BTreeSet::new());
        for w in &wanted {
            let first = match &w.id {
                Some(id) if kind != Kind::Member => ids.insert(id),
                _ => keys.insert(&w.key),
            };
            if !first {
                return Err(PlanError::Duplicate { kind, key: w.key.clone() });
            }
        }
        let mut matched = vec![false; have.len()];
        for w in &wanted {
            let Some(at) = find(kind, w, &have)? else {
                if let Some(field) = kind.inputs().iter().find(|f| !w.fields.contains_key(**f)) {
                    return Err(PlanError::Needed { kind, key: w.key.clone(), field });
                }
                let fields = w
                    .fields
                    .iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(f, v)| FieldChange { field: f.clone(), from: None, to: Some(v.clone()) })
                    .collect();
                let object = if kind.versioned() { whole(kind, w, None) } else { Map::new() };
                plan.changes.push(Change {
                    kind,
                    key: w.key.clone(),
                    id: None,
                    op: Op::Create,
                    fields,
                    object,
                });
                continue;
            };
            matched[at] = true;
            let c = &have[at];
            let mut fields = Vec::new();
            if w.key != c.key {
                renamed.push((kind, c.key.clone(), w.key.clone()));
                let (from, to) = (Some(Value::String(c.key.clone())), Some(Value::String(w.key.clone())));
                fields.push(FieldChange { field: kind.key_field().to_owned(), from, to });
            }
            for (field, value) in w.fields.iter().filter(|(f, _)| !kind.inputs().contains(&f.as_str())) {
                let from = c.fields.get(field).cloned().map(|v| after_renames(kind, field, v, &renamed));
                if value.is_null() || same(value, from.as_ref()) {
                    continue;
                }
                if kind.immutable().contains(&field.as_str()) {
                    let from = from.map_or_else(|| "empty".to_owned(), |v| v.to_string());
                    return Err(PlanError::Immutable {
                        kind,
                        key: w.key.clone(),
                        field: field.clone(),
                        from,
                    });
                }
                fields.push(FieldChange { field: field.clone(), from, to: Some(value.clone()) });
            }
            if fields.is_empty() {
                plan.unchanged += 1;
            } else {
                let object = if kind.versioned() { whole(kind, w, Some(c)) } else { Map::new() };
                let id = c.id.clone();
                plan.changes.push(Change { kind, key: w.key.clone(), id, op: Op::Update, fields, object });
            }
        }
        if options.prune {
            for (c, _) in have.iter().zip(&matched).filter(|(_, m)| !**m) {
                if kind == Kind::Member && options.keep_member.as_deref() == Some(c.key.as_str()) {
                    continue;
                }
                let (key, id) = (c.key.clone(), c.id.clone());
                deletions.push(Change {
                    kind,
                    key,
                    id,
                    op: Op::Delete,
                    fields: Vec::new(),
                    object: Map::new(),
                });
            }
        }
    }
    deletions.sort_by_key(|c| std::cmp::Reverse(c.kind));
    check_references(desired, current, &plan.changes, &deletions)?;
    plan.changes.extend(deletions);
    Ok(plan)
}

/// Every name a change points at (a system's domain, a component's system,
/// a secret's components) exists once the plan has run.
fn check_references(
    desired: &Config,
    current: &Config,
    forward: &[Change],
    deletions: &[Change],
) -> Result<(), PlanError> {
    let after = |kind: Kind| -> BTreeSet<String> {
        let mut names: BTreeSet<String> =
            section(current, kind).unwrap_or_default().into_iter().map(|o| o.key).collect();
        for d in deletions.iter().filter(|d| d.kind == kind) {
            names.remove(&d.key);
        }
        for c in forward.iter().filter(|c| c.kind == kind) {
            if let Some(Value::String(old)) =
                c.fields.iter().find(|f| f.field == "name").and_then(|f| f.from.as_ref())
            {
                names.remove(old);
            }
        }
        names.extend(section(desired, kind).unwrap_or_default().into_iter().map(|o| o.key));
        names
    };
    for (kind, field, target) in [
        (Kind::System, "domain", Kind::Domain),
        (Kind::Component, "system", Kind::System),
        (Kind::Secret, "components", Kind::Component),
    ] {
        let exists = after(target);
        for o in section(desired, kind).unwrap_or_default() {
            let named: Vec<&str> = match o.fields.get(field) {
                Some(Value::String(name)) => vec![name.as_str()],
                Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if let Some(missing) = named.into_iter().find(|name| !exists.contains(*name)) {
                return Err(PlanError::Missing { kind, key: o.key, field, name: missing.to_owned() });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
