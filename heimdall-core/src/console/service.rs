//! The Console's sign-in links as use cases run once for every adapter: a
//! member makes a link for herself; anyone holding its code trades it,
//! once and in time, for a session token of that member. The adapter makes
//! the code and the token (randomness is I/O); core gets what it stores.

use time::OffsetDateTime;

use crate::error::{ApiError, ErrorCode};
use crate::ids::TokenId;
use crate::ports::{Actor, NewToken, SignInStore};
use crate::token::TokenHash;

/// Stores a sign-in link for the caller whose code is `code`; when it
/// stops working. Any member may make one, for herself only.
pub async fn create_link<S: SignInStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    code: &str,
) -> Result<OffsetDateTime, ApiError> {
    let expires_at = super::link_expires(actor.now());
    let event = actor.event(super::link_created(actor.member(), expires_at));
    store.create_sign_in(actor.org(), actor.member(), &super::code_hash(code), expires_at, event).await?;
    Ok(expires_at)
}

/// The member a code signed in, and until when her session lasts.
#[derive(Clone, Debug)]
pub struct Session {
    pub email: String,
    pub expires_at: OffsetDateTime,
}

/// Trades `code` for a session token (its id and hash), at `now`: once,
/// before the link expires, for a member still there. Anything else is
/// `UNAUTHENTICATED`, with nothing stored; a code that does not look like
/// one is refused before any lookup.
pub async fn redeem<S: SignInStore + ?Sized>(
    store: &S,
    code: &str,
    (id, hash): (TokenId, TokenHash),
    now: OffsetDateTime,
) -> Result<Session, ApiError> {
    let refused = || {
        ApiError::new(
            ErrorCode::Unauthenticated,
            "this sign-in link is used, expired or unknown: run `heimdall console` again",
        )
    };
    if !super::looks_like_code(code) {
        return Err(refused());
    }
    let expires_at = super::session_expires(now);
    let record =
        NewToken { id, name: super::SESSION_TOKEN_NAME.to_owned(), hash, expires_at: Some(expires_at) };
    match store.redeem_sign_in(&super::code_hash(code), now, &record).await? {
        Some((member, _org)) => Ok(Session { email: member.email, expires_at }),
        None => Err(refused()),
    }
}
