//! The last policy snapshot, kept on disk sealed under the value store's
//! current data key, so that an Agent restarted while the API is
//! unreachable keeps deciding with what it last received: for the rest of
//! [`crate::access::MAX_POLICY_AGE`] counted from when that arrived, not
//! from the restart. Sealing authenticates it too: a file edited by someone
//! who can write the disk but has no master key (a certificate pin added, a
//! policy dropped) does not open, nor does one copied back from before a
//! later write (a `forbid` since removed, a revoked certificate listed):
//! the Agent then decides nothing until its first sync
//! ([`crate::sealed_file`]).

use std::path::Path;
use std::sync::{Arc, Mutex};

use heimdall_core::ids::AgentId;
use heimdall_wire::SyncResponse;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::{Duration, OffsetDateTime};
use zeroize::Zeroizing;

use crate::alerts::Alerts;
use crate::sealed_file::{Order, SealedFile, SealedFileError};
use crate::values::vault::Vault;

/// The file's name, next to the Agent's certificate and key.
pub const FILE_NAME: &str = "policy-snapshot.sealed";
/// Bound into the seal: the file opens as nothing else.
const PURPOSE: &str = "policy-snapshot";
/// A snapshot whose content did not change is written again after this
/// long, so its date on disk trails the last sync by at most this much.
pub const REWRITE_AFTER: Duration = Duration::minutes(5);

/// What is sealed: the sync answer, and when this Agent received it.
#[derive(Serialize, Deserialize)]
struct Snapshot {
    #[serde(with = "time::serde::rfc3339")]
    received_at: OffsetDateTime,
    response: SyncResponse,
}

/// Where this Agent keeps its snapshot, and what it last wrote there.
#[derive(Debug)]
pub struct PolicyFile {
    /// Bound to this Agent's id (a file copied from another Agent does not
    /// open here) and to a generation (nor one copied back).
    file: SealedFile,
    /// The SHA-256 of the last content written, and when it was received.
    written: Mutex<Option<([u8; 32], OffsetDateTime)>>,
}

impl PolicyFile {
    pub fn new(dir: &Path, agent: AgentId, vault: Arc<Vault>, alerts: Alerts) -> Self {
        // A cache the next sync rewrites: a crash mid-write leaves it refused.
        let file = SealedFile::new(dir.join(FILE_NAME), PURPOSE, agent, vault, alerts, Order::StoreFirst);
        Self { file, written: Mutex::new(None) }
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Reads how far the file was written from the value store: a copy put
    /// back from before that does not open. Before the first [`Self::load`].
    pub async fn load_floor(&self) -> Result<(), SealedFileError> {
        self.file.load_floor().await
    }

    /// Keeps `response`, received at `received_at`, unless the same content
    /// was written less than [`REWRITE_AFTER`] before. Written to a new
    /// file (0600) that replaces the old one whole. Whether it wrote.
    pub async fn save(
        &self,
        response: &SyncResponse,
        received_at: OffsetDateTime,
    ) -> Result<bool, SealedFileError> {
        // The API's clock and how far it has this Agent's records change
        // every sync and decide nothing; transfers and erasures are done
        // now or planned again by the next sync, never from a kept copy.
        let content = SyncResponse {
            at: OffsetDateTime::UNIX_EPOCH,
            received_through: 0,
            transfers: Vec::new(),
            superseded: Vec::new(),
            ..response.clone()
        };
        // Nor does the CA's fresh statement of the certificates (it holds
        // an hour, and is kept with the rest when something else changes).
        let decides = SyncResponse { local_api_status: None, ..content.clone() };
        let json = Zeroizing::new(serde_json::to_vec(&decides).map_err(|e| self.file.content(e))?);
        let digest: [u8; 32] = Sha256::digest(json.as_slice()).into();
        {
            let written = self.written.lock().map_err(|_| self.file.content("its lock is poisoned"))?;
            if written.is_some_and(|(last, at)| last == digest && received_at - at < REWRITE_AFTER) {
                return Ok(false);
            }
        }
        let snapshot = Snapshot { received_at, response: content };
        let plaintext = Zeroizing::new(serde_json::to_vec(&snapshot).map_err(|e| self.file.content(e))?);
        self.file.write(&plaintext).await?;
        if let Ok(mut written) = self.written.lock() {
            *written = Some((digest, received_at));
        }
        Ok(true)
    }

    /// The snapshot on disk and when it was received; `None` without a
    /// file. A file that does not open (edited, another Agent's, another
    /// store's key) is an error, and nothing of it is used.
    pub fn load(&self) -> Result<Option<(SyncResponse, OffsetDateTime)>, SealedFileError> {
        let Some(plaintext) = self.file.read()? else {
            return Ok(None);
        };
        let snapshot: Snapshot = serde_json::from_slice(&plaintext).map_err(|e| self.file.content(e))?;
        Ok(Some((snapshot.response, snapshot.received_at)))
    }

    /// The API revoked this Agent: nothing of what it knew may outlive that.
    pub fn remove(&self) {
        self.file.remove();
        if let Ok(mut written) = self.written.lock() {
            *written = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::crypto::MasterKey;
    use base64::engine::general_purpose::STANDARD as BASE64;
    use base64::Engine;

    async fn vault(dir: &Path, key: &str) -> Arc<Vault> {
        let master = MasterKey::from_text(&key.repeat(32), "test").unwrap();
        Arc::new(crate::values::store::sqlite::open(&dir.join("values.db"), &master).await.unwrap())
    }

    fn response(through: i64) -> SyncResponse {
        serde_json::from_value(serde_json::json!({
            "org_id": uuid::Uuid::new_v4(), "at": "2026-12-01T00:00:00Z", "received_through": through,
            "members": [], "secrets": [], "environments": [], "catalog": [], "policies": [],
            "assignments": [], "deactivated": [],
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn a_snapshot_opens_only_as_it_was_sealed_by_this_agent() {
        let dir = tempfile::tempdir().unwrap();
        let (agent, other) =
            (AgentId::from_uuid(uuid::Uuid::new_v4()), AgentId::from_uuid(uuid::Uuid::new_v4()));
        let vault = vault(dir.path(), "5e").await;
        let alerts = Alerts::default();
        let file = PolicyFile::new(dir.path(), agent, vault.clone(), alerts.clone());
        file.load_floor().await.unwrap();
        assert_eq!(file.load().unwrap(), None, "no file yet");
        let at = OffsetDateTime::UNIX_EPOCH + Duration::days(20_000);
        let sent = response(7);
        assert!(file.save(&sent, at).await.unwrap());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(file.path()).unwrap().permissions().mode() & 0o777, 0o600);
        let (loaded, received_at) = file.load().unwrap().unwrap();
        assert_eq!((loaded.org_id, received_at), (sent.org_id, at), "its date is when it arrived");
        assert!(!std::fs::read_to_string(file.path()).unwrap().contains(&sent.org_id.to_string()));

        // The same content again: not rewritten until REWRITE_AFTER.
        assert!(!file.save(&response_like(&sent, 8), at + Duration::seconds(30)).await.unwrap());
        let first_copy = std::fs::read(file.path()).unwrap();
        assert!(file.save(&response_like(&sent, 9), at + REWRITE_AFTER).await.unwrap());

        // Copied back from before the last write: refused, here and in a
        // new process (the store keeps the generation), with an alert.
        std::fs::write(file.path(), &first_copy).unwrap();
        let refused = file.load().unwrap_err();
        assert!(matches!(refused, SealedFileError::RolledBack { .. }), "{refused}");
        assert!(refused.to_string().contains("copy put back"));
        let restarted = PolicyFile::new(dir.path(), agent, vault.clone(), Alerts::default());
        restarted.load_floor().await.unwrap();
        assert!(matches!(restarted.load(), Err(SealedFileError::RolledBack { .. })));
        assert_eq!(alerts.take().len(), 1);
        assert!(file.save(&response_like(&sent, 10), at + REWRITE_AFTER * 2).await.unwrap());
        assert!(restarted.load().is_ok(), "a newer file opens");

        // Another Agent's file, or one edited by a byte, does not open.
        let stranger = PolicyFile::new(dir.path(), other, vault, Alerts::default());
        assert!(stranger.load().is_err());
        let mut text: serde_json::Value =
            serde_json::from_slice(&std::fs::read(file.path()).unwrap()).unwrap();
        let mut sealed = BASE64.decode(text["ciphertext"].as_str().unwrap()).unwrap();
        sealed[0] ^= 1;
        text["ciphertext"] = BASE64.encode(&sealed).into();
        std::fs::write(file.path(), text.to_string()).unwrap();
        assert!(file.load().is_err());

        file.remove();
        assert_eq!(file.load().unwrap(), None);
    }

    fn response_like(sent: &SyncResponse, through: i64) -> SyncResponse {
        SyncResponse { received_through: through, ..sent.clone() }
    }
}
