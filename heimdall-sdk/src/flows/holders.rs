//! The holders the API named last, for reads while it cannot be reached.

use std::path::{Path, PathBuf};

use heimdall_wire::AgentLocation;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The Agents the API last named for each environment, kept for when it
/// cannot be reached. Only where and who (ids, URLs, certificate pins),
/// never a value: the Agent still decides every read.
pub trait HolderMemory: Send + Sync {
    fn remember(&self, environment: &str, holders: &[AgentLocation], at: OffsetDateTime);
    fn recall(&self, environment: &str) -> Option<(OffsetDateTime, Vec<AgentLocation>)>;
}

/// A [`HolderMemory`] in one file (`holders.json`, 0600) of a directory (a
/// CLI profile's). Best effort: a directory that cannot be written costs
/// only the fallback.
#[derive(Clone, Debug)]
pub struct HoldersFile {
    dir: PathBuf,
}

const HOLDERS_FILE: &str = "holders.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct Known {
    /// By environment, as it was named when asked.
    environments: std::collections::BTreeMap<String, Learned>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Learned {
    #[serde(with = "time::serde::rfc3339")]
    at: OffsetDateTime,
    holders: Vec<AgentLocation>,
}

impl HoldersFile {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    fn read(&self) -> Option<Known> {
        serde_json::from_slice(&std::fs::read(self.dir.join(HOLDERS_FILE)).ok()?).ok()
    }
}

impl HolderMemory for HoldersFile {
    fn remember(&self, environment: &str, holders: &[AgentLocation], at: OffsetDateTime) {
        let mut known = self.read().unwrap_or_default();
        let learned = Learned { at, holders: holders.to_vec() };
        if known.environments.get(environment) == Some(&learned) {
            return;
        }
        known.environments.insert(environment.to_owned(), learned);
        if let Ok(bytes) = serde_json::to_vec_pretty(&known) {
            let _ = write_private(&self.dir, &bytes);
        }
    }

    fn recall(&self, environment: &str) -> Option<(OffsetDateTime, Vec<AgentLocation>)> {
        self.read()?.environments.remove(environment).map(|l| (l.at, l.holders))
    }
}

/// Writes `holders.json` in `dir` (made 0700) through a temporary file, 0600.
fn write_private(dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let tmp = dir.join(format!(".{HOLDERS_FILE}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, dir.join(HOLDERS_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_are_remembered_per_environment_in_a_private_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile_dir();
        let memory = HoldersFile::new(dir.join("profiles/dev"));
        assert_eq!(memory.recall("dev"), None);
        let holder = AgentLocation {
            agent_id: heimdall_core::ids::AgentId::from_uuid(uuid::Uuid::new_v4()),
            agent: "dev".into(),
            url: Some("https://127.0.0.1:7482".into()),
            certificates: Some(vec![heimdall_core::Sha256Hex::of(b"ab")]),
        };
        let at = OffsetDateTime::UNIX_EPOCH;
        memory.remember("dev", std::slice::from_ref(&holder), at);
        memory.remember("prod", &[], at);
        assert_eq!(memory.recall("dev"), Some((at, vec![holder])));
        assert_eq!(memory.recall("prod").map(|(_, h)| h.len()), Some(0));
        assert_eq!(memory.recall("staging"), None);
        let mode =
            std::fs::metadata(dir.join("profiles/dev").join(HOLDERS_FILE)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("heimdall-sdk-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
