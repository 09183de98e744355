//! Lists in pages: how many entries a page holds, and the opaque cursor
//! (`?after=`, answered in the `Heimdall-Next-After` header) that says
//! where the next page starts. A cursor is base64url of a small JSON
//! record, parsed strictly when it comes back: a token this API did not
//! give is refused, never guessed at.

use base64::Engine as _;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::ApiError;

/// Entries per page when the caller names no limit, and the most one holds.
pub const DEFAULT_LIMIT: u32 = 100;
pub const MAX_LIMIT: u32 = 1000;

/// The response header naming where the next page starts; absent on the last.
pub const NEXT_AFTER: &str = "heimdall-next-after";

/// Longest cursor accepted, before any decoding.
const MAX_CURSOR_LEN: usize = 2048;

/// `?limit=`: 1 to [`MAX_LIMIT`], [`DEFAULT_LIMIT`] if absent.
pub fn limit(requested: Option<u32>) -> Result<u32, ApiError> {
    match requested {
        None => Ok(DEFAULT_LIMIT),
        Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        Some(_) => Err(ApiError::invalid_input(format!("limit is 1 to {MAX_LIMIT}"))),
    }
}

/// The cursor for `position`.
pub fn encode<T: Serialize>(position: &T) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(position).unwrap_or_default())
}

/// `?after=`, as [`encode`] made it; anything else is `INVALID_INPUT`.
pub fn decode<T: DeserializeOwned>(token: &str) -> Result<T, ApiError> {
    let bad = || ApiError::invalid_input("after is not a cursor this API gave (Heimdall-Next-After)");
    if token.len() > MAX_CURSOR_LEN {
        return Err(bad());
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    let tree = crate::body::parse_strict(&bytes).map_err(|_| bad())?;
    serde_json::from_value(tree).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct At {
        n: i64,
    }

    #[test]
    fn cursors_round_trip_and_nothing_else_is_taken() {
        let token = encode(&At { n: 7 });
        assert_eq!(decode::<At>(&token).unwrap(), At { n: 7 });
        let dup = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"n":1,"n":2}"#);
        let extra = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"n":1,"m":2}"#);
        for bad in ["", "%%", &dup, &extra, &"A".repeat(4000)] {
            assert!(decode::<At>(bad).is_err(), "{bad}");
        }
        assert_eq!(limit(None).unwrap(), 100);
        assert!(limit(Some(0)).is_err() && limit(Some(1001)).is_err());
    }
}
