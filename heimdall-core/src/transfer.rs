//! Agents fetch what they lack from each other, never through the API.
//!
//! A write can miss a holder (it was down), a program's write and a
//! rotation land on one Agent, and a newly assigned Agent holds nothing.
//! Each sync, the API compares what every holder of an environment
//! reported with the current versions ([`crate::current`]) and, for each
//! current version the syncing Agent lacks, plans a transfer: the holders
//! that have it, and a grant the CA signs naming exactly (organization,
//! secret, environment, version) and the destination Agent by id. The
//! destination calls a source's local API with its own Agent certificate;
//! the source checks the grant ([`TransferClaims::check`]: the caller's
//! URI SAN is the destination, the grant names this organization, is
//! fresh, and the version is not superseded there), records the transfer
//! as a read, and answers the value over that mutual TLS connection. The
//! API never sees a value: it only says who has what.
//!
//! Token: `ht1.<base64url(claims JSON)>.<base64url(signature)>`, signed over
//! [`TRANSFER_CONTEXT`] (`crate::signed`), so a write grant or any other
//! statement of the CA can never stand for a transfer grant.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::current::{Assigned, Held};
use crate::error::{ApiError, ErrorCode};
use crate::ids::{AgentId, CatalogId, OrgId};
use crate::lagging::Behind;

/// How long a transfer grant is good for: the next sync brings a new one.
pub const TRANSFER_TTL: Duration = Duration::minutes(2);

/// Domain separation for the CA's signature.
pub const TRANSFER_CONTEXT: &[u8] = b"heimdall/transfer-grant/v1\n";

const PREFIX: &str = "ht1.";

/// At most this many transfers in one sync answer: a large backfill
/// converges over a few syncs instead of one huge answer.
pub const MAX_TRANSFERS_PER_SYNC: usize = 100;

/// At most this many holders named as sources of one transfer.
pub const MAX_SOURCES: usize = 3;

/// What a transfer grant permits: `destination` may fetch one version of
/// one secret in one environment from any holder, until `expires_at`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferClaims {
    pub grant_id: Uuid,
    pub org: OrgId,
    /// The secret's name as stored (a personal secret's kept name).
    pub secret: String,
    pub environment_id: CatalogId,
    pub version: i64,
    /// The Agent that may fetch it: the caller's certificate must name it.
    pub destination: AgentId,
    pub issued_at: i64,
    pub expires_at: i64,
}

/// One transfer the API plans for the syncing Agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedTransfer {
    pub secret: String,
    pub environment: CatalogId,
    pub version: i64,
    /// Holders that have it, the first to ask first.
    pub sources: Vec<AgentId>,
}

/// Why a source refuses a transfer. Messages never quote token bytes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransferError {
    #[error("the transfer grant is malformed")]
    Malformed,
    #[error("the transfer grant's signature does not verify against the installation CA")]
    BadSignature,
    #[error("the transfer grant expired; the next sync brings a new one")]
    Expired,
    #[error("the transfer grant is not valid yet (check this machine's clock)")]
    NotYetValid,
    #[error("the transfer grant is for another Agent than the caller")]
    OtherDestination,
    #[error("the transfer grant is for another organization")]
    OtherOrganization,
    #[error("only an Agent's certificate may fetch a transfer")]
    NotAnAgent,
    #[error("version {version} is superseded here (current: {current}); it is not transferred")]
    Superseded { version: i64, current: i64 },
}

impl From<TransferError> for ApiError {
    fn from(e: TransferError) -> Self {
        let code = match e {
            TransferError::Superseded { .. } => ErrorCode::VersionNotHeld,
            TransferError::NotAnAgent => ErrorCode::Unauthenticated,
            _ => ErrorCode::GrantInvalid,
        };
        ApiError::new(code, e.to_string())
    }
}

/// What the source knows when it is asked.
#[derive(Clone, Copy, Debug)]
pub struct ServeCheck {
    pub org: OrgId,
    /// The Agent the caller's verified certificate names (`None`: a person's).
    pub caller: Option<AgentId>,
    /// The version the source's last sync named current there, if any.
    pub current: Option<i64>,
    /// The newest version the source holds there (it may be newer than
    /// the API knows: just written here).
    pub newest_held: Option<i64>,
}

impl TransferClaims {
    /// Claims for `version`, valid from `now` for [`TRANSFER_TTL`].
    pub fn new(
        grant_id: Uuid,
        org: OrgId,
        planned: &PlannedTransfer,
        destination: AgentId,
        now: OffsetDateTime,
    ) -> Self {
        Self {
            grant_id,
            org,
            secret: planned.secret.clone(),
            environment_id: planned.environment,
            version: planned.version,
            destination,
            issued_at: now.unix_timestamp(),
            expires_at: (now + TRANSFER_TTL).unix_timestamp(),
        }
    }

    /// Whether the source may serve this transfer to its caller at `now`
    /// (the signature is the adapter's to check first): the caller is the
    /// destination, by the id its certificate names; the organization is
    /// the source's; the grant is fresh (one minute of clock skew at the
    /// start); and the version is not older than the one the source knows
    /// is current nor than the newest it holds (a superseded value never
    /// moves, whatever the source's last sync said).
    pub fn check(&self, at: &ServeCheck, now: OffsetDateTime) -> Result<(), TransferError> {
        let caller = at.caller.ok_or(TransferError::NotAnAgent)?;
        if caller != self.destination {
            return Err(TransferError::OtherDestination);
        }
        if at.org != self.org {
            return Err(TransferError::OtherOrganization);
        }
        let now = now.unix_timestamp();
        if now >= self.expires_at {
            return Err(TransferError::Expired);
        }
        if now + 60 < self.issued_at || self.expires_at - self.issued_at > TRANSFER_TTL.whole_seconds() {
            return Err(TransferError::NotYetValid);
        }
        let newest = at.current.max(at.newest_held);
        if let Some(current) = newest.filter(|current| self.version < *current) {
            return Err(TransferError::Superseded { version: self.version, current });
        }
        Ok(())
    }
}

/// What `destination` lacks (its entries of [`lagging::behind`]), each
/// with the holders it may fetch it from: Agents assigned to that
/// environment that reported it (not as a tombstone), never the destination
/// itself, at most [`MAX_SOURCES`] of them, starting at a different one for
/// each transfer so that one holder down does not stall them all. At most
/// [`MAX_TRANSFERS_PER_SYNC`], in a stable order (secret, environment).
pub fn plan(
    destination: AgentId,
    behind: &[Behind],
    held: &[Held<'_>],
    assigned: &[Assigned],
) -> Vec<PlannedTransfer> {
    let places: BTreeSet<(AgentId, CatalogId)> = assigned.iter().map(|a| (a.agent, a.environment)).collect();
    let mut holders: BTreeMap<(&str, CatalogId, i64), BTreeSet<AgentId>> = BTreeMap::new();
    for h in held {
        if h.agent != destination && !h.deactivated && places.contains(&(h.agent, h.environment)) {
            holders.entry((h.secret, h.environment, h.version)).or_default().insert(h.agent);
        }
    }
    let mut planned = Vec::new();
    for (n, b) in behind.iter().filter(|b| b.agent == destination).enumerate() {
        if planned.len() == MAX_TRANSFERS_PER_SYNC {
            break;
        }
        let key = (b.secret.as_str(), b.environment, b.current);
        let Some(sources) = holders.get(&key).filter(|s| !s.is_empty()) else { continue };
        let sources: Vec<AgentId> = sources.iter().copied().collect();
        let start = n % sources.len();
        let sources =
            sources.iter().cycle().skip(start).take(sources.len().min(MAX_SOURCES)).copied().collect();
        planned.push(PlannedTransfer {
            secret: b.secret.clone(),
            environment: b.environment,
            version: b.current,
            sources,
        });
    }
    planned
}

/// A grant split into what was signed and the signature, claims decoded.
pub type ParsedTransfer = crate::signed::Parsed<TransferClaims>;

/// Serializes and signs `claims` with `sign` into a token.
pub fn encode<E>(
    claims: &TransferClaims,
    sign: impl FnOnce(&[u8]) -> Result<Vec<u8>, E>,
) -> Result<String, E> {
    crate::signed::encode(PREFIX, TRANSFER_CONTEXT, claims, sign)
}

/// Splits and decodes a token. The signature is *not* checked here.
pub fn parse(token: &str) -> Result<ParsedTransfer, TransferError> {
    crate::signed::parse(PREFIX, TRANSFER_CONTEXT, token).ok_or(TransferError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::current::CurrentVersion;

    fn id(n: u128) -> AgentId {
        AgentId::from_uuid(Uuid::from_u128(n))
    }

    #[test]
    fn an_agent_is_sent_what_it_lacks_from_the_holders_that_have_it() {
        let (me, a, b, stranger) = (id(1), id(2), id(3), id(4));
        let (prod, dev) =
            (CatalogId::from_uuid(Uuid::from_u128(10)), CatalogId::from_uuid(Uuid::from_u128(11)));
        let held = |agent, secret, version, deactivated| Held {
            agent,
            secret,
            environment: prod,
            version,
            deactivated,
            since: OffsetDateTime::UNIX_EPOCH,
        };
        let assigned: Vec<Assigned> = [me, a, b]
            .into_iter()
            .map(|agent| Assigned { agent, environment: prod, at: OffsetDateTime::UNIX_EPOCH })
            .collect();
        let plan = |me, current: &[CurrentVersion], held: &[Held<'_>], assigned: &[Assigned]| {
            plan(me, &crate::lagging::behind(current, held, assigned), held, assigned)
        };
        let current =
            |secret: &str, version| CurrentVersion { secret: secret.into(), environment: prod, version };
        let all = [
            held(me, "db", 1, false),
            held(a, "db", 2, false),
            held(b, "db", 2, false),
            held(a, "api", 1, false),
            held(me, "api", 1, false),
            held(stranger, "old", 1, false),
            held(a, "gone", 3, true),
            held(me, "off", 5, true),
            held(a, "off", 5, false),
        ];
        let planned = plan(
            me,
            &[current("db", 2), current("api", 1), current("old", 1), current("gone", 3), current("off", 5)],
            &all,
            &assigned,
        );
        // db v2 from a or b; api is held; old's only holder is not assigned; a tombstone is no
        // source; a version deactivated here is not fetched again.
        assert_eq!(planned.len(), 1, "{planned:?}");
        assert_eq!((planned[0].secret.as_str(), planned[0].version), ("db", 2));
        let mut sources = planned[0].sources.clone();
        sources.sort();
        assert_eq!(sources, vec![a, b]);
        // Not assigned to the environment: nothing is planned for it.
        let elsewhere = CurrentVersion { secret: "db".into(), environment: dev, version: 2 };
        assert!(plan(me, &[elsewhere], &all, &assigned).is_empty());
        // Bounded per sync.
        let many: Vec<String> = (0..MAX_TRANSFERS_PER_SYNC + 5).map(|n| format!("s{n}")).collect();
        let held_many: Vec<Held<'_>> = many.iter().map(|s| held(a, s, 1, false)).collect();
        let current_many: Vec<CurrentVersion> = many.iter().map(|s| current(s, 1)).collect();
        assert_eq!(plan(me, &current_many, &held_many, &assigned).len(), MAX_TRANSFERS_PER_SYNC);
    }

    #[test]
    fn a_source_serves_only_the_destination_named_with_a_fresh_grant_of_a_current_version() {
        let now = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let org = OrgId::from_uuid(Uuid::from_u128(7));
        let (dest, other) = (id(1), id(2));
        let planned = PlannedTransfer {
            secret: "db".into(),
            environment: CatalogId::from_uuid(Uuid::from_u128(10)),
            version: 3,
            sources: vec![other],
        };
        let claims = TransferClaims::new(Uuid::from_u128(9), org, &planned, dest, now);
        let at = |caller, current| ServeCheck { org, caller, current, newest_held: Some(3) };
        assert_eq!(claims.check(&at(Some(dest), Some(3)), now), Ok(()));
        assert_eq!(
            claims.check(&at(Some(dest), Some(2)), now),
            Ok(()),
            "newer than the source knows: it holds it"
        );
        assert_eq!(claims.check(&at(Some(dest), None), now), Ok(()));
        assert_eq!(claims.check(&at(Some(other), Some(3)), now), Err(TransferError::OtherDestination));
        assert_eq!(claims.check(&at(None, Some(3)), now), Err(TransferError::NotAnAgent));
        assert_eq!(
            claims.check(&at(Some(dest), Some(4)), now),
            Err(TransferError::Superseded { version: 3, current: 4 })
        );
        let newer_here = ServeCheck { org, caller: Some(dest), current: Some(3), newest_held: Some(5) };
        assert_eq!(
            claims.check(&newer_here, now),
            Err(TransferError::Superseded { version: 3, current: 5 }),
            "superseded here even before the API knows"
        );
        let elsewhere = ServeCheck {
            org: OrgId::from_uuid(Uuid::from_u128(8)),
            caller: Some(dest),
            current: None,
            newest_held: None,
        };
        assert_eq!(claims.check(&elsewhere, now), Err(TransferError::OtherOrganization));
        assert_eq!(claims.check(&at(Some(dest), None), now + TRANSFER_TTL), Err(TransferError::Expired));
        assert_eq!(
            claims.check(&at(Some(dest), None), now - Duration::minutes(5)),
            Err(TransferError::NotYetValid)
        );

        // The token round-trips, signed over its own context only.
        let token = encode(&claims, |m| Ok::<_, ()>(m.to_vec())).unwrap();
        let parsed = parse(&token).unwrap();
        assert_eq!(parsed.claims, claims);
        assert!(parsed.signed_message.starts_with(TRANSFER_CONTEXT));
        assert_eq!(
            parse("hg1.e30.AA").unwrap_err(),
            TransferError::Malformed,
            "a write grant is no transfer"
        );
    }
}
