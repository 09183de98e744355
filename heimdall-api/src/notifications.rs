//! The key the organization's notifications are signed with (beside the
//! CA). The loop that sends them is `crate::background::deliveries`.

use std::path::Path;

use heimdall_core::notify;
use zeroize::Zeroizing;

use crate::key_files::KeyFileError;

/// The key every channel's secret is derived from: 32 random bytes in
/// `<ca-dir>/notifications.key` (0600), made on first start. Give every
/// API replica the same file.
pub struct SigningKey(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

impl SigningKey {
    pub fn load_or_create(path: &Path) -> Result<Self, KeyFileError> {
        match std::fs::read(path) {
            Ok(bytes) => {
                let bytes = Zeroizing::new(bytes);
                let key: [u8; 32] = bytes.as_slice().try_into().map_err(|_| KeyFileError::Unusable {
                    path: path.to_owned(),
                    reason: "must hold exactly 32 bytes",
                })?;
                Ok(Self(Zeroizing::new(key)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                use rand::RngCore;
                use std::io::Write;
                use std::os::unix::fs::OpenOptionsExt;
                let mut key = Zeroizing::new([0u8; 32]);
                rand::rngs::OsRng.fill_bytes(key.as_mut());
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path)
                    .map_err(KeyFileError::io("create", path))?;
                file.write_all(key.as_ref()).map_err(KeyFileError::io("write", path))?;
                Ok(Self(key))
            }
            Err(e) => Err(KeyFileError::io("read", path)(e)),
        }
    }

    /// `url` sealed (AES-256-GCM, the channel id as associated data) for the database.
    pub fn seal_url(&self, channel_id: &str, url: &str) -> Result<String, KeyFileError> {
        use aes_gcm::aead::{Aead, KeyInit, Payload};
        use rand::RngCore;
        let cipher = aes_gcm::Aes256Gcm::new_from_slice(self.url_key().as_ref())
            .map_err(|_| KeyFileError::Crypto("the webhook URL key is not an AES-256 key"))?;
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let payload = Payload { msg: url.as_bytes(), aad: channel_id.as_bytes() };
        let sealed = cipher
            .encrypt(&nonce.into(), payload)
            .map_err(|_| KeyFileError::Crypto("cannot seal the webhook URL"))?;
        Ok(format!("v1:{}:{}", hex::encode(nonce), hex::encode(sealed)))
    }

    /// The URL [`Self::seal_url`] sealed for `channel_id`.
    pub fn open_url(&self, channel_id: &str, sealed: &str) -> Result<Zeroizing<String>, KeyFileError> {
        use aes_gcm::aead::{Aead, KeyInit, Payload};
        let bad =
            || KeyFileError::Crypto("the webhook URL cannot be opened with this API's notifications.key");
        let mut parts = sealed.splitn(3, ':');
        let (Some("v1"), Some(nonce), Some(body)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let nonce: [u8; 12] = hex::decode(nonce).ok().and_then(|n| n.try_into().ok()).ok_or_else(bad)?;
        let body = hex::decode(body).map_err(|_| bad())?;
        let cipher = aes_gcm::Aes256Gcm::new_from_slice(self.url_key().as_ref()).map_err(|_| bad())?;
        let opened = cipher.decrypt(&nonce.into(), Payload { msg: &body, aad: channel_id.as_bytes() });
        let opened = Zeroizing::new(opened.map_err(|_| bad())?);
        String::from_utf8(opened.to_vec()).map(Zeroizing::new).map_err(|_| bad())
    }

    fn url_key(&self) -> Zeroizing<[u8; 32]> {
        notify::subkey(&self.0, b"webhook url")
    }

    /// The signing secret of the channel `channel_id`.
    pub fn channel_secret(&self, channel_id: &str) -> Zeroizing<String> {
        notify::channel_secret(&self.0, channel_id)
    }
}
