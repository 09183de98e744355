//! `config.toml`: profiles (API URL + token) and the current one.
//!
//! ```toml
//! current_profile = "dev"
//!
//! [profiles.dev]
//! api_url = "http://127.0.0.1:7480"
//! token = "hmd_…"
//! ```
//!
//! Architecture Invariant: the file is written whole (temp file + rename)
//! with mode 0600 in a 0700 directory, and no error or `Debug` output
//! shows a token, not even from a malformed file.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use heimdall_core::Redacted;
use serde::{Deserialize, Serialize};

use crate::error::{CliError, Result};

pub const CONFIG_FILE: &str = "config.toml";
pub const CONFIG_DIR_ENV: &str = "HEIMDALL_CONFIG_DIR";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_profile: Option<String>,
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub api_url: String,
    #[serde(with = "redacted_string")]
    pub token: Redacted<String>,
    /// The API's installation CA (PEM), when its HTTPS certificate is from
    /// it: the only CA trusted for this profile, and only for a server
    /// whose certificate names the API itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
}

impl fmt::Debug for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Profile")
            .field("api_url", &self.api_url)
            .field("token", &self.token)
            .field("ca", &self.ca.is_some())
            .finish()
    }
}

mod redacted_string {
    use heimdall_core::Redacted;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Redacted<String>, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(value.expose())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Redacted<String>, D::Error> {
        String::deserialize(deserializer).map(Redacted::new)
    }
}

/// `$HEIMDALL_CONFIG_DIR`, else the platform's config dir + `heimdall`
/// (`~/.config/heimdall` on Linux).
pub fn config_dir() -> Result<PathBuf> {
    config_dir_from(std::env::var_os(CONFIG_DIR_ENV))
}

fn config_dir_from(env: Option<std::ffi::OsString>) -> Result<PathBuf> {
    match env {
        Some(dir) if !dir.is_empty() => Ok(PathBuf::from(dir)),
        _ => dirs::config_dir().map(|dir| dir.join("heimdall")).ok_or_else(|| {
            CliError::local(format!("cannot tell where your config directory is; set {CONFIG_DIR_ENV}"))
        }),
    }
}

/// Profile names are TOML keys and appear in messages: keep them plain.
pub fn validate_profile_name(name: &str) -> Result<()> {
    // Also a directory name (the profile's client certificate): never `.` or `..`.
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    if ok {
        Ok(())
    } else {
        Err(CliError::usage(
            "a profile name is 1 to 63 characters: letters, digits, '-', '_' and '.'".to_owned(),
        ))
    }
}

impl Config {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(CONFIG_FILE)
    }

    /// Reads `dir/config.toml`; a missing file is an empty config.
    pub fn load(dir: &Path) -> Result<Self> {
        let path = Self::path(dir);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(err) => return Err(CliError::local(format!("cannot read {}: {err}", path.display()))),
        };
        toml::from_str(&text).map_err(|err| {
            // toml's Display quotes the offending line, which may be a
            // token; say only where and what.
            let at = err
                .span()
                .map(|span| {
                    let before = &text[..span.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    format!(" (line {line})")
                })
                .unwrap_or_default();
            CliError::local(format!("{} is not valid{at}: {}", path.display(), err.message()))
        })
    }

    /// Writes `dir/config.toml` whole, mode 0600, creating `dir` (0700).
    pub fn save(&self, dir: &Path) -> Result<PathBuf> {
        let path = Self::path(dir);
        let text = toml::to_string_pretty(self)
            .map_err(|err| CliError::local(format!("cannot write the config: {err}")))?;
        write_private(dir, &path, text.as_bytes())?;
        Ok(path)
    }

    /// The profile to use: `requested` if given, else the current one.
    pub fn profile(&self, requested: Option<&str>) -> Result<(&str, &Profile)> {
        let name = match requested.or(self.current_profile.as_deref()) {
            Some(name) => name,
            None => return Err(CliError::not_logged_in("not logged in")),
        };
        self.profiles
            .get_key_value(name)
            .map(|(name, profile)| (name.as_str(), profile))
            .ok_or_else(|| CliError::not_logged_in(format!("there is no profile named {name:?}")))
    }
}

/// Creates `dir` (0700) if needed, then writes `path` through a temp file
/// in the same directory, mode 0600, and renames it into place.
pub fn write_private(dir: &Path, path: &Path, contents: &[u8]) -> Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|err| CliError::local(format!("cannot create {}: {err}", dir.display())))?;
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let fail = |err: std::io::Error| CliError::local(format!("cannot write {}: {err}", path.display()));
    let _ = fs::remove_file(&tmp);
    let mut file =
        fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp).map_err(fail)?;
    let written = file.write_all(contents).and_then(|()| file.sync_all());
    drop(file);
    if let Err(err) = written.and_then(|()| fs::rename(&tmp, path)) {
        let _ = fs::remove_file(&tmp);
        return Err(fail(err));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn round_trip_with_private_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("nested").join("heimdall");
        assert!(Config::load(&dir).unwrap().profiles.is_empty(), "a missing file is an empty config");

        let mut config = Config::default();
        config.profiles.insert(
            "dev".into(),
            Profile {
                api_url: "http://127.0.0.1:7480".into(),
                token: Redacted::new("hmd_secret".into()),
                ca: None,
            },
        );
        config.profiles.insert(
            "prod".into(),
            Profile {
                api_url: "https://heimdall.example.com".into(),
                token: Redacted::new("hmd_other".into()),
                ca: None,
            },
        );
        config.current_profile = Some("dev".into());
        let path = config.save(&dir).unwrap();

        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);

        let loaded = Config::load(&dir).unwrap();
        let (name, profile) = loaded.profile(None).unwrap();
        assert_eq!(
            (name, profile.api_url.as_str(), profile.token.expose().as_str()),
            ("dev", "http://127.0.0.1:7480", "hmd_secret")
        );
        let (_, prod) = loaded.profile(Some("prod")).unwrap();
        assert_eq!(prod.token.expose(), "hmd_other");
        assert!(!format!("{loaded:?}").contains("hmd_"), "Debug shows no token");
        assert!(loaded.profile(Some("nope")).is_err());

        // Saving again replaces the file, still 0600.
        loaded.save(&dir).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("current_profile = \"dev\""), "{text}");
        assert!(text.contains("[profiles.dev]"), "{text}");
    }

    #[test]
    fn malformed_file_errors_do_not_echo_tokens() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(Config::path(tmp.path()), "[profiles.dev]\napi_url = \"x\"\ntoken = hmd_leaky\n").unwrap();
        let err = Config::load(tmp.path()).unwrap_err().to_string();
        assert!(!err.contains("hmd_leaky"), "{err}");
        assert!(err.contains("line 3"), "{err}");
    }

    #[test]
    fn config_dir_override() {
        let dir = config_dir_from(Some("/tmp/x".into())).unwrap();
        assert_eq!(dir, PathBuf::from("/tmp/x"));
        // Empty means unset.
        if let Ok(default) = config_dir_from(Some("".into())) {
            assert!(default.ends_with("heimdall"));
        }
    }

    #[test]
    fn profile_names() {
        assert!(validate_profile_name("dev").is_ok());
        assert!(validate_profile_name("prod-eu.1").is_ok());
        assert!(validate_profile_name("").is_err());
        assert!(validate_profile_name("a b").is_err());
        assert!(validate_profile_name("a]").is_err());
        assert!(validate_profile_name("..").is_err());
        assert!(validate_profile_name(".").is_err());
    }
}
