//! The audit feed as a use case run once for every adapter: who may read
//! it, how much one page holds, and the names shown beside the ids.
//!
//! An event's `target` is `kind:id`, and the id stays the reference (names
//! change); the name is for people reading the feed. Each kind on a page
//! is looked up once; a target that no longer exists, or a kind without
//! names, gets none, and a lookup that fails leaves its kind unnamed
//! rather than failing the page (the adapter reports it).

use std::collections::{BTreeSet, HashMap};

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::authz::{Action, Target};
use crate::domain::{AuditEvent, CatalogKind};
use crate::error::ApiError;
use crate::ids::{OrgId, ResourceId};
use crate::ports::{
    AccountStore, Actor, AgentRecordStore, CatalogStore, ChannelStore, DatabaseRecordStore, EventQuery,
    EventStore, MemberStore, PolicyStore, ResourceRecordStore, SchemaStore, SecretRecordStore, StoreError,
};

/// A page's size when none is asked.
pub const DEFAULT_LIMIT: u32 = 50;
/// The most one page holds.
pub const MAX_LIMIT: u32 = 1000;

/// Every port the feed reads: its events, and the names of what they name.
pub trait FeedStore:
    EventStore
    + AgentRecordStore
    + SecretRecordStore
    + MemberStore
    + PolicyStore
    + AccountStore
    + DatabaseRecordStore
    + ChannelStore
    + SchemaStore
    + CatalogStore
    + ResourceRecordStore
{
}
impl<T> FeedStore for T where
    T: EventStore
        + AgentRecordStore
        + SecretRecordStore
        + MemberStore
        + PolicyStore
        + AccountStore
        + DatabaseRecordStore
        + ChannelStore
        + SchemaStore
        + CatalogStore
        + ResourceRecordStore
        + ?Sized
{
}

/// One page of the feed, and the kinds whose names were not looked up
/// (with why, for the adapter's log).
#[derive(Debug)]
pub struct Feed {
    pub events: Vec<AuditEvent>,
    pub unnamed: Vec<(String, StoreError)>,
}

/// What a page asks: at most `limit` events (1 to [`MAX_LIMIT`],
/// [`DEFAULT_LIMIT`] by default), strictly older than `before` (RFC 3339),
/// whose action starts with `action`.
pub fn query(
    limit: Option<u32>,
    before: Option<&str>,
    action: Option<String>,
) -> Result<EventQuery, ApiError> {
    let before = before
        .map(|b| OffsetDateTime::parse(b, &Rfc3339))
        .transpose()
        .map_err(|_| ApiError::invalid_input("before must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z"))?;
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::invalid_input(format!("limit must be between 1 and {MAX_LIMIT}")));
    }
    Ok(EventQuery { limit, before, action_prefix: action })
}

/// What a caller asks of the feed ([`query`] checks it).
#[derive(Clone, Debug, Default)]
pub struct Asked {
    pub limit: Option<u32>,
    /// RFC 3339.
    pub before: Option<String>,
    pub action: Option<String>,
}

/// The organization's events newest first, for a caller the policies let
/// read them (`event.read`; asked before the page is checked), each with
/// its target's name where it has one.
pub async fn list<S: FeedStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    asked: Asked,
) -> Result<Feed, ApiError> {
    actor.authorize(Action::EventRead, &Target::organization(actor.org())).await?;
    let query = query(asked.limit, asked.before.as_deref(), asked.action)?;
    let mut events = store.list_events(actor.org(), &query).await?;
    let unnamed = name_targets(store, actor.org(), &mut events).await;
    Ok(Feed { events, unnamed })
}

async fn name_targets<S: FeedStore + ?Sized>(
    store: &S,
    org: OrgId,
    events: &mut [AuditEvent],
) -> Vec<(String, StoreError)> {
    let kinds: BTreeSet<String> =
        events.iter().filter_map(|e| e.target.split_once(':').map(|(kind, _)| kind.to_owned())).collect();
    let mut names: HashMap<String, String> = HashMap::new();
    let mut unnamed = Vec::new();
    for kind in kinds {
        let ids: BTreeSet<&str> =
            events.iter().filter_map(|e| e.target.strip_prefix(&format!("{kind}:"))).collect();
        match names_of(store, org, &kind, &ids).await {
            Ok(found) => names.extend(found.into_iter().map(|(id, name)| (format!("{kind}:{id}"), name))),
            Err(e) => unnamed.push((kind, e)),
        }
    }
    for event in events {
        event.target_name = names.get(&event.target).cloned();
    }
    unnamed
}

/// `(id, name)` of the objects of `kind` (those named `ids` where a kind
/// is looked up by id).
async fn names_of<S: FeedStore + ?Sized>(
    store: &S,
    org: OrgId,
    kind: &str,
    ids: &BTreeSet<&str>,
) -> Result<Vec<(String, String)>, StoreError> {
    let pairs = match kind {
        "agent" => store.list_agents(org).await?.into_iter().map(|a| (a.id.to_string(), a.name)).collect(),
        // A personal secret's name is its owner's alone: the feed never names it.
        "secret" => store
            .list_secrets(org)
            .await?
            .into_iter()
            .filter(|s| s.owner_id.is_none())
            .map(|s| (s.id.to_string(), s.name))
            .collect(),
        "member" => store.list_members(org).await?.into_iter().map(|m| (m.id.to_string(), m.email)).collect(),
        "policy" => store.list_policies(org).await?.into_iter().map(|p| (p.id.to_string(), p.name)).collect(),
        "cloud_account" => {
            store.list_accounts(org).await?.into_iter().map(|a| (a.id.to_string(), a.name)).collect()
        }
        "database" => {
            store.list_databases(org).await?.into_iter().map(|d| (d.id.to_string(), d.name)).collect()
        }
        "notification" => store.list_channels(org).await?.into_iter().map(|c| (c.id, c.name)).collect(),
        "schema" => store
            .list_schemas(org)
            .await?
            .into_iter()
            .map(|s| (s.id.to_string(), format!("{} v{}", s.type_name, s.version)))
            .collect(),
        "resource" => {
            let wanted: Vec<ResourceId> = ids.iter().filter_map(|id| id.parse().ok()).collect();
            let found = store.resources_by_ids(org, &wanted).await?;
            found.into_iter().map(|r| (r.id.to_string(), r.name)).collect()
        }
        other => match CatalogKind::ALL.iter().find(|k| k.as_str() == other) {
            Some(kind) => store
                .list_catalog(org, *kind, None)
                .await?
                .into_iter()
                .map(|e| (e.id.to_string(), e.name))
                .collect(),
            None => Vec::new(),
        },
    };
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn a_page_holds_fifty_by_default_one_to_a_thousand_when_asked_and_before_is_rfc_3339() {
        assert_eq!(query(None, None, None).map(|q| q.limit), Ok(DEFAULT_LIMIT));
        assert_eq!(query(Some(1), None, None).map(|q| q.limit), Ok(1));
        assert_eq!(query(Some(MAX_LIMIT), None, None).map(|q| q.limit), Ok(MAX_LIMIT));
        let before = query(None, Some("2026-01-31T12:00:00Z"), None).map(|q| q.before.is_some());
        assert_eq!(before, Ok(true));
        assert_eq!(
            query(None, Some("yesterday"), None).map(|q| q.limit).map_err(|e| e.code),
            Err(ErrorCode::InvalidInput)
        );
        for refused in [0, MAX_LIMIT + 1] {
            assert_eq!(
                query(Some(refused), None, None).map(|q| q.limit).map_err(|e| e.code),
                Err(ErrorCode::InvalidInput)
            );
        }
    }
}
