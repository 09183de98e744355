//! `Sha256Hex`: a SHA-256 digest written as hex, the one way this project
//! names a certificate, a public key, a pinned executable or a plan.
//!
//! Parsed once (64 hex digits, either case) and kept in lower case, so two
//! digests compare with `==`; no rule folds case on its own.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// A SHA-256 digest as 64 lower-case hex digits.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Sha256Hex(String);

/// Why a string is not a SHA-256 digest. Never quotes the string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a SHA-256 digest (64 hex digits)")]
pub struct NotSha256;

impl Sha256Hex {
    /// `text` as a digest: exactly 64 hex digits, either case.
    pub fn parse(text: &str) -> Result<Self, NotSha256> {
        if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Self(text.to_ascii_lowercase()))
        } else {
            Err(NotSha256)
        }
    }

    /// `text` as a digest, or `INVALID_INPUT` naming `field`.
    pub fn parse_field(field: &str, text: &str) -> Result<Self, ApiError> {
        Self::parse(text)
            .map_err(|_| ApiError::invalid_input(format!("{field} is not a SHA-256 digest (64 hex digits)")))
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(hex::encode(Sha256::digest(bytes)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Sha256Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Sha256Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Hex({})", self.0)
    }
}

impl std::str::FromStr for Sha256Hex {
    type Err = NotSha256;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl<'de> Deserialize<'de> for Sha256Hex {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_case_parses_to_one_digest_and_nothing_else_parses() {
        let lower = "ab".repeat(32);
        let upper = lower.to_ascii_uppercase();
        assert_eq!(Sha256Hex::parse(&lower), Sha256Hex::parse(&upper));
        assert_eq!(Sha256Hex::parse(&upper).map(|d| d.to_string()), Ok(lower.clone()));
        for bad in ["", "ab", &"g".repeat(64), &"a".repeat(63), &"a".repeat(65), &format!(" {}", &lower[1..])]
        {
            assert_eq!(Sha256Hex::parse(bad), Err(NotSha256), "{bad:?}");
        }
        let json: Result<Sha256Hex, _> = serde_json::from_str("\"xyz\"");
        assert!(json.is_err());
        let json: Sha256Hex = serde_json::from_str(&format!("\"{upper}\"")).unwrap();
        assert_eq!(serde_json::to_string(&json).unwrap(), format!("\"{lower}\""));
    }

    #[test]
    fn of_is_the_hex_of_the_digest() {
        assert_eq!(
            Sha256Hex::of(b"abc").as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
