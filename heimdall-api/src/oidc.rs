//! The API's OpenID Connect issuer for jobs: its ES256 signing keys (files
//! in `<ca-dir>/oidc/`, separate from the CA key, mode 0600), the JWKS
//! that publishes them, and the token each job of an `oidc` account gets
//! (`heimdall_core::oidc` says what it contains). `heimdall-api oidc
//! rotate-key` adds a key that signs from then on; the previous one stays
//! published until the next rotation, so tokens it signed still verify.

use std::path::{Path, PathBuf};

use heimdall_core::oidc::{self, JobClaims};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::key_files::KeyFileError;

/// Keys published at once: the one that signs and the one before it.
const PUBLISHED: usize = 2;

struct SigningKey {
    kid: String,
    pair: EcdsaKeyPair,
}

/// The issuer: its URL and keys (oldest first; the last signs).
pub struct Issuer {
    url: String,
    keys: Vec<SigningKey>,
    rng: SystemRandom,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kids: Vec<&str> = self.keys.iter().map(|k| k.kid.as_str()).collect();
        f.debug_struct("Issuer").field("url", &self.url).field("kids", &kids).finish()
    }
}

fn key_files(dir: &Path) -> Result<Vec<PathBuf>, KeyFileError> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => {
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "p8")).collect()
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(KeyFileError::io("read", dir)(e)),
    };
    // Named by creation time: sorted, the last is the newest.
    files.sort();
    Ok(files)
}

/// Adds a new signing key in `dir` and drops all but the newest
/// [`PUBLISHED`]; returns its key id.
pub fn rotate(dir: &Path) -> Result<String, KeyFileError> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .map_err(|_| KeyFileError::Crypto("cannot generate an OIDC signing key"))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .map_err(|_| KeyFileError::Crypto("cannot open the OIDC signing key just generated"))?;
    let kid = kid_of(&pair);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(KeyFileError::io("create", dir))?;
    let stamp = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    let path = dir.join(format!("{stamp:024}-{kid}.p8"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(KeyFileError::io("create", &path))?;
    file.write_all(pkcs8.as_ref()).map_err(KeyFileError::io("write", &path))?;
    let files = key_files(dir)?;
    for old in &files[..files.len().saturating_sub(PUBLISHED)] {
        std::fs::remove_file(old).map_err(KeyFileError::io("remove", old))?;
    }
    Ok(kid)
}

fn open_key(path: &Path, pkcs8: &[u8], rng: &SystemRandom) -> Result<EcdsaKeyPair, KeyFileError> {
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, rng).map_err(|_| {
        KeyFileError::Unusable { path: path.to_owned(), reason: "not a P-256 PKCS#8 OIDC signing key" }
    })
}

/// A key's id: the start of its public key's SHA-256.
fn kid_of(pair: &EcdsaKeyPair) -> String {
    hex::encode(&Sha256::digest(pair.public_key().as_ref())[..8])
}

impl Issuer {
    /// The keys in `dir` (a first one made if there is none), issuing as `url`.
    pub fn load_or_create(dir: &Path, url: &str) -> Result<Self, KeyFileError> {
        if key_files(dir)?.is_empty() {
            rotate(dir)?;
            tracing::info!(dir = %dir.display(), "created the OIDC signing key for job identity tokens");
        }
        let rng = SystemRandom::new();
        let mut keys = Vec::new();
        for path in key_files(dir)? {
            let pkcs8 =
                zeroize::Zeroizing::new(std::fs::read(&path).map_err(KeyFileError::io("read", &path))?);
            let pair = open_key(&path, &pkcs8, &rng)?;
            keys.push(SigningKey { kid: kid_of(&pair), pair });
        }
        let url = url.trim_end_matches('/').to_owned();
        Ok(Self { url, keys, rng })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The discovery document.
    pub fn discovery(&self) -> Value {
        oidc::discovery(&self.url)
    }

    /// Every published key, as a JWK Set.
    pub fn jwks(&self) -> Value {
        let keys: Vec<Value> =
            self.keys.iter().filter_map(|k| oidc::jwk(&k.kid, k.pair.public_key().as_ref())).collect();
        json!({ "keys": keys })
    }

    /// `claims` as a compact JWT signed by the newest key.
    pub fn sign(&self, claims: &JobClaims) -> Result<String, KeyFileError> {
        let key = self.keys.last().ok_or(KeyFileError::Crypto("no OIDC signing key"))?;
        let input = oidc::signing_input(&key.kid, claims);
        let signature = key
            .pair
            .sign(&self.rng, input.as_bytes())
            .map_err(|_| KeyFileError::Crypto("cannot sign the job's identity token"))?;
        Ok(oidc::compact(&input, signature.as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    use heimdall_core::infra::JobOperation;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
    use uuid::Uuid;

    fn claims() -> JobClaims {
        let id = Uuid::from_u128;
        JobClaims {
            iss: "https://api.example".into(),
            sub: "organization:x".into(),
            aud: "sts.amazonaws.com".into(),
            iat: 1,
            nbf: 1,
            exp: 301,
            jti: "j".into(),
            job_id: id(1).into(),
            operation: JobOperation::Apply,
            attempt: 1,
            resource_id: id(2).into(),
            org_id: id(3).into(),
            environment_id: id(4).into(),
        }
    }

    /// Verifies `token` with the JWK of its `kid` in `jwks`, as a cloud would.
    fn verify(token: &str, jwks: &Value) -> bool {
        let mut parts = token.split('.');
        let (Some(header), Some(body), Some(sig)) = (parts.next(), parts.next(), parts.next()) else {
            return false;
        };
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap();
        let key = jwks["keys"].as_array().unwrap().iter().find(|k| k["kid"] == header["kid"]);
        let Some(key) = key else { return false };
        let mut point = vec![4u8];
        point.extend(URL_SAFE_NO_PAD.decode(key["x"].as_str().unwrap()).unwrap());
        point.extend(URL_SAFE_NO_PAD.decode(key["y"].as_str().unwrap()).unwrap());
        let message = format!("{header_b64}.{body}", header_b64 = token.split('.').next().unwrap());
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .verify(message.as_bytes(), &URL_SAFE_NO_PAD.decode(sig).unwrap())
            .is_ok()
    }

    #[test]
    fn tokens_verify_against_the_published_keys_across_a_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("oidc");
        let first = Issuer::load_or_create(&keys, "https://api.example/").unwrap();
        assert_eq!(first.url(), "https://api.example");
        let old_token = first.sign(&claims()).unwrap();
        assert!(verify(&old_token, &first.jwks()));
        use std::os::unix::fs::PermissionsExt;
        let file = key_files(&keys).unwrap().remove(0);
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);

        // A rotation: the new key signs, the old one still verifies.
        let kid = rotate(&keys).unwrap();
        let second = Issuer::load_or_create(&keys, "https://api.example").unwrap();
        let new_token = second.sign(&claims()).unwrap();
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(new_token.split('.').next().unwrap()).unwrap())
                .unwrap();
        assert_eq!(header["kid"], kid.as_str());
        assert!(verify(&new_token, &second.jwks()) && verify(&old_token, &second.jwks()));
        // Two rotations on, the first key is gone.
        rotate(&keys).unwrap();
        let third = Issuer::load_or_create(&keys, "https://api.example").unwrap();
        assert!(!verify(&old_token, &third.jwks()) && verify(&new_token, &third.jwks()));
        assert_eq!(third.jwks()["keys"].as_array().unwrap().len(), 2);
        assert!(!format!("{third:?}").contains("pair"), "Debug shows only key ids");
    }
}
