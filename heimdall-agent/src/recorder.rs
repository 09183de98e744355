//! Group commit for access records. Every read waits until its record is
//! durable; reads that arrive while a commit is in flight are written
//! together in the next one, so the store pays one fsync (SQLite) or one
//! commit (PostgreSQL, DynamoDB) for many reads instead of one each.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::store::{ServedRead, StoreError, Vault};

/// Most records in one commit (DynamoDB transactions take 100 items, one
/// of which is the counter).
pub const MAX_BATCH: usize = 99;

type Pending = (ServedRead, oneshot::Sender<Result<u64, StoreError>>);

/// A handle to the committing task; cheap to clone.
#[derive(Clone, Debug)]
pub struct Recorder {
    queue: mpsc::Sender<Pending>,
}

impl Recorder {
    /// Starts the committing task on the current runtime. It ends when
    /// every `Recorder` handle is dropped.
    pub fn start(store: Arc<Vault>) -> Self {
        let (queue, rx) = mpsc::channel(4 * MAX_BATCH);
        tokio::spawn(commit_loop(store, rx));
        Self { queue }
    }

    /// Returns once `record` is durable, with its sequence number; an error
    /// means it was not written and the read must not be served.
    pub async fn record(&self, record: ServedRead) -> Result<u64, StoreError> {
        let (done, wait) = oneshot::channel();
        let stopped = || StoreError::Unavailable("the access recorder stopped".into());
        self.queue.send((record, done)).await.map_err(|_| stopped())?;
        wait.await.map_err(|_| stopped())?
    }
}

async fn commit_loop(store: Arc<Vault>, mut rx: mpsc::Receiver<Pending>) {
    let mut records: Vec<ServedRead> = Vec::with_capacity(MAX_BATCH);
    let mut waiting = Vec::with_capacity(MAX_BATCH);
    while let Some((record, done)) = rx.recv().await {
        records.push(record);
        waiting.push(done);
        while records.len() < MAX_BATCH {
            let Ok((record, done)) = rx.try_recv() else { break };
            records.push(record);
            waiting.push(done);
        }
        let committed = store.append_access_records(&records).await;
        if let Err(e) = &committed {
            tracing::error!(error = %e, records = records.len(), "access records could not be written; refusing those reads");
        }
        for (done, seq) in waiting.drain(..).zip(0..) {
            let _ = done.send(committed.clone().map(|first| first + seq));
        }
        records.clear();
    }
}
