//! `heimdall-agent rekey --config agent.toml --new-master-key-file F`:
//! master-key rotation. Every data key in the store's keyring is opened
//! with the current master key and sealed again under the new one, one
//! entry at a time, each replaced only if it is still what was read
//! (compare and swap), so a run killed anywhere leaves each entry under
//! one key or the other, and the next run finishes the job. The data keys
//! themselves do not change, so no value is re-encrypted and a running
//! Agent keeps serving throughout. Once every entry opens with the new
//! key, `agent.toml` is made to name it (through `configure`); from then
//! on the old key opens nothing.

use std::path::{Path, PathBuf};

use crate::configure::{self, Settings};
use crate::crypto::{KeySealer, MasterKey};
use crate::store::{SealedStore, StoreError};

/// `heimdall-agent rekey`'s flags.
#[derive(Debug, clap::Args)]
pub struct RekeyArgs {
    #[arg(long, env = "HEIMDALL_AGENT_CONFIG")]
    pub config: PathBuf,
    /// The new master key: 32 bytes as 64 hex digits (as the current one).
    #[arg(long, value_name = "FILE")]
    pub new_master_key_file: PathBuf,
    #[arg(long)]
    pub json: bool,
}

/// What a run did.
#[derive(Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Rekeyed {
    /// Entries in the keyring.
    pub entries: usize,
    /// Sealed again by this run.
    pub resealed: usize,
    /// Already under the new key (an earlier run got that far).
    pub already: usize,
}

/// Seals every keyring entry of `rows` under `new`, opening each with
/// `old` unless `new` already opens it. An entry neither opens is an error
/// (nothing more is changed). `progress` hears each entry as it is done.
pub async fn reseal_all(
    rows: &dyn SealedStore,
    old: &dyn KeySealer,
    new: &MasterKey,
    mut progress: impl FnMut(usize, usize),
) -> Result<Rekeyed, StoreError> {
    let keyring = rows.data_keys().await?;
    let mut done = Rekeyed { entries: keyring.len(), ..Rekeyed::default() };
    for (i, sealed) in keyring.iter().enumerate() {
        if new.open_data_key(sealed).is_ok() {
            done.already += 1;
        } else {
            let key = old
                .unseal_data_key(sealed)
                .await
                .map_err(|_| StoreError::WrongMasterKey { key_id: sealed.key_id.clone() })?;
            let resealed = new.seal_data_key(&key).map_err(|e| StoreError::Open(e.to_string()))?;
            if !rows.replace_data_key(sealed, &resealed).await? {
                return Err(StoreError::Open(format!(
                    "keyring entry {} changed while it was being resealed (another rekey?); run rekey again",
                    sealed.key_id
                )));
            }
            done.resealed += 1;
        }
        progress(i + 1, keyring.len());
    }
    // Every entry, read back, opens with the new key.
    for sealed in rows.data_keys().await? {
        new.open_data_key(&sealed).map_err(|_| {
            StoreError::Open(format!(
                "data key {} does not open with the new key after resealing; agent.toml was not changed",
                sealed.key_id
            ))
        })?;
    }
    Ok(done)
}

/// The whole command: reseal, then name the new key in `config`.
pub fn main(config: &Path, new_key_file: &Path, json: bool) -> Result<(), String> {
    let new = MasterKey::from_file(new_key_file).map_err(|e| format!("--new-master-key-file: {e}"))?;
    let prepared = crate::runtime::prepare(config)?;
    let values =
        prepared.config.values.clone().ok_or("agent.toml has no [values]: there is nothing to rekey")?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| format!("cannot start the runtime: {e}"))?;
    let done = runtime.block_on(async {
        let old = crate::runtime::master_key(&values, prepared.into_master_key()).await?;
        let rows: Box<dyn SealedStore> = match (&values.sqlite_path, &values.postgres_url, &values.dynamodb_table) {
            (Some(path), _, _) => crate::store::sqlite::connect(path).await,
            (_, Some(url), _) => crate::store::postgres::connect(url).await,
            (_, _, Some(table)) => {
                let cfg = crate::store::dynamodb::DynamoConfig { table: table.clone(), aws: values.aws() };
                crate::store::dynamodb::connect(&cfg).await
            }
            (None, None, None) => return Err("[values] names no store".to_owned()),
        }
        .map_err(|e| format!("the value store cannot be opened: {e}"))?;
        let progress = |n, of| eprintln!("resealed {n} of {of} data keys");
        let done = reseal_all(rows.as_ref(), old.as_ref(), &new, progress).await.map_err(|e| match e {
            StoreError::WrongMasterKey { key_id } => format!(
                "data key {key_id} opens with neither the configured master key nor the new one; nothing more \
                 was changed"
            ),
            other => other.to_string(),
        })?;
        rows.close().await;
        Ok::<_, String>(done)
    })?;
    let absolute: PathBuf =
        new_key_file.canonicalize().map_err(|e| format!("{}: {e}", new_key_file.display()))?;
    let settings = Settings { master_key_file: Some(absolute.clone()), ..Settings::default() };
    configure::configure(config, &settings)?;
    if json {
        println!("{}", serde_json::json!({ "rekeyed": done, "master_key_file": absolute }));
    } else {
        println!(
            "✓ {} data keys now sealed under {} ({} resealed now, {} already); {} names it. \
             The old key opens nothing any more: restart the Agent, then retire the old key.",
            done.entries,
            absolute.display(),
            done.resealed,
            done.already,
            config.display()
        );
    }
    Ok(())
}
