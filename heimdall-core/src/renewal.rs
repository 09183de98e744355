//! When a certificate is replaced: the local API's server certificate is
//! renewed with a third of its life left, and at once when the API stops
//! listing it (it was revoked).

use crate::sha256::Sha256Hex;

/// Whether a certificate valid from `not_before` to `not_after` (Unix
/// seconds) with SHA-256 `sha256` should be replaced at `now`: a third of
/// its life or less left, or the API's list (when it sends one) no longer
/// holds it.
pub fn needs_renewal(
    not_before: i64,
    not_after: i64,
    now: i64,
    sha256: &Sha256Hex,
    listed: Option<&[Sha256Hex]>,
) -> bool {
    let life = not_after - not_before;
    let left = not_after - now;
    left <= life / 3 || listed.is_some_and(|l| !l.contains(sha256))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renews_with_a_third_left_or_once_revoked() {
        let (from, to) = (0, 90);
        let (a, b) = (Sha256Hex::of(b"a"), Sha256Hex::of(b"b"));
        assert!(!needs_renewal(from, to, 10, &a, None));
        assert!(!needs_renewal(from, to, 59, &a, Some(&[b.clone(), a.clone()])));
        assert!(needs_renewal(from, to, 60, &a, None), "a third of its life left");
        assert!(needs_renewal(from, to, 10, &a, Some(&[b])), "no longer listed: revoked");
        assert!(needs_renewal(from, to, 10, &a, Some(&[])));
    }
}
