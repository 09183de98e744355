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

mod channels;
pub mod service;

use crate::audit::AuditAction;
use crate::error::ApiError;
use crate::ids::OrgId;

pub use channels::{create_channel, delete_channel, update_channel, ChannelPlan};

/// Whether an event with `action` goes to the organization's channels.
pub fn is_notified(action: AuditAction) -> bool {
    action.is_notified()
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

/// A range of addresses, `10.1.0.0/16` or `fd00::/8`, that an owner lets
/// webhooks reach (`webhook_allow_cidrs` in the API's config file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    network: std::net::IpAddr,
    prefix: u8,
}

impl std::str::FromStr for Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || format!("{text:?} is not an address range like 10.1.0.0/16 or fd00::/8");
        let (address, prefix) = text.split_once('/').ok_or_else(bad)?;
        let network: std::net::IpAddr = address.parse().map_err(|_| bad())?;
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            return Err(bad());
        }
        Ok(Self { network, prefix })
    }
}

impl Cidr {
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        use std::net::IpAddr;
        match (self.network, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// An IPv4 address written as IPv6 (`::ffff:a.b.c.d`) is that IPv4 address.
fn canonical(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, std::net::IpAddr::V4),
        v4 => v4,
    }
}

/// Addresses inside a network rather than on the internet: this machine,
/// private and shared ranges, link-local (the cloud's metadata service,
/// 169.254.169.254), multicast, and the reserved ones.
fn is_internal(ip: std::net::IpAddr) -> bool {
    match canonical(ip) {
        std::net::IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..=127).contains(&b)) // shared (carrier-grade NAT)
                || (a == 198 && (b == 18 || b == 19)) // benchmarking
                || a >= 240 // reserved
        }
        std::net::IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link-local
                || (first == 0x2001 && v6.segments()[1] == 0x0db8) // documentation
                || (first == 0x0064 && v6.segments()[1] == 0xff9b) // NAT64: an IPv4 behind it
        }
    }
}

/// Whether a webhook may connect to `ip`, decided when it connects (the
/// address a name resolves to then, not the URL's text): an internet
/// address, or one inside a range an owner allowed. Without this a webhook
/// reaches the API's own network, its metadata service, and its loopback
/// ports, and the delivery log becomes a port scanner.
pub fn may_deliver_to(ip: std::net::IpAddr, allowed: &[Cidr]) -> bool {
    !is_internal(ip) || allowed.iter().any(|range| range.contains(ip))
}

/// What the delivery log says of an attempt: the class of the receiver's
/// status, or that there was none; never why (refused, reset, a TLS
/// error, a timeout: told apart, they map the API's network).
pub fn describe(status: Option<u16>) -> String {
    match status {
        Some(code) => format!("HTTP {}xx", code / 100),
        None => "no answer".to_owned(),
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
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    fn webhooks_reach_the_internet_and_the_ranges_an_owner_allowed_only() {
        let ip = |text: &str| text.parse::<std::net::IpAddr>().unwrap();
        for inside in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
        ] {
            assert!(!may_deliver_to(ip(inside), &[]), "{inside}");
        }
        for outside in ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "::ffff:93.184.216.34"] {
            assert!(may_deliver_to(ip(outside), &[]), "{outside}");
        }
        let allowed: Vec<Cidr> =
            ["127.0.0.0/8", "10.1.0.0/16", "fd00::/8"].iter().map(|c| c.parse().unwrap()).collect();
        assert!(may_deliver_to(ip("127.0.0.1"), &allowed));
        assert!(may_deliver_to(ip("::ffff:127.0.0.1"), &allowed));
        assert!(may_deliver_to(ip("10.1.200.7"), &allowed));
        assert!(!may_deliver_to(ip("10.2.0.1"), &allowed));
        assert!(may_deliver_to(ip("fd12::1"), &allowed));
        assert!(!may_deliver_to(ip("169.254.169.254"), &allowed));
        for bad in ["10.0.0.0", "10.0.0.0/33", "x/8", "::/129"] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
        assert_eq!(describe(Some(503)), "HTTP 5xx");
        assert_eq!(describe(None), "no answer");
    }

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
        let notified: Vec<&str> =
            AuditAction::ALL.iter().filter(|a| is_notified(**a)).map(|a| a.as_str()).collect();
        assert_eq!(
            notified,
            [
                "database.rotation_failed",
                "job.failed",
                "resource.drifted",
                "secret.at_risk",
                "secret.holder_lagging"
            ]
        );
    }
}
