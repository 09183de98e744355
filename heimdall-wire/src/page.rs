//! Lists in pages: how many entries a page holds, and the opaque cursor
//! (`?after=`, answered in the `Heimdall-Next-After` header) that says
//! where the next page starts. A cursor is base64url of a small JSON
//! record, parsed strictly when it comes back: a token this API did not
//! give is refused, never guessed at.

use base64::Engine as _;
use serde::de::DeserializeOwned;
use serde::Serialize;

use heimdall_core::ApiError;

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

/// Where a page of a short list ends: the sort key of its last entry.
/// Short lists (members, tokens, policies, the catalog…) are read whole
/// and cut into pages by [`cut`]; the cursor names a place in the order,
/// not a position, so an entry added or removed between two pages moves
/// nothing else.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyCursor {
    pub after: Vec<String>,
}

/// The page of `items` after `after`: sorted by `key` (which must tell
/// any two entries apart), at most `limit` of them, and the cursor of the
/// next page when there are more.
pub fn cut<T>(
    mut items: Vec<T>,
    key: impl Fn(&T) -> Vec<String>,
    after: Option<&KeyCursor>,
    limit: u32,
) -> (Vec<T>, Option<KeyCursor>) {
    items.sort_by_cached_key(|item| key(item));
    if let Some(after) = after {
        items.retain(|item| key(item) > after.after);
    }
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if items.len() <= limit {
        return (items, None);
    }
    items.truncate(limit);
    let next = items.last().map(|last| KeyCursor { after: key(last) });
    (items, next)
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

    #[test]
    fn a_short_list_cut_into_pages_misses_and_repeats_nothing() {
        let names = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let key = |s: &String| vec![s.clone()];
        let all = names(&["d", "a", "c", "b", "e"]);
        let (first, next) = cut(all.clone(), key, None, 2);
        assert_eq!(first, names(&["a", "b"]));
        let next = next.unwrap();
        // "c" removed and "bb" added between the pages: the next starts after "b".
        let changed = names(&["d", "a", "bb", "b", "e"]);
        let (second, next) = cut(changed, key, Some(&next), 2);
        assert_eq!(second, names(&["bb", "d"]));
        let (last, none) = cut(all.clone(), key, next.as_ref(), 2);
        assert_eq!((last, none), (names(&["e"]), None));
        assert_eq!(cut(all, key, None, 5).1, None, "a page that holds the rest names no next one");
    }
}
