//! Data sources of the same names (`data "heimdall_domain"`, …): one
//! object read by `id` or `name`, every attribute computed, as the
//! resources read it.

use std::marker::PhantomData;

use async_trait::async_trait;
use heimdall_sdk::wire::CatalogKind;
use tf_provider::schema::{AttributeConstraint, AttributeType, Block, Description, Schema};
use tf_provider::value::{Value, ValueEmpty};
use tf_provider::{map, DataSource, Diagnostics};

use crate::api::{attribute, error_on, or_refused, text, Api};
use crate::catalog::{state_of, Entry};
use crate::policy::PolicyState;
use crate::secret::SecretState;

/// The key a data block gives: its `id`, else its `name`.
fn key(diags: &mut Diagnostics, id: &Value<String>, name: &Value<String>) -> Option<String> {
    let key = text(id).or_else(|| text(name)).map(str::to_owned);
    if key.is_none() {
        error_on(diags, "give `id` or `name`".into(), String::new(), "name");
    }
    key
}

/// The schema of a data source: `id` and `name` to look it up by, the
/// rest computed.
fn schema(what: &str, computed: &[(&str, AttributeType)]) -> Schema {
    let text = || AttributeType::String;
    let mut attributes = map! {
        "id" => attribute("Its id (or give name)", text(), AttributeConstraint::OptionalComputed),
        "name" => attribute("Its name (or give id)", text(), AttributeConstraint::OptionalComputed),
    };
    for (name, attr_type) in computed {
        attributes
            .insert((*name).to_owned(), attribute(name, attr_type.clone(), AttributeConstraint::Computed));
    }
    Schema {
        version: 1,
        block: Block { description: Description::plain(what), attributes, ..Default::default() },
    }
}

pub struct CatalogData<E> {
    api: Api,
    kind: CatalogKind,
    state: PhantomData<fn() -> E>,
}

impl<E: Entry> CatalogData<E> {
    pub fn new(api: &Api, kind: CatalogKind) -> Self {
        Self { api: api.clone(), kind, state: PhantomData }
    }
}

#[async_trait]
impl<E: Entry> DataSource for CatalogData<E> {
    type State<'a> = E;
    type ProviderMetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        let mut computed = vec![("description", AttributeType::String)];
        computed.extend(E::PARENT.map(|parent| (parent, AttributeType::String)));
        Some(schema(&format!("A {} of Heimdall's catalog", self.kind.as_str()), &computed))
    }

    async fn read<'a>(&self, diags: &mut Diagnostics, config: E, _meta: ValueEmpty) -> Option<E> {
        let client = self.api.client(diags)?;
        let key = key(diags, config.id(), config.name())?;
        let entry = or_refused(diags, "name", client.get_catalog_entry(self.kind, &key).await)?;
        or_refused(diags, "name", state_of(client, self.kind, entry, None).await)
    }
}

pub struct PolicyData {
    api: Api,
}

impl PolicyData {
    pub fn new(api: &Api) -> Self {
        Self { api: api.clone() }
    }
}

#[async_trait]
impl DataSource for PolicyData {
    type State<'a> = PolicyState;
    type ProviderMetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        let computed = [("description", AttributeType::String), ("text", AttributeType::String)];
        Some(schema("A Cedar policy of the organization", &computed))
    }

    async fn read<'a>(
        &self,
        diags: &mut Diagnostics,
        config: PolicyState,
        _meta: ValueEmpty,
    ) -> Option<PolicyState> {
        let client = self.api.client(diags)?;
        let key = key(diags, &config.id, &config.name)?;
        Some(or_refused(diags, "name", client.get_policy(&key).await)?.into())
    }
}

pub struct SecretData {
    api: Api,
}

impl SecretData {
    pub fn new(api: &Api) -> Self {
        Self { api: api.clone() }
    }
}

#[async_trait]
impl DataSource for SecretData {
    type State<'a> = SecretState;
    type ProviderMetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        let text = || AttributeType::String;
        let computed = [
            ("type", text()),
            ("description", text()),
            ("tags", AttributeType::Map(Box::new(text()))),
            ("components", AttributeType::Set(Box::new(text()))),
        ];
        Some(schema("A secret's metadata (never a value)", &computed))
    }

    async fn read<'a>(
        &self,
        diags: &mut Diagnostics,
        config: SecretState,
        _meta: ValueEmpty,
    ) -> Option<SecretState> {
        let client = self.api.client(diags)?;
        let key = key(diags, &config.id, &config.name)?;
        let detail = or_refused(diags, "name", client.get_secret(&key).await)?;
        or_refused(diags, "name", crate::secret::state_of(client, detail.secret, None).await)
    }
}
