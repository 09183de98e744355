//! `heimdall_domain`, `heimdall_system`, `heimdall_component`,
//! `heimdall_environment`: catalog entries by id. A new name renames the
//! entry; a new description or parent replaces it (the API cannot change
//! them once made). Import by id or name.

use std::marker::PhantomData;

use async_trait::async_trait;
use heimdall_sdk::wire::{CatalogEntry, CatalogKind, CreateCatalogEntry};
use heimdall_sdk::Client;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tf_provider::schema::{AttributeConstraint, AttributeType, Block, Description, Schema};
use tf_provider::value::{Value, ValueEmpty};
use tf_provider::{map, AttributePath, Diagnostics, Resource};

use crate::api::{attribute, destroyed, gone, optional, or_refused, refused, text, Api};

/// An entry's state: the attributes every kind has, and the parent of a
/// system (its domain) or a component (its system).
pub trait Entry: Serialize + DeserializeOwned + Send + Sync + Default + 'static {
    /// The attribute naming the entry this one lives in.
    const PARENT: Option<&'static str>;
    fn id(&self) -> &Value<String>;
    fn name(&self) -> &Value<String>;
    fn description(&self) -> &Value<String>;
    fn parent(&self) -> Option<&Value<String>>;
    fn set_id(&mut self, id: Value<String>);
    fn new(id: String, name: String, description: Value<String>, parent: Option<String>) -> Self;
}

/// A domain or an environment.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct PlainState {
    #[serde(default)]
    id: Value<String>,
    #[serde(default)]
    name: Value<String>,
    #[serde(default)]
    description: Value<String>,
}

/// A system, in a domain (id or name).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SystemState {
    #[serde(default)]
    id: Value<String>,
    #[serde(default)]
    name: Value<String>,
    #[serde(default)]
    description: Value<String>,
    #[serde(default)]
    domain: Value<String>,
}

/// A component, in a system (id or name).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ComponentState {
    #[serde(default)]
    id: Value<String>,
    #[serde(default)]
    name: Value<String>,
    #[serde(default)]
    description: Value<String>,
    #[serde(default)]
    system: Value<String>,
}

/// The accessors every entry's state has.
macro_rules! common {
    () => {
        fn id(&self) -> &Value<String> {
            &self.id
        }
        fn name(&self) -> &Value<String> {
            &self.name
        }
        fn description(&self) -> &Value<String> {
            &self.description
        }
        fn set_id(&mut self, id: Value<String>) {
            self.id = id;
        }
    };
}

impl Entry for PlainState {
    const PARENT: Option<&'static str> = None;
    common!();
    fn parent(&self) -> Option<&Value<String>> {
        None
    }
    fn new(id: String, name: String, description: Value<String>, _parent: Option<String>) -> Self {
        Self { id: Value::Value(id), name: Value::Value(name), description }
    }
}

impl Entry for SystemState {
    const PARENT: Option<&'static str> = Some("domain");
    common!();
    fn parent(&self) -> Option<&Value<String>> {
        Some(&self.domain)
    }
    fn new(id: String, name: String, description: Value<String>, parent: Option<String>) -> Self {
        let domain = parent.map_or(Value::Null, Value::Value);
        Self { id: Value::Value(id), name: Value::Value(name), description, domain }
    }
}

impl Entry for ComponentState {
    const PARENT: Option<&'static str> = Some("system");
    common!();
    fn parent(&self) -> Option<&Value<String>> {
        Some(&self.system)
    }
    fn new(id: String, name: String, description: Value<String>, parent: Option<String>) -> Self {
        let system = parent.map_or(Value::Null, Value::Value);
        Self { id: Value::Value(id), name: Value::Value(name), description, system }
    }
}

pub struct CatalogResource<E> {
    api: Api,
    kind: CatalogKind,
    state: PhantomData<fn() -> E>,
}

impl<E: Entry> CatalogResource<E> {
    pub fn new(api: &Api, kind: CatalogKind) -> Self {
        Self { api: api.clone(), kind, state: PhantomData }
    }
}

/// An entry's state as the API has it; the parent keeps the spelling the
/// state had (id or name) when it still names the same entry.
pub async fn state_of<E: Entry>(
    client: &Client,
    kind: CatalogKind,
    entry: CatalogEntry,
    was: Option<&Value<String>>,
) -> Result<E, heimdall_sdk::Error> {
    let parent = match (kind.parent_kind(), entry.parent_id) {
        (Some(parent_kind), Some(parent_id)) => {
            let id = parent_id.to_string();
            let parent = client.get_catalog_entry(parent_kind, &id).await?;
            Some(match was.and_then(text) {
                Some(spelled) if spelled == id => id,
                _ => parent.name,
            })
        }
        _ => None,
    };
    Ok(E::new(entry.id.to_string(), entry.name, optional(entry.description), parent))
}

#[async_trait]
impl<E: Entry> Resource for CatalogResource<E> {
    type State<'a> = E;
    type PrivateState<'a> = ValueEmpty;
    type ProviderMetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        let mut attributes = map! {
            "id" => attribute("The entry's id", AttributeType::String, AttributeConstraint::Computed),
            "name" => attribute("Its name; a new one renames it", AttributeType::String, AttributeConstraint::Required),
            "description" => attribute("Set when it is made: a new one replaces it", AttributeType::String, AttributeConstraint::Optional),
        };
        if let Some(parent) = E::PARENT {
            let text = format!("The {parent} it lives in (id or name): another one replaces it");
            attributes.insert(
                parent.to_owned(),
                attribute(&text, AttributeType::String, AttributeConstraint::Required),
            );
        }
        let description = format!("A {} of Heimdall's catalog", self.kind.as_str());
        Some(Schema {
            version: 1,
            block: Block { description: Description::plain(description), attributes, ..Default::default() },
        })
    }

    async fn read<'a>(
        &self,
        diags: &mut Diagnostics,
        state: E,
        private_state: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(E, ValueEmpty)> {
        let client = self.api.client(diags)?;
        let id = text(state.id())?.to_owned();
        match client.get_catalog_entry(self.kind, &id).await {
            Ok(entry) => match state_of(client, self.kind, entry, state.parent()).await {
                Ok(now) => Some((now, private_state)),
                Err(error) => {
                    refused(diags, "id", &error);
                    Some((state, private_state))
                }
            },
            // Deleted out of band: Terraform plans to make it again.
            Err(error) if gone(&error) => None,
            Err(error) => {
                refused(diags, "id", &error);
                Some((state, private_state))
            }
        }
    }

    async fn plan_create<'a>(
        &self,
        _diags: &mut Diagnostics,
        mut proposed: E,
        _config: E,
        _meta: ValueEmpty,
    ) -> Option<(E, ValueEmpty)> {
        proposed.set_id(Value::Unknown);
        Some((proposed, ValueEmpty::default()))
    }

    async fn plan_update<'a>(
        &self,
        _diags: &mut Diagnostics,
        prior: E,
        proposed: E,
        _config: E,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(E, ValueEmpty, Vec<AttributePath>)> {
        let mut replace = Vec::new();
        if prior.description() != proposed.description() {
            replace.push(AttributePath::new("description"));
        }
        if let (Some(parent), Some(before), Some(after)) = (E::PARENT, prior.parent(), proposed.parent()) {
            if before != after {
                replace.push(AttributePath::new(parent));
            }
        }
        Some((proposed, private, replace))
    }

    async fn plan_destroy<'a>(
        &self,
        _diags: &mut Diagnostics,
        _prior: E,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<ValueEmpty> {
        Some(private)
    }

    async fn create<'a>(
        &self,
        diags: &mut Diagnostics,
        mut planned: E,
        _config: E,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(E, ValueEmpty)> {
        let client = self.api.client(diags)?;
        let parent_id = match (E::PARENT, self.kind.parent_kind(), planned.parent().and_then(text)) {
            (Some(attribute), Some(parent_kind), Some(parent)) => {
                match client.get_catalog_entry(parent_kind, parent).await {
                    Ok(entry) => Some(entry.id),
                    Err(error) => {
                        refused(diags, attribute, &error);
                        return None;
                    }
                }
            }
            _ => None,
        };
        let entry = CreateCatalogEntry {
            name: text(planned.name()).unwrap_or_default().to_owned(),
            description: text(planned.description()).map(str::to_owned),
            parent_id,
        };
        let made = or_refused(diags, "name", client.create_catalog_entry(self.kind, &entry).await)?;
        planned.set_id(Value::Value(made.id.to_string()));
        Some((planned, private))
    }

    async fn update<'a>(
        &self,
        diags: &mut Diagnostics,
        prior: E,
        planned: E,
        _config: E,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(E, ValueEmpty)> {
        let client = self.api.client(diags)?;
        let id = text(prior.id())?.to_owned();
        if let Some(name) = text(planned.name()).filter(|name| Some(*name) != text(prior.name())) {
            if let Err(error) = client.rename_catalog_entry(self.kind, &id, name).await {
                refused(diags, "name", &error);
                return None;
            }
        }
        let mut planned = planned;
        planned.set_id(Value::Value(id));
        Some((planned, private))
    }

    async fn destroy<'a>(
        &self,
        diags: &mut Diagnostics,
        state: E,
        _private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<()> {
        let client = self.api.client(diags)?;
        let id = text(state.id())?;
        let answer = client.delete_catalog_entry(self.kind, id).await;
        destroyed(diags, answer)
    }

    async fn import<'a>(&self, diags: &mut Diagnostics, id: String) -> Option<(E, ValueEmpty)> {
        let client = self.api.client(diags)?;
        let found = client.get_catalog_entry(self.kind, &id).await;
        let state = match found {
            Ok(entry) => state_of(client, self.kind, entry, None).await,
            Err(error) => Err(error),
        };
        Some((or_refused(diags, "id", state)?, ValueEmpty::default()))
    }
}
