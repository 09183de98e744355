//! Resource schemas.

use reqwest::Method;

use crate::wire::{CreateSchema, ResourceSchema};
use crate::{Client, Result};

impl Client {
    /// `POST /v1/schemas`: a new version of a resource schema. The server
    /// compiles `input_schema` (JSON Schema draft 2020-12) and refuses an
    /// invalid one with `INVALID_INPUT`, saying where it is wrong. The first
    /// schema of a type is version 1; each create of the same type adds one.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::CreateSchema;
    /// let schema = client
    ///     .create_schema(&CreateSchema {
    ///         type_name: "s3-bucket".into(),
    ///         input_schema: serde_json::json!({
    ///             "type": "object",
    ///             "required": ["bucket"],
    ///             "properties": { "bucket": { "type": "string", "pattern": "^[a-z0-9-]{3,63}$" } },
    ///             "additionalProperties": false
    ///         }),
    ///         defaults: None,
    ///         module: None,
    ///         requires_approval: false,
    ///         drift_check_every: Some("24h".into()),
    ///     })
    ///     .await?;
    /// println!("{} v{} ({})", schema.type_name, schema.version, schema.id);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_schema(&self, schema: &CreateSchema) -> Result<ResourceSchema> {
        self.with_body(Method::POST, &["schemas"], schema).await
    }

    /// `GET /v1/schemas`, every version of every type, or `?type=` only the
    /// versions of one type.
    pub async fn list_schemas(&self, type_name: Option<&str>) -> Result<Vec<ResourceSchema>> {
        self.get_all_pages(&["schemas"], &[("type", type_name)]).await
    }

    /// `GET /v1/schemas/{id-or-type}`: one version by id, or a type's newest
    /// version by its name.
    pub async fn get_schema(&self, id_or_type: &str) -> Result<ResourceSchema> {
        self.get(&["schemas", id_or_type]).await
    }
}
