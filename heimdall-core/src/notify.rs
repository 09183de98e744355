//! The organization's notification channel: which audit events it
//! carries, where it may point, how a delivery is signed, and when a failed
//! one is tried again. Pure: the API's store queues a delivery with the
//! event that causes it, and its delivery loop applies these rules.
//!
//! A delivery is the audit event itself as JSON, which never holds a
//! secret's value. It is signed with HMAC-SHA256 under the channel's
//! secret, over `<timestamp>.<body>`, and sent as
//! `X-Heimdall-Signature: sha256=<hex>` with `X-Heimdall-Timestamp`,
//! `X-Heimdall-Event` and `X-Heimdall-Delivery`. The channel's secret is
//! derived from a key the API keeps beside its CA and the channel's id,
//! shown once when the channel is made, and never stored.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use time::{Duration, OffsetDateTime};

use crate::error::ApiError;
use crate::ids::OrgId;

/// The audit events a channel carries.
pub const NOTIFIED: &[&str] =
    &["secret.at_risk", "resource.drifted", "job.failed", "database.rotation_failed"];

/// Whether an event with `action` goes to the organization's channels.
pub fn is_notified(action: &str) -> bool {
    NOTIFIED.contains(&action)
}

/// Tries before a delivery is given up (`failed`).
pub const MAX_ATTEMPTS: u32 = 8;

/// When to try again after `attempts` failed tries: `base`, then three
/// times longer each time (10 s, 30 s, 90 s, … for a base of 10 s), or
/// `None` once [`MAX_ATTEMPTS`] are spent.
pub fn retry_after(attempts: u32, base: Duration) -> Option<Duration> {
    if attempts >= MAX_ATTEMPTS {
        return None;
    }
    let factor = 3_i32.saturating_pow(attempts.saturating_sub(1));
    Some(base.saturating_mul(factor))
}

/// A webhook URL: `https://`, or `http://` to this machine only (a
/// receiver in tests, or behind a local proxy). No credentials in it.
pub fn check_webhook_url(url: &str) -> Result<(), ApiError> {
    let bad = |why: &str| ApiError::invalid_input(format!("webhook: {why}"));
    let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("not a URL (https://host/path)"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(bad("a URL with a user or password in it is refused; the signature authenticates"));
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
    };
    if host.is_empty() {
        return Err(bad("the URL names no host"));
    }
    let loopback = host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match scheme {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        "http" => Err(bad("plain http only to this machine; use https")),
        _ => Err(bad("must be https://")),
    }
}

/// The channel's secret: HMAC-SHA256 of its id under the API's key.
pub fn channel_secret(api_key: &[u8; 32], channel_id: &str) -> zeroize::Zeroizing<String> {
    zeroize::Zeroizing::new(format!(
        "whsec_{}",
        hex::encode(mac(api_key, &[b"heimdall channel v1\n", channel_id.as_bytes()]))
    ))
}

/// A key for `purpose`, derived from the API's key (each use its own).
pub fn subkey(api_key: &[u8; 32], purpose: &[u8]) -> zeroize::Zeroizing<[u8; 32]> {
    zeroize::Zeroizing::new(mac(api_key, &[b"heimdall subkey v1\n", purpose]))
}

/// How a webhook URL is shown and logged: its scheme and host only. Its
/// path and query may hold the receiver's credential (a Slack-style URL),
/// so the full URL is kept only sealed.
pub fn display_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let more = if rest.len() > host.len() { "/…" } else { "" };
    format!("{scheme}://{host}{more}")
}

/// `X-Heimdall-Signature` for `body` sent at `timestamp` (Unix seconds).
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!("sha256={}", hex::encode(mac(secret.as_bytes(), &[timestamp.to_string().as_bytes(), b".", body])))
}

fn mac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes a key of any length.
    let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!("any key length"));
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// A channel as the API keeps it (its secret is not kept).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Channel {
    pub id: String,
    pub org_id: OrgId,
    pub name: String,
    /// Scheme and host only ([`display_url`]).
    pub url: String,
    /// The whole URL, sealed under the API's key; never shown.
    #[serde(skip)]
    pub sealed_url: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// One event's delivery to one channel, and how it went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Delivery {
    pub id: String,
    pub channel: String,
    pub event_id: String,
    pub action: String,
    /// `pending`, `delivered` or `failed` (given up).
    pub status: String,
    pub attempts: u32,
    /// The receiver's HTTP status, or why there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_result: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option", default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<OffsetDateTime>,
}

/// What a try came to, and what the delivery becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Delivered,
    /// Try again at this time.
    Retry(OffsetDateTime),
    GivenUp,
}

/// After try number `attempts` (counting this one): a 2xx answer is
/// delivered; anything else is tried again later, or given up.
pub fn after_attempt(status: Option<u16>, attempts: u32, now: OffsetDateTime, base: Duration) -> Outcome {
    match status {
        Some(200..=299) => Outcome::Delivered,
        _ => retry_after(attempts, base).map_or(Outcome::GivenUp, |wait| Outcome::Retry(now + wait)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_and_stop() {
        let base = Duration::seconds(10);
        let waits: Vec<i64> =
            (1..MAX_ATTEMPTS).map(|n| retry_after(n, base).unwrap().whole_seconds()).collect();
        assert_eq!(waits, [10, 30, 90, 270, 810, 2430, 7290]);
        assert_eq!(retry_after(MAX_ATTEMPTS, base), None);
        let now = OffsetDateTime::UNIX_EPOCH;
        assert_eq!(after_attempt(Some(204), 1, now, base), Outcome::Delivered);
        assert_eq!(after_attempt(Some(500), 2, now, base), Outcome::Retry(now + Duration::seconds(30)));
        assert_eq!(after_attempt(None, MAX_ATTEMPTS, now, base), Outcome::GivenUp);
        assert_eq!(
            after_attempt(Some(301), 1, now, base),
            Outcome::Retry(now + base),
            "a redirect is not followed"
        );
    }

    #[test]
    fn webhook_urls_are_https_or_loopback() {
        for ok in [
            "https://hooks.example.com/heimdall",
            "http://127.0.0.1:9000/x",
            "http://[::1]:1/",
            "http://localhost/",
        ] {
            assert!(check_webhook_url(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("http://hooks.example.com/", "only to this machine"),
            ("ftp://x/", "https"),
            ("https://user:pw@hooks.example.com/", "user or password"),
            ("hooks.example.com", "not a URL"),
            ("https:///path", "no host"),
        ] {
            let err = check_webhook_url(bad).unwrap_err();
            assert!(err.message.contains(why) && !err.message.contains("pw@"), "{bad}: {}", err.message);
        }
    }

    #[test]
    fn the_signature_is_hmac_sha256_over_timestamp_and_body() {
        let key = [7u8; 32];
        let (a, b) = (channel_secret(&key, "ch-1"), channel_secret(&key, "ch-2"));
        assert!(a.starts_with("whsec_") && a.len() == 6 + 64 && *a != *b, "one secret per channel");
        assert_eq!(*channel_secret(&key, "ch-1"), *a, "derived, so never stored");
        // Checked against Python's hmac: HMAC-SHA256(key "Jefe", "0.what do ya want for nothing?").
        assert_eq!(
            signature("Jefe", 0, b"what do ya want for nothing?"),
            "sha256=37f471929915ccd2cbbe79feb84ffcff4f2bb25e15fc41c2506687331ae179cc"
        );
        assert_eq!(signature("s", 1700000000, b"{}"), signature("s", 1700000000, b"{}"));
        assert_ne!(
            signature("s", 1700000000, b"{}"),
            signature("s", 1700000001, b"{}"),
            "the time is signed"
        );
    }

    #[test]
    fn a_webhook_url_shows_its_host_only() {
        assert_eq!(
            display_url("https://hooks.slack.com/services/T0/B0/XyZsecret"),
            "https://hooks.slack.com/…"
        );
        assert_eq!(display_url("http://127.0.0.1:9"), "http://127.0.0.1:9");
        assert_eq!(display_url("https://h.example.com?token=abc"), "https://h.example.com/…");
        let key = [1u8; 32];
        assert_ne!(*subkey(&key, b"a"), *subkey(&key, b"b"));
    }

    #[test]
    fn the_channel_carries_what_people_act_on() {
        assert!(is_notified("secret.at_risk") && is_notified("resource.drifted"));
        assert!(!is_notified("secret.created") && !is_notified("member.removed"));
    }
}
