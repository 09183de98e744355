//! What a program client checks before it sends a program token to an
//! Agent: a statement, signed by the installation CA, of the Agent's
//! local-API certificates the API lists (none revoked) and until when it
//! holds. The API gives it to the Agent at each sync; the Agent shows it to
//! anyone (`GET /v1/certificate-status`); the client pins exactly those
//! certificates, as people's clients pin the API's holders list. So a
//! revoked local-API certificate (its key leaked) stops working for
//! programs once the statements that listed it expire: within
//! [`STATUS_TTL`], even while the API is unreachable to the program.

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use crate::ids::AgentId;

/// How long a statement holds: the longest a revoked certificate can still
/// be shown with a statement from before its revocation, and the longest
/// an Agent cut off from the API keeps serving programs.
pub const STATUS_TTL: Duration = Duration::hours(1);

/// Domain separation: this statement's signatures stand for nothing else.
pub const STATUS_CONTEXT: &[u8] = b"heimdall/local-api-certificates/v1\n";

const PREFIX: &str = "hc1.";

/// The statement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertificateStatus {
    pub agent: AgentId,
    /// SHA-256 (hex) of each of its local-API certificates the API lists.
    pub certificates: Vec<crate::Sha256Hex>,
    pub issued_at: i64,
    pub expires_at: i64,
}

/// Why a statement is not taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StatusError {
    #[error("the Agent's certificate statement is malformed")]
    Malformed,
    #[error("the Agent's certificate statement is not signed by the installation CA")]
    BadSignature,
    #[error("the certificate statement is another Agent's")]
    OtherAgent,
    #[error(
        "the Agent's certificate statement expired: it has not synced with the API lately, so its certificate \
         cannot be checked against the API's list"
    )]
    Expired,
    #[error("the Agent's certificate statement is not valid yet (check this machine's clock)")]
    NotYetValid,
}

impl CertificateStatus {
    /// A statement of `certificates` for `agent`, from `now` for [`STATUS_TTL`].
    pub fn new(agent: AgentId, certificates: Vec<crate::Sha256Hex>, now: OffsetDateTime) -> Self {
        Self {
            agent,
            certificates,
            issued_at: now.unix_timestamp(),
            expires_at: (now + STATUS_TTL).unix_timestamp(),
        }
    }

    /// For `agent`, current at `now` (one minute of clock skew tolerated at
    /// the start), and no longer-lived than [`STATUS_TTL`]. The signature
    /// is the adapter's to check first.
    pub fn check(&self, agent: AgentId, now: OffsetDateTime) -> Result<(), StatusError> {
        if self.agent != agent {
            return Err(StatusError::OtherAgent);
        }
        let now = now.unix_timestamp();
        if now >= self.expires_at {
            return Err(StatusError::Expired);
        }
        if now + 60 < self.issued_at || self.expires_at - self.issued_at > STATUS_TTL.whole_seconds() {
            return Err(StatusError::NotYetValid);
        }
        Ok(())
    }
}

/// Signs `status` with `sign` into a token.
pub fn encode<E>(
    status: &CertificateStatus,
    sign: impl FnOnce(&[u8]) -> Result<Vec<u8>, E>,
) -> Result<String, E> {
    crate::signed::encode(PREFIX, STATUS_CONTEXT, status, sign)
}

/// Decodes a token; the signature is not checked here.
pub fn parse(token: &str) -> Result<crate::signed::Parsed<CertificateStatus>, StatusError> {
    crate::signed::parse(PREFIX, STATUS_CONTEXT, token).ok_or(StatusError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_holds_for_its_agent_within_its_hour() {
        let agent = AgentId::from_uuid(uuid::Uuid::from_u128(1));
        let now = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let status = CertificateStatus::new(agent, vec![crate::Sha256Hex::of(b"ab")], now);
        assert_eq!(status.check(agent, now + Duration::minutes(59)), Ok(()));
        assert_eq!(status.check(agent, now + STATUS_TTL), Err(StatusError::Expired));
        assert_eq!(
            status.check(AgentId::from_uuid(uuid::Uuid::from_u128(2)), now),
            Err(StatusError::OtherAgent)
        );
        assert_eq!(status.check(agent, now - Duration::minutes(5)), Err(StatusError::NotYetValid));
        let long = CertificateStatus { expires_at: status.issued_at + 86_400, ..status.clone() };
        assert_eq!(long.check(agent, now), Err(StatusError::NotYetValid), "no longer-lived statement");
        let token = encode(&status, |m| Ok::<_, ()>(m.to_vec())).unwrap();
        let parsed = parse(&token).unwrap();
        assert_eq!(parsed.claims, status);
        assert!(parsed.signed_message.starts_with(STATUS_CONTEXT));
        assert_eq!(parse("hg1.e30.AA").unwrap_err(), StatusError::Malformed, "a grant is no statement");
    }
}
