//! Group commit for access records. Every read waits until its record is
//! durable; reads that arrive while a commit is in flight are written
//! together in the next one, so the store pays one fsync (SQLite) or one
//! commit (PostgreSQL, DynamoDB) for many reads instead of one each.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::metrics::Metrics;
use crate::values::store::{ServedRead, ValueStoreError, Vault};

/// Most records in one commit (DynamoDB transactions take 100 items, one
/// of which is the counter).
pub const MAX_BATCH: usize = 99;

/// Records committed together (never split across commits), and who waits
/// for the first one's sequence number.
type Pending = (Vec<ServedRead>, oneshot::Sender<Result<u64, ValueStoreError>>);

/// A handle to the committing task; cheap to clone.
#[derive(Clone, Debug)]
pub struct Recorder {
    queue: mpsc::Sender<Pending>,
}

impl Recorder {
    /// Starts the committing task on the current runtime. It ends when
    /// every `Recorder` handle is dropped.
    pub fn start(store: Arc<Vault>, metrics: Option<Arc<Metrics>>) -> Self {
        let (queue, rx) = mpsc::channel(4 * MAX_BATCH);
        tokio::spawn(commit_loop(store, rx, metrics));
        Self { queue }
    }

    /// Returns once `record` is durable, with its sequence number; an error
    /// means it was not written and the read must not be served.
    pub async fn record(&self, record: ServedRead) -> Result<u64, ValueStoreError> {
        self.record_all(vec![record]).await
    }

    /// Returns once all of `records` (1 to [`MAX_BATCH`]) are durable, in
    /// one commit: all of them or none. The first one's sequence number;
    /// the others follow it.
    pub async fn record_all(&self, records: Vec<ServedRead>) -> Result<u64, ValueStoreError> {
        if records.is_empty() || records.len() > MAX_BATCH {
            return Err(ValueStoreError::Invalid(format!(
                "one commit holds 1 to {MAX_BATCH} access records"
            )));
        }
        let (done, wait) = oneshot::channel();
        let stopped = || ValueStoreError::Unavailable("the access recorder stopped".into());
        self.queue.send((records, done)).await.map_err(|_| stopped())?;
        wait.await.map_err(|_| stopped())?
    }
}

async fn commit_loop(store: Arc<Vault>, mut rx: mpsc::Receiver<Pending>, metrics: Option<Arc<Metrics>>) {
    // A group that did not fit in the last commit opens the next one.
    let mut carried: Option<Pending> = None;
    loop {
        let (mut records, first_done) = match carried.take() {
            Some(pending) => pending,
            None => match rx.recv().await {
                Some(pending) => pending,
                None => return,
            },
        };
        // Who waits, and where their group starts in this commit.
        let mut waiting = vec![(first_done, 0_u64)];
        while records.len() < MAX_BATCH {
            let Ok((group, done)) = rx.try_recv() else { break };
            if records.len() + group.len() > MAX_BATCH {
                carried = Some((group, done));
                break;
            }
            waiting.push((done, records.len() as u64));
            records.extend(group);
        }
        let began = std::time::Instant::now();
        let committed = store.append_access_records(&records).await;
        if let Some(metrics) = &metrics {
            metrics.committed(records.len(), began.elapsed().as_secs_f64());
        }
        if let Err(e) = &committed {
            tracing::error!(error = %e, records = records.len(), "access records could not be written; refusing those reads");
        }
        for (done, offset) in waiting {
            let _ = done.send(committed.clone().map(|first| first + offset));
        }
    }
}
