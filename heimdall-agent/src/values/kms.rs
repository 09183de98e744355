//! The master key in AWS KMS (`[values] master_key_kms = "<key id, ARN or
//! alias>"`): envelope encryption where KMS, not a local key, seals the
//! store's data keys.
//!
//! - A new store asks KMS for a data key (`GenerateDataKey`, `AES_256`):
//!   the answer holds the plaintext key, kept only in `Zeroizing` memory,
//!   and its `CiphertextBlob`, which is what the keyring stores (with the
//!   usual check value, [`crate::values::crypto::DataKey::check_value`]).
//! - Opening the store sends the blob back (`Decrypt`) naming the configured
//!   key, and checks that KMS answered with that key's ARN and that the key
//!   passes the check value.
//! - Both calls carry the encryption context
//!   `{"heimdall": "datakey/v1", "key_id": <data key id>}`: KMS binds the blob
//!   to it (and CloudTrail shows it), so a blob moved to another keyring
//!   entry does not open.
//!
//! A key that cannot open the blob — another key, no permission, disabled,
//! or a keyring sealed by a local master key — is
//! [`CryptoError::WrongKmsKey`] and the Agent does not start. The Agent's
//! AWS identity needs `kms:DescribeKey`, `kms:GenerateDataKey` and
//! `kms:Decrypt` on the key.

use std::collections::HashMap;
use std::fmt;

use aws_sdk_kms::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::{DataKeySpec, KeySpec, KeyState, KeyUsageType};
use zeroize::Zeroizing;

use crate::aws::{describe, AwsSettings};
use crate::values::crypto::{CryptoError, DataKey, KeyError, KeySealer, SealedDataKey};

/// The encryption context's fixed part.
const CONTEXT_PURPOSE: (&str, &str) = ("heimdall", "datakey/v1");

/// KMS error codes that mean "this key does not open that blob" rather
/// than "KMS is unavailable".
const REFUSALS: &[&str] = &[
    "IncorrectKeyException",
    "InvalidCiphertextException",
    "AccessDeniedException",
    "NotFoundException",
    "DisabledException",
    "KMSInvalidStateException",
    "InvalidKeyUsageException",
];

/// A symmetric KMS key that seals the store's data keys.
pub struct KmsKey {
    client: aws_sdk_kms::Client,
    /// As configured (key id, ARN or alias): what every request names.
    configured: String,
    /// The key's ARN, as `DescribeKey` answered.
    arn: String,
}

impl fmt::Debug for KmsKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KmsKey").field("arn", &self.arn).finish()
    }
}

impl KmsKey {
    /// Connects with the SDK's default credentials and `settings`, and
    /// checks the key: it must exist, be enabled and be a symmetric
    /// encryption key.
    pub async fn connect(key: &str, settings: &AwsSettings) -> Result<Self, KeyError> {
        let refused = |reason: String| KeyError::Kms { key: key.to_owned(), reason };
        let config = crate::aws::sdk_config(settings).await.map_err(|e| refused(e.to_string()))?;
        Self::with_client(aws_sdk_kms::Client::new(&config), key).await
    }

    /// As [`Self::connect`], with a client the caller built.
    pub async fn with_client(client: aws_sdk_kms::Client, key: &str) -> Result<Self, KeyError> {
        let refused = |reason: String| KeyError::Kms { key: key.to_owned(), reason };
        if key.trim().is_empty() {
            return Err(refused("no key id given".into()));
        }
        let described = client.describe_key().key_id(key).send().await.map_err(|e| refused(describe(&e)))?;
        let Some(meta) = described.key_metadata() else {
            return Err(refused("KMS described no key".into()));
        };
        if !meta.enabled() || meta.key_state() != Some(&KeyState::Enabled) {
            return Err(refused("the key is not enabled".into()));
        }
        // (moto leaves KeyUsage out; AWS always sends both.)
        if meta.key_usage().is_some_and(|u| *u != KeyUsageType::EncryptDecrypt)
            || meta.key_spec().is_some_and(|s| *s != KeySpec::SymmetricDefault)
        {
            return Err(refused("the key is not a symmetric encryption key (SYMMETRIC_DEFAULT)".into()));
        }
        let Some(arn) = meta.arn() else { return Err(refused("KMS gave the key no ARN".into())) };
        Ok(Self { client, configured: key.to_owned(), arn: arn.to_owned() })
    }

    /// The key's ARN.
    pub fn arn(&self) -> &str {
        &self.arn
    }

    /// The encryption context both `GenerateDataKey` and `Decrypt` carry.
    pub fn encryption_context(data_key_id: &str) -> HashMap<String, String> {
        HashMap::from([
            (CONTEXT_PURPOSE.0.to_owned(), CONTEXT_PURPOSE.1.to_owned()),
            ("key_id".to_owned(), data_key_id.to_owned()),
        ])
    }

    fn unavailable<E, R>(err: &SdkError<E, R>) -> CryptoError
    where
        E: std::error::Error + ProvideErrorMetadata + 'static,
        R: fmt::Debug,
    {
        CryptoError::KmsUnavailable(describe(err))
    }
}

#[async_trait::async_trait]
impl KeySealer for KmsKey {
    async fn new_data_key(&self) -> Result<(DataKey, SealedDataKey), CryptoError> {
        let id = uuid::Uuid::new_v4().to_string();
        let out = self
            .client
            .generate_data_key()
            .key_id(&self.configured)
            .key_spec(DataKeySpec::Aes256)
            .set_encryption_context(Some(Self::encryption_context(&id)))
            .send()
            .await
            .map_err(|e| Self::unavailable(&e))?;
        // Moved out of the response, never copied: the only copy of the
        // plaintext key is in this Zeroizing buffer.
        let plaintext = Zeroizing::new(out.plaintext.map(Blob::into_inner).unwrap_or_default());
        let Some(blob) = out.ciphertext_blob.map(Blob::into_inner) else {
            return Err(CryptoError::KmsUnavailable("GenerateDataKey returned no ciphertext blob".into()));
        };
        let key = DataKey::from_parts(id.clone(), plaintext).ok_or_else(|| {
            CryptoError::KmsUnavailable("GenerateDataKey returned a key that is not 32 bytes".into())
        })?;
        let check_value = key.check_value()?;
        Ok((key, SealedDataKey { key_id: id, sealed_key: blob, check_value }))
    }

    async fn seal_existing(&self, key: &DataKey) -> Result<SealedDataKey, CryptoError> {
        let out = self
            .client
            .encrypt()
            .key_id(&self.configured)
            .plaintext(Blob::new(key.bytes_for_wrapping().to_vec()))
            .set_encryption_context(Some(Self::encryption_context(key.id())))
            .send()
            .await
            .map_err(|e| Self::unavailable(&e))?;
        let Some(blob) = out.ciphertext_blob.map(Blob::into_inner) else {
            return Err(CryptoError::KmsUnavailable("Encrypt returned no ciphertext blob".into()));
        };
        Ok(SealedDataKey { key_id: key.id().to_owned(), sealed_key: blob, check_value: key.check_value()? })
    }

    fn describe(&self) -> String {
        format!("KMS key {}", self.arn)
    }

    fn kms_arn(&self) -> Option<String> {
        Some(self.arn.clone())
    }

    async fn unseal_data_key(&self, sealed: &SealedDataKey) -> Result<DataKey, CryptoError> {
        let wrong = |reason: String| CryptoError::WrongKmsKey {
            key_id: sealed.key_id.clone(),
            kms_key: self.arn.clone(),
            reason,
        };
        let out = self
            .client
            .decrypt()
            .key_id(&self.configured)
            .ciphertext_blob(Blob::new(sealed.sealed_key.clone()))
            .set_encryption_context(Some(Self::encryption_context(&sealed.key_id)))
            .send()
            .await;
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                let code = e.as_service_error().and_then(ProvideErrorMetadata::code).unwrap_or_default();
                if REFUSALS.contains(&code) {
                    return Err(wrong(format!(
                        "KMS refused to decrypt the data key ({}); was this store created with another \
                         KMS key or a local master key?",
                        describe(&e)
                    )));
                }
                return Err(Self::unavailable(&e));
            }
        };
        if out.key_id.as_deref() != Some(self.arn.as_str()) {
            return Err(wrong(format!(
                "KMS decrypted it with another key ({})",
                out.key_id.as_deref().unwrap_or("none named")
            )));
        }
        let plaintext = Zeroizing::new(out.plaintext.map(Blob::into_inner).unwrap_or_default());
        let key = DataKey::from_parts(sealed.key_id.clone(), plaintext)
            .ok_or_else(|| wrong("the decrypted data key is not 32 bytes".into()))?;
        if !key.matches_check_value(&sealed.check_value) {
            return Err(wrong("the data key does not match its check value".into()));
        }
        Ok(key)
    }
}
