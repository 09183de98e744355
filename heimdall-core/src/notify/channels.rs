//! An organization's notification channels, as planners: made, changed
//! and removed by an owner. The webhook URL may hold the receiver's
//! credential: the adapter seals it (`seal`: the channel's id and the URL)
//! and the channel, its answers and its events carry its host only.

use serde_json::json;
use time::OffsetDateTime;

use super::{check_webhook_url, display_url, Channel};
use crate::audit::{AuditAction, EventPlan};
use crate::error::ApiError;
use crate::ids::OrgId;
use crate::names::validate_name;

/// A channel to store, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelPlan {
    pub channel: Channel,
    pub event: EventPlan,
}

/// A new channel `id` called `name`, delivering to `webhook`.
pub fn create_channel(
    id: String,
    org: OrgId,
    name: String,
    webhook: &str,
    seal: impl FnOnce(&str, &str) -> Result<String, ApiError>,
    by: &str,
    now: OffsetDateTime,
) -> Result<ChannelPlan, ApiError> {
    validate_name("channel name", &name)?;
    check_webhook_url(webhook)?;
    let sealed_url = seal(&id, webhook)?;
    let channel = Channel {
        id,
        org_id: org,
        name,
        url: display_url(webhook),
        sealed_url,
        created_at: now,
        created_by: by.into(),
    };
    let detail = json!({ "name": channel.name, "webhook": channel.url });
    let event = channel_event(AuditAction::NotificationCreated, &channel.id, detail);
    Ok(ChannelPlan { channel, event })
}

/// `current` with a new name and/or webhook (sealed under the same id, so
/// its signing secret stays); `None` when neither changes anything.
pub fn update_channel(
    current: &Channel,
    name: Option<String>,
    webhook: Option<&str>,
    seal: impl FnOnce(&str, &str) -> Result<String, ApiError>,
) -> Result<Option<ChannelPlan>, ApiError> {
    if let Some(name) = &name {
        validate_name("channel name", name)?;
    }
    if let Some(webhook) = webhook {
        check_webhook_url(webhook)?;
    }
    let mut channel = current.clone();
    let mut changed = Vec::new();
    if let Some(name) = name.filter(|n| *n != current.name) {
        channel.name = name;
        changed.push("name");
    }
    if let Some(webhook) = webhook {
        channel.sealed_url = seal(&channel.id, webhook)?;
        channel.url = display_url(webhook);
        changed.push("webhook");
    }
    if changed.is_empty() {
        return Ok(None);
    }
    let detail = json!({ "name": channel.name, "webhook": channel.url, "changed": changed });
    let event = channel_event(AuditAction::NotificationUpdated, &channel.id, detail);
    Ok(Some(ChannelPlan { channel, event }))
}

/// Removing the channel `id` with its deliveries (named by id, as its
/// creation and changes are).
pub fn delete_channel(id: &str) -> EventPlan {
    channel_event(AuditAction::NotificationDeleted, id, serde_json::Value::Null)
}

fn channel_event(action: AuditAction, channel: &str, detail: serde_json::Value) -> EventPlan {
    EventPlan { action, target: format!("notification:{channel}"), detail }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    /// A stand-in for the API's key: what it sealed, readable by the test.
    fn seal(id: &str, url: &str) -> Result<String, ApiError> {
        Ok(format!("sealed({id}, {url})"))
    }

    fn created() -> ChannelPlan {
        let (org, now) = (OrgId::from_uuid(uuid::Uuid::nil()), OffsetDateTime::UNIX_EPOCH);
        let url = "https://hooks.example.com/services/T0/B0/credential";
        create_channel("c1".into(), org, "ops".into(), url, seal, "ana@example.com", now).unwrap()
    }

    #[test]
    fn a_channel_shows_and_records_its_webhooks_host_only() {
        let plan = created();
        assert_eq!(plan.channel.url, "https://hooks.example.com/…");
        assert_eq!(
            plan.channel.sealed_url,
            "sealed(c1, https://hooks.example.com/services/T0/B0/credential)"
        );
        assert_eq!(plan.event.action, AuditAction::NotificationCreated);
        assert!(!plan.event.detail.to_string().contains("credential"), "{}", plan.event.detail);
        let (org, now) = (OrgId::from_uuid(uuid::Uuid::nil()), OffsetDateTime::UNIX_EPOCH);
        let plain = create_channel("c2".into(), org, "ops".into(), "http://example.com/x", seal, "ana", now);
        assert_eq!(plain.unwrap_err().code, ErrorCode::InvalidInput);
        let unsealed = |_: &str, _: &str| Err(ApiError::new(ErrorCode::Unavailable, "no key"));
        let url = "https://hooks.example.com/x";
        let refused = create_channel("c3".into(), org, "ops".into(), url, unsealed, "ana", now).unwrap_err();
        assert_eq!(refused.code, ErrorCode::Unavailable);
    }

    #[test]
    fn an_update_that_changes_nothing_writes_nothing_and_a_new_webhook_keeps_the_id() {
        let current = created().channel;
        assert_eq!(update_channel(&current, Some("ops".into()), None, seal).unwrap(), None);
        let renamed = update_channel(&current, Some("oncall".into()), None, seal).unwrap().unwrap();
        assert_eq!(renamed.event.detail["changed"], json!(["name"]));
        assert_eq!(renamed.channel.sealed_url, current.sealed_url);
        let moved =
            update_channel(&current, None, Some("https://other.example.com/y"), seal).unwrap().unwrap();
        assert_eq!(moved.channel.sealed_url, "sealed(c1, https://other.example.com/y)");
        assert_eq!(
            (moved.channel.url.as_str(), moved.channel.id.as_str()),
            ("https://other.example.com/…", "c1")
        );
        assert_eq!(delete_channel("ops").target, "notification:ops");
    }
}
