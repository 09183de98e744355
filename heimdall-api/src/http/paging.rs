//! Pages of lists: `?limit=&after=`, the `Heimdall-Next-After` header, and
//! pages of what the caller may see.

use heimdall_core::ApiError;

/// `?limit=&after=` of a short list: one the API reads whole and cuts
/// into pages ([`short_page`]).
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// At most this many (default 100, at most 1000).
    pub(crate) limit: Option<u32>,
    /// The `Heimdall-Next-After` of the previous page.
    pub(crate) after: Option<String>,
}

impl heimdall_wire::body::Query for PageQuery {}

/// The page of a short list after `after`, in the order of `key` (which
/// tells any two entries apart), and its `Heimdall-Next-After`. The list
/// is read whole: these lists are an organization's members, tokens,
/// policies, schemas, accounts, Agents, databases and catalog, not its
/// data.
pub(crate) fn short_page<T>(
    items: Vec<T>,
    limit: Option<u32>,
    after: Option<&str>,
    key: impl Fn(&T) -> Vec<String>,
) -> Result<(axum::http::HeaderMap, Vec<T>), ApiError> {
    let limit = heimdall_wire::page::limit(limit)?;
    let after = after.map(heimdall_wire::page::decode::<heimdall_wire::page::KeyCursor>).transpose()?;
    let (items, next) = heimdall_wire::page::cut(items, key, after.as_ref(), limit);
    Ok((next_after(next.map(|n| heimdall_wire::page::encode(&n))), items))
}

/// The `Heimdall-Next-After` header of a page, when another follows.
fn next_after(cursor: Option<String>) -> axum::http::HeaderMap {
    let mut headers = axum::http::HeaderMap::new();
    if let Some(value) = cursor.and_then(|c| axum::http::HeaderValue::from_str(&c).ok()) {
        headers.insert(heimdall_wire::page::NEXT_AFTER, value);
    }
    headers
}

/// A count or a time as a sort key: zero-padded, so that text order is
/// number order (for 0 and up; these never go below).
pub(crate) fn sort_number(n: i64) -> String {
    format!("{:020}", n.max(0))
}

/// A time as a sort key, oldest first (to the microsecond, as stored).
pub(crate) fn sort_time(t: time::OffsetDateTime) -> String {
    sort_number(i64::try_from(t.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX))
}

/// A time as a sort key, newest first.
pub(crate) fn sort_time_newest_first(t: time::OffsetDateTime) -> String {
    let micros = i64::try_from(t.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX);
    sort_number(i64::MAX - micros.max(0))
}

/// A page of what the caller may see, from core's use cases
/// (`heimdall_core::paging::visible`), and its `Heimdall-Next-After`.
pub(crate) fn visible<T, C: serde::Serialize>(
    page: heimdall_core::paging::Page<T, C>,
) -> (axum::http::HeaderMap, Vec<T>) {
    (next_after(page.next.as_ref().map(heimdall_wire::page::encode)), page.items)
}
