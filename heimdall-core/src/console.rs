//! Signing in to the web Console from the CLI without putting a token in
//! a URL: `heimdall console` asks the API for a one-time sign-in code, the
//! browser opens `/console/#sign-in=CODE` (a fragment: never sent to a
//! server or a proxy's log), and the Console trades the code once, within
//! [`LINK_LIFETIME`], for a session token that lasts [`SESSION_LIFETIME`]
//! and lives only in that tab. The long-lived token never leaves the CLI.

pub mod service;

use time::{Duration, OffsetDateTime};

use crate::token::TokenHash;

/// How long a sign-in link can be used (once).
pub const LINK_LIFETIME: Duration = Duration::seconds(60);

/// How long the token a sign-in link is traded for lasts.
pub const SESSION_LIFETIME: Duration = Duration::hours(12);

/// A sign-in code: this prefix and 43 characters of base64url (32 random bytes).
pub const CODE_PREFIX: &str = "hcs_";

/// The name a Console session's token is listed under (`heimdall token list`).
pub const SESSION_TOKEN_NAME: &str = "console session";

/// Where a sign-in link points, under the API's URL.
pub fn link_path(code: &str) -> String {
    format!("/console/#sign-in={code}")
}

/// Whether `code` has the shape of a sign-in code: checked before any
/// lookup, and never echoed.
pub fn looks_like_code(code: &str) -> bool {
    code.len() == CODE_PREFIX.len() + 43
        && code.starts_with(CODE_PREFIX)
        && code[CODE_PREFIX.len()..].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The stored form of a code, as for tokens: its SHA-256 only.
pub fn code_hash(code: &str) -> TokenHash {
    TokenHash::of(code)
}

/// Until when a link made `now` may be used.
pub fn link_expires(now: OffsetDateTime) -> OffsetDateTime {
    now + LINK_LIFETIME
}

/// Until when a session begun `now` lasts.
pub fn session_expires(now: OffsetDateTime) -> OffsetDateTime {
    now + SESSION_LIFETIME
}

/// Whether a token with this expiry (none: a token made by `token create`
/// or `member add`, which lasts until revoked) is still good at `now`.
pub fn token_valid_at(expires_at: Option<OffsetDateTime>, now: OffsetDateTime) -> bool {
    expires_at.is_none_or(|end| now < end)
}

/// What making a sign-in link for `member` records (never the code).
pub fn link_created(member: crate::ids::MemberId, expires_at: OffsetDateTime) -> crate::audit::EventPlan {
    crate::audit::EventPlan {
        action: crate::audit::AuditAction::ConsoleSignInLinkCreated,
        target: format!("member:{member}"),
        detail: serde_json::json!({ "expires_at": expires_at.unix_timestamp() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::TOKEN_PREFIX;

    #[test]
    fn a_code_is_shaped_as_one_and_is_never_a_token() {
        let code = format!("{CODE_PREFIX}{}", "A".repeat(43));
        assert!(looks_like_code(&code));
        assert!(!crate::token::looks_like_token(&code));
        assert!(!looks_like_code(&format!("{TOKEN_PREFIX}{}", "A".repeat(43))));
        assert!(!looks_like_code("hcs_short"));
        assert_eq!(link_path(&code), format!("/console/#sign-in={code}"));
    }

    #[test]
    fn links_and_sessions_end() {
        let now = OffsetDateTime::UNIX_EPOCH + Duration::days(20_000);
        assert_eq!(link_expires(now) - now, Duration::seconds(60));
        let end = session_expires(now);
        assert!(token_valid_at(Some(end), end - Duration::seconds(1)));
        assert!(!token_valid_at(Some(end), end));
        assert!(token_valid_at(None, end + Duration::days(3650)));
    }
}
