//! The Agents that held each environment when the API last said so, per
//! profile (`profiles/<name>/holders.json`, 0600): with the API
//! unreachable, `secret get` goes straight to them, and says so. Only where
//! and who (each Agent's id, URL and certificate pins, as the API gave
//! them), never a value; the Agent still decides every read.

use std::collections::BTreeMap;
use std::path::Path;

use heimdall_core::wire::AgentLocation;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

const FILE_NAME: &str = "holders.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct Known {
    /// By environment, as it was named on the command line.
    environments: BTreeMap<String, Learned>,
}

/// What the API answered, and when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Learned {
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    pub holders: Vec<AgentLocation>,
}

/// Keeps what the API just answered for `environment`. Best effort: a
/// profile directory that cannot be written costs only the fallback.
pub fn remember(profile_dir: &Path, environment: &str, holders: &[AgentLocation], now: OffsetDateTime) {
    let mut known = read(profile_dir).unwrap_or_default();
    let learned = Learned { at: now, holders: holders.to_vec() };
    if known.environments.get(environment) == Some(&learned) {
        return;
    }
    known.environments.insert(environment.to_owned(), learned);
    if let Ok(bytes) = serde_json::to_vec_pretty(&known) {
        let _ = crate::config::write_private(profile_dir, &profile_dir.join(FILE_NAME), &bytes);
    }
}

/// What the API last answered for `environment`, if this profile asked.
pub fn recall(profile_dir: &Path, environment: &str) -> Option<Learned> {
    read(profile_dir)?.environments.remove(environment)
}

fn read(profile_dir: &Path) -> Option<Known> {
    serde_json::from_slice(&std::fs::read(profile_dir.join(FILE_NAME)).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_are_remembered_per_environment_in_a_private_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("profiles/dev");
        assert_eq!(recall(&profile, "dev"), None);
        let holder = AgentLocation {
            agent_id: heimdall_core::ids::AgentId::from_uuid(uuid::Uuid::new_v4()),
            agent: "dev".into(),
            url: Some("https://127.0.0.1:7482".into()),
            certificates: Some(vec!["ab".repeat(32)]),
        };
        let at = OffsetDateTime::UNIX_EPOCH;
        remember(&profile, "dev", std::slice::from_ref(&holder), at);
        remember(&profile, "prod", &[], at);
        assert_eq!(recall(&profile, "dev"), Some(Learned { at, holders: vec![holder] }));
        assert_eq!(recall(&profile, "prod").map(|l| l.holders.len()), Some(0));
        assert_eq!(recall(&profile, "staging"), None);
        let mode = std::fs::metadata(profile.join(FILE_NAME)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
