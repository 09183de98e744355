//! Webhook deliveries: due notifications claimed, sent (never to an
//! address the installation keeps out) and recorded, until aborted.

use std::sync::Arc;
use std::time::Duration;

use heimdall_core::clock::Clock;
use heimdall_core::notify::{self, Outcome};
use heimdall_core::ports::{DueDelivery, Store};

use crate::notifications::SigningKey;

/// How often due deliveries are looked for, and how long one try may take.
const TICK: Duration = Duration::from_millis(500);
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// Deliveries under way at once, and at once to one channel: a slow or
/// silent endpoint holds up its own, never the others'.
const IN_FLIGHT: usize = 32;
const PER_CHANNEL: usize = 2;

/// Resolves a webhook's host and keeps only the addresses it may reach
/// (`notify::may_deliver_to`): checked when it connects, so a name that
/// resolves to an internal address is refused whatever its text says.
#[derive(Debug)]
struct Guarded {
    allowed: Vec<notify::Cidr>,
}

impl reqwest::dns::Resolve for Guarded {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allowed = self.allowed.clone();
        Box::pin(async move {
            let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
            let kept: Vec<std::net::SocketAddr> =
                found.filter(|addr| notify::may_deliver_to(addr.ip(), &allowed)).collect();
            if kept.is_empty() {
                return Err("the webhook's host resolves to no address it may reach".into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}

/// Until the task is aborted: claim what is due, send each (at once, within
/// [`IN_FLIGHT`] and [`PER_CHANNEL`]), record how it went.
pub async fn deliver_forever(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    key: Arc<SigningKey>,
    retry: Duration,
    allowed: Vec<notify::Cidr>,
) {
    let guarded = Arc::new(Guarded { allowed: allowed.clone() });
    let http = match reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(SEND_TIMEOUT)
        .dns_resolver(guarded)
        .build()
    {
        Ok(http) => http,
        Err(e) => return tracing::error!(error = %e, "notifications are off: no HTTP client"),
    };
    let allowed = Arc::new(allowed);
    let retry = time::Duration::try_from(retry).unwrap_or(time::Duration::seconds(10));
    let in_flight = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    let mut channels: std::collections::HashMap<String, Arc<tokio::sync::Semaphore>> =
        std::collections::HashMap::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let free = in_flight.available_permits();
        if free == 0 {
            continue;
        }
        let now = clock.now();
        let lease = now + time::Duration::try_from(SEND_TIMEOUT * 2).unwrap_or(time::Duration::seconds(20));
        let limit = u32::try_from(free.min(20)).unwrap_or(20);
        let due = match store.claim_deliveries(now, lease, limit).await {
            Ok(due) => due,
            Err(e) => {
                tracing::error!(error = %e, "cannot look for due notifications");
                continue;
            }
        };
        // Semaphores of channels with nothing under way are dropped.
        channels.retain(|_, s| s.available_permits() < PER_CHANNEL);
        for delivery in due {
            let Ok(slot) = in_flight.clone().try_acquire_owned() else { break };
            let channel = channels
                .entry(delivery.channel_id.clone())
                .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(PER_CHANNEL)))
                .clone();
            let (http, key, store, clock, allowed) =
                (http.clone(), key.clone(), store.clone(), clock.clone(), allowed.clone());
            tokio::spawn(async move {
                let _slot = slot;
                let Ok(_turn) = channel.acquire_owned().await else { return };
                let status = send(&http, &key, &delivery, &allowed, clock.now()).await;
                let attempts = delivery.attempts.saturating_add(1);
                let outcome = notify::after_attempt(status, attempts, clock.now(), retry);
                let result = notify::describe(status);
                if outcome != Outcome::Delivered {
                    tracing::warn!(delivery = %delivery.id, attempts, %result, "notification not delivered");
                }
                if let Err(e) =
                    store.finish_delivery(&delivery.id, attempts, &outcome, &result, clock.now()).await
                {
                    tracing::error!(delivery = %delivery.id, error = %e, "cannot record a notification's delivery");
                }
            });
        }
    }
}

/// One signed POST: the receiver's status, if it answered. Why it did not
/// (refused, reset, TLS, a timeout, an address it may not reach) goes to
/// the API's log, not to the delivery log people read.
async fn send(
    http: &reqwest::Client,
    key: &SigningKey,
    delivery: &DueDelivery,
    allowed: &[notify::Cidr],
    now: time::OffsetDateTime,
) -> Option<u16> {
    let url = match key.open_url(&delivery.channel_id, &delivery.url) {
        Ok(url) => url,
        Err(why) => {
            tracing::error!(delivery = %delivery.id, %why, "a webhook URL does not open");
            return None;
        }
    };
    // A literal address is never resolved: checked here.
    let literal = reqwest::Url::parse(url.as_str())
        .ok()
        .and_then(|u| u.host_str().map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned()))
        .and_then(|host| host.parse::<std::net::IpAddr>().ok());
    if literal.is_some_and(|ip| !notify::may_deliver_to(ip, allowed)) {
        tracing::warn!(delivery = %delivery.id, "a webhook names an address it may not reach");
        return None;
    }
    let timestamp = now.unix_timestamp();
    let secret = key.channel_secret(&delivery.channel_id);
    let signature = notify::signature(&secret, timestamp, delivery.body.as_bytes());
    let sent = http
        .post(url.as_str())
        .header("content-type", "application/json")
        .header("x-heimdall-event", &delivery.action)
        .header("x-heimdall-delivery", &delivery.id)
        .header("x-heimdall-timestamp", timestamp.to_string())
        .header("x-heimdall-signature", signature)
        .body(delivery.body.clone())
        .send()
        .await;
    match sent {
        Ok(resp) => Some(resp.status().as_u16()),
        Err(e) => {
            // Without the URL: it may carry a token in its path.
            tracing::warn!(delivery = %delivery.id, error = %heimdall_core::error::chain(&e.without_url()), "webhook");
            None
        }
    }
}
