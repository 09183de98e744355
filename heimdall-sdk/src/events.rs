//! The organization's audit feed.

use reqwest::Method;
use time::OffsetDateTime;

use crate::wire::AuditEvent;
use crate::{Client, Error, Result};

/// Filters for [`Client::list_events`]. All optional; the server applies
/// its own default and maximum `limit`.
///
/// ```
/// let query = heimdall_sdk::EventQuery { limit: Some(20), action: Some("member.".into()), ..Default::default() };
/// assert_eq!(query.before, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventQuery {
    /// At most this many events, newest first.
    pub limit: Option<u32>,
    /// Only events strictly before this instant (sent as RFC 3339).
    pub before: Option<OffsetDateTime>,
    /// Only events whose action starts with this prefix, e.g. `member.`.
    pub action: Option<String>,
}

impl Client {
    /// `GET /v1/events`: the organization's audit feed, newest first.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// let query = heimdall_sdk::EventQuery { limit: Some(10), action: Some("member.".into()), ..Default::default() };
    /// for event in client.list_events(&query).await? {
    ///     println!("{} {} {} {}", event.at, event.actor, event.action, event.target);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_events(&self, query: &EventQuery) -> Result<Vec<AuditEvent>> {
        let mut url = self.url(&["events"])?;
        {
            let mut pairs = url.query_pairs_mut();
            if let Some(limit) = query.limit {
                pairs.append_pair("limit", &limit.to_string());
            }
            if let Some(before) = query.before {
                let before = before
                    .to_offset(time::UtcOffset::UTC)
                    .format(&time::format_description::well_known::Rfc3339)
                    .map_err(|err| {
                        Error::Invalid(format!("`before` cannot be written as RFC 3339: {err}"))
                    })?;
                pairs.append_pair("before", &before);
            }
            if let Some(action) = &query.action {
                pairs.append_pair("action", action);
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        self.send(self.authed(Method::GET, url)).await
    }
}
