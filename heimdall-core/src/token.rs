//! API tokens: `hmd_` + 43 characters of base64url (32 random bytes).
//!
//! Tokens are shown once and stored only as their SHA-256. A plain hash is
//! right here (not a password KDF) because the token has 256 bits of
//! entropy: there is nothing to brute-force.

pub mod service;

use sha2::{Digest, Sha256};

pub const TOKEN_PREFIX: &str = "hmd_";

/// The stored form of a token.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TokenHash(String);

impl TokenHash {
    pub fn of(token: &str) -> Self {
        Self(hex::encode(Sha256::digest(token.as_bytes())))
    }

    pub fn from_stored(hex: String) -> Self {
        Self(hex)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The hash is not secret, but there is no reason to print it either.
        f.write_str("TokenHash(..)")
    }
}

/// Does this look like one of our tokens? (Cheap check before any lookup.)
pub fn looks_like_token(candidate: &str) -> bool {
    candidate.len() == TOKEN_PREFIX.len() + 43
        && candidate.starts_with(TOKEN_PREFIX)
        && candidate[TOKEN_PREFIX.len()..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// What making a token called `name` records: a name of 1 to 100
/// characters (the token itself is never recorded).
pub fn created(
    id: crate::ids::TokenId,
    name: &str,
) -> Result<crate::audit::EventPlan, crate::error::ApiError> {
    if name.trim().is_empty() {
        return Err(crate::error::ApiError::invalid_input("name must not be empty"));
    }
    crate::names::validate_text("name", name, 100)?;
    Ok(token_event(crate::audit::AuditAction::TokenCreated, id, serde_json::json!({ "name": name })))
}

/// What revoking the token `id` records.
pub fn revoked(id: crate::ids::TokenId) -> crate::audit::EventPlan {
    token_event(crate::audit::AuditAction::TokenRevoked, id, serde_json::Value::Null)
}

fn token_event(
    action: crate::audit::AuditAction,
    id: crate::ids::TokenId,
    detail: serde_json::Value,
) -> crate::audit::EventPlan {
    crate::audit::EventPlan { action, target: format!("token:{id}"), detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_recorded_by_id_and_name_never_itself() {
        let id = crate::ids::TokenId::from_uuid(uuid::Uuid::from_u128(5));
        let event = created(id, "ci").unwrap();
        assert_eq!(
            (event.target, event.detail),
            (format!("token:{id}"), serde_json::json!({ "name": "ci" }))
        );
        assert_eq!(created(id, "  ").unwrap_err().code, crate::error::ErrorCode::InvalidInput);
        assert_eq!(revoked(id).action, crate::audit::AuditAction::TokenRevoked);
    }

    #[test]
    fn hash_is_stable_and_not_the_token() {
        let token = format!("{TOKEN_PREFIX}{}", "A".repeat(43));
        assert!(looks_like_token(&token));
        let hash = TokenHash::of(&token);
        assert_eq!(hash, TokenHash::of(&token));
        assert!(!hash.as_str().contains("AAAA"));
        assert_eq!(hash.as_str().len(), 64);
        assert!(!looks_like_token("hmd_short"));
        assert!(!looks_like_token(&format!("xyz_{}", "A".repeat(43))));
    }
}
