//! `heimdall_secret`: a secret's metadata by id. There is no attribute for
//! a value, so no Terraform state ever holds one: values are written with
//! `heimdall secret set` and live only in Agents. A new name replaces the
//! secret (and deletes its values); the rest is changed in place.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use heimdall_sdk::flows::{delete_secret_and_wait, Waited};
use heimdall_sdk::wire::{CatalogKind, CreateSecret, Secret, UpdateSecret};
use heimdall_sdk::Client;
use serde::{Deserialize, Serialize};
use tf_provider::schema::{AttributeConstraint, AttributeType, Block, Description, Schema};
use tf_provider::value::{Value, ValueEmpty};
use tf_provider::{map, AttributePath, Diagnostic, Diagnostics, Resource};

use crate::api::{attribute, gone, optional, or_refused, refused, text, Api};

/// How long destroying a secret waits for its holders to erase it.
const DELETION_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

pub struct SecretResource {
    api: Api,
}

impl SecretResource {
    pub fn new(api: &Api) -> Self {
        Self { api: api.clone() }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SecretState {
    #[serde(default)]
    pub(crate) id: Value<String>,
    #[serde(default)]
    pub(crate) name: Value<String>,
    #[serde(default, rename = "type")]
    secret_type: Value<String>,
    #[serde(default)]
    description: Value<String>,
    #[serde(default)]
    tags: Value<BTreeMap<String, Value<String>>>,
    #[serde(default)]
    components: Value<BTreeSet<Value<String>>>,
}

fn tags(state: &SecretState) -> BTreeMap<String, String> {
    match &state.tags {
        Value::Value(tags) => {
            tags.iter().filter_map(|(k, v)| Some((k.clone(), text(v)?.to_owned()))).collect()
        }
        _ => BTreeMap::new(),
    }
}

fn components(state: &SecretState) -> Vec<String> {
    match &state.components {
        Value::Value(set) => set.iter().filter_map(|c| text(c).map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

/// The secret as state. Components keep the state's spelling (ids or
/// names) while they name the same entries; else they read as names.
pub async fn state_of(
    client: &Client,
    secret: Secret,
    was: Option<&SecretState>,
) -> Result<SecretState, heimdall_sdk::Error> {
    let catalog = client.list_catalog(CatalogKind::Component, None).await?;
    let id_of = |key: &str| {
        let mut named = catalog.iter().filter(|c| c.id.to_string() == key || c.name == key);
        match (named.next(), named.next()) {
            (Some(one), None) => Some(one.id),
            _ => None,
        }
    };
    let now: BTreeSet<_> = secret.components.iter().copied().collect();
    let spelled = was.map(components).unwrap_or_default();
    let same = !spelled.is_empty()
        && spelled.iter().map(|k| id_of(k)).collect::<Option<BTreeSet<_>>>() == Some(now.clone());
    let names: BTreeSet<Value<String>> = if same {
        spelled.into_iter().map(Value::Value).collect()
    } else {
        now.iter()
            .filter_map(|id| catalog.iter().find(|c| c.id == *id))
            .map(|c| Value::Value(c.name.clone()))
            .collect()
    };
    let was_set = |was: Option<&SecretState>, field: fn(&SecretState) -> bool| was.is_some_and(field);
    Ok(SecretState {
        id: Value::Value(secret.id.to_string()),
        name: Value::Value(secret.name),
        secret_type: Value::Value(secret.secret_type),
        description: optional(secret.description),
        // Null where the configuration leaves them out and the API has none.
        tags: if secret.tags.is_empty() && !was_set(was, |s| matches!(s.tags, Value::Value(_))) {
            Value::Null
        } else {
            Value::Value(secret.tags.into_iter().map(|(k, v)| (k, Value::Value(v))).collect())
        },
        components: if names.is_empty() && !was_set(was, |s| matches!(s.components, Value::Value(_))) {
            Value::Null
        } else {
            Value::Value(names)
        },
    })
}

#[async_trait]
impl Resource for SecretResource {
    type State<'a> = SecretState;
    type PrivateState<'a> = ValueEmpty;
    type ProviderMetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        let string = || AttributeType::String;
        Some(Schema {
            version: 1,
            block: Block {
                description: Description::plain(
                    "A secret's metadata: there is no attribute for a value, so no state holds one",
                ),
                attributes: map! {
                    "id" => attribute("The secret's id", string(), AttributeConstraint::Computed),
                    "name" => attribute("Its name: a new one replaces the secret, values and all", string(), AttributeConstraint::Required),
                    "type" => attribute("Its type, e.g. password (the API's default when left out)", string(), AttributeConstraint::OptionalComputed),
                    "description" => attribute("What it is for", string(), AttributeConstraint::Optional),
                    "tags" => attribute("Free tags", AttributeType::Map(Box::new(string())), AttributeConstraint::Optional),
                    "components" => attribute("Components that use it (ids or names)", AttributeType::Set(Box::new(string())), AttributeConstraint::Optional),
                },
                ..Default::default()
            },
        })
    }

    async fn read<'a>(
        &self,
        diags: &mut Diagnostics,
        state: SecretState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(SecretState, ValueEmpty)> {
        let client = self.api.client(diags)?;
        let id = text(&state.id)?.to_owned();
        let found = match client.get_secret(&id).await {
            // Being deleted is gone, as far as a configuration goes.
            Ok(detail) if detail.secret.status != heimdall_core::secrets::SecretStatus::Active => {
                return None
            }
            Ok(detail) => state_of(client, detail.secret, Some(&state)).await,
            Err(error) if gone(&error) => return None,
            Err(error) => Err(error),
        };
        match found {
            Ok(now) => Some((now, private)),
            Err(error) => {
                refused(diags, "id", &error);
                Some((state, private))
            }
        }
    }

    async fn plan_create<'a>(
        &self,
        _diags: &mut Diagnostics,
        mut proposed: SecretState,
        _config: SecretState,
        _meta: ValueEmpty,
    ) -> Option<(SecretState, ValueEmpty)> {
        proposed.id = Value::Unknown;
        if proposed.secret_type == Value::Null {
            proposed.secret_type = Value::Unknown;
        }
        Some((proposed, ValueEmpty::default()))
    }

    async fn plan_update<'a>(
        &self,
        _diags: &mut Diagnostics,
        prior: SecretState,
        proposed: SecretState,
        _config: SecretState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(SecretState, ValueEmpty, Vec<AttributePath>)> {
        let replace = if prior.name != proposed.name { vec![AttributePath::new("name")] } else { Vec::new() };
        Some((proposed, private, replace))
    }

    async fn plan_destroy<'a>(
        &self,
        _diags: &mut Diagnostics,
        _prior: SecretState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<ValueEmpty> {
        Some(private)
    }

    async fn create<'a>(
        &self,
        diags: &mut Diagnostics,
        planned: SecretState,
        _config: SecretState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(SecretState, ValueEmpty)> {
        let client = self.api.client(diags)?;
        let secret = CreateSecret {
            name: text(&planned.name).unwrap_or_default().to_owned(),
            secret_type: text(&planned.secret_type).map(str::to_owned),
            description: text(&planned.description).map(str::to_owned),
            tags: matches!(planned.tags, Value::Value(_)).then(|| tags(&planned)),
            components: matches!(planned.components, Value::Value(_)).then(|| components(&planned)),
            ..CreateSecret::default()
        };
        let made = or_refused(diags, "name", client.create_secret(&secret).await)?;
        let id = made.id.to_string();
        match state_of(client, made, Some(&planned)).await {
            Ok(state) => Some((state, private)),
            Err(error) => {
                refused(diags, "components", &error);
                Some((SecretState { id: Value::Value(id), ..planned }, private))
            }
        }
    }

    async fn update<'a>(
        &self,
        diags: &mut Diagnostics,
        prior: SecretState,
        planned: SecretState,
        _config: SecretState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(SecretState, ValueEmpty)> {
        let client = self.api.client(diags)?;
        let id = text(&prior.id)?.to_owned();
        let change = UpdateSecret {
            secret_type: text(&planned.secret_type).map(str::to_owned),
            description: Some(text(&planned.description).unwrap_or_default().to_owned()),
            tags: Some(tags(&planned)),
            components: Some(components(&planned)),
        };
        let updated = or_refused(diags, "name", client.update_secret(&id, &change).await)?;
        match state_of(client, updated, Some(&planned)).await {
            Ok(state) => Some((state, private)),
            Err(error) => {
                refused(diags, "components", &error);
                Some((planned, private))
            }
        }
    }

    async fn destroy<'a>(
        &self,
        diags: &mut Diagnostics,
        state: SecretState,
        _private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<()> {
        let client = self.api.client(diags)?;
        // Done when every Agent erased its copies: until then the secret
        // still names its Components, which could not be destroyed after it.
        match delete_secret_and_wait(client, text(&state.id)?, DELETION_WAIT).await {
            Ok(Waited::Settled(_)) => Some(()),
            Ok(Waited::TimedOut(_)) => {
                let summary = format!("{} is still being deleted", text(&state.name).unwrap_or_default());
                let detail =
                    "waiting for the Agents that hold it to erase their copies (at their next sync); \
                    a Component or environment it names is kept until then"
                        .to_owned();
                diags.add_warning(Diagnostic {
                    summary: summary.into(),
                    detail: detail.into(),
                    attribute: AttributePath::root(),
                });
                Some(())
            }
            Err(error) if gone(&error) => Some(()),
            Err(error) => {
                refused(diags, "id", &error);
                None
            }
        }
    }

    async fn import<'a>(&self, diags: &mut Diagnostics, id: String) -> Option<(SecretState, ValueEmpty)> {
        let client = self.api.client(diags)?;
        let found = match client.get_secret(&id).await {
            Ok(detail) => state_of(client, detail.secret, None).await,
            Err(error) => Err(error),
        };
        Some((or_refused(diags, "id", found)?, ValueEmpty::default()))
    }
}
