//! Write grants: the API's signed permission to store one version of one
//! secret in one environment on one Agent (docs/secrets.md, "Writing and reading values").
//!
//! The API never sees the value. It numbers the version, then signs a
//! short-lived grant naming exactly (organization, secret, environment,
//! version, Agent); the CLI hands value and grant to the Agent, which
//! checks the signature against the installation CA it already trusts and
//! the claims against the request before storing. A grant is single-use in
//! effect: the store refuses a second value at the same address.
//!
//! Token: `hg1.<base64url(claims JSON)>.<base64url(signature)>`. The
//! signature covers [`GRANT_CONTEXT`] followed by the claims bytes exactly as
//! sent, so nothing is re-serialized before verifying. Signing and
//! verifying are the adapters' (they hold keys); this module is the format
//! and the rules, pure.

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::error::{ApiError, ErrorCode};
use crate::ids::{AgentId, CatalogId, MemberId, OrgId, SecretId};
use crate::sha256::Sha256Hex;

/// How long a grant is good for: long enough to type nothing (the value
/// comes from stdin or a file), short enough that a leaked grant is stale.
pub const GRANT_TTL: Duration = Duration::minutes(5);

/// Domain separation: these bytes start every signed message, so a grant
/// signature can never stand for anything else the CA key signs.
pub const GRANT_CONTEXT: &[u8] = b"heimdall/write-grant/v1\n";

const PREFIX: &str = "hg1.";
/// Longest token accepted, before any decoding.
const MAX_TOKEN_LEN: usize = 4096;

/// What a grant permits: one value at one address, on one Agent, until
/// `expires_at` (Unix seconds).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteGrantClaims {
    pub grant_id: Uuid,
    pub org: OrgId,
    pub secret_id: SecretId,
    pub secret: String,
    pub environment_id: CatalogId,
    pub environment: String,
    pub version: i64,
    pub agent: AgentId,
    /// Who asked for the version (an email or a program's accessor, for logs).
    pub issued_by: String,
    /// Who asked for the version, by id: the only writer who may store
    /// the value with this grant.
    pub issued_to: GrantWriter,
    /// For a personal secret: the keys bound to it (SHA-256 of each public
    /// key); the writer's certificate must carry one of them. `None` for an
    /// organization secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_keys: Option<Vec<Sha256Hex>>,
    pub issued_at: i64,
    pub expires_at: i64,
}

/// Who a grant is for, by id (never by a name).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum GrantWriter {
    /// A person: the member whose client certificate writes.
    Member(MemberId),
    /// A program, by its token's id on the grant's Agent: the Agent asked
    /// the API on its behalf.
    Program(String),
}

/// Why a grant is refused. Messages name the rule, never token bytes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    #[error("the write grant is malformed")]
    Malformed,
    #[error("the write grant's signature does not verify against the installation CA")]
    BadSignature,
    #[error("the write grant expired; ask for a new version")]
    Expired,
    #[error("the write grant is not valid yet (check this machine's clock)")]
    NotYetValid,
    #[error("the write grant is for another {0}")]
    Mismatch(&'static str),
    #[error("the write grant was issued to another writer")]
    OtherWriter,
    #[error("this client certificate's key is not bound to the personal secret")]
    KeyNotBound,
}

impl From<GrantError> for ApiError {
    fn from(e: GrantError) -> Self {
        ApiError::new(ErrorCode::GrantInvalid, e.to_string())
    }
}

impl WriteGrantClaims {
    /// Claims for `version`, valid from `now` for [`GRANT_TTL`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        grant_id: Uuid,
        org: OrgId,
        secret: (SecretId, &str),
        environment: (CatalogId, &str),
        version: i64,
        agent: AgentId,
        issued_to: (GrantWriter, &str),
        owner_keys: Option<Vec<Sha256Hex>>,
        now: OffsetDateTime,
    ) -> Self {
        Self {
            grant_id,
            org,
            secret_id: secret.0,
            secret: secret.1.to_owned(),
            environment_id: environment.0,
            environment: environment.1.to_owned(),
            version,
            agent,
            issued_by: issued_to.1.to_owned(),
            issued_to: issued_to.0,
            owner_keys,
            issued_at: now.unix_timestamp(),
            expires_at: (now + GRANT_TTL).unix_timestamp(),
        }
    }

    /// Every claim against the write asked for: the organization, this
    /// Agent, the secret, the environment (by id or by name, as the request
    /// named it), the version, the writer (by member id or token id) and, for a
    /// personal secret, the writer's key; and the time (one minute of clock
    /// skew is tolerated at the start). The signature is the adapter's to
    /// check first.
    pub fn check(&self, expected: &GrantTarget<'_>, now: OffsetDateTime) -> Result<(), GrantError> {
        if self.org != expected.org {
            return Err(GrantError::Mismatch("organization"));
        }
        if self.agent != expected.agent {
            return Err(GrantError::Mismatch("Agent"));
        }
        if self.secret != expected.secret {
            return Err(GrantError::Mismatch("secret"));
        }
        if expected.environment != self.environment && expected.environment != self.environment_id.to_string()
        {
            return Err(GrantError::Mismatch("environment"));
        }
        if self.version != expected.version {
            return Err(GrantError::Mismatch("version"));
        }
        if self.issued_to != expected.writer {
            return Err(GrantError::OtherWriter);
        }
        if let Some(keys) = &self.owner_keys {
            if !keys.is_empty() && !expected.writer_key.is_some_and(|key| keys.contains(key)) {
                return Err(GrantError::KeyNotBound);
            }
        }
        let now = now.unix_timestamp();
        if now >= self.expires_at {
            return Err(GrantError::Expired);
        }
        if now + 60 < self.issued_at || self.expires_at - self.issued_at > GRANT_TTL.whole_seconds() {
            return Err(GrantError::NotYetValid);
        }
        Ok(())
    }
}

/// What the Agent is asked to store, and by whom, to hold a grant's claims
/// against.
#[derive(Clone, Debug)]
pub struct GrantTarget<'a> {
    pub org: OrgId,
    pub agent: AgentId,
    pub secret: &'a str,
    /// The environment as the request named it: its id or its name.
    pub environment: &'a str,
    pub version: i64,
    /// The member the writer's client certificate belongs to, or the
    /// program whose token the Agent accepted.
    pub writer: GrantWriter,
    /// SHA-256 (hex) of the writer's certificate's public key (empty for a
    /// program, which never reaches a personal secret).
    pub writer_key: Option<&'a Sha256Hex>,
}

/// A grant split into what was signed and the signature, claims decoded.
pub type ParsedGrant = crate::signed::Parsed<WriteGrantClaims>;

/// The message a signer signs for `claims_json`.
pub fn signing_input(claims_json: &[u8]) -> Vec<u8> {
    crate::signed::signing_input(GRANT_CONTEXT, claims_json)
}

/// Serializes and signs `claims` with `sign` (which receives the full
/// signing input) into a token.
pub fn encode<E>(
    claims: &WriteGrantClaims,
    sign: impl FnOnce(&[u8]) -> Result<Vec<u8>, E>,
) -> Result<String, E> {
    crate::signed::encode(PREFIX, GRANT_CONTEXT, claims, sign)
}

/// Splits and decodes a token. The signature is *not* checked here.
pub fn parse(token: &str) -> Result<ParsedGrant, GrantError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(GrantError::Malformed);
    }
    crate::signed::parse(PREFIX, GRANT_CONTEXT, token).ok_or(GrantError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(now: OffsetDateTime) -> WriteGrantClaims {
        WriteGrantClaims::new(
            Uuid::from_u128(1),
            OrgId::from_uuid(Uuid::from_u128(2)),
            (SecretId::from_uuid(Uuid::from_u128(3)), "db-password"),
            (CatalogId::from_uuid(Uuid::from_u128(4)), "dev"),
            7,
            AgentId::from_uuid(Uuid::from_u128(5)),
            (GrantWriter::Member(MemberId::from_uuid(Uuid::from_u128(6))), "ana@example.com"),
            None,
            now,
        )
    }

    fn target(c: &WriteGrantClaims) -> GrantTarget<'_> {
        GrantTarget {
            org: c.org,
            agent: c.agent,
            secret: &c.secret,
            environment: &c.environment,
            version: c.version,
            writer: c.issued_to.clone(),
            writer_key: None,
        }
    }

    #[test]
    fn round_trips_and_signs_the_exact_bytes_sent() {
        let now = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let c = claims(now);
        let mut seen = Vec::new();
        let token = encode(&c, |m: &[u8]| -> Result<_, ()> {
            seen = m.to_vec();
            Ok(b"sig".to_vec())
        })
        .unwrap();
        let parsed = parse(&token).unwrap();
        assert_eq!(parsed.claims, c);
        assert_eq!(parsed.signed_message, seen);
        assert!(parsed.signed_message.starts_with(GRANT_CONTEXT));
        assert_eq!(parsed.signature, b"sig");
        for bad in ["", "hg1.", "hg0.e30.c2ln", "hg1.!!!.c2ln", "hg1.e30.c2ln", &"x".repeat(5000)] {
            assert_eq!(parse(bad).unwrap_err(), GrantError::Malformed, "{bad:.20}");
        }
    }

    #[test]
    fn binds_every_part_of_the_address_and_expires() {
        let now = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let c = claims(now);
        assert_eq!(c.check(&target(&c), now), Ok(()));
        assert_eq!(c.check(&target(&c), now + Duration::minutes(4)), Ok(()));
        assert_eq!(c.check(&target(&c), now + GRANT_TTL), Err(GrantError::Expired));
        assert_eq!(c.check(&target(&c), now - Duration::minutes(5)), Err(GrantError::NotYetValid));
        let mut t = target(&c);
        t.version = 8;
        assert_eq!(c.check(&t, now), Err(GrantError::Mismatch("version")));
        let mut t = target(&c);
        t.secret = "other";
        assert_eq!(c.check(&t, now), Err(GrantError::Mismatch("secret")));
        let mut t = target(&c);
        t.environment = "prod";
        assert_eq!(c.check(&t, now), Err(GrantError::Mismatch("environment")));
        let id = c.environment_id.to_string();
        let mut t = target(&c);
        t.environment = &id;
        assert_eq!(c.check(&t, now), Ok(()), "the environment by id");
        let mut t = target(&c);
        t.writer = GrantWriter::Member(MemberId::from_uuid(Uuid::from_u128(9)));
        assert_eq!(c.check(&t, now), Err(GrantError::OtherWriter));
        // A program is no member, whatever its token's id looks like.
        let mut t = target(&c);
        t.writer = GrantWriter::Program(Uuid::from_u128(6).to_string());
        assert_eq!(c.check(&t, now), Err(GrantError::OtherWriter));
        let mut program = c.clone();
        program.issued_to = GrantWriter::Program("0123456789abcdef".into());
        assert_eq!(program.check(&target(&program), now), Ok(()));
        let mut t = target(&program);
        t.writer = GrantWriter::Program("0123456789abcdee".into());
        assert_eq!(program.check(&t, now), Err(GrantError::OtherWriter), "another token of the Agent");
        // A personal secret: the writer's key must be bound.
        let mut personal = c.clone();
        let (k1, k2) = (Sha256Hex::of(b"k1"), Sha256Hex::of(b"k2"));
        personal.owner_keys = Some(vec![k1.clone()]);
        let mut t = target(&personal);
        t.writer_key = Some(&k1);
        assert_eq!(personal.check(&t, now), Ok(()));
        t.writer_key = Some(&k2);
        assert_eq!(personal.check(&t, now), Err(GrantError::KeyNotBound));
        assert_eq!(personal.check(&target(&personal), now), Err(GrantError::KeyNotBound), "no key at all");
        let mut t = target(&c);
        t.agent = AgentId::from_uuid(Uuid::from_u128(9));
        assert_eq!(c.check(&t, now), Err(GrantError::Mismatch("Agent")));
        // A grant that claims a longer life than the API ever gives.
        let mut long = c.clone();
        long.expires_at += 3600;
        assert_eq!(long.check(&target(&long), now), Err(GrantError::NotYetValid));
    }
}
