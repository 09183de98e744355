//! `heimdall_policy`: a Cedar policy by id. New text or a new description
//! is a new version of the policy; a new name replaces it. Import by id or
//! name.

use async_trait::async_trait;
use heimdall_sdk::wire::{CreatePolicy, Policy, UpdatePolicy};
use serde::{Deserialize, Serialize};
use tf_provider::schema::{Attribute, AttributeConstraint, AttributeType, Block, Description, Schema};
use tf_provider::value::{Value, ValueEmpty};
use tf_provider::{map, AttributePath, Diagnostics, Resource};

use crate::api::{destroyed, gone, optional, or_refused, refused, text, Api};

pub struct PolicyResource {
    api: Api,
}

impl PolicyResource {
    pub fn new(api: &Api) -> Self {
        Self { api: api.clone() }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct PolicyState {
    #[serde(default)]
    pub(crate) id: Value<String>,
    #[serde(default)]
    pub(crate) name: Value<String>,
    #[serde(default)]
    description: Value<String>,
    #[serde(default)]
    text: Value<String>,
}

impl From<Policy> for PolicyState {
    fn from(p: Policy) -> Self {
        Self {
            id: Value::Value(p.id.to_string()),
            name: Value::Value(p.name),
            description: optional(p.description),
            text: Value::Value(p.text),
        }
    }
}

fn attribute(description: &str, constraint: AttributeConstraint) -> Attribute {
    crate::api::attribute(description, AttributeType::String, constraint)
}

#[async_trait]
impl Resource for PolicyResource {
    type State<'a> = PolicyState;
    type PrivateState<'a> = ValueEmpty;
    type ProviderMetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        Some(Schema {
            version: 1,
            block: Block {
                description: Description::plain("A Cedar policy of the organization"),
                attributes: map! {
                    "id" => attribute("The policy's id", AttributeConstraint::Computed),
                    "name" => attribute("Its name: a new one replaces it", AttributeConstraint::Required),
                    "description" => attribute("What it is for", AttributeConstraint::Optional),
                    "text" => attribute("The Cedar text: a new one is a new version", AttributeConstraint::Required),
                },
                ..Default::default()
            },
        })
    }

    async fn read<'a>(
        &self,
        diags: &mut Diagnostics,
        state: PolicyState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(PolicyState, ValueEmpty)> {
        let client = self.api.client(diags)?;
        let id = text(&state.id)?.to_owned();
        match client.get_policy(&id).await {
            Ok(policy) => Some((policy.into(), private)),
            Err(error) if gone(&error) => None,
            Err(error) => {
                refused(diags, "id", &error);
                Some((state, private))
            }
        }
    }

    async fn plan_create<'a>(
        &self,
        _diags: &mut Diagnostics,
        mut proposed: PolicyState,
        _config: PolicyState,
        _meta: ValueEmpty,
    ) -> Option<(PolicyState, ValueEmpty)> {
        proposed.id = Value::Unknown;
        Some((proposed, ValueEmpty::default()))
    }

    async fn plan_update<'a>(
        &self,
        _diags: &mut Diagnostics,
        prior: PolicyState,
        proposed: PolicyState,
        _config: PolicyState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(PolicyState, ValueEmpty, Vec<AttributePath>)> {
        let replace = if prior.name != proposed.name { vec![AttributePath::new("name")] } else { Vec::new() };
        Some((proposed, private, replace))
    }

    async fn plan_destroy<'a>(
        &self,
        _diags: &mut Diagnostics,
        _prior: PolicyState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<ValueEmpty> {
        Some(private)
    }

    async fn create<'a>(
        &self,
        diags: &mut Diagnostics,
        planned: PolicyState,
        _config: PolicyState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(PolicyState, ValueEmpty)> {
        let client = self.api.client(diags)?;
        let policy = CreatePolicy {
            name: text(&planned.name).unwrap_or_default().to_owned(),
            description: text(&planned.description).map(str::to_owned),
            text: text(&planned.text).unwrap_or_default().to_owned(),
        };
        let made = or_refused(diags, "text", client.create_policy(&policy).await)?;
        Some((PolicyState { description: planned.description, ..made.into() }, private))
    }

    async fn update<'a>(
        &self,
        diags: &mut Diagnostics,
        prior: PolicyState,
        planned: PolicyState,
        _config: PolicyState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(PolicyState, ValueEmpty)> {
        let client = self.api.client(diags)?;
        let id = text(&prior.id)?.to_owned();
        let change = UpdatePolicy {
            text: text(&planned.text).map(str::to_owned),
            description: Some(text(&planned.description).unwrap_or_default().to_owned()),
            expected_version: None,
        };
        match client.update_policy(&id, &change).await {
            Ok(updated) => {
                Some((PolicyState { description: planned.description, ..updated.into() }, private))
            }
            Err(error) => {
                refused(diags, "text", &error);
                None
            }
        }
    }

    async fn destroy<'a>(
        &self,
        diags: &mut Diagnostics,
        state: PolicyState,
        _private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<()> {
        let client = self.api.client(diags)?;
        let answer = client.delete_policy(text(&state.id)?).await;
        destroyed(diags, answer)
    }

    async fn import<'a>(&self, diags: &mut Diagnostics, id: String) -> Option<(PolicyState, ValueEmpty)> {
        let client = self.api.client(diags)?;
        let policy = or_refused(diags, "id", client.get_policy(&id).await)?;
        Some((policy.into(), ValueEmpty::default()))
    }
}
