//! Resources, their revisions and approvals.

use reqwest::Method;

use crate::wire::{
    ChangeResource, CreateResource, Decide, ExportPackage, Job, Resource, ResourceDetail, ResourceStatus,
    UpgradeResource,
};
#[cfg(doc)]
use crate::ApiError;
use crate::{Client, Result};

/// The longest long poll this SDK asks for: well inside the default request
/// timeout (30 s) and the API's own limit.
pub const MAX_LONG_POLL_SECONDS: u64 = 20;

/// Filters for [`Client::list_resources`]. All optional; `component` and
/// `environment` are ids or names.
///
/// ```
/// use heimdall_sdk::wire::ResourceStatus;
/// let query = heimdall_sdk::ResourceQuery { environment: Some("prod".into()), status: Some(ResourceStatus::Failed), ..Default::default() };
/// assert_eq!(query.component, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceQuery {
    /// Only Resources of this component (id or name).
    pub component: Option<String>,
    /// Only Resources for this environment (id or name).
    pub environment: Option<String>,
    /// Only Resources in this status (`deleted` ones stay listed as history).
    pub status: Option<ResourceStatus>,
    /// Only Resources of this schema type (any version).
    pub schema_type: Option<String>,
    /// Only Resources on an older version of their schema type than the
    /// one a new request gets ([`Client::upgrade_resource`] moves them).
    pub outdated: bool,
}

impl Client {
    /// `POST /v1/resources`: requests a Resource (revision 1). Without
    /// approval an `apply` job is queued and the Resource is `queued`; under
    /// a schema that requires approval it is `pending_approval`.
    ///
    /// Refusals happen before anything is stored: `SCHEMA_VIOLATION` (its
    /// [`ApiError::fields`] name each field and rule, never the value),
    /// `NO_CLOUD_ACCOUNT`, `NOT_FOUND` for an unknown component, schema or
    /// environment.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::CreateResource;
    /// use heimdall_sdk::ErrorCode;
    /// let request = CreateResource {
    ///     component: "api".into(),
    ///     schema: "s3-bucket".into(),
    ///     environment: "dev".into(),
    ///     name: "recibos".into(),
    ///     input: serde_json::json!({ "bucket": "checkout-recibos" }),
    ///     region: None,
    ///     imports: Vec::new(), // or objects to import (`heimdall resource import`)
    /// };
    /// match client.create_resource(&request).await {
    ///     Ok(resource) => println!("{} is {}", resource.id, resource.status),
    ///     Err(err) if err.code() == Some(ErrorCode::SchemaViolation) => {
    ///         for field in err.api().and_then(|e| e.fields.as_ref()).into_iter().flatten() {
    ///             println!("{}: {}", field.path, field.rule);
    ///         }
    ///     }
    ///     Err(err) => return Err(err),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_resource(&self, resource: &CreateResource) -> Result<Resource> {
        self.with_body(Method::POST, &["resources"], resource).await
    }

    /// `GET /v1/resources?component=&environment=&status=`, deleted ones
    /// included: every page, followed ([`Client::list_resources_page`] for one).
    pub async fn list_resources(&self, query: &ResourceQuery) -> Result<Vec<Resource>> {
        let (mut all, mut next) =
            self.list_resources_page(query, Some(heimdall_wire::page::MAX_LIMIT), None).await?;
        while let Some(after) = next.take() {
            let (more, after) =
                self.list_resources_page(query, Some(heimdall_wire::page::MAX_LIMIT), Some(&after)).await?;
            all.extend(more);
            next = after;
        }
        Ok(all)
    }

    /// One page of `GET /v1/resources`, oldest first: at most `limit`
    /// (the server's default 100), after the cursor `after` of the previous
    /// page; and the next page's cursor, if there is one.
    pub async fn list_resources_page(
        &self,
        query: &ResourceQuery,
        limit: Option<u32>,
        after: Option<&str>,
    ) -> Result<(Vec<Resource>, Option<String>)> {
        let status = query.status.map(ResourceStatus::as_str);
        let limit = limit.map(|l| l.to_string());
        let url = self.url_with_query(
            &["resources"],
            &[
                ("component", query.component.as_deref()),
                ("environment", query.environment.as_deref()),
                ("status", status),
                ("type", query.schema_type.as_deref()),
                ("outdated", query.outdated.then_some("true")),
                ("limit", limit.as_deref()),
                ("after", after),
            ],
        )?;
        self.send_page(self.authed(Method::GET, url)).await
    }

    /// `GET /v1/resources/{id-or-name}`: the Resource and every revision.
    /// A name must be unambiguous among Resources not deleted.
    pub async fn get_resource(&self, id_or_name: &str) -> Result<ResourceDetail> {
        self.get(&["resources", id_or_name]).await
    }

    /// `GET /v1/resources/{id-or-name}?changed_from=…&wait_seconds=…`: the
    /// Resource as soon as its status is no longer `from`, or as it is
    /// once `wait` (1 to 20 seconds) has passed. An API from before long
    /// polls answers at once.
    pub async fn get_resource_changed_from(
        &self,
        id_or_name: &str,
        from: ResourceStatus,
        wait: std::time::Duration,
    ) -> Result<ResourceDetail> {
        let seconds = wait.as_secs().clamp(1, MAX_LONG_POLL_SECONDS).to_string();
        let query = [("changed_from", Some(from.as_str())), ("wait_seconds", Some(seconds.as_str()))];
        let url = self.url_with_query(&["resources", id_or_name], &query)?;
        self.send(self.authed(Method::GET, url)).await
    }

    /// `PATCH /v1/resources/{id-or-name}`: a change is a new revision, queued
    /// or waiting for approval as the schema says. A change while another
    /// revision is pending supersedes it.
    pub async fn change_resource(&self, id_or_name: &str, change: &ChangeResource) -> Result<Resource> {
        self.with_body(Method::PATCH, &["resources", id_or_name], change).await
    }

    /// `POST /v1/resources/{id-or-name}/upgrade`: a new revision on another
    /// version of the Resource's schema type, its module run under the
    /// existing state. An older version needs `allow_downgrade`; the
    /// input is validated against the new version.
    pub async fn upgrade_resource(&self, id_or_name: &str, upgrade: &UpgradeResource) -> Result<Resource> {
        self.with_body(Method::POST, &["resources", id_or_name, "upgrade"], upgrade).await
    }

    /// `DELETE /v1/resources/{id-or-name}`: cancels any apply still queued.
    /// A Resource that never ran is `deleted` at once (`200`); otherwise a
    /// `destroy` job is queued and it is `deleting` (`202`). Either way it
    /// stays listed.
    pub async fn delete_resource(&self, id_or_name: &str) -> Result<Resource> {
        self.delete(&["resources", id_or_name]).await
    }

    /// `POST /v1/resources/{id-or-name}/approve`: `decision.revision` is the
    /// revision the approver read; any other is `STALE_REVISION`. The
    /// requester can never decide on their own request (`SELF_APPROVAL`).
    pub async fn approve_resource(&self, id_or_name: &str, decision: &Decide) -> Result<Resource> {
        self.with_body(Method::POST, &["resources", id_or_name, "approve"], decision).await
    }

    /// `POST /v1/resources/{id-or-name}/refuse`: same rules as
    /// [`Client::approve_resource`]; nothing is queued.
    pub async fn refuse_resource(&self, id_or_name: &str, decision: &Decide) -> Result<Resource> {
        self.with_body(Method::POST, &["resources", id_or_name, "refuse"], decision).await
    }

    /// `POST /v1/resources/{id-or-name}/retry`: queues the last operation of
    /// a `failed` Resource again (`202`); anything else is `CONFLICT`.
    pub async fn retry_resource(&self, id_or_name: &str) -> Result<Resource> {
        let url = self.url(&["resources", id_or_name, "retry"])?;
        self.send(self.authed(Method::POST, url)).await
    }

    /// `GET /v1/resources/{id-or-name}/export`: the root module of the
    /// Resource's last applied job, file by file, for plain `terraform`
    /// against the same state. No credential is in it. `CONFLICT` before
    /// the current revision was applied.
    pub async fn export_resource(&self, id_or_name: &str) -> Result<ExportPackage> {
        self.get(&["resources", id_or_name, "export"]).await
    }

    /// `POST /v1/resources/{id-or-name}/abandon`: Heimdall stops managing
    /// the Resource without destroying anything; it stays listed as
    /// `abandoned`, its state where it was, its name free again.
    /// `CONFLICT` while a job runs on it.
    pub async fn abandon_resource(&self, id_or_name: &str) -> Result<Resource> {
        let url = self.url(&["resources", id_or_name, "abandon"])?;
        self.send(self.authed(Method::POST, url)).await
    }

    /// `POST /v1/resources/{id-or-name}/drift-check`: queues a plan of the
    /// applied revision against what exists, never applied (`202` with the
    /// job). Its result marks the Resource (`drifted_at`) or clears the
    /// mark. `CONFLICT` unless the Resource is provisioned and idle.
    pub async fn drift_check_resource(&self, id_or_name: &str) -> Result<Job> {
        let url = self.url(&["resources", id_or_name, "drift-check"])?;
        self.send(self.authed(Method::POST, url)).await
    }
}
