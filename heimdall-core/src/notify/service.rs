//! The notification channels' use cases, run once for every adapter: ask
//! the policies (`notification.read`, `notification.write` on the
//! organization), resolve the channel, plan, apply. Generic over the store
//! port ([`ChannelStore`]) and the caller ([`Actor`]); the adapter seals
//! webhook URLs (`seal`: the channel's id and the URL), as the planners
//! say.

use super::{Channel, Delivery};
use crate::authz::{Action, Target};
use crate::error::ApiError;
use crate::ids::OrgId;
use crate::ports::{Actor, ChannelStore};

/// The channel `key` (its id, or its name) means in `org`.
pub async fn resolve<S: ChannelStore + ?Sized>(
    store: &S,
    org: OrgId,
    key: &str,
) -> Result<Channel, ApiError> {
    let channels = store.list_channels(org).await?;
    channels
        .into_iter()
        .find(|c| c.id == key || c.name == key)
        .ok_or_else(|| ApiError::not_found("notification channel"))
}

async fn allowed(actor: &dyn Actor, action: Action) -> Result<(), ApiError> {
    actor.authorize(action, &Target::organization(actor.org())).await
}

/// The organization's channels.
pub async fn list<S: ChannelStore + ?Sized>(store: &S, actor: &dyn Actor) -> Result<Vec<Channel>, ApiError> {
    allowed(actor, Action::NotificationRead).await?;
    Ok(store.list_channels(actor.org()).await?)
}

/// Adds channel `id` called `name`, delivering to `webhook`
/// ([`super::create_channel`]).
pub async fn create<S: ChannelStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    (id, name): (String, String),
    webhook: &str,
    seal: impl FnOnce(&str, &str) -> Result<String, ApiError> + Send,
) -> Result<Channel, ApiError> {
    allowed(actor, Action::NotificationWrite).await?;
    let plan = super::create_channel(id, actor.org(), name, webhook, seal, actor.name(), actor.now())?;
    store.create_channel(&plan.channel, actor.event(plan.event)).await?;
    Ok(plan.channel)
}

/// Renames the channel `key` names or points it at another webhook
/// ([`super::update_channel`]); the channel as it stands when nothing
/// changes.
pub async fn update<S: ChannelStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
    (name, webhook): (Option<String>, Option<&str>),
    seal: impl FnOnce(&str, &str) -> Result<String, ApiError> + Send,
) -> Result<Channel, ApiError> {
    allowed(actor, Action::NotificationWrite).await?;
    let current = resolve(store, actor.org(), key).await?;
    let Some(plan) = super::update_channel(&current, name, webhook, seal)? else {
        return Ok(current);
    };
    store.update_channel(&plan.channel, actor.event(plan.event)).await?;
    Ok(plan.channel)
}

/// Removes the channel `key` names, with its pending deliveries; its
/// event names it by id.
pub async fn remove<S: ChannelStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<Channel, ApiError> {
    allowed(actor, Action::NotificationWrite).await?;
    let channel = resolve(store, actor.org(), key).await?;
    let event = actor.event(super::delete_channel(&channel.id));
    Ok(store.delete_channel(actor.org(), &channel.id, event).await?)
}

/// The `limit` (1 to 1000; 50 when absent) newest deliveries.
pub async fn deliveries<S: ChannelStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    limit: Option<u32>,
) -> Result<Vec<Delivery>, ApiError> {
    allowed(actor, Action::NotificationRead).await?;
    let limit = limit.unwrap_or(50);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::invalid_input("limit must be between 1 and 1000"));
    }
    Ok(store.list_deliveries(actor.org(), limit).await?)
}
