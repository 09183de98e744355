//! The approval lifecycle, as a pure state machine.
//!
//! ```text
//!  request ──(schema requires approval)──▶ Pending ──approve──▶ Approved ─▶ queue apply
//!     │                                     │  │
//!     └──(no approval needed)──▶ NotRequired ─▶ queue apply
//!                                           │  └──refuse──▶ Refused
//!                                           ├──a newer change──▶ Superseded
//!                                           └──older than APPROVAL_TTL──▶ Expired
//! ```
//!
//! The approver names the revision they read: approving anything but the
//! pending revision is `STALE_REVISION`, and so is acting on a request that
//! has expired. The requester can never decide their own request
//! (`SELF_APPROVAL`), whatever their role. Time is an argument.

use time::{Duration, OffsetDateTime};

use crate::error::{ApiError, ErrorCode};
use crate::infra::RevisionState;

/// A pending request older than this can no longer be approved: the
/// approver would be judging a request its author may have forgotten.
pub const APPROVAL_TTL: Duration = Duration::days(7);

/// A revision waiting for a decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingRequest {
    pub revision: i64,
    pub requested_by: String,
    pub requested_at: OffsetDateTime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Approve,
    Refuse,
}

/// The state a new revision starts in.
pub fn initial_state(requires_approval: bool) -> RevisionState {
    if requires_approval {
        RevisionState::PendingApproval
    } else {
        RevisionState::NotRequired
    }
}

/// Whether a request is still open at `now`.
pub fn is_expired(pending: &PendingRequest, now: OffsetDateTime) -> bool {
    now - pending.requested_at > APPROVAL_TTL
}

/// Checks a decision and returns the revision's next state.
pub fn decide(
    pending: Option<&PendingRequest>,
    approver: &str,
    named_revision: i64,
    verdict: Verdict,
    now: OffsetDateTime,
) -> Result<RevisionState, ApiError> {
    let Some(pending) = pending else {
        return Err(ApiError::new(
            ErrorCode::StaleRevision,
            format!("revision {named_revision} is not pending approval; nothing is waiting for a decision"),
        ));
    };
    if pending.revision != named_revision {
        return Err(ApiError::new(
            ErrorCode::StaleRevision,
            format!(
                "revision {named_revision} is not the pending one: revision {} is; read it and decide on that",
                pending.revision
            ),
        ));
    }
    if pending.requested_by == approver {
        return Err(ApiError::new(
            ErrorCode::SelfApproval,
            "you requested this change; someone else must decide on it",
        ));
    }
    if is_expired(pending, now) {
        return Err(ApiError::new(
            ErrorCode::StaleRevision,
            format!(
                "revision {named_revision} waited more than {} days and expired; request it again",
                APPROVAL_TTL.whole_days()
            ),
        ));
    }
    Ok(match verdict {
        Verdict::Approve => RevisionState::Approved,
        Verdict::Refuse => RevisionState::Refused,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    fn request(clock: &ManualClock, revision: i64) -> PendingRequest {
        PendingRequest { revision, requested_by: "ana@example.com".into(), requested_at: clock.now() }
    }

    #[test]
    fn lifecycle_with_a_fake_clock() {
        let clock = ManualClock::new(OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap());
        assert_eq!(initial_state(true), RevisionState::PendingApproval);
        assert_eq!(initial_state(false), RevisionState::NotRequired);

        let r1 = request(&clock, 1);
        clock.advance(Duration::hours(1));
        // The requester cannot decide, either way.
        for verdict in [Verdict::Approve, Verdict::Refuse] {
            let err = decide(Some(&r1), "ana@example.com", 1, verdict, clock.now()).unwrap_err();
            assert_eq!(err.code, ErrorCode::SelfApproval);
        }
        // Naming another revision is stale.
        let err = decide(Some(&r1), "bo@example.com", 2, Verdict::Approve, clock.now()).unwrap_err();
        assert_eq!(err.code, ErrorCode::StaleRevision);
        assert_eq!(
            decide(Some(&r1), "bo@example.com", 1, Verdict::Approve, clock.now()).unwrap(),
            RevisionState::Approved
        );
        assert_eq!(
            decide(Some(&r1), "bo@example.com", 1, Verdict::Refuse, clock.now()).unwrap(),
            RevisionState::Refused
        );

        // A change supersedes r1: approving r1 is now stale.
        let r2 = request(&clock, 2);
        let err = decide(Some(&r2), "bo@example.com", 1, Verdict::Approve, clock.now()).unwrap_err();
        assert_eq!(err.code, ErrorCode::StaleRevision);

        // Nothing pending.
        let err = decide(None, "bo@example.com", 2, Verdict::Approve, clock.now()).unwrap_err();
        assert_eq!(err.code, ErrorCode::StaleRevision);
    }

    #[test]
    fn requests_expire() {
        let clock = ManualClock::new(OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap());
        let r = request(&clock, 3);
        clock.advance(APPROVAL_TTL);
        assert!(!is_expired(&r, clock.now()));
        assert!(decide(Some(&r), "bo@example.com", 3, Verdict::Approve, clock.now()).is_ok());
        clock.advance(Duration::seconds(1));
        assert!(is_expired(&r, clock.now()));
        let err = decide(Some(&r), "bo@example.com", 3, Verdict::Approve, clock.now()).unwrap_err();
        assert_eq!(err.code, ErrorCode::StaleRevision);
        assert!(err.message.contains("expired"));
    }
}
