//! Plan files awaiting approval (`heimdall_core::plan`), kept where the
//! Resource's state is: in the account's S3 bucket (with the job's own
//! credentials, as Terraform reaches the state), or in the Agent's local
//! state directory. A plan can hold sensitive values, so it never goes to
//! the API; only its SHA-256 and summary do.

use std::ffi::OsString;
use std::path::PathBuf;

use aws_sdk_s3::primitives::ByteStream;
use heimdall_core::infra::{JobRequest, StateBackend};
use sha2::{Digest, Sha256};

use crate::config::StateConfig;

/// Where one job's plan file goes, or comes from.
#[derive(Debug)]
pub enum PlanStore {
    /// The Agent's local state directory (`[state] local_dir`).
    Local(PathBuf),
    S3 {
        client: aws_sdk_s3::Client,
        bucket: String,
    },
}

/// The keys of `profile` in a shared credentials file that Heimdall wrote
/// for the job (`heimdall_core::credentials::aws`), read as Terraform reads them.
fn profile_keys(file: &std::path::Path, profile: &str) -> Result<aws_sdk_s3::config::Credentials, String> {
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(file).map_err(|e| format!("cannot read the job's AWS credentials: {e}"))?,
    );
    let mut in_profile = false;
    let (mut id, mut secret, mut token) = (None, None, None);
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_profile = name.trim() == profile;
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if in_profile {
            let value = Some(value.trim().to_owned());
            match key.trim() {
                "aws_access_key_id" => id = value,
                "aws_secret_access_key" => secret = value,
                "aws_session_token" => token = value,
                _ => {}
            }
        }
    }
    match (id, secret) {
        (Some(id), Some(secret)) => {
            Ok(aws_sdk_s3::config::Credentials::new(id, secret, token, None, "heimdall-job"))
        }
        _ => Err(format!("the job's AWS credentials name no keys for profile {profile}")),
    }
}

/// SHA-256 of a plan file, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl PlanStore {
    /// The store for `request`'s state, reached with Terraform's own
    /// environment `env` (the job's credentials, never the Agent's when
    /// the job has its own).
    pub async fn for_job(
        state: &StateConfig,
        request: &JobRequest,
        env: &[(OsString, OsString)],
    ) -> Result<Self, String> {
        if let Some(dir) = &state.local_dir {
            return Ok(PlanStore::Local(dir.clone()));
        }
        let account = &request.account;
        if account.state_backend != StateBackend::S3 {
            return Err(format!(
                "a plan for approval is kept next to the state, which is built for S3 and local state only; \
                 this account's state is in {}",
                account.state_backend
            ));
        }
        let var = |name: &str| env.iter().find(|(n, _)| n == name).and_then(|(_, v)| v.to_str());
        let settings = crate::aws::AwsSettings {
            region: Some(account.region.clone()),
            endpoint_url: state.s3_endpoint.clone().or_else(|| account.state_endpoint.clone()),
        };
        let mut loader = crate::aws::loader(&settings);
        match (var("AWS_SHARED_CREDENTIALS_FILE"), var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
            // The job's credential, from the file Heimdall wrote for Terraform.
            (Some(file), _, _) => {
                let profile = var("AWS_PROFILE").unwrap_or(heimdall_core::credentials::AWS_PROFILE);
                loader = loader.credentials_provider(profile_keys(std::path::Path::new(file), profile)?);
            }
            (None, Some(id), Some(secret)) => {
                let token = var("AWS_SESSION_TOKEN").map(str::to_owned);
                let keys = aws_sdk_s3::config::Credentials::new(id, secret, token, None, "heimdall-job");
                loader = loader.credentials_provider(keys);
            }
            // The Agent's own chain, as Terraform gets it when the job has none.
            _ => {}
        }
        let config = loader.load().await;
        let s3 = aws_sdk_s3::config::Builder::from(&config)
            .force_path_style(settings.endpoint_url.is_some())
            .build();
        Ok(PlanStore::S3 { client: aws_sdk_s3::Client::from_conf(s3), bucket: account.state_bucket.clone() })
    }

    fn local_path(dir: &std::path::Path, key: &str) -> PathBuf {
        // `heimdall/<id>.tfplan` beside `<id>.tfstate`.
        dir.join(key.rsplit('/').next().unwrap_or(key))
    }

    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), String> {
        match self {
            PlanStore::Local(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                let path = Self::local_path(dir, key);
                std::fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
            }
            PlanStore::S3 { client, bucket } => client
                .put_object()
                .bucket(bucket)
                .key(key)
                .body(ByteStream::from(bytes))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    format!("cannot store the plan in s3://{bucket}/{key}: {}", crate::aws::describe(&e))
                }),
        }
    }

    pub async fn get(&self, key: &str) -> Result<Vec<u8>, String> {
        match self {
            PlanStore::Local(dir) => {
                let path = Self::local_path(dir, key);
                std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
            }
            PlanStore::S3 { client, bucket } => {
                let object = client.get_object().bucket(bucket).key(key).send().await.map_err(|e| {
                    format!("cannot read the plan s3://{bucket}/{key}: {}", crate::aws::describe(&e))
                })?;
                let body = object.body.collect().await.map_err(|e| e.to_string())?;
                Ok(body.into_bytes().to_vec())
            }
        }
    }
}
