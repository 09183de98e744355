//! The jobs this Agent completed, one small file each in its work
//! directory (`completed-<job id>.json`, mode 0600): the outputs it
//! reported, which hold no sensitive value (those are `<sensitive>`
//! already). A job the API hands out again after it completed here (its
//! database restored from a backup taken before the result arrived, or a
//! result that never reached it before the lease ran out) is answered with
//! the same result and not run a second time. Kept for [`KEPT_FOR`];
//! failed jobs are not kept: the API retries those on purpose.

use std::path::{Path, PathBuf};

use heimdall_core::ids::JobId;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// How long a completed job's result is kept. A restore from an older
/// backup runs such a job again.
pub const KEPT_FOR: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

const PREFIX: &str = "completed-";

/// A job this Agent completed, and what it reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Completed {
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    pub outputs: serde_json::Value,
}

/// The record kept under an Agent's work directory.
#[derive(Debug, Clone)]
pub struct CompletedJobs {
    dir: PathBuf,
}

impl CompletedJobs {
    pub fn new(work_dir: &Path) -> Self {
        CompletedJobs { dir: work_dir.to_path_buf() }
    }

    fn file(&self, job: JobId) -> PathBuf {
        self.dir.join(format!("{PREFIX}{job}.json"))
    }

    /// What this Agent reported when it completed `job`, if it did (a file
    /// it cannot read counts as none: the job then runs, as before).
    pub fn get(&self, job: JobId) -> Option<Completed> {
        let text = std::fs::read(self.file(job)).ok()?;
        serde_json::from_slice(&text)
            .inspect_err(
                |e| tracing::warn!(%job, error = %e, "a completed job's record does not parse; ignored"),
            )
            .ok()
    }

    /// Keeps `completed` for `job` (written whole, then renamed into
    /// place), and drops records older than [`KEPT_FOR`].
    pub fn record(&self, job: JobId, completed: &Completed) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let bytes = serde_json::to_vec(completed).map_err(std::io::Error::other)?;
        let (path, partial) = (self.file(job), self.dir.join(format!(".{PREFIX}{job}.partial")));
        let mut file =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&partial)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&partial, &path)?;
        self.prune();
        Ok(())
    }

    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|at| at.elapsed().is_ok_and(|age| age > KEPT_FOR));
            if old && entry.file_name().to_string_lossy().starts_with(PREFIX) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completed_job_is_read_back_and_others_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = CompletedJobs::new(dir.path());
        let (done, other) = (JobId::from_uuid(uuid::Uuid::new_v4()), JobId::from_uuid(uuid::Uuid::new_v4()));
        let at = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let completed = Completed { at, outputs: serde_json::json!({ "id": "x", "secret": "<sensitive>" }) };
        jobs.record(done, &completed).unwrap();
        assert_eq!(jobs.get(done), Some(completed));
        assert_eq!(jobs.get(other), None);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(jobs.file(done)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::write(jobs.file(other), "not json").unwrap();
        assert_eq!(jobs.get(other), None, "an unreadable record: the job runs");
    }
}
