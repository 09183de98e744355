//! The `provider "heimdall"` block: the API's URL, a token and the CA to
//! trust, each from the block or else from the same variables as the CLI
//! (`HEIMDALL_API_URL`, `HEIMDALL_TOKEN`, `HEIMDALL_CA_FILE`), so no token
//! need be written in a `.tf` file.

use std::collections::HashMap;

use async_trait::async_trait;
use heimdall_sdk::wire::CatalogKind;
use heimdall_sdk::Client;
use serde::{Deserialize, Serialize};
use tf_provider::schema::{Attribute, AttributeConstraint, AttributeType, Block, Description, Schema};
use tf_provider::value::{Value, ValueEmpty};
use tf_provider::{map, Diagnostics, DynamicDataSource, DynamicResource, Provider};

use crate::api::{error_on, text, Api};
use crate::catalog::{CatalogResource, ComponentState, PlainState, SystemState};
use crate::data::CatalogData;

#[derive(Default)]
pub struct Heimdall {
    api: Api,
}

#[derive(Default, Serialize, Deserialize)]
pub struct ProviderConfig {
    #[serde(default)]
    api_url: Value<String>,
    #[serde(default)]
    token: Value<String>,
    #[serde(default)]
    ca_file: Value<String>,
}

/// Never the token: only whether one was given.
impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("api_url", &self.api_url)
            .field("token", &matches!(self.token, Value::Value(_)))
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

fn optional(description: &str, sensitive: bool) -> Attribute {
    Attribute {
        attr_type: AttributeType::String,
        description: Description::plain(description),
        constraint: AttributeConstraint::Optional,
        sensitive,
        ..Default::default()
    }
}

/// The block's value, else the variable's; empty counts as unset.
fn setting(value: &Value<String>, variable: &str) -> Option<String> {
    text(value)
        .map(str::to_owned)
        .or_else(|| std::env::var(variable).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

#[async_trait]
impl Provider for Heimdall {
    type Config<'a> = ProviderConfig;
    type MetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        Some(Schema {
            version: 1,
            block: Block {
                description: Description::plain(
                    "Heimdall's configuration: the catalog, policies, secrets' metadata",
                ),
                attributes: map! {
                    "api_url" => optional("The API's URL [env: HEIMDALL_API_URL]", false),
                    "token" => optional("An API token [env: HEIMDALL_TOKEN]; leave it out of .tf files", true),
                    "ca_file" => optional("A PEM file of the installation CA to trust [env: HEIMDALL_CA_FILE]", false),
                },
                ..Default::default()
            },
        })
    }

    async fn configure<'a>(
        &self,
        diags: &mut Diagnostics,
        _terraform_version: String,
        config: Self::Config<'a>,
    ) -> Option<()> {
        let Some(url) = setting(&config.api_url, "HEIMDALL_API_URL") else {
            error_on(diags, "no API URL: set api_url or HEIMDALL_API_URL".into(), String::new(), "api_url");
            return None;
        };
        let Some(token) = setting(&config.token, "HEIMDALL_TOKEN") else {
            error_on(diags, "no token: set HEIMDALL_TOKEN (or token)".into(), String::new(), "token");
            return None;
        };
        let client = match setting(&config.ca_file, "HEIMDALL_CA_FILE") {
            Some(path) => match std::fs::read_to_string(&path) {
                Ok(pem) => Client::with_ca(&url, Some(&token), &pem),
                Err(e) => {
                    error_on(diags, "cannot read the CA file".into(), format!("{path}: {e}"), "ca_file");
                    return None;
                }
            },
            None => Client::new(&url, token),
        };
        match client {
            Ok(client) => {
                self.api.set(client);
                Some(())
            }
            Err(e) => {
                error_on(diags, "cannot reach the API with these settings".into(), e.to_string(), "api_url");
                None
            }
        }
    }

    fn get_resources(&self, _diags: &mut Diagnostics) -> Option<HashMap<String, Box<dyn DynamicResource>>> {
        let api = &self.api;
        Some(map! {
            "domain" => CatalogResource::<PlainState>::new(api, CatalogKind::Domain),
            "environment" => CatalogResource::<PlainState>::new(api, CatalogKind::Environment),
            "system" => CatalogResource::<SystemState>::new(api, CatalogKind::System),
            "component" => CatalogResource::<ComponentState>::new(api, CatalogKind::Component),
            "policy" => crate::policy::PolicyResource::new(api),
            "secret" => crate::secret::SecretResource::new(api),
        })
    }

    fn get_data_sources(
        &self,
        _diags: &mut Diagnostics,
    ) -> Option<HashMap<String, Box<dyn DynamicDataSource>>> {
        let api = &self.api;
        Some(map! {
            "domain" => CatalogData::<PlainState>::new(api, CatalogKind::Domain),
            "environment" => CatalogData::<PlainState>::new(api, CatalogKind::Environment),
            "system" => CatalogData::<SystemState>::new(api, CatalogKind::System),
            "component" => CatalogData::<ComponentState>::new(api, CatalogKind::Component),
            "policy" => crate::data::PolicyData::new(api),
            "secret" => crate::data::SecretData::new(api),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_debug_print_never_shows_the_token() {
        let config =
            ProviderConfig { token: Value::Value("hmd_secret-token-text".into()), ..Default::default() };
        let shown = format!("{config:?}");
        assert!(!shown.contains("hmd_secret-token-text") && shown.contains("token: true"), "{shown}");
    }
}
