//! The caller's own API tokens, run once for every adapter: every member
//! lists, makes and revokes her own tokens, and only hers (no policy is
//! asked: no one else's token is reachable here). The adapter makes the
//! token itself (randomness is I/O) and hands core its record.

use crate::domain::TokenInfo;
use crate::error::ApiError;
use crate::ids::TokenId;
use crate::ports::{Actor, NewToken, TokenStore};

/// The caller's tokens, revoked ones too (never a token itself).
pub async fn list<S: TokenStore + ?Sized>(store: &S, actor: &dyn Actor) -> Result<Vec<TokenInfo>, ApiError> {
    Ok(store.list_tokens(actor.org(), actor.member()).await?)
}

/// Stores `token` for the caller; its name is checked ([`super::created`]).
pub async fn create<S: TokenStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    token: &NewToken,
) -> Result<TokenInfo, ApiError> {
    let planned = super::created(token.id, &token.name)?;
    Ok(store.create_token(actor.org(), actor.member(), token, actor.event(planned)).await?)
}

/// Revokes the caller's token `key` (an id); any other key, or another
/// member's token, is not found.
pub async fn revoke<S: TokenStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    key: &str,
) -> Result<TokenInfo, ApiError> {
    let id: TokenId = key.parse().map_err(|_| ApiError::not_found("token"))?;
    Ok(store.revoke_token(actor.org(), actor.member(), id, actor.event(super::revoked(id))).await?)
}
