//! `heimdall.yaml`: what `heimdall run` gives a program. It names the
//! environment and the secrets, and the variable each becomes; it holds no
//! value, so it can go into the repository.
//!
//! ```yaml
//! environment: dev
//! secrets:
//!   DB_PASSWORD: db-password      # VARIABLE: secret
//! ```
//!
//! or, with each variable named after its secret in upper snake case
//! (`db-password` → `DB_PASSWORD`) unless `as` says otherwise:
//!
//! ```yaml
//! environment: dev
//! secrets:
//!   - db-password
//!   - name: stripe-key
//!     as: STRIPE_API_KEY
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::{CliError, Result};

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFile {
    /// The default for `--environment`.
    #[serde(default)]
    pub environment: Option<String>,
    /// An Agent's local API to ask instead of the URL it reported (only
    /// when one Agent holds the environment).
    #[serde(default)]
    pub agent_url: Option<String>,
    secrets: Secrets,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Secrets {
    ByVariable(BTreeMap<String, String>),
    Listed(Vec<Listed>),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Listed {
    Name(String),
    Named(Named),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Named {
    name: String,
    #[serde(rename = "as")]
    variable: Option<String>,
}

/// Most secrets one `heimdall run` reads (one request, one commit of records).
pub const MAX_SECRETS: usize = 99;

impl RunFile {
    /// Reads and parses `path` strictly: a duplicate key is an error.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::usage(format!(
                "cannot read {}: {e} (heimdall run reads ./heimdall.yaml, or --file FILE)",
                path.display()
            ))
        })?;
        Self::parse(&text).map_err(|why| CliError::usage(format!("{}: {why}", path.display())))
    }

    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let options =
            serde_saphyr::options! { duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::Error };
        serde_saphyr::from_str_with_options(text, options).map_err(|e| describe(e.without_snippet()))
    }

    /// (variable, secret) pairs in a stable order, checked: each variable
    /// a shell name used once, 1 to [`MAX_SECRETS`] of them.
    pub fn variables(&self) -> std::result::Result<Vec<(String, String)>, String> {
        let pairs: Vec<(String, String)> = match &self.secrets {
            Secrets::ByVariable(map) => map.iter().map(|(v, s)| (v.clone(), s.clone())).collect(),
            Secrets::Listed(list) => list
                .iter()
                .map(|entry| match entry {
                    Listed::Name(name) => (upper_snake(name), name.clone()),
                    Listed::Named(Named { name, variable }) => {
                        (variable.clone().unwrap_or_else(|| upper_snake(name)), name.clone())
                    }
                })
                .collect(),
        };
        if pairs.is_empty() || pairs.len() > MAX_SECRETS {
            return Err(format!("secrets: names 1 to {MAX_SECRETS} secrets"));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (variable, secret) in &pairs {
            if !is_variable_name(variable) {
                return Err(format!(
                    "{variable:?} (for {secret}) is not a variable name: letters, digits and _, not starting with a digit"
                ));
            }
            if !seen.insert(variable) {
                return Err(format!("{variable} is given twice"));
            }
        }
        Ok(pairs)
    }
}

/// A parse error in Heimdall's words: where (line and column), then what.
/// A duplicate key names the key (a key is a name, never a value); the
/// rest is the reader's message without values.
fn describe(e: &serde_saphyr::Error) -> String {
    let at = e
        .location()
        .filter(|l| l.line() > 0)
        .map_or_else(String::new, |l| format!("line {}, column {}: ", l.line(), l.column()));
    match e {
        serde_saphyr::Error::DuplicateMappingKey { key, .. } => {
            let key = key.as_deref().map_or_else(|| "a key".to_owned(), |k| format!("the key {k:?}"));
            format!("{at}{key} is given twice; give each key once")
        }
        other => {
            let message = without_values(&other.to_string());
            // The reader's own message may end with its position again.
            if at.is_empty() || message.contains(" line ") {
                message
            } else {
                format!("{at}{message}")
            }
        }
    }
}

/// A parse error as shown: no source lines, and every double-quoted
/// string (what serde quotes is a value: `invalid type: string "…"`)
/// replaced, so a value pasted into the file by mistake is not echoed.
fn without_values(message: &str) -> String {
    let mut parts = message.split('"');
    let mut out = parts.next().unwrap_or_default().to_owned();
    for (i, part) in parts.enumerate() {
        out.push_str(if i % 2 == 0 { "\"…" } else { "\"" });
        if i % 2 == 1 {
            out.push_str(part);
        }
    }
    out
}

/// `db-password` → `DB_PASSWORD`: letters upper-cased, anything else `_`.
pub fn upper_snake(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect()
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> std::result::Result<Vec<(String, String)>, String> {
        RunFile::parse(text)?.variables()
    }

    #[test]
    fn both_forms_name_variables() {
        let map = "environment: dev\nsecrets:\n  DB_PASSWORD: db-password\n  API_KEY: stripe-key\n";
        assert_eq!(
            pairs(map).unwrap(),
            [("API_KEY".into(), "stripe-key".into()), ("DB_PASSWORD".into(), "db-password".into())]
        );
        assert_eq!(RunFile::parse(map).unwrap().environment.as_deref(), Some("dev"));
        let list =
            "secrets:\n  - db-password\n  - name: stripe-key\n    as: STRIPE_API_KEY\n  - billing/token.v2\n";
        assert_eq!(
            pairs(list).unwrap(),
            [
                ("DB_PASSWORD".into(), "db-password".into()),
                ("STRIPE_API_KEY".into(), "stripe-key".into()),
                ("BILLING_TOKEN_V2".into(), "billing/token.v2".into())
            ]
        );
    }

    #[test]
    fn strict_parse_and_checked_names() {
        for (text, why) in [
            ("secrets:\n  A: x\n  A: y\n", "given twice"),
            ("environment: dev\nenvironment: prod\nsecrets: [x]\n", "given twice"),
            ("secrets: [x]\nvalue: hunter2\n", "unknown"),
            ("secrets:\n  - name: x\n    value: hunter2\n", ""),
        ] {
            let err = RunFile::parse(text).map(|_| ()).unwrap_err();
            assert!(err.to_lowercase().contains(why), "{text:?}: {err}");
            assert!(!err.contains("hunter2"), "an error never quotes a value: {err}");
        }
        // In Heimdall's words, with where: not the YAML library's hint.
        let err =
            RunFile::parse("environment: dev\nsecrets: [x]\nenvironment: prod\n").map(|_| ()).unwrap_err();
        assert_eq!(err, "line 3, column 1: the key \"environment\" is given twice; give each key once");
        let err = RunFile::parse("secrets: hunter2\n").map(|_| ()).unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
        assert_eq!(
            without_values(r#"invalid type: string "hunter2", expected a map"#),
            r#"invalid type: string "…", expected a map"#
        );
        assert!(pairs("secrets: []\n").unwrap_err().contains("1 to"));
        assert!(pairs("secrets:\n  1ABC: x\n").unwrap_err().contains("not a variable name"));
        assert!(pairs("secrets:\n  - db-password\n  - name: other\n    as: DB_PASSWORD\n")
            .unwrap_err()
            .contains("given twice"));
    }
}
