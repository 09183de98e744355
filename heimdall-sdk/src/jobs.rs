//! Jobs and their logs.

use heimdall_core::ids::JobId;
use reqwest::Method;

pub use heimdall_core::queue::JobOrder;

use crate::wire::{Job, JobLog};
use crate::{Client, Result};

/// Filters for [`Client::list_jobs`]. All optional.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobQuery {
    /// Only jobs of this Resource (id, or name when only one Resource has it).
    pub resource: Option<String>,
    /// Only jobs of Resources of this component (id or name). With
    /// `resource`, the Resource must belong to it (else `NOT_FOUND`).
    pub component: Option<String>,
    /// Oldest first (the default) or newest first.
    pub order: JobOrder,
}

impl Client {
    /// `GET /v1/jobs?resource=&component=&order=`, in the query's order: every page
    /// ([`Self::list_jobs_page`] reads one).
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// let query = heimdall_sdk::JobQuery { resource: Some("recibos".into()), ..Default::default() };
    /// for job in client.list_jobs(&query).await? {
    ///     println!("{} {} {} {}/{}", job.id, job.operation, job.status, job.attempts, job.max_attempts);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_jobs(&self, query: &JobQuery) -> Result<Vec<Job>> {
        let (mut all, mut next) =
            self.list_jobs_page(query, Some(heimdall_wire::page::MAX_LIMIT), None).await?;
        while let Some(after) = next.take() {
            let (more, after) =
                self.list_jobs_page(query, Some(heimdall_wire::page::MAX_LIMIT), Some(&after)).await?;
            all.extend(more);
            next = after;
        }
        Ok(all)
    }

    /// One page of `GET /v1/jobs`, in the query's order: at most `limit`
    /// (the server's default 100), after the cursor `after` of the previous
    /// page (asked in the same order); and the next page's cursor, if there
    /// is one.
    pub async fn list_jobs_page(
        &self,
        query: &JobQuery,
        limit: Option<u32>,
        after: Option<&str>,
    ) -> Result<(Vec<Job>, Option<String>)> {
        let limit = limit.map(|l| l.to_string());
        let order = (query.order == JobOrder::Newest).then_some("newest");
        let url = self.url_with_query(
            &["jobs"],
            &[
                ("resource", query.resource.as_deref()),
                ("order", order),
                ("component", query.component.as_deref()),
                ("limit", limit.as_deref()),
                ("after", after),
            ],
        )?;
        self.send_page(self.authed(Method::GET, url)).await
    }

    /// `GET /v1/jobs/{id}`.
    pub async fn get_job(&self, id: JobId) -> Result<Job> {
        self.get(&["jobs", &id.to_string()]).await
    }

    /// `GET /v1/jobs/{id}/log`: the Terraform output kept for the job (up
    /// to 1 MiB; `truncated` says whether later output was dropped).
    pub async fn get_job_log(&self, id: JobId) -> Result<JobLog> {
        self.get(&["jobs", &id.to_string(), "log"]).await
    }
}
