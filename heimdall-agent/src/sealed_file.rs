//! A file of the Agent's own, sealed under the value store's current data
//! key and bound to a purpose, an owner (this Agent's id) and a
//! generation: it opens as nothing else, on no other Agent, and not at all
//! once edited. The policy snapshot and the program tokens are kept this
//! way, so that someone who can write the disk but holds no master key can
//! change neither.
//!
//! Nor roll either back: each write takes the next generation, binds it
//! into the seal, and records it in the value store
//! ([`SealedFile::write`]); a file whose generation is below what the store
//! (or this process) has seen is one copied back, and is refused
//! ([`SealedFile::read`]), with an alert for the API. Which of the two
//! goes first is the file's [`Order`]: a crash between them must leave the
//! safe side.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use heimdall_core::ids::AgentId;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::alerts::Alerts;
use crate::files::FileError;
use crate::values::crypto::SealedValue;
use crate::values::store::ValueStoreError;
use crate::values::vault::Vault;

/// Why a sealed file was not written or not read. None of these carries
/// a byte of what the file holds.
#[derive(Debug, thiserror::Error)]
pub enum SealedFileError {
    #[error(transparent)]
    File(#[from] FileError),
    /// The value store (its generation record, its data keys) failed.
    #[error(transparent)]
    Store(#[from] ValueStoreError),
    #[error("{} is not a sealed file: {reason}", path.display())]
    NotSealed { path: PathBuf, reason: String },
    /// Opened, and what it holds is not what the file is for (or what
    /// was to be written could not be encoded).
    #[error("{}: {reason}", path.display())]
    Content { path: PathBuf, reason: String },
    /// Edited, another Agent's, or sealed under a key this store lacks.
    #[error("{} does not open with this Agent's keys (edited, or not this Agent's)", path.display())]
    DoesNotOpen { path: PathBuf },
    /// A copy put back: older than a generation already written.
    #[error(
        "{} is generation {generation}, older than generation {floor} already written: a copy put back (refused)",
        path.display()
    )]
    RolledBack { path: PathBuf, generation: u64, floor: u64 },
}

/// On disk: which data key sealed it, its generation, and the sealed bytes.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OnDisk {
    key_id: String,
    /// Absent in files from before generations (taken as 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    generation: Option<u64>,
    nonce: String,
    ciphertext: String,
}

/// What a write records first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// The store, then the file: a crash between leaves a file older than
    /// the store, refused. For a cache the next sync rewrites (the policy
    /// snapshot): a copy put back is never taken for the latest.
    StoreFirst,
    /// The file, then the store: a crash between leaves a file newer than
    /// the store, accepted. For a list nothing else rewrites (the program
    /// tokens, which the API's list of live tokens guards besides).
    FileFirst,
}

/// One of the Agent's sealed files.
#[derive(Debug)]
pub struct SealedFile {
    path: PathBuf,
    purpose: &'static str,
    agent: AgentId,
    vault: Arc<Vault>,
    /// The highest generation this process has seen (written, read, or
    /// found in the store): no file below it opens.
    floor: AtomicU64,
    alerts: Alerts,
    order: Order,
}

/// What the seal binds: the Agent, and the generation when there is one.
fn owner(agent: AgentId, generation: Option<u64>) -> String {
    match generation {
        Some(g) => format!("{agent}#{g}"),
        None => agent.to_string(),
    }
}

impl SealedFile {
    pub fn new(
        path: PathBuf,
        purpose: &'static str,
        agent: AgentId,
        vault: Arc<Vault>,
        alerts: Alerts,
        order: Order,
    ) -> Self {
        Self { path, purpose, agent, vault, floor: AtomicU64::new(0), alerts, order }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Raises the floor to what the value store recorded: call before the
    /// first [`Self::read`] of a process.
    pub async fn load_floor(&self) -> Result<(), SealedFileError> {
        let stored = self.vault.generation(self.agent, self.purpose).await?;
        self.floor.fetch_max(stored, Ordering::SeqCst);
        Ok(())
    }

    /// Seals `plaintext` as the next generation into the file (0600, a new
    /// file that replaces the old one whole) and records that generation in
    /// the value store, in the file's [`Order`].
    pub async fn write(&self, plaintext: &[u8]) -> Result<(), SealedFileError> {
        let stored = self.vault.generation(self.agent, self.purpose).await?;
        let on_file = self.generation_on_file().unwrap_or(0);
        let generation = self.floor.load(Ordering::SeqCst).max(stored).max(on_file) + 1;
        let record = || async { self.vault.advance_generation(self.agent, self.purpose, generation).await };
        if self.order == Order::StoreFirst {
            record().await?;
        }
        self.write_file(plaintext, generation)?;
        self.floor.fetch_max(generation, Ordering::SeqCst);
        if self.order == Order::FileFirst {
            record().await?;
        }
        Ok(())
    }

    fn write_file(&self, plaintext: &[u8], generation: u64) -> Result<(), SealedFileError> {
        let sealed = self.vault.seal_record(self.purpose, &owner(self.agent, Some(generation)), plaintext)?;
        let file = OnDisk {
            key_id: sealed.key_id,
            generation: Some(generation),
            nonce: BASE64.encode(&sealed.nonce),
            ciphertext: BASE64.encode(&sealed.ciphertext),
        };
        let bytes = serde_json::to_vec(&file).map_err(|e| self.content(e))?;
        let temporary = self.path.with_extension("sealed.new");
        let _ = std::fs::remove_file(&temporary);
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .map_err(FileError::on("create", &temporary))?;
        out.write_all(&bytes).and_then(|()| out.sync_all()).map_err(FileError::on("write", &temporary))?;
        std::fs::rename(&temporary, &self.path).map_err(FileError::on("replace", &self.path))?;
        Ok(())
    }

    /// A [`SealedFileError::Content`] of this file.
    pub fn content(&self, reason: impl std::fmt::Display) -> SealedFileError {
        SealedFileError::Content { path: self.path.clone(), reason: reason.to_string() }
    }

    /// The generation the file says it has, unverified (for the next write).
    fn generation_on_file(&self) -> Option<u64> {
        let bytes = std::fs::read(&self.path).ok()?;
        serde_json::from_slice::<OnDisk>(&bytes).ok()?.generation
    }

    /// What the file holds, opened; `None` without a file. A file that
    /// does not open (edited, another Agent's, another store's key) or
    /// that is older than the floor (copied back) is an error.
    pub fn read(&self) -> Result<Option<Zeroizing<Vec<u8>>>, SealedFileError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(FileError::on("read", &self.path)(e).into()),
        };
        let not_sealed = |reason: String| SealedFileError::NotSealed { path: self.path.clone(), reason };
        let file: OnDisk = serde_json::from_slice(&bytes).map_err(|e| not_sealed(e.to_string()))?;
        let decode = |text: &str| BASE64.decode(text).map_err(|_| not_sealed("damaged".to_owned()));
        let sealed = SealedValue {
            key_id: file.key_id,
            nonce: decode(&file.nonce)?,
            ciphertext: decode(&file.ciphertext)?,
        };
        let plaintext = self
            .vault
            .open_record(self.purpose, &owner(self.agent, file.generation), &sealed)
            .map_err(|_| SealedFileError::DoesNotOpen { path: self.path.clone() })?;
        let generation = file.generation.unwrap_or(0);
        let floor = self.floor.load(Ordering::SeqCst);
        if generation < floor {
            tracing::error!(
                file = %self.path.display(), generation, seen = floor,
                "a sealed file older than one already written: copied back from a backup? refused"
            );
            self.alerts.raise(heimdall_wire::AgentAlert::SealedFileRolledBack {
                file: self.purpose.to_owned(),
                generation,
                expected_at_least: floor,
            });
            return Err(SealedFileError::RolledBack { path: self.path.clone(), generation, floor });
        }
        self.floor.fetch_max(generation, Ordering::SeqCst);
        Ok(Some(plaintext))
    }

    /// Removes the file (its generation stays recorded).
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
