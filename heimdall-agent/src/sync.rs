//! Sync: every `sync_seconds`, the Agent sends the access records the API
//! has not acknowledged and what its store holds (never a value), and
//! receives who may read what. Records were written durably before each
//! read was served; sync only reports them.

use std::time::Duration;

use heimdall_agent::store::{SqlValueStore, ValueStore};
use heimdall_core::wire::{AccessRecord, InventoryItem, SyncRequest};
use time::OffsetDateTime;
use tokio::sync::watch;

use crate::channel::Channel;

/// Records per sync request; a backlog goes over several requests.
const BATCH: u32 = 1000;

pub async fn run(
    store: std::sync::Arc<SqlValueStore>,
    channel: Channel,
    every: Duration,
    mut stop: watch::Receiver<bool>,
) {
    // The API tells us how far it has stored; start from the beginning (a
    // repeat is harmless: records are idempotent per sequence number).
    let mut acknowledged: u64 = 0;
    loop {
        match sync_once(&store, &channel, acknowledged).await {
            Ok(through) => acknowledged = through,
            Err(e) => tracing::warn!(error = %e, "sync failed; will retry"),
        }
        let stopping = tokio::select! {
            () = tokio::time::sleep(every) => false,
            r = stop.wait_for(|s| *s) => r.is_ok(),
        };
        if stopping {
            // One last report so nothing recorded waits for the next start.
            let _ = sync_once(&store, &channel, acknowledged).await;
            return;
        }
    }
}

async fn sync_once(store: &SqlValueStore, channel: &Channel, mut acknowledged: u64) -> Result<u64, String> {
    let inventory: Vec<InventoryItem> = store
        .inventory()
        .await
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|i| InventoryItem {
            secret: i.secret,
            environment: i.environment.to_string(),
            version: i64::from(i.version),
            deactivated: i.deactivated,
        })
        .collect();
    loop {
        let batch = store.access_records_after(acknowledged, BATCH).await.map_err(|e| e.to_string())?;
        let full = batch.len() == BATCH as usize;
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
        let response = channel
            .sync(&SyncRequest { records, inventory: inventory.clone() })
            .await
            .map_err(|e| e.to_string())?;
        acknowledged = acknowledged.max(u64::try_from(response.received_through).unwrap_or(0));
        if !full {
            return Ok(acknowledged);
        }
    }
}
