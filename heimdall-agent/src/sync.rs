//! Sync: every `sync_seconds`, the Agent sends the access records the API
//! has not acknowledged and what its store holds (never a value), and
//! receives who may read what, which it applies: the policy snapshot the
//! local API decides with, and tombstones for deactivated versions.
//! Records were written durably before each read was served; sync only
//! reports them.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::access::{PolicySnapshot, SharedPolicy};
use crate::values::store::{ValueAddress, Vault};
use heimdall_core::clock::Clock;
use heimdall_core::ids::{AgentId, CatalogId};
use heimdall_wire::{AccessRecord, InventoryItem, SyncRequest, SyncResponse};
use time::OffsetDateTime;
use tokio::sync::watch;

use crate::channel::{Channel, ChannelError};
use heimdall_core::ErrorCode;

/// Records per sync request; a backlog goes over several requests.
const BATCH: u32 = 1000;

/// The least time between two syncs the local API asked for.
const ON_DEMAND_SPACING: Duration = Duration::from_secs(1);

/// What the sync loop works with.
#[derive(Clone, Debug)]
pub struct Syncer {
    pub store: Arc<Vault>,
    /// Snapshots are dated: a grant or policy is judged at the time it is used.
    pub clock: Arc<dyn Clock>,
    pub channel: Channel,
    pub policy: SharedPolicy,
    /// This Agent: it reports only the records it served itself, even
    /// when other Agents share its store.
    pub agent: AgentId,
    /// The local API's URL, reported to the API.
    pub local_url: Option<String>,
    /// The local API's certificate, renewed when the API stops listing it.
    pub local_cert: Option<Arc<crate::local_api::local_cert::LocalCertificate>>,
    /// Where each new snapshot is kept for a restart during an outage.
    pub policy_file: Option<Arc<crate::policy_file::PolicyFile>>,
    /// Program tokens: a revocation the API did not hear is told again.
    pub tokens: Option<Arc<crate::program_tokens::TokenFile>>,
    /// What this Agent found wrong on its side, for the API's audit feed.
    pub alerts: crate::alerts::Alerts,
    /// Fetches the current versions this Agent lacks from the other holders.
    pub replication: Option<Arc<crate::values::replication::Replication>>,
}

/// How far the API has this Agent's records (an epoch and a number in
/// it), and the API's time of the last answer applied here.
#[derive(Clone, Debug, Default)]
struct Cursor {
    epoch: String,
    acknowledged: u64,
    applied_through: Option<OffsetDateTime>,
    /// The secrets as last heard, for answers that carry only changes.
    secrets: Option<crate::known_secrets::KnownSecrets>,
}

/// Why a sync did not complete; the next one starts over.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The value store (its numbering, inventory or records) failed.
    #[error(transparent)]
    Store(#[from] crate::values::store::ValueStoreError),
    /// The API did not answer, or refused.
    #[error(transparent)]
    Channel(#[from] ChannelError),
    #[error(transparent)]
    Delta(#[from] crate::known_secrets::UnknownGeneration),
}

pub async fn run(syncer: Syncer, every: Duration, mut stop: watch::Receiver<bool>) {
    // The API tells us how far it has stored; start from the beginning of
    // the epoch (a repeat is harmless: the API drops records it holds).
    let mut cursor = Cursor::default();
    loop {
        let started = tokio::time::Instant::now();
        if let Err(e) = syncer.sync_once(&mut cursor).await {
            tracing::warn!(error = %e, "sync failed; will retry");
        }
        let stopping = tokio::select! {
            () = tokio::time::sleep(every) => false,
            // Asked for by the local API: at most one such sync a second,
            // however often it asks.
            () = async {
                syncer.policy.wanted().await;
                tokio::time::sleep_until(started + ON_DEMAND_SPACING).await;
            } => false,
            r = stop.wait_for(|s| *s) => r.is_ok(),
        };
        if stopping {
            // One last report so nothing recorded waits for the next start.
            let _ = syncer.sync_once(&mut cursor).await;
            return;
        }
    }
}

impl Syncer {
    async fn sync_once(&self, cursor: &mut Cursor) -> Result<(), SyncError> {
        let numbering = self.store.numbering(self.agent).await?;
        if cursor.epoch.is_empty() {
            // The first sync since start: from the beginning of the epoch.
            *cursor = Cursor { epoch: numbering.epoch.clone(), ..Cursor::default() };
        }
        if numbering.epoch == cursor.epoch && numbering.last_seq < cursor.acknowledged {
            // The store's numbering went back under us (restored from a
            // backup): report all of it again; the API keeps what differs.
            tracing::warn!(
                epoch = %cursor.epoch,
                store = numbering.last_seq,
                reported = cursor.acknowledged,
                "the store holds fewer access records than were reported; it was restored from a backup?"
            );
            cursor.acknowledged = 0;
        }
        let held = self.store.inventory().await?;
        // Rotation phases are this Agent's bookkeeping, not secrets: never
        // reported. Nor are versions erased by retention: nothing is held.
        let inventory: Vec<InventoryItem> = held
            .iter()
            .filter(|i| !i.secret.starts_with(heimdall_core::dbusers::PHASE_PREFIX) && !i.superseded)
            .map(|i| InventoryItem {
                secret: i.secret.clone(),
                environment: i.environment.to_string(),
                version: i64::from(i.version),
                deactivated: i.deactivated,
            })
            .collect();
        // Tokens revoked here that the API still lists as live.
        let revoked_program_tokens = match (&self.tokens, self.policy.current()) {
            (Some(tokens), Some(snapshot)) => match tokens.revoked_ids() {
                Ok(ids) => ids
                    .into_iter()
                    .filter(|id| snapshot.live_tokens().is_some_and(|live| live.contains(id)))
                    .collect(),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the program tokens to report revocations");
                    Vec::new()
                }
            },
            _ => Vec::new(),
        };
        let alerts = self.alerts.take();
        let sent = self.report(cursor, &held, inventory, revoked_program_tokens, alerts.clone()).await;
        if sent.is_err() {
            self.alerts.put_back(alerts);
        }
        sent
    }

    /// Sends what this Agent has to report (records, in batches) and
    /// applies the answer.
    async fn report(
        &self,
        cursor: &mut Cursor,
        held: &[crate::values::store::InventoryEntry],
        inventory: Vec<InventoryItem>,
        revoked_program_tokens: Vec<String>,
        alerts: Vec<heimdall_wire::AgentAlert>,
    ) -> Result<(), SyncError> {
        loop {
            // How far the store's numbering had gone before these records
            // were read: what the API can rightly hold of this epoch.
            let current = self.store.numbering(self.agent).await?;
            let batch = self
                .store
                .access_records_after(self.agent, &cursor.epoch, cursor.acknowledged, BATCH)
                .await?;
            let full = batch.len() == BATCH as usize;
            let sent_through = batch.last().map_or(cursor.acknowledged, |r| r.seq);
            let records = batch
                .into_iter()
                .map(|r| AccessRecord {
                    seq: i64::try_from(r.seq).unwrap_or(i64::MAX),
                    accessor: r.record.accessor,
                    at: OffsetDateTime::from_unix_timestamp_nanos(i128::from(r.record.at_micros) * 1000)
                        .unwrap_or(OffsetDateTime::UNIX_EPOCH),
                    secret: r.record.secret,
                    environment: r.record.environment.to_string(),
                    version: i64::from(r.record.version),
                    from: r.record.source,
                })
                .collect();
            let request = SyncRequest {
                epoch: Some(cursor.epoch.clone()),
                records_after: Some(i64::try_from(cursor.acknowledged).unwrap_or(i64::MAX)),
                records,
                inventory: inventory.clone(),
                local_url: self.local_url.clone(),
                revoked_program_tokens: revoked_program_tokens.clone(),
                alerts: alerts.clone(),
                // `held` was read after this answer was applied.
                applied_through: cursor.applied_through,
                secrets_known: crate::known_secrets::known_generation(cursor.secrets.as_ref()),
                current_omits_held: true,
            };
            let response = match self.channel.sync(&request).await {
                Ok(response) => response,
                Err(ChannelError::Api(e)) if e.code == ErrorCode::AgentRevoked => {
                    // The API stored what was sent; now it serves nothing, at once.
                    let newly = !self.policy.is_revoked();
                    if newly {
                        tracing::error!(
                            "the API revoked this Agent: it refuses every read and write from now on"
                        );
                    }
                    self.policy.revoke();
                    if let Some(file) = &self.policy_file {
                        file.remove();
                    }
                    cursor.acknowledged = cursor.acknowledged.max(sent_through);
                    if newly {
                        // Reads served while this sync was under way, before
                        // the revocation took hold: reported too.
                        continue;
                    }
                    return Err(ChannelError::Api(e).into());
                }
                Err(e) => return Err(e.into()),
            };
            let through = u64::try_from(response.received_through).unwrap_or(0);
            let answered = after_answer(
                cursor.acknowledged,
                (current.epoch == cursor.epoch).then_some(current.last_seq),
                sent_through,
                through,
            );
            cursor.acknowledged = answered.acknowledged;
            if answered.resend {
                // Its list of secrets may have gone back too: ask for all of it.
                cursor.secrets = None;
                // The API holds less than it acknowledged: its database was
                // restored from a backup. What it lost goes again, from here.
                tracing::warn!(
                    epoch = %cursor.epoch,
                    api = through,
                    "the API holds fewer of this Agent's access records than it acknowledged; sending them again"
                );
                continue;
            }
            if answered.restore {
                // The API holds numbers this store never reached in this
                // epoch: the store was restored from a backup. Its next
                // reads take a new epoch, so no number is used twice; the
                // reads numbered in the old one since go first.
                let fresh = self.store.restart_numbering(self.agent).await?;
                tracing::warn!(
                    old = %cursor.epoch,
                    new = %fresh.epoch,
                    api = through,
                    store = current.last_seq,
                    "the API holds access records past this store's: numbering restarts in a new epoch"
                );
                continue;
            }
            if full {
                continue;
            }
            if current.epoch != cursor.epoch {
                // An older epoch is reported to its end: on to the store's.
                cursor.epoch = current.epoch;
                cursor.acknowledged = 0;
                continue;
            }
            let response = crate::known_secrets::whole(&mut cursor.secrets, response)?;
            let response = whole_current(response, &inventory, self.agent);
            self.apply(&response, held).await;
            cursor.applied_through = Some(response.at);
            if let Some(replication) = &self.replication {
                let stored = replication.fetch_all(&response).await;
                // A full batch: there is more to fetch (a backfill), so the
                // next sync comes at once (spaced by ON_DEMAND_SPACING), not
                // a whole period later.
                if stored > 0 && response.transfers.len() >= heimdall_core::transfer::MAX_TRANSFERS_PER_SYNC {
                    self.policy.request_sync();
                }
            }
            if let Some(cert) = &self.local_cert {
                cert.check(response.local_api_certificates.as_deref(), &self.channel, self.clock.now()).await;
            }
            return Ok(());
        }
    }

    /// Takes the new policy snapshot and writes tombstones for versions
    /// deactivated since (or never held: a late write cannot revive them)
    /// and for those retention erases.
    async fn apply(&self, response: &SyncResponse, held: &[crate::values::store::InventoryEntry]) {
        let received_at = self.clock.now();
        match PolicySnapshot::new(response, received_at) {
            Ok(snapshot) => {
                self.policy.install(snapshot);
                if let Some(file) = &self.policy_file {
                    if let Err(e) = file.save(response, received_at).await {
                        let path = file.path().display();
                        tracing::warn!(error = %e, file = %path, "could not keep the policy snapshot on disk");
                    }
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "the API's policies do not compile here; keeping the previous ones")
            }
        }
        // A superseded tombstone still takes a deactivation's: the stronger word.
        let tombstoned: HashSet<(String, String, u32)> = held
            .iter()
            .filter(|e| e.deactivated && !e.superseded)
            .map(|e| (e.secret.clone(), e.environment.to_string(), e.version))
            .collect();
        // Deleted secrets: every value and tombstone goes; the next inventory says so.
        for name in &response.deleted_secrets {
            if !held.iter().any(|e| e.org == response.org_id && &e.secret == name) {
                continue;
            }
            match self.store.delete_secret(response.org_id, name).await {
                Ok(rows) => {
                    tracing::warn!(secret = %name, rows, "secret deleted: its values are gone from this store")
                }
                Err(e) => {
                    tracing::error!(error = %e, secret = %name, "could not delete a secret; will retry next sync")
                }
            }
        }
        // A secret deleted in one environment: what it holds of it there
        // goes, up to the deletion's version (a later one is a new write).
        for d in &response.deleted_in_environments {
            let through = d.through_version.and_then(|v| u32::try_from(v).ok());
            let covered = |e: &crate::values::store::InventoryEntry| {
                e.org == response.org_id
                    && e.secret == d.secret
                    && e.environment == d.environment
                    && through.is_none_or(|t| e.version <= t)
            };
            if !held.iter().any(covered) {
                continue;
            }
            match self.store.delete_in_environment(response.org_id, &d.secret, d.environment, through).await {
                Ok(rows) => {
                    tracing::warn!(secret = %d.secret, environment = %d.environment, rows, "secret deleted in an environment: its values there are gone")
                }
                Err(e) => {
                    tracing::error!(error = %e, secret = %d.secret, "could not delete a secret in an environment; will retry next sync")
                }
            }
        }
        // Environments it no longer holds: what it has there goes.
        for env in &response.released_environments {
            let mut secrets: Vec<&str> = held
                .iter()
                .filter(|e| e.org == response.org_id && e.environment == *env)
                .map(|e| e.secret.as_str())
                .collect();
            secrets.dedup();
            for secret in secrets {
                match self.store.delete_in_environment(response.org_id, secret, *env, None).await {
                    Ok(rows) => {
                        tracing::warn!(secret, environment = %env, rows, "unassigned: its values there are gone from this store")
                    }
                    Err(e) => {
                        tracing::error!(error = %e, secret, "could not delete an unassigned environment's values; will retry next sync")
                    }
                }
            }
        }
        // Tombstones only where this Agent holds the environment: elsewhere no
        // write can reach it, and one it was taken off keeps nothing.
        let mine: HashSet<CatalogId> = response
            .assignments
            .iter()
            .filter(|a| a.agent_id == self.agent)
            .map(|a| a.environment_id)
            .collect();
        for d in &response.deactivated {
            let Some(env) = response.environments.iter().find(|e| e.name == d.environment) else { continue };
            if !mine.contains(&env.id) {
                continue;
            }
            let Ok(version) = u32::try_from(d.version) else { continue };
            if tombstoned.contains(&(d.secret.clone(), env.id.to_string(), version)) {
                continue;
            }
            let at =
                ValueAddress { org: response.org_id, secret: d.secret.clone(), environment: env.id, version };
            match self.store.deactivate(&at).await {
                Ok(()) => {
                    tracing::warn!(secret = %d.secret, environment = %d.environment, version, "version deactivated: value replaced by a tombstone")
                }
                Err(e) => {
                    tracing::error!(error = %e, secret = %d.secret, "could not write a tombstone; will retry next sync")
                }
            }
        }
        self.erase_superseded(response, held).await;
    }

    /// Erases the values a newer current version replaced once their
    /// overlap is over (`heimdall_core::retention`, decided by the API):
    /// only values this Agent holds, in environments it holds.
    async fn erase_superseded(&self, response: &SyncResponse, held: &[crate::values::store::InventoryEntry]) {
        let mut erased = 0u64;
        // Values held (not tombstones), looked up: a store may hold tens of thousands.
        let values: HashSet<(&str, CatalogId, u32)> = held
            .iter()
            .filter(|e| e.org == response.org_id && !e.deactivated)
            .map(|e| (e.secret.as_str(), e.environment, e.version))
            .collect();
        // Only what the same answer shows a newer current version replaced.
        for gone in heimdall_core::retention::replaced(&response.current_versions, &response.superseded) {
            let Ok(version) = u32::try_from(gone.version) else { continue };
            if !values.contains(&(gone.secret.as_str(), gone.environment, version)) {
                continue;
            }
            let at = ValueAddress {
                org: response.org_id,
                secret: gone.secret.clone(),
                environment: gone.environment,
                version,
            };
            match self.store.erase(&at).await {
                Ok(true) => erased += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(error = %e, secret = %gone.secret, version, "could not erase a superseded version; will retry next sync")
                }
            }
        }
        if erased > 0 {
            tracing::info!(erased, "superseded versions erased from this store after their overlap");
        }
    }
}

/// The answer with the whole list of current versions: an answer that
/// lists only those differing from what this Agent reported (`inventory`,
/// sent with the request it answers) is completed from that report.
fn whole_current(mut response: SyncResponse, inventory: &[InventoryItem], agent: AgentId) -> SyncResponse {
    if !response.current_omits_held {
        return response;
    }
    let reported: Vec<heimdall_core::current_delta::Reported<'_>> =
        inventory.iter().filter_map(InventoryItem::reported).collect();
    let mine: Vec<CatalogId> =
        response.assignments.iter().filter(|a| a.agent_id == agent).map(|a| a.environment_id).collect();
    let answered = heimdall_core::current_delta::Answered {
        listed: std::mem::take(&mut response.current_versions),
        none: std::mem::take(&mut response.no_current),
    };
    response.current_versions = heimdall_core::current_delta::restored(&answered, &reported, &mine);
    response.current_omits_held = false;
    response
}

/// What one sync answer means for the cursor.
#[derive(Debug, PartialEq, Eq)]
struct Answered {
    /// How far the API now has this epoch's records.
    acknowledged: u64,
    /// The store was restored from a backup: its numbering must restart.
    restore: bool,
    /// The API was restored from a backup: send again after `acknowledged`.
    resend: bool,
}

/// The API answered that it holds this epoch's records through `through`,
/// after this Agent sent those after `acknowledged` up to `sent_through`.
/// `reached` is how far the store's numbering had gone in this epoch
/// before those records were read (`None`: the store numbers in another
/// epoch now, and this one is being reported to its end).
///
/// The API holding a number the store had not reached is a restore. That
/// is judged against `reached`, read before the records, never against the
/// numbering after the answer: a read served meanwhile would hide the
/// restore, and its record, numbered where the API already holds one,
/// would never be sent. After a restore, and while an older epoch is
/// reported, only what was sent counts as acknowledged, so that every read
/// numbered there since is still sent.
///
/// The API holding less than it had acknowledged is the API's restore: it
/// took nothing of this batch (`access::ingest`), and everything after what
/// it holds is sent again.
fn after_answer(acknowledged: u64, reached: Option<u64>, sent_through: u64, through: u64) -> Answered {
    let answered = |acknowledged, restore| Answered { acknowledged, restore, resend: false };
    match reached {
        Some(reached) if through > reached.max(sent_through) => {
            answered(acknowledged.max(sent_through), true)
        }
        _ if through < acknowledged => Answered { acknowledged: through, restore: false, resend: true },
        // The API holds nothing this store had not reached: it holds all of it.
        Some(_) => answered(acknowledged.max(through), false),
        None => answered(acknowledged.max(through.min(sent_through)), false),
    }
}

#[cfg(test)]
mod tests {
    use super::{after_answer, Answered};

    #[test]
    fn the_api_holding_what_the_store_had_reached_acknowledges_all_of_it() {
        // After a restart the Agent sends from 1; the API had all 5,000.
        assert_eq!(
            after_answer(0, Some(5000), 1000, 5000),
            Answered { acknowledged: 5000, restore: false, resend: false }
        );
        assert_eq!(
            after_answer(3, Some(7), 7, 7),
            Answered { acknowledged: 7, restore: false, resend: false }
        );
    }

    #[test]
    fn a_read_served_during_the_sync_does_not_hide_a_restore() {
        // Restored to 0; one read took 1 (sent); the API held 1 and 2 from
        // before the restore. A read served while the sync was under way
        // took 2, so the numbering after the answer is 2: not past the
        // API's 2. Judged by what the store had reached (1), it is a
        // restore, and only 1 is acknowledged: the new 2 is still sent.
        assert_eq!(
            after_answer(0, Some(1), 1, 2),
            Answered { acknowledged: 1, restore: true, resend: false }
        );
    }

    #[test]
    fn an_older_epoch_is_acknowledged_only_as_far_as_it_was_sent() {
        assert_eq!(after_answer(1, None, 3, 10), Answered { acknowledged: 3, restore: false, resend: false });
    }

    #[test]
    fn an_api_holding_less_than_it_acknowledged_gets_the_rest_again() {
        // Acknowledged through 9; the API's database went back to 4.
        assert_eq!(
            after_answer(9, Some(12), 9, 4),
            Answered { acknowledged: 4, restore: false, resend: true }
        );
        assert_eq!(after_answer(3, None, 3, 2), Answered { acknowledged: 2, restore: false, resend: true });
    }
}
