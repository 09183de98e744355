//! `heimdall-agent rekey --config agent.toml --new-master-key-file F` (or
//! `--new-kms-key ARN`): master-key rotation, between key files and KMS
//! keys in any direction. Every data key in the store's keyring is opened
//! with the current master key and sealed again under the new one, one
//! entry at a time, each replaced only if it is still what was read
//! (compare and swap), so a run killed anywhere leaves each entry under
//! one key or the other, and the next run finishes the job. The data keys
//! themselves do not change, so no value is re-encrypted and a running
//! Agent keeps serving throughout. Once every entry opens with the new
//! key, `agent.toml` is made to name it (through `configure`); from then
//! on the old key opens nothing.

use std::path::PathBuf;

use crate::runtime::StartError;
use crate::setup::configure::{self, Settings};
use crate::setup::SetupError;
use crate::values::crypto::{KeyError, KeySealer, MasterKey};
use crate::values::store::{SealedStore, ValueStoreError};

/// `heimdall-agent rekey`'s flags.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("new_key").required(true).args(["new_master_key_file", "new_kms_key"])))]
pub struct RekeyArgs {
    #[arg(long, env = "HEIMDALL_AGENT_CONFIG")]
    pub config: PathBuf,
    /// The new master key: 32 bytes as 64 hex digits (as a key file is).
    #[arg(long, value_name = "FILE")]
    pub new_master_key_file: Option<PathBuf>,
    /// The new key is this AWS KMS key (id, ARN or alias): each data key is
    /// sealed with KMS `Encrypt`, bound to its id by the encryption context.
    #[arg(long, value_name = "KEY")]
    pub new_kms_key: Option<String>,
    /// With --new-kms-key: the key's region, written to `[values]` (else
    /// the one configured, else the AWS default chain).
    #[arg(long, requires = "new_kms_key")]
    pub aws_region: Option<String>,
    /// With --new-kms-key: KMS's endpoint (e.g. a VPC endpoint), written to `[values]`.
    #[arg(long, requires = "new_kms_key", value_name = "URL")]
    pub aws_endpoint_url: Option<String>,
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
    new: &dyn KeySealer,
    mut progress: impl FnMut(usize, usize),
) -> Result<Rekeyed, ValueStoreError> {
    let keyring = rows.data_keys().await?;
    let mut done = Rekeyed { entries: keyring.len(), ..Rekeyed::default() };
    for (i, sealed) in keyring.iter().enumerate() {
        if new.unseal_data_key(sealed).await.is_ok() {
            done.already += 1;
        } else {
            let key = old.unseal_data_key(sealed).await.map_err(|e| match e {
                crate::values::crypto::CryptoError::KmsUnavailable(why) => ValueStoreError::Open(why),
                _ => ValueStoreError::WrongMasterKey { key_id: sealed.key_id.clone() },
            })?;
            let resealed = new.seal_existing(&key).await.map_err(|e| ValueStoreError::Open(e.to_string()))?;
            if !rows.replace_data_key(sealed, &resealed).await? {
                return Err(ValueStoreError::Open(format!(
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
        new.unseal_data_key(&sealed).await.map_err(|_| {
            ValueStoreError::Open(format!(
                "data key {} does not open with the new key after resealing; agent.toml was not changed",
                sealed.key_id
            ))
        })?;
    }
    Ok(done)
}

/// The new key, as `rekey` was told it, and how `agent.toml` will name it.
enum NewKey {
    File(PathBuf),
    Kms { key: String, aws: crate::aws::AwsSettings },
}

impl NewKey {
    fn from_args(args: &RekeyArgs) -> Result<Self, SetupError> {
        match (&args.new_master_key_file, &args.new_kms_key) {
            (Some(file), None) => {
                let absolute = file.canonicalize().map_err(|e| {
                    let reason = e.to_string();
                    SetupError::NewKey {
                        flag: "--new-master-key-file",
                        source: KeyError::Unreadable { path: file.display().to_string(), reason },
                    }
                })?;
                Ok(NewKey::File(absolute))
            }
            (None, Some(key)) if !key.trim().is_empty() => Ok(NewKey::Kms {
                key: key.clone(),
                aws: crate::aws::AwsSettings {
                    region: args.aws_region.clone(),
                    endpoint_url: args.aws_endpoint_url.clone(),
                },
            }),
            _ => Err(SetupError::Usage(
                "name the new key: --new-master-key-file FILE or --new-kms-key KEY".into(),
            )),
        }
    }

    async fn open(&self, configured: &crate::config::ValuesConfig) -> Result<Box<dyn KeySealer>, SetupError> {
        match self {
            NewKey::File(path) => MasterKey::from_file(path)
                .map(|k| Box::new(k) as Box<dyn KeySealer>)
                .map_err(|source| SetupError::NewKey { flag: "--new-master-key-file", source }),
            NewKey::Kms { key, aws } => {
                let configured = configured.aws();
                let aws = crate::aws::AwsSettings {
                    region: aws.region.clone().or(configured.region),
                    endpoint_url: aws.endpoint_url.clone().or(configured.endpoint_url),
                };
                crate::values::kms::KmsKey::connect(key, &aws)
                    .await
                    .map(|k| Box::new(k) as Box<dyn KeySealer>)
                    .map_err(|source| SetupError::NewKey { flag: "--new-kms-key", source })
            }
        }
    }

    /// The settings that make `agent.toml` name this key (and only it).
    fn settings(&self, sealer: &dyn KeySealer) -> Settings {
        match self {
            NewKey::File(path) => Settings { master_key_file: Some(path.clone()), ..Settings::default() },
            NewKey::Kms { aws, .. } => Settings {
                // The ARN KMS resolved the key to, not an alias that may move.
                master_key_kms: sealer.kms_arn(),
                aws_region: aws.region.clone(),
                aws_endpoint_url: aws.endpoint_url.clone(),
                ..Settings::default()
            },
        }
    }
}

/// The whole command: reseal, then name the new key in `config`.
pub fn main(args: &RekeyArgs) -> Result<(), SetupError> {
    let config = args.config.as_path();
    let new_key = NewKey::from_args(args)?;
    let prepared = crate::runtime::prepare(config)?;
    let nothing = || SetupError::Usage("agent.toml has no [values]: there is nothing to rekey".into());
    let values = prepared.config.values.clone().ok_or_else(nothing)?;
    let runtime = tokio::runtime::Runtime::new().map_err(SetupError::io("start the runtime"))?;
    let (done, new) = runtime.block_on(async {
        let new = new_key.open(&values).await?;
        let old = crate::runtime::master_key(&values, prepared.into_master_key())
            .await
            .map_err(StartError::MasterKey)?;
        let rows: Box<dyn SealedStore> = match (&values.sqlite_path, &values.postgres_url, &values.dynamodb_table) {
            (Some(path), _, _) => crate::values::store::sqlite::connect(path).await,
            (_, Some(url), _) => crate::values::store::postgres::connect(url).await,
            (_, _, Some(table)) => {
                let cfg = crate::values::store::dynamodb::DynamoConfig { table: table.clone(), aws: values.aws() };
                crate::values::store::dynamodb::connect(&cfg).await
            }
            (None, None, None) => return Err(StartError::Missing("[values] names no store").into()),
        }
        .map_err(StartError::Store)?;
        let progress = |n, of| eprintln!("resealed {n} of {of} data keys");
        let done = reseal_all(rows.as_ref(), old.as_ref(), new.as_ref(), progress).await.map_err(|e| match e {
            ValueStoreError::WrongMasterKey { key_id } => SetupError::Usage(format!(
                "data key {key_id} opens with neither the configured master key nor the new one; nothing more \
                 was changed"
            )),
            other => SetupError::Store(other),
        })?;
        rows.close().await;
        Ok::<_, SetupError>((done, new))
    })?;
    configure::configure(config, &new_key.settings(new.as_ref()))?;
    let named = match &new_key {
        NewKey::File(path) => path.display().to_string(),
        NewKey::Kms { .. } => new.describe(),
    };
    if args.json {
        let key = match &new_key {
            NewKey::File(path) => serde_json::json!({ "master_key_file": path }),
            NewKey::Kms { .. } => serde_json::json!({ "master_key_kms": new.kms_arn() }),
        };
        let mut shown = serde_json::json!({ "rekeyed": done });
        if let (Some(shown), Some(key)) = (shown.as_object_mut(), key.as_object()) {
            shown.extend(key.clone());
        }
        println!("{shown}");
    } else {
        println!(
            "✓ {} data keys now sealed under {named} ({} resealed now, {} already); {} names it. \
             The old key opens nothing any more: restart the Agent, then retire the old key.",
            done.entries,
            done.resealed,
            done.already,
            config.display()
        );
    }
    Ok(())
}
