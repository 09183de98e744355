//! The format of what the installation CA signs for others to check:
//! `<prefix><base64url(claims JSON)>.<base64url(signature)>`. The signature
//! covers a context (what kind of statement it is, so a signature can
//! never stand for another kind) followed by the claims bytes exactly as
//! sent: nothing is re-serialized before verifying. Write grants and the
//! statement of an Agent's certificates use it; signing and verifying are
//! the adapters' (they hold keys).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Longest token accepted, before any decoding.
pub const MAX_TOKEN_LEN: usize = 16 * 1024;

/// A token split into what was signed and the signature, claims decoded.
#[derive(Clone, Debug)]
pub struct Parsed<T> {
    pub claims: T,
    /// The context, then the claims bytes: the exact signed message.
    pub signed_message: Vec<u8>,
    pub signature: Vec<u8>,
}

/// The message a signer signs for `claims_json` in `context`.
pub fn signing_input(context: &[u8], claims_json: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(context.len() + claims_json.len());
    message.extend_from_slice(context);
    message.extend_from_slice(claims_json);
    message
}

/// Serializes `claims` and signs them with `sign` (which receives the full
/// signing input) into a token.
pub fn encode<T: Serialize, E>(
    prefix: &str,
    context: &[u8],
    claims: &T,
    sign: impl FnOnce(&[u8]) -> Result<Vec<u8>, E>,
) -> Result<String, E> {
    // Serializing a struct of strings, ids and integers cannot fail.
    let json = serde_json::to_vec(claims).unwrap_or_default();
    let signature = sign(&signing_input(context, &json))?;
    Ok(format!("{prefix}{}.{}", URL_SAFE_NO_PAD.encode(&json), URL_SAFE_NO_PAD.encode(signature)))
}

/// Splits and decodes a token; `None` for anything malformed. The
/// signature is *not* checked here.
pub fn parse<T: DeserializeOwned>(prefix: &str, context: &[u8], token: &str) -> Option<Parsed<T>> {
    if token.len() > MAX_TOKEN_LEN {
        return None;
    }
    let (claims_b64, signature_b64) = token.strip_prefix(prefix)?.split_once('.')?;
    let json = URL_SAFE_NO_PAD.decode(claims_b64).ok()?;
    let signature = URL_SAFE_NO_PAD.decode(signature_b64).ok()?;
    let claims: T = serde_json::from_slice(&json).ok()?;
    Some(Parsed { claims, signed_message: signing_input(context, &json), signature })
}
