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

    /// `url` sealed (AES-256-GCM, the channel id as associated data) for the database.
    pub fn seal_url(&self, channel_id: &str, url: &str) -> Result<String, String> {
        use aes_gcm::aead::{Aead, KeyInit, Payload};
        use rand::RngCore;
        let cipher =
            aes_gcm::Aes256Gcm::new_from_slice(self.url_key().as_ref()).map_err(|e| e.to_string())?;
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let payload = Payload { msg: url.as_bytes(), aad: channel_id.as_bytes() };
        let sealed =
            cipher.encrypt(&nonce.into(), payload).map_err(|_| "cannot seal the webhook URL".to_owned())?;
        Ok(format!("v1:{}:{}", hex::encode(nonce), hex::encode(sealed)))
    }

    /// The URL [`Self::seal_url`] sealed for `channel_id`.
    pub fn open_url(&self, channel_id: &str, sealed: &str) -> Result<Zeroizing<String>, String> {
        use aes_gcm::aead::{Aead, KeyInit, Payload};
        let bad = || "the webhook URL cannot be opened with this API's notifications.key".to_owned();
        let mut parts = sealed.splitn(3, ':');
        let (Some("v1"), Some(nonce), Some(body)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let nonce: [u8; 12] = hex::decode(nonce).ok().and_then(|n| n.try_into().ok()).ok_or_else(bad)?;
        let body = hex::decode(body).map_err(|_| bad())?;
        let cipher =
            aes_gcm::Aes256Gcm::new_from_slice(self.url_key().as_ref()).map_err(|e| e.to_string())?;
        let opened = cipher.decrypt(&nonce.into(), Payload { msg: &body, aad: channel_id.as_bytes() });
        let opened = Zeroizing::new(opened.map_err(|_| bad())?);
        String::from_utf8(opened.to_vec()).map(Zeroizing::new).map_err(|_| bad())
    }

    fn url_key(&self) -> Zeroizing<[u8; 32]> {
        notify::subkey(&self.0, b"webhook url")
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
    let url = match key.open_url(&delivery.channel_id, &delivery.url) {
        Ok(url) => url,
        Err(why) => return (None, why),
    };
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
        Ok(resp) => (Some(resp.status().as_u16()), format!("HTTP {}", resp.status().as_u16())),
        // Without the URL: it may carry a token in its path.
        Err(e) => (None, heimdall_core::error::chain(&e.without_url())),
    }
}
