//! Access records reported by Agents: what a sync's records do to the
//! API's log, decided here, applied by the store in one
//! transaction.
//!
//! An Agent numbers its reads 1, 2, 3… within an *epoch*: a random id its
//! store makes when its numbering starts (a new store, or a store that
//! found out it was restored from a backup). The API keys records by
//! (Agent, epoch, seq), so:
//!
//! - a record already held with the same content is a repeat (a sync
//!   retried): nothing happens;
//! - a record at a held (Agent, epoch, seq) with *other* content is kept as
//!   well, and raises `secret.record_conflict` (a store restored from a
//!   backup numbers new reads with numbers already used): never dropped;
//! - a number past the highest held + 1 raises `secret.read_not_reported`
//!   for the gap;
//! - an epoch the API has not seen for an Agent that had one raises
//!   `secret.sequence_restarted`: its numbering started over, and what the
//!   old store held but never reported is gone with it;
//! - records sent after a number the API no longer holds (its own database
//!   was restored from a backup) are not taken: the answer says how far it
//!   holds, and the Agent sends again from there, so the reads the restore
//!   lost come back and no gap is raised for them.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::audit::AuditAction;
use crate::ids::AgentId;

/// One read an Agent served, as it recorded it before serving. `seq` is the
/// Agent's own gap-free sequence number (from 1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessRecord {
    pub seq: i64,
    /// Who read (an email, or a program token's name).
    pub accessor: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
    /// The secret's name.
    pub secret: String,
    /// The environment's id (as the Agent's store keys it) or name; the
    /// API records the name.
    pub environment: String,
    pub version: i64,
    /// The reader's source address.
    pub from: String,
}

/// One line of a secret's access log: the reads of one accessor, of one
/// version, served by one Agent to one address within one second.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessLogEntry {
    /// The second the reads happened in.
    #[serde(with = "time::serde::rfc3339")]
    pub accessed_at: time::OffsetDateTime,
    pub accessor: String,
    pub environment: String,
    pub version: i64,
    /// The Agent's name.
    pub served_by: String,
    /// The Agent, by id (two Agents can have had one name).
    pub served_by_id: AgentId,
    pub from: String,
    pub reads: u64,
}

/// Where the next page of an access log starts: after this entry, in the
/// log's order (newest second first, then every other column descending,
/// so that one row comparison finds the place). Sent as an opaque token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessLogCursor {
    pub second: i64,
    pub accessor: String,
    pub environment: String,
    pub version: i64,
    pub agent: AgentId,
    pub from: String,
}

impl AccessLogCursor {
    /// The cursor after `entry`.
    pub fn after(entry: &AccessLogEntry) -> Self {
        Self {
            second: entry.accessed_at.unix_timestamp(),
            accessor: entry.accessor.clone(),
            environment: entry.environment.clone(),
            version: entry.version,
            agent: entry.served_by_id,
            from: entry.from.clone(),
        }
    }
}

/// What one page of a secret's access log holds: reads in `environments`
/// only (those the caller may see), none of the `(environment, version)`
/// pairs in `namesakes` (another secret's of the same name), after
/// `after`, at most `limit`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessLogPage {
    pub environments: Vec<String>,
    pub namesakes: Vec<(String, i64)>,
    pub after: Option<AccessLogCursor>,
    pub limit: u32,
}

/// The epoch of Agents (and stores) from before epochs existed.
pub const LEGACY_EPOCH: &str = "legacy";

/// The digest of a record stored before digests were: unknown, so any
/// content at its number is taken as a repeat (as it was then).
pub const UNKNOWN_DIGEST: &str = "";

/// What the API holds of one (Agent, epoch): the highest sequence number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpochState {
    pub epoch: String,
    pub last_seq: i64,
}

/// A sync's records, as an Agent reports them.
#[derive(Clone, Copy, Debug)]
pub struct Report<'a> {
    /// The epoch `records[].seq` count within.
    pub epoch: &'a str,
    /// The number the records follow: what the API last said it held
    /// (`None` from Agents that do not say).
    pub after: Option<i64>,
    pub records: &'a [AccessRecord],
}

/// What a sync's records do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IngestPlan {
    /// Records to store, each with its digest.
    pub inserts: Vec<(AccessRecord, String)>,
    /// Audit events to write with them, in the same transaction.
    pub events: Vec<AccessEvent>,
    /// The (Agent, epoch)'s highest sequence number afterwards.
    pub last_seq: i64,
    /// `true` when the epoch is new to the API (its state row is created).
    pub new_epoch: bool,
    /// Records already held with the same content.
    pub duplicates: usize,
    /// The Agent sent records after a number the API does not hold: it is
    /// to send again after `last_seq`.
    pub resend: bool,
}

/// An audit event a sync raises.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccessEvent {
    /// Numbers `from..=to` were skipped: reads served and not reported.
    Gap { epoch: String, from: i64, to: i64 },
    /// The Agent numbers from a new epoch; the old one ended at `previous_last`.
    Restarted { previous_epoch: String, previous_last: i64, epoch: String },
    /// A record at a number already held, with other content.
    Conflict { epoch: String, seq: i64 },
}

impl AccessEvent {
    /// The audit action.
    pub fn action(&self) -> AuditAction {
        match self {
            AccessEvent::Gap { .. } => AuditAction::SecretReadNotReported,
            AccessEvent::Restarted { .. } => AuditAction::SecretSequenceRestarted,
            AccessEvent::Conflict { .. } => AuditAction::SecretRecordConflict,
        }
    }

    /// The event's detail (names and numbers only).
    pub fn detail(&self, agent: &str) -> serde_json::Value {
        match self {
            AccessEvent::Gap { epoch, from, to } => {
                serde_json::json!({ "agent": agent, "epoch": epoch, "from_seq": from, "to_seq": to })
            }
            AccessEvent::Restarted { previous_epoch, previous_last, epoch } => serde_json::json!({
                "agent": agent, "previous_epoch": previous_epoch, "previous_last_seq": previous_last, "epoch": epoch,
            }),
            AccessEvent::Conflict { epoch, seq } => {
                serde_json::json!({ "agent": agent, "epoch": epoch, "seq": seq })
            }
        }
    }
}

/// The SHA-256 (hex) of a record's content: what tells a repeat from a
/// conflict. Length-prefixed fields, so no two records share a digest by
/// moving bytes between fields.
pub fn record_digest(record: &AccessRecord) -> String {
    let mut hash = Sha256::new();
    let at = record.at.unix_timestamp_nanos().to_string();
    let (seq, version) = (record.seq.to_string(), record.version.to_string());
    for field in [
        seq.as_str(),
        record.accessor.as_str(),
        at.as_str(),
        record.secret.as_str(),
        record.environment.as_str(),
        version.as_str(),
        record.from.as_str(),
    ] {
        hash.update((field.len() as u64).to_be_bytes());
        hash.update(field.as_bytes());
    }
    hex::encode(hash.finalize())
}

/// Plans a sync's records for one Agent reporting `epoch`.
///
/// `latest` is the Agent's most recent epoch the API holds (if any),
/// `this` the API's state for `epoch` (if it holds it), `after` the number
/// the Agent sends records after (what the API last told it it held;
/// `None` from Agents that do not say), and `held` the digests it already
/// holds at the sequence numbers of `records`.
pub fn ingest(
    latest: Option<&EpochState>,
    this: Option<&EpochState>,
    epoch: &str,
    after: Option<i64>,
    records: &[AccessRecord],
    held: &[(i64, String)],
) -> IngestPlan {
    let holds_through = this.map_or(0, |s| s.last_seq);
    if after.is_some_and(|after| after > holds_through) {
        return IngestPlan { last_seq: holds_through, resend: true, ..IngestPlan::default() };
    }
    let mut plan = IngestPlan { new_epoch: this.is_none(), ..IngestPlan::default() };
    if let (None, Some(previous)) = (this, latest) {
        if previous.epoch != epoch {
            plan.events.push(AccessEvent::Restarted {
                previous_epoch: previous.epoch.clone(),
                previous_last: previous.last_seq,
                epoch: epoch.to_owned(),
            });
        }
    }
    let mut last = this.map_or(0, |s| s.last_seq);
    let mut sorted: Vec<&AccessRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.seq);
    let mut seen: Vec<(i64, String)> = held.to_vec();
    for record in sorted {
        let digest = record_digest(record);
        let at_seq: Vec<&String> = seen.iter().filter(|(s, _)| *s == record.seq).map(|(_, d)| d).collect();
        if at_seq.iter().any(|d| **d == digest || d.as_str() == UNKNOWN_DIGEST) {
            plan.duplicates += 1;
            continue;
        }
        if !at_seq.is_empty() {
            plan.events.push(AccessEvent::Conflict { epoch: epoch.to_owned(), seq: record.seq });
        } else if record.seq > last + 1 {
            plan.events.push(AccessEvent::Gap {
                epoch: epoch.to_owned(),
                from: last + 1,
                to: record.seq - 1,
            });
        }
        last = last.max(record.seq);
        seen.push((record.seq, digest.clone()));
        plan.inserts.push((record.clone(), digest));
    }
    plan.last_seq = last;
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::OffsetDateTime;

    fn record(seq: i64, accessor: &str) -> AccessRecord {
        AccessRecord {
            seq,
            accessor: accessor.into(),
            at: OffsetDateTime::from_unix_timestamp(1_800_000_000 + seq).unwrap(),
            secret: "db".into(),
            environment: "dev".into(),
            version: 1,
            from: "10.0.0.1".into(),
        }
    }

    fn state(epoch: &str, last_seq: i64) -> EpochState {
        EpochState { epoch: epoch.into(), last_seq }
    }

    #[test]
    fn records_after_a_number_the_api_lost_are_sent_again_from_what_it_holds() {
        // The API acknowledged 1-5, then its database went back to 1-2.
        let plan =
            ingest(Some(&state("e1", 2)), Some(&state("e1", 2)), "e1", Some(5), &[record(6, "ana")], &[]);
        assert_eq!(plan, IngestPlan { last_seq: 2, resend: true, ..IngestPlan::default() }, "no gap raised");
        // The Agent sends from 3: taken, contiguous, no event.
        let again = ingest(
            Some(&state("e1", 2)),
            Some(&state("e1", 2)),
            "e1",
            Some(2),
            &[record(3, "ana"), record(4, "bo")],
            &[],
        );
        assert_eq!((again.inserts.len(), again.last_seq, again.resend), (2, 4, false));
        assert!(again.events.is_empty());
        // An epoch the restored API never saw: sent again from its first record.
        let lost = ingest(Some(&state("e1", 2)), None, "e2", Some(9), &[record(10, "ana")], &[]);
        assert_eq!((lost.last_seq, lost.resend, lost.new_epoch), (0, true, false));
        assert!(lost.events.is_empty(), "nothing raised until the records come");
    }

    #[test]
    fn repeats_are_dropped_and_gaps_raise_an_event() {
        let first = ingest(None, None, "e1", None, &[record(1, "ana"), record(2, "ana")], &[]);
        assert_eq!((first.inserts.len(), first.last_seq, first.new_epoch), (2, 2, true));
        assert!(first.events.is_empty(), "a brand-new Agent's first epoch is no restart");
        let held: Vec<(i64, String)> = first.inserts.iter().map(|(r, d)| (r.seq, d.clone())).collect();
        let again = ingest(
            Some(&state("e1", 2)),
            Some(&state("e1", 2)),
            "e1",
            None,
            &[record(2, "ana"), record(5, "bo")],
            &held[1..],
        );
        assert_eq!(again.duplicates, 1);
        assert_eq!(again.events, vec![AccessEvent::Gap { epoch: "e1".into(), from: 3, to: 4 }]);
        assert_eq!(again.last_seq, 5);
    }

    #[test]
    fn a_held_number_with_other_content_is_kept_and_raises_a_conflict() {
        let held = vec![(3, record_digest(&record(3, "ana")))];
        let plan =
            ingest(Some(&state("e1", 3)), Some(&state("e1", 3)), "e1", None, &[record(3, "mallory")], &held);
        assert_eq!(plan.inserts.len(), 1, "never dropped");
        assert_eq!(plan.events, vec![AccessEvent::Conflict { epoch: "e1".into(), seq: 3 }]);
        assert_eq!(plan.last_seq, 3);
        // Twice in one sync: the second is a repeat of the first.
        let plan = ingest(
            Some(&state("e1", 3)),
            Some(&state("e1", 3)),
            "e1",
            None,
            &[record(3, "m"), record(3, "m")],
            &held,
        );
        assert_eq!((plan.inserts.len(), plan.duplicates), (1, 1));
    }

    #[test]
    fn a_new_epoch_is_a_restart_even_without_records() {
        let plan = ingest(Some(&state("e1", 40)), None, "e2", None, &[], &[]);
        assert_eq!(
            plan.events,
            vec![AccessEvent::Restarted {
                previous_epoch: "e1".into(),
                previous_last: 40,
                epoch: "e2".into()
            }]
        );
        assert!(plan.new_epoch);
        // Its numbers start at 1 again: no gap from the old epoch's 40.
        let plan = ingest(Some(&state("e1", 40)), None, "e2", None, &[record(1, "ana")], &[]);
        assert_eq!(plan.events.len(), 1);
        assert_eq!(plan.last_seq, 1);
    }

    #[test]
    fn records_from_before_digests_stay_repeats() {
        let held = vec![(7, UNKNOWN_DIGEST.to_owned())];
        let plan = ingest(
            Some(&state(LEGACY_EPOCH, 7)),
            Some(&state(LEGACY_EPOCH, 7)),
            LEGACY_EPOCH,
            None,
            &[record(7, "x")],
            &held,
        );
        assert_eq!((plan.inserts.len(), plan.duplicates), (0, 1));
        assert!(plan.events.is_empty());
    }

    #[test]
    fn digests_bind_every_field() {
        let base = record(1, "ana");
        let mut moved = base.clone();
        moved.accessor = "an".into();
        moved.secret = "adb".into();
        assert_ne!(record_digest(&base), record_digest(&moved));
        assert_eq!(record_digest(&base), record_digest(&record(1, "ana")));
    }
}
