//! How long an Agent keeps deciding with the policies it last received.
//! With the API unreachable, reads go on from the last sync's snapshot for
//! [`MAX_POLICY_AGE`], counted from when it arrived at the Agent (its own
//! clock, not the API's), then stop (`POLICY_STALE`) until a sync
//! succeeds: a member removed at the API is refused everywhere within it.

use time::{Duration, OffsetDateTime};

use crate::error::{ApiError, ErrorCode};

/// How long a snapshot decides after it arrived.
pub const MAX_POLICY_AGE: Duration = Duration::hours(24);

/// Refuses (`POLICY_STALE`) a decision at `now` with a snapshot that
/// arrived at `received_at`, once it is older than [`MAX_POLICY_AGE`].
pub fn check_fresh(received_at: OffsetDateTime, now: OffsetDateTime) -> Result<(), ApiError> {
    if now - received_at > MAX_POLICY_AGE {
        return Err(ApiError::new(
            ErrorCode::PolicyStale,
            format!(
                "this Agent has not synced with the API for more than {} hours; reads resume after the next sync",
                MAX_POLICY_AGE.whole_hours()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_decides_for_its_age_limit_and_not_a_second_more() {
        let arrived = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        assert!(check_fresh(arrived, arrived).is_ok());
        assert!(check_fresh(arrived, arrived + MAX_POLICY_AGE).is_ok());
        let stale = check_fresh(arrived, arrived + MAX_POLICY_AGE + Duration::seconds(1));
        assert_eq!(stale.err().map(|e| e.code), Some(ErrorCode::PolicyStale));
    }
}
