//! Resource schemas.

use reqwest::Method;

use crate::wire::{CreateSchema, ResourceSchema, UpdateSchema};
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

    /// `PATCH /v1/schemas/{id}`: deprecate a version (no new Resource on
    /// it; those on it go on) or take that back. The schema as it is now.
    pub async fn set_schema_deprecated(&self, id: &str, deprecated: bool) -> Result<ResourceSchema> {
        self.with_body(Method::PATCH, &["schemas", id], &UpdateSchema { deprecated }).await
    }

    /// `DELETE /v1/schemas/{id}`: a version no Resource uses (else `NOT_EMPTY`).
    pub async fn delete_schema(&self, id: &str) -> Result<()> {
        let url = self.url(&["schemas", id])?;
        self.send_ignoring_body(self.authed(Method::DELETE, url)).await
    }

    /// The schema `type_name` version `version` names, among those not deleted.
    pub async fn schema_version(&self, type_name: &str, version: i64) -> Result<ResourceSchema> {
        let versions = self.list_schemas(Some(type_name)).await?;
        versions.into_iter().find(|s| s.version == version).ok_or_else(|| {
            crate::Error::Api(crate::ApiError::not_found(format!("schema {type_name} version {version}")))
        })
    }
}
