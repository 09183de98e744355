//! Sends the organization's notifications: the API's signing key (beside
//! the CA), and the loop that claims due deliveries, signs and POSTs each
//! one, and records how it went (`heimdall_core::notify` decides what
//! comes next).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use heimdall_core::clock::Clock;
use heimdall_core::notify::{self, Outcome};
use heimdall_core::ports::{DueDelivery, Store};
use zeroize::Zeroizing;

/// The key every channel's secret is derived from: 32 random bytes in
/// `<ca-dir>/notifications.key` (0600), made on first start. Give every
/// API replica the same file.
pub struct SigningKey(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

impl SigningKey {
    pub fn load_or_create(path: &Path) -> Result<Self, String> {
        let cannot = |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", path.display());
        match std::fs::read(path) {
            Ok(bytes) => {
                let bytes = Zeroizing::new(bytes);
                let key: [u8; 32] = bytes
                    .as_slice()
                    .try_into()
                    .map_err(|_| format!("{} must hold exactly 32 bytes", path.display()))?;
                Ok(Self(Zeroizing::new(key)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                use rand::RngCore;
                use std::io::Write;
                use std::os::unix::fs::OpenOptionsExt;
                let mut key = Zeroizing::new([0u8; 32]);
                rand::rngs::OsRng.fill_bytes(key.as_mut());
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path)
                    .map_err(|e| cannot("create", e))?;
                file.write_all(key.as_ref()).map_err(|e| cannot("write", e))?;
                Ok(Self(key))
            }
            Err(e) => Err(cannot("read", e)),
        }
    }

    /// The signing secret of the channel `channel_id`.
    pub fn channel_secret(&self, channel_id: &str) -> Zeroizing<String> {
        notify::channel_secret(&self.0, channel_id)
    }
}

/// How often due deliveries are looked for, and how long one try may take.
const TICK: Duration = Duration::from_millis(500);
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Until the task is aborted: claim what is due, send it, record it.
pub async fn deliver_forever(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    key: Arc<SigningKey>,
    retry: Duration,
) {
    let http = match reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(SEND_TIMEOUT)
        .build()
    {
        Ok(http) => http,
        Err(e) => return tracing::error!(error = %e, "notifications are off: no HTTP client"),
    };
    let retry = time::Duration::try_from(retry).unwrap_or(time::Duration::seconds(10));
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = clock.now();
        let lease = now + time::Duration::try_from(SEND_TIMEOUT * 2).unwrap_or(time::Duration::seconds(20));
        let due = match store.claim_deliveries(now, lease, 20).await {
            Ok(due) => due,
            Err(e) => {
                tracing::error!(error = %e, "cannot look for due notifications");
                continue;
            }
        };
        for delivery in due {
            let (status, result) = send(&http, &key, &delivery, clock.now()).await;
            let attempts = delivery.attempts.saturating_add(1);
            let outcome = notify::after_attempt(status, attempts, clock.now(), retry);
            if outcome != Outcome::Delivered {
                tracing::warn!(delivery = %delivery.id, attempts, %result, "notification not delivered");
            }
            if let Err(e) =
                store.finish_delivery(&delivery.id, attempts, &outcome, &result, clock.now()).await
            {
                tracing::error!(delivery = %delivery.id, error = %e, "cannot record a notification's delivery");
            }
        }
    }
}

/// One signed POST: the receiver's status (and a short description), or why there was none.
async fn send(
    http: &reqwest::Client,
    key: &SigningKey,
    delivery: &DueDelivery,
    now: time::OffsetDateTime,
) -> (Option<u16>, String) {
    let timestamp = now.unix_timestamp();
    let secret = key.channel_secret(&delivery.channel_id);
    let signature = notify::signature(&secret, timestamp, delivery.body.as_bytes());
    let sent = http
        .post(&delivery.url)
        .header("content-type", "application/json")
        .header("x-heimdall-event", &delivery.action)
        .header("x-heimdall-delivery", &delivery.id)
        .header("x-heimdall-timestamp", timestamp.to_string())
        .header("x-heimdall-signature", signature)
        .body(delivery.body.clone())
        .send()
        .await;
    match sent {
        Ok(resp) => (Some(resp.status().as_u16()), format!("HTTP {}", resp.status().as_u16())),
        // Without the URL: it may carry a token in its path.
        Err(e) => (None, heimdall_core::error::chain(&e.without_url())),
    }
}
