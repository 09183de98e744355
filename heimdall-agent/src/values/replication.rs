//! Fetching the current versions this Agent lacks from the other holders
//! of its environments (`heimdall_core::transfer`), never through the API.
//!
//! Each sync answer names what to fetch, from which holders, with the CA's
//! grant naming this Agent. This Agent calls each holder's local API in
//! turn with its own Agent certificate, trusting only a server whose
//! certificate names that holder's id and is one the API lists, and stores
//! what the first one answers. Nothing is stored half: a value is put whole
//! or not at all, and what failed is planned again by the next sync. A read
//! of a current version this Agent lacks fetches it first, if the last
//! answer planned it, rather than refusing at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use heimdall_core::ids::{CatalogId, OrgId};
use heimdall_sdk::{AgentClient, Identity, Timeouts};
use heimdall_wire::{SyncResponse, Transfer};

use crate::values::store::{ValueAddress, ValueStoreError};
use crate::values::vault::Vault;

/// A holder that does not answer quickly is skipped for the next one.
const TIMEOUTS: Timeouts = Timeouts { connect: Duration::from_secs(3), request: Duration::from_secs(10) };

/// How long a read waits for a current version this Agent lacks to be
/// fetched before it answers `VERSION_NOT_HELD` (the client then asks the
/// next holder).
pub const FETCH_ON_READ: Duration = Duration::from_secs(4);

/// Why a current version could not be fetched (the next sync plans it again).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("version {0} is out of range")]
    VersionOutOfRange(i64),
    #[error("no holder with a local API to fetch from")]
    NoSource,
    #[error("{agent}: {error}")]
    Holder { agent: String, error: heimdall_sdk::Error },
    #[error("{0} answered another secret or version")]
    OtherValue(String),
    #[error("storing it: {0}")]
    Store(ValueStoreError),
}

/// (secret, environment, version) of a planned transfer.
type Place = (String, CatalogId, i64);

/// What fetching needs: this Agent's identity and its store, and the
/// transfers the last sync answer planned that are not done yet.
pub struct Replication {
    identity: Identity,
    store: Arc<Vault>,
    pending: Mutex<HashMap<Place, (OrgId, Transfer)>>,
}

impl std::fmt::Debug for Replication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replication").finish_non_exhaustive()
    }
}

impl Replication {
    /// Fetching as `identity` (this Agent's, as on the channel) into `store`.
    pub fn new(identity: Identity, store: Arc<Vault>) -> Self {
        Self { identity, store, pending: Mutex::new(HashMap::new()) }
    }

    /// Fetches and stores every transfer of `response`; how many were stored.
    /// Those that fail stay pending until the next answer, for a read that
    /// asks for one ([`Replication::fetch_now`]).
    pub async fn fetch_all(&self, response: &SyncResponse) -> usize {
        {
            let mut pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            *pending = response
                .transfers
                .iter()
                .map(|t| ((t.secret.clone(), t.environment_id, t.version), (response.org_id, t.clone())))
                .collect();
        }
        let mut stored = 0;
        for transfer in &response.transfers {
            match self.fetch_one(response.org_id, transfer).await {
                Ok(()) => {
                    self.done(&(transfer.secret.clone(), transfer.environment_id, transfer.version));
                    stored += 1;
                }
                Err(e) => tracing::warn!(
                    secret = %transfer.secret,
                    version = transfer.version,
                    error = %e,
                    "could not fetch a current version from another holder; the next sync tries again"
                ),
            }
        }
        if stored > 0 {
            tracing::info!(stored, "fetched current versions from the other holders");
        }
        stored
    }

    /// A read asked for `version` of `secret` in `environment`, current and
    /// not held here: fetches it now if the last sync planned it, within
    /// [`FETCH_ON_READ`]. Whether it is stored here now.
    pub async fn fetch_now(&self, secret: &str, environment: CatalogId, version: i64) -> bool {
        let place = (secret.to_owned(), environment, version);
        let planned = {
            let pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            pending.get(&place).cloned()
        };
        let Some((org, transfer)) = planned else { return false };
        match tokio::time::timeout(FETCH_ON_READ, self.fetch_one(org, &transfer)).await {
            Ok(Ok(())) => {
                self.done(&place);
                tracing::info!(secret, version, "fetched a current version from another holder for a read");
                true
            }
            Ok(Err(e)) => {
                tracing::warn!(secret, version, error = %e, "could not fetch a current version for a read");
                false
            }
            Err(_) => {
                tracing::warn!(secret, version, "no holder handed over a current version in time for a read");
                false
            }
        }
    }

    fn done(&self, place: &Place) {
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(place);
    }

    async fn fetch_one(&self, org: OrgId, transfer: &Transfer) -> Result<(), FetchError> {
        let version =
            u32::try_from(transfer.version).map_err(|_| FetchError::VersionOutOfRange(transfer.version))?;
        let mut last = FetchError::NoSource;
        for source in &transfer.sources {
            let Some(url) = source.url.as_deref() else { continue };
            let client =
                AgentClient::new(url, &self.identity, source.agent_id, source.certificates.as_deref())
                    .and_then(|c| c.with_timeouts(TIMEOUTS))
                    .map_err(|error| FetchError::Holder { agent: source.agent.clone(), error })?;
            match client.fetch_transfer(&transfer.grant).await {
                Ok(answer) if answer.version == transfer.version && answer.name == transfer.secret => {
                    let at = ValueAddress {
                        org,
                        secret: transfer.secret.clone(),
                        environment: transfer.environment_id,
                        version,
                    };
                    return match self.store.put_value(&at, answer.value.expose().as_bytes()).await {
                        // Another Agent sharing this store put it first.
                        Ok(()) | Err(ValueStoreError::AlreadyExists { .. }) => Ok(()),
                        Err(e) => Err(FetchError::Store(e)),
                    };
                }
                Ok(_) => last = FetchError::OtherValue(source.agent.clone()),
                Err(error) => last = FetchError::Holder { agent: source.agent.clone(), error },
            }
        }
        Err(last)
    }
}
