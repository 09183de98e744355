//! The Agent's encryption: envelope AES-256-GCM under a 32-byte master key.
//!
//! - The **master key** comes from an environment variable or a file and
//!   never touches the store. It only seals *data keys*. Instead of a local
//!   master key, a key in AWS KMS can seal them ([`crate::values::kms::KmsKey`]):
//!   both are a [`KeySealer`], which is all the store's keyring needs.
//! - A **data key** is 32 random bytes with a key id (a UUID). The store
//!   keeps it sealed under the master key (AAD `heimdall/datakey/v1` + key
//!   id) next to a **check value** (a constant sealed under the data key),
//!   so a wrong master key is recognised when the store opens and the Agent
//!   refuses to start.
//! - Each **value** is sealed under a data key with a fresh random 96-bit
//!   nonce and associated data binding the key id, organization, secret
//!   name, environment and version ([`ValueAddress`]). A ciphertext copied
//!   or moved to another row does not decrypt.
//!
//! Keys and plaintexts live in `Zeroizing` buffers; nothing here implements
//! `Debug` or `Display` with key or value bytes, and no error carries them.

use std::fmt;
use std::path::Path;

use aes_gcm::aead::rand_core::RngCore;
use aes_gcm::aead::{Aead, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use heimdall_core::ids::{CatalogId, OrgId};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

/// Every key here (master and data) is this long.
pub const KEY_LEN: usize = 32;
/// AES-GCM's 96-bit nonce.
pub const NONCE_LEN: usize = 12;

const DATA_KEY_AAD: &[u8] = b"heimdall/datakey/v1";
const CHECK_AAD: &[u8] = b"heimdall/check/v1";
const CHECK_PLAINTEXT: &[u8] = b"heimdall/check/v1: this store opens";
const VALUE_AAD: &[u8] = b"heimdall/value/v1";
/// Associated data of a record the Agent keeps for itself (not a value):
/// what it is for and whose it is are bound in after this prefix.
const RECORD_AAD: &[u8] = b"heimdall/record/v1";

/// Why a master key could not be loaded. Never carries key material, not
/// even a fragment (base64 and hex decoders' own errors quote the offending
/// byte, so they are not passed through).
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{origin} is not set")]
    Missing { origin: String },
    #[error("cannot read the master key file {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error(
        "{origin}: the master key must be exactly 32 bytes (raw bytes in a file, 64 hex characters or \
         base64); this one is {found} bytes"
    )]
    WrongLength { origin: String, found: usize },
    #[error("{origin}: the master key is neither 64 hex characters nor base64 (nor 32 raw bytes in a file)")]
    NotDecodable { origin: String },
    /// The KMS key cannot be used (unknown, disabled, not symmetric, no
    /// permission, KMS unreachable).
    #[error("the KMS key {key} cannot be used: {reason}")]
    Kms { key: String, reason: String },
}

/// A seal or open that failed. The messages name ids, never bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// The sealed data key or its check value did not open under this master key.
    #[error("the master key does not open this store (key id {key_id})")]
    WrongMasterKey { key_id: String },
    /// A value's ciphertext failed authentication: altered, moved to another
    /// row, or sealed under another data key.
    #[error("a stored value does not decrypt (key id {key_id}): it was altered or moved")]
    Undecryptable { key_id: String },
    #[error("encryption failed")]
    Seal,
    /// The KMS key refused to open the sealed data key (another key, no
    /// permission, disabled, or a keyring not sealed by KMS).
    #[error("the KMS key {kms_key} does not open this store (key id {key_id}): {reason}")]
    WrongKmsKey { key_id: String, kms_key: String, reason: String },
    /// KMS could not be asked (network, throttling, service error).
    #[error("AWS KMS is unavailable: {0}")]
    KmsUnavailable(String),
}

/// What seals the store's data keys and opens them again: a local
/// [`MasterKey`] or a KMS key ([`crate::values::kms::KmsKey`]). The keyring of
/// every backend goes through this trait only.
#[async_trait::async_trait]
pub trait KeySealer: Send + Sync + fmt::Debug {
    /// A fresh data key, and the form of it the keyring stores (sealed key
    /// and check value; never the key itself).
    async fn new_data_key(&self) -> Result<(DataKey, SealedDataKey), CryptoError>;

    /// Opens a keyring entry. One this key does not open is
    /// [`CryptoError::WrongMasterKey`] (or `WrongKmsKey`).
    async fn unseal_data_key(&self, sealed: &SealedDataKey) -> Result<DataKey, CryptoError>;

    /// Seals an existing data key (same id, same bytes) under this key:
    /// what `rekey` does to each keyring entry.
    async fn seal_existing(&self, key: &DataKey) -> Result<SealedDataKey, CryptoError>;

    /// What the configuration calls this key, for messages (a KMS ARN, or
    /// "the master key"); never key material.
    fn describe(&self) -> String;

    /// The KMS key's ARN, for a KMS key.
    fn kms_arn(&self) -> Option<String> {
        None
    }
}

#[async_trait::async_trait]
impl KeySealer for MasterKey {
    async fn new_data_key(&self) -> Result<(DataKey, SealedDataKey), CryptoError> {
        let key = DataKey::generate();
        let sealed = self.seal_data_key(&key)?;
        Ok((key, sealed))
    }

    async fn unseal_data_key(&self, sealed: &SealedDataKey) -> Result<DataKey, CryptoError> {
        self.open_data_key(sealed)
    }

    async fn seal_existing(&self, key: &DataKey) -> Result<SealedDataKey, CryptoError> {
        self.seal_data_key(key)
    }

    fn describe(&self) -> String {
        "the 32-byte master key".to_owned()
    }
}

/// The master key: 32 bytes, zeroized on drop, printed as `<redacted>`.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct MasterKey {
    bytes: Zeroizing<Vec<u8>>,
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterKey(<redacted>)")
    }
}

impl MasterKey {
    /// Exactly 32 raw bytes.
    pub fn from_bytes(bytes: &[u8], origin: &str) -> Result<Self, KeyError> {
        if bytes.len() != KEY_LEN {
            return Err(KeyError::WrongLength { origin: origin.to_owned(), found: bytes.len() });
        }
        Ok(Self { bytes: Zeroizing::new(bytes.to_vec()) })
    }

    /// 64 hex characters or base64 (standard or URL-safe, padded or not) of
    /// 32 bytes; surrounding whitespace is ignored.
    pub fn from_text(text: &str, origin: &str) -> Result<Self, KeyError> {
        let text = text.trim();
        let decoded: Zeroizing<Vec<u8>> = if text.len().is_multiple_of(2)
            && !text.is_empty()
            && text.bytes().all(|b| b.is_ascii_hexdigit())
        {
            Zeroizing::new(
                hex::decode(text).map_err(|_| KeyError::NotDecodable { origin: origin.to_owned() })?,
            )
        } else {
            use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
            let attempt = [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
                .iter()
                .find_map(|engine| engine.decode(text).ok());
            match attempt {
                Some(bytes) => Zeroizing::new(bytes),
                None => return Err(KeyError::NotDecodable { origin: origin.to_owned() }),
            }
        };
        Self::from_bytes(&decoded, origin)
    }

    /// From the environment variable `var` (hex or base64 text).
    pub fn from_env(var: &str) -> Result<Self, KeyError> {
        let origin = format!("environment variable {var}");
        let value = match std::env::var_os(var) {
            Some(v) => Zeroizing::new(v.into_encoded_bytes()),
            None => return Err(KeyError::Missing { origin }),
        };
        let text =
            std::str::from_utf8(&value).map_err(|_| KeyError::NotDecodable { origin: origin.clone() })?;
        Self::from_text(text, &origin)
    }

    /// From an environment variable, which is then removed from this
    /// process's environment, so that no child (Terraform) inherits it and
    /// nothing later in this process reads it again. Call it before any
    /// other thread starts: the environment is process-wide.
    pub fn take_from_env(var: &str) -> Result<Self, KeyError> {
        let key = Self::from_env(var);
        std::env::remove_var(var);
        key
    }

    /// From a file: exactly 32 raw bytes, or hex or base64 text.
    pub fn from_file(path: &Path) -> Result<Self, KeyError> {
        let origin = format!("master key file {}", path.display());
        let contents = Zeroizing::new(std::fs::read(path).map_err(|e| KeyError::Unreadable {
            path: path.display().to_string(),
            reason: e.kind().to_string(),
        })?);
        if contents.len() == KEY_LEN {
            return Self::from_bytes(&contents, &origin);
        }
        match std::str::from_utf8(&contents) {
            Ok(text) => Self::from_text(text, &origin),
            Err(_) => Err(KeyError::WrongLength { origin, found: contents.len() }),
        }
    }

    /// Makes a new master key file at `path`: 32 bytes from the operating
    /// system as 64 hex characters, mode 0600, written whole (a temporary
    /// file, then a rename that never replaces an existing key). `false`:
    /// a file is already there and was left alone.
    pub fn create_file(path: &Path) -> Result<bool, crate::files::FileError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        if path.exists() {
            return Ok(false);
        }
        let mut bytes = Zeroizing::new(vec![0u8; KEY_LEN]);
        OsRng.fill_bytes(&mut bytes);
        let text = Zeroizing::new(format!("{}\n", hex::encode(bytes.as_slice())));
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        let fail = |e: std::io::Error| crate::files::FileError::on("write", path)(e);
        let _ = std::fs::remove_file(&tmp);
        let mut file =
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp).map_err(fail)?;
        let written = file.write_all(text.as_bytes()).and_then(|()| file.sync_all());
        drop(file);
        // A hard link fails if the key appeared meanwhile: never replace one.
        let placed = written.and_then(|()| std::fs::hard_link(&tmp, path));
        let _ = std::fs::remove_file(&tmp);
        placed.map_err(fail)?;
        Ok(true)
    }

    #[allow(clippy::expect_used, reason = "from_bytes, the only constructor, checks the 32 bytes")]
    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new_from_slice(&self.bytes).expect("a master key is 32 bytes")
    }

    /// Seals `data_key` for storage.
    pub fn seal_data_key(&self, data_key: &DataKey) -> Result<SealedDataKey, CryptoError> {
        let sealed_key = seal(&self.cipher(), &data_key.key, &data_key_aad(&data_key.id))?;
        Ok(SealedDataKey { key_id: data_key.id.clone(), sealed_key, check_value: data_key.check_value()? })
    }

    /// Opens a data key read from the store; a wrong master key (or a
    /// tampered keyring row) is [`CryptoError::WrongMasterKey`].
    pub fn open_data_key(&self, sealed: &SealedDataKey) -> Result<DataKey, CryptoError> {
        let wrong = || CryptoError::WrongMasterKey { key_id: sealed.key_id.clone() };
        let key =
            open(&self.cipher(), &sealed.sealed_key, &data_key_aad(&sealed.key_id)).ok_or_else(wrong)?;
        let data_key = DataKey::from_parts(sealed.key_id.clone(), key).ok_or_else(wrong)?;
        if !data_key.matches_check_value(&sealed.check_value) {
            return Err(wrong());
        }
        Ok(data_key)
    }
}

/// A data key as it is stored: only its sealed form and the check value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedDataKey {
    pub key_id: String,
    /// nonce ‖ AES-256-GCM(master key, data key); with a KMS key, the
    /// `CiphertextBlob` KMS returned for the data key.
    pub sealed_key: Vec<u8>,
    /// nonce ‖ AES-256-GCM(data key, a constant).
    pub check_value: Vec<u8>,
}

/// A data key in memory: zeroized on drop, printed without its bytes.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct DataKey {
    #[zeroize(skip)]
    id: String,
    key: Zeroizing<Vec<u8>>,
}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DataKey({}, <redacted>)", self.id)
    }
}

/// Where a value lives; all of it is bound into the value's associated data.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ValueAddress {
    pub org: OrgId,
    pub secret: String,
    pub environment: CatalogId,
    pub version: u32,
}

/// A sealed value, as its row holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedValue {
    pub key_id: String,
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

impl DataKey {
    /// 32 fresh bytes from the operating system, with a new key id.
    pub fn generate() -> Self {
        let mut key = Zeroizing::new(vec![0u8; KEY_LEN]);
        OsRng.fill_bytes(&mut key);
        Self { id: uuid::Uuid::new_v4().to_string(), key }
    }

    /// A data key from its id and 32 bytes (e.g. the plaintext KMS returned);
    /// `None` if the bytes are not 32.
    pub fn from_parts(id: String, key: Zeroizing<Vec<u8>>) -> Option<Self> {
        (key.len() == KEY_LEN).then_some(Self { id, key })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The key's bytes, only to hand them to KMS `Encrypt` when a keyring
    /// entry is sealed again under a KMS key.
    pub(crate) fn bytes_for_wrapping(&self) -> &[u8] {
        &self.key
    }

    /// A constant sealed under this key (bound to its id): stored next to
    /// the sealed key, it tells at open whether the key that came back is
    /// the one that was sealed.
    pub fn check_value(&self) -> Result<Vec<u8>, CryptoError> {
        seal(&self.cipher(), CHECK_PLAINTEXT, &check_aad(&self.id))
    }

    /// Whether `check_value` was made by [`Self::check_value`] with this key.
    pub fn matches_check_value(&self, check_value: &[u8]) -> bool {
        open(&self.cipher(), check_value, &check_aad(&self.id))
            .is_some_and(|c| c.as_slice() == CHECK_PLAINTEXT)
    }

    #[allow(clippy::expect_used, reason = "generate and from_parts, the only constructors, make 32 bytes")]
    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new_from_slice(&self.key).expect("a data key is 32 bytes")
    }

    /// Seals `plaintext` for the row at `at`, with a fresh random nonce.
    pub fn seal_value(&self, at: &ValueAddress, plaintext: &[u8]) -> Result<SealedValue, CryptoError> {
        self.seal_with(plaintext, &value_aad(&self.id, at))
    }

    /// Opens a value read from the row at `at`. Fails unless the ciphertext
    /// was sealed by this key for exactly this address.
    pub fn open_value(
        &self,
        at: &ValueAddress,
        sealed: &SealedValue,
    ) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        self.open_with(sealed, &value_aad(&self.id, at))
    }

    /// Seals a record of the Agent's own (its policy snapshot) for
    /// `purpose` and `owner`: it opens only with both named again, so a
    /// record cannot pass for a value, another purpose, or another Agent's.
    pub fn seal_record(
        &self,
        purpose: &str,
        owner: &str,
        plaintext: &[u8],
    ) -> Result<SealedValue, CryptoError> {
        self.seal_with(plaintext, &record_aad(&self.id, purpose, owner))
    }

    /// Opens what [`Self::seal_record`] sealed for the same `purpose` and `owner`.
    pub fn open_record(
        &self,
        purpose: &str,
        owner: &str,
        sealed: &SealedValue,
    ) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        self.open_with(sealed, &record_aad(&self.id, purpose, owner))
    }

    fn seal_with(&self, plaintext: &[u8], aad: &[u8]) -> Result<SealedValue, CryptoError> {
        let mut nonce = [0u8; NONCE_LEN];
        OsRng.fill_bytes(&mut nonce);
        let ciphertext = self
            .cipher()
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: plaintext, aad })
            .map_err(|_| CryptoError::Seal)?;
        Ok(SealedValue { key_id: self.id.clone(), nonce: nonce.to_vec(), ciphertext })
    }

    fn open_with(&self, sealed: &SealedValue, aad: &[u8]) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        let fail = || CryptoError::Undecryptable { key_id: sealed.key_id.clone() };
        if sealed.key_id != self.id || sealed.nonce.len() != NONCE_LEN {
            return Err(fail());
        }
        self.cipher()
            .decrypt(Nonce::from_slice(&sealed.nonce), Payload { msg: &sealed.ciphertext, aad })
            .map(Zeroizing::new)
            .map_err(|_| fail())
    }
}

/// nonce ‖ ciphertext.
fn seal(cipher: &Aes256Gcm, plaintext: &[u8], aad: &[u8]) -> Result<Vec<u8>, CryptoError> {
    let mut nonce = [0u8; NONCE_LEN];
    OsRng.fill_bytes(&mut nonce);
    let ciphertext = cipher
        .encrypt(Nonce::from_slice(&nonce), Payload { msg: plaintext, aad })
        .map_err(|_| CryptoError::Seal)?;
    let mut out = nonce.to_vec();
    out.extend_from_slice(&ciphertext);
    Ok(out)
}

fn open(cipher: &Aes256Gcm, sealed: &[u8], aad: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
    if sealed.len() < NONCE_LEN {
        return None;
    }
    let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
    cipher.decrypt(Nonce::from_slice(nonce), Payload { msg: ciphertext, aad }).ok().map(Zeroizing::new)
}

/// Appends `field` with a 4-byte big-endian length prefix, so no two
/// different field lists encode to the same bytes.
#[allow(clippy::expect_used, reason = "fields are ids, names and numbers, far below 4 GiB")]
fn push_field(out: &mut Vec<u8>, field: &[u8]) {
    let len = u32::try_from(field.len()).expect("associated data fields are short");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(field);
}

fn data_key_aad(key_id: &str) -> Vec<u8> {
    let mut aad = DATA_KEY_AAD.to_vec();
    push_field(&mut aad, key_id.as_bytes());
    aad
}

fn check_aad(key_id: &str) -> Vec<u8> {
    let mut aad = CHECK_AAD.to_vec();
    push_field(&mut aad, key_id.as_bytes());
    aad
}

fn record_aad(key_id: &str, purpose: &str, owner: &str) -> Vec<u8> {
    let mut aad = RECORD_AAD.to_vec();
    push_field(&mut aad, key_id.as_bytes());
    push_field(&mut aad, purpose.as_bytes());
    push_field(&mut aad, owner.as_bytes());
    aad
}

fn value_aad(key_id: &str, at: &ValueAddress) -> Vec<u8> {
    let mut aad = VALUE_AAD.to_vec();
    push_field(&mut aad, key_id.as_bytes());
    push_field(&mut aad, at.org.as_uuid().as_bytes());
    push_field(&mut aad, at.secret.as_bytes());
    push_field(&mut aad, at.environment.as_uuid().as_bytes());
    push_field(&mut aad, &at.version.to_be_bytes());
    aad
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [7u8; 32];

    fn master() -> MasterKey {
        MasterKey::from_bytes(&KEY, "test").unwrap()
    }

    fn address() -> ValueAddress {
        ValueAddress {
            org: OrgId::from_uuid(uuid::Uuid::from_u128(1)),
            secret: "db-password".into(),
            environment: CatalogId::from_uuid(uuid::Uuid::from_u128(2)),
            version: 3,
        }
    }

    #[test]
    fn a_value_round_trips_with_a_fresh_nonce_each_time() {
        let key = DataKey::generate();
        let a = key.seal_value(&address(), b"hunter2").unwrap();
        let b = key.seal_value(&address(), b"hunter2").unwrap();
        assert_ne!(a.nonce, b.nonce);
        assert_ne!(a.ciphertext, b.ciphertext);
        assert!(!a.ciphertext.windows(7).any(|w| w == b"hunter2"));
        assert_eq!(key.open_value(&address(), &a).unwrap().as_slice(), b"hunter2");
        assert_eq!(key.open_value(&address(), &b).unwrap().as_slice(), b"hunter2");
    }

    #[test]
    fn a_value_does_not_open_at_another_address() {
        let key = DataKey::generate();
        let sealed = key.seal_value(&address(), b"hunter2").unwrap();
        let elsewhere = [
            ValueAddress { secret: "db-password2".into(), ..address() },
            ValueAddress { environment: CatalogId::from_uuid(uuid::Uuid::from_u128(9)), ..address() },
            ValueAddress { version: 4, ..address() },
            ValueAddress { org: OrgId::from_uuid(uuid::Uuid::from_u128(9)), ..address() },
        ];
        for at in elsewhere {
            assert!(
                matches!(key.open_value(&at, &sealed), Err(CryptoError::Undecryptable { .. })),
                "{at:?} opened"
            );
        }
        // Another data key, even claiming the same id, does not open it.
        let other = DataKey { id: key.id.clone(), key: Zeroizing::new(vec![1u8; 32]) };
        assert!(other.open_value(&address(), &sealed).is_err());
    }

    #[test]
    fn a_tampered_ciphertext_or_nonce_does_not_open() {
        let key = DataKey::generate();
        let sealed = key.seal_value(&address(), b"hunter2").unwrap();
        for i in 0..sealed.ciphertext.len() {
            let mut bad = sealed.clone();
            bad.ciphertext[i] ^= 0x01;
            assert!(key.open_value(&address(), &bad).is_err(), "byte {i} flipped and it opened");
        }
        let mut bad = sealed.clone();
        bad.nonce[0] ^= 0x80;
        assert!(key.open_value(&address(), &bad).is_err());
        let mut bad = sealed;
        bad.ciphertext.truncate(4);
        assert!(key.open_value(&address(), &bad).is_err());
    }

    #[test]
    fn a_wrong_master_key_does_not_open_the_data_key() {
        let data_key = DataKey::generate();
        let sealed = master().seal_data_key(&data_key).unwrap();
        let reopened = master().open_data_key(&sealed).unwrap();
        let v = reopened.seal_value(&address(), b"x").unwrap();
        assert_eq!(data_key.open_value(&address(), &v).unwrap().as_slice(), b"x");

        let wrong = MasterKey::from_bytes(&[8u8; 32], "test").unwrap();
        let err = wrong.open_data_key(&sealed).unwrap_err();
        assert_eq!(err, CryptoError::WrongMasterKey { key_id: data_key.id.clone() });
        assert_eq!(
            err.to_string(),
            format!("the master key does not open this store (key id {})", data_key.id)
        );
        // The sealed key is bound to its key id.
        let renamed = SealedDataKey { key_id: "another".into(), ..sealed.clone() };
        assert!(master().open_data_key(&renamed).is_err());
        // A check value from another data key is refused.
        let other = master().seal_data_key(&DataKey::generate()).unwrap();
        let mixed = SealedDataKey { check_value: other.check_value, ..sealed };
        assert!(master().open_data_key(&mixed).is_err());
    }

    #[test]
    fn master_keys_load_from_hex_base64_and_raw_files() {
        let hex_text = hex::encode(KEY);
        let b64 = base64::engine::general_purpose::STANDARD.encode(KEY);
        let url_nopad = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(KEY);
        for text in [hex_text.clone(), format!("  {b64}\n"), url_nopad, hex_text.to_uppercase()] {
            let key = MasterKey::from_text(&text, "t").unwrap();
            assert_eq!(key.bytes.as_slice(), &KEY);
        }
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw");
        std::fs::write(&raw, KEY).unwrap();
        assert_eq!(MasterKey::from_file(&raw).unwrap().bytes.as_slice(), &KEY);
        let text = dir.path().join("text");
        std::fs::write(&text, format!("{b64}\n")).unwrap();
        assert_eq!(MasterKey::from_file(&text).unwrap().bytes.as_slice(), &KEY);

        let var = "HEIMDALL_TEST_MASTER_KEY_CRYPTO_RS";
        std::env::set_var(var, &hex_text);
        assert_eq!(MasterKey::from_env(var).unwrap().bytes.as_slice(), &KEY);
        std::env::remove_var(var);
        assert!(matches!(MasterKey::from_env(var), Err(KeyError::Missing { .. })));
    }

    #[test]
    fn a_key_of_the_wrong_length_is_refused_without_quoting_it() {
        let short = "0123456789abcdef0123456789abcdef"; // 16 bytes of hex
        let err = MasterKey::from_text(short, "environment variable K").unwrap_err();
        assert!(matches!(err, KeyError::WrongLength { found: 16, .. }), "{err:?}");
        let message = err.to_string();
        assert!(message.contains("exactly 32 bytes") && message.contains("16 bytes"), "{message}");
        assert!(!message.contains(short) && !format!("{err:?}").contains(short));

        let long = base64::engine::general_purpose::STANDARD.encode([9u8; 48]);
        let err = MasterKey::from_text(&long, "k").unwrap_err();
        assert!(matches!(err, KeyError::WrongLength { found: 48, .. }));
        assert!(!err.to_string().contains(&long));

        // Undecodable text: the decoder's own error (which quotes the bad
        // byte) is not passed on.
        let garbage = "not-a-key-%%%-SECRETMARKER";
        let err = MasterKey::from_text(garbage, "k").unwrap_err();
        assert!(matches!(err, KeyError::NotDecodable { .. }));
        for shown in [err.to_string(), format!("{err:?}")] {
            assert!(!shown.contains("SECRETMARKER") && !shown.contains('%'), "{shown}");
        }
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("k");
        std::fs::write(&f, [0xffu8; 31]).unwrap();
        assert!(matches!(MasterKey::from_file(&f), Err(KeyError::WrongLength { found: 31, .. })));
    }

    #[test]
    fn keys_never_print_their_bytes() {
        let key = MasterKey::from_bytes(&[0xabu8; 32], "t").unwrap();
        let shown = format!("{key:?} {key:#?}");
        assert!(shown.contains("<redacted>"));
        assert!(!shown.contains("171") && !shown.to_lowercase().contains("abab"), "{shown}");
        let data_key = DataKey { id: "k1".into(), key: Zeroizing::new(vec![0xcd; 32]) };
        let shown = format!("{data_key:?} {data_key:#?}");
        assert!(shown.contains("<redacted>") && shown.contains("k1"));
        assert!(!shown.contains("205") && !shown.to_lowercase().contains("cdcd"), "{shown}");
        let err = key.open_data_key(&master().seal_data_key(&data_key).unwrap()).unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains("171") && !shown.contains("205"), "{shown}");
    }
}
