//! Program tokens, made by whoever runs the Agent (`heimdall-agent token
//! create|list|revoke`) and local to it: the API never sees them. The
//! list is kept sealed next to the Agent's key ([`crate::sealed_file`]):
//! only each token's SHA-256 is in it, and a list edited without the
//! master key does not open, so nobody adds a token by writing a file.
//! The running Agent reads the list again whenever the file changes.
//! What a token reaches is decided in `heimdall_core::program`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use aes_gcm::aead::rand_core::RngCore;
use aes_gcm::aead::OsRng;
use heimdall_core::ids::AgentId;
use heimdall_core::program::{self, ProgramScope, RegisteredToken, Verb};
use heimdall_core::{ApiError, ErrorCode};
use heimdall_wire::RegisterProgramToken;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use time::OffsetDateTime;
use zeroize::Zeroizing;

use crate::alerts::Alerts;
use crate::files::FileError;
use crate::sealed_file::{Order, SealedFile, SealedFileError};

/// Why a token was not made, revoked or listed.
#[derive(Debug, thiserror::Error)]
pub enum TokenListError {
    #[error(transparent)]
    Sealed(#[from] SealedFileError),
    #[error(transparent)]
    File(#[from] FileError),
    /// What was asked cannot be done (a bad scope, a name in use, no such
    /// live token); the message says why.
    #[error("{0}")]
    Refused(String),
    /// The API refused or could not register the token: nothing was kept.
    #[error("{0}")]
    NotRegistered(String),
}

use crate::values::vault::Vault;

/// The file's name, next to the Agent's certificate and key.
pub const FILE_NAME: &str = "program-tokens.sealed";
/// Held (an exclusive lock) by a command while it changes the list.
const LOCK_NAME: &str = "program-tokens.lock";
/// Bound into the seal: the file opens as nothing else.
const PURPOSE: &str = "program-tokens";

/// What `token create` is asked for.
#[derive(Clone, Debug)]
pub struct NewToken {
    pub name: String,
    pub environment: String,
    pub secrets: Vec<String>,
    pub verbs: Vec<Verb>,
    pub expires_at: Option<OffsetDateTime>,
}

type Stamp = (u64, SystemTime, u64);

/// This Agent's token list.
#[derive(Debug)]
pub struct TokenFile {
    path: PathBuf,
    /// The list, sealed, bound to this Agent and a generation.
    file: SealedFile,
    agent: AgentId,
    /// The list as last read, and the file's (inode, modified time, length)
    /// then: every save is a new file, so a new inode.
    cached: Mutex<Option<(Stamp, Arc<Vec<ProgramScope>>)>>,
    /// Every token id this process has seen revoked: never live again here,
    /// whatever file comes after (one copied back from a backup).
    seen_revoked: Mutex<std::collections::HashSet<String>>,
}

impl TokenFile {
    pub fn new(dir: &Path, agent: AgentId, vault: Arc<Vault>, alerts: Alerts) -> Self {
        Self {
            path: dir.join(FILE_NAME),
            // Nothing else rewrites it: a crash mid-write must not lock
            // every token out (the API's live list guards revocations).
            file: SealedFile::new(dir.join(FILE_NAME), PURPOSE, agent, vault, alerts, Order::FileFirst),
            agent,
            cached: Mutex::new(None),
            seen_revoked: Mutex::new(std::collections::HashSet::new()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads how far the list was written from the value store: a copy put
    /// back from before that does not open. Before the first read.
    pub async fn load_floor(&self) -> Result<(), SealedFileError> {
        self.file.load_floor().await
    }

    /// Every token made here, revoked ones included (their records stay
    /// meaningful).
    pub fn list(&self) -> Result<Vec<ProgramScope>, SealedFileError> {
        let Some(plaintext) = self.file.read()? else {
            return Ok(Vec::new());
        };
        serde_json::from_slice(&plaintext).map_err(|e| self.file.content(e))
    }

    async fn save(&self, scopes: &[ProgramScope]) -> Result<(), SealedFileError> {
        let plaintext = Zeroizing::new(serde_json::to_vec(scopes).map_err(|e| self.file.content(e))?);
        self.file.write(&plaintext).await
    }

    /// An exclusive lock on a file beside the list, held while a command
    /// reads, changes and writes it: `token create` and `token revoke` run
    /// at once each see the other's change.
    fn lock(&self) -> Result<std::fs::File, FileError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.path.with_file_name(LOCK_NAME);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(FileError::on("open", &path))?;
        file.lock().map_err(FileError::on("lock", &path))?;
        Ok(file)
    }

    /// Makes a token: registers its id and scope with `register` (the API,
    /// which answers with its environment's id, or refuses), then keeps it;
    /// returns the token (shown once) and its scope, of which only the
    /// token's hash is kept. A name still in use by a live token is
    /// refused, so records name one program.
    pub async fn create<F, Fut>(
        &self,
        new: NewToken,
        now: OffsetDateTime,
        register: F,
    ) -> Result<(Zeroizing<String>, ProgramScope), TokenListError>
    where
        F: FnOnce(RegisterProgramToken) -> Fut,
        Fut: std::future::Future<Output = Result<RegisteredToken, String>>,
    {
        program::check_new(&new.name, &new.environment, &new.secrets, &new.verbs)
            .map_err(|e| TokenListError::Refused(e.message))?;
        if new.expires_at.is_some_and(|at| at <= now) {
            return Err(TokenListError::Refused("--expires must be in the future".into()));
        }
        let _held = self.lock()?;
        let mut scopes = self.list()?;
        if scopes.iter().any(|s| s.name == new.name && program::check_alive(s, now).is_ok()) {
            return Err(TokenListError::Refused(format!(
                "a live token is already named {}; revoke it first, or pick another name",
                new.name
            )));
        }
        let mut id = [0u8; program::ID_LEN / 2];
        let mut secret = Zeroizing::new([0u8; 32]);
        OsRng.fill_bytes(&mut id);
        OsRng.fill_bytes(secret.as_mut());
        let id = hex::encode(id);
        let registered = register(RegisterProgramToken {
            id: id.clone(),
            name: new.name.clone(),
            environment: new.environment.clone(),
            secrets: new.secrets.clone(),
            verbs: new.verbs.clone(),
            expires_at: new.expires_at,
        })
        .await
        .map_err(TokenListError::NotRegistered)?;
        let token = Zeroizing::new(program::format_token(self.agent, &id, &hex::encode(secret.as_ref())));
        let scope = ProgramScope {
            id,
            name: new.name,
            environment: registered.environment,
            environment_id: Some(registered.environment_id),
            secrets: new.secrets,
            verbs: new.verbs,
            created_at: now,
            expires_at: new.expires_at,
            revoked_at: None,
            token_sha256: hex::encode(Sha256::digest(token.as_bytes())),
        };
        scopes.push(scope.clone());
        self.save(&scopes).await?;
        Ok((token, scope))
    }

    /// Revokes the live token with this id or name here: the running
    /// Agent refuses it from its next request. The caller tells the API
    /// (and the Agent's next sync does, if that failed).
    pub async fn revoke(
        &self,
        id_or_name: &str,
        now: OffsetDateTime,
    ) -> Result<ProgramScope, TokenListError> {
        let _held = self.lock()?;
        let mut scopes = self.list()?;
        let found = scopes
            .iter_mut()
            .find(|s| (s.id == id_or_name || s.name == id_or_name) && program::check_alive(s, now).is_ok())
            .ok_or_else(|| {
                TokenListError::Refused(format!("no live token has the id or name {id_or_name}"))
            })?;
        found.revoked_at = Some(now);
        let revoked = found.clone();
        self.save(&scopes).await?;
        Ok(revoked)
    }

    /// The ids of tokens revoked here, as the list is now.
    pub fn revoked_ids(&self) -> Result<Vec<String>, TokenListError> {
        Ok(self.current()?.iter().filter(|s| s.revoked_at.is_some()).map(|s| s.id.clone()).collect())
    }

    /// The scope of a presented token: made by this Agent, found by its
    /// id, its hash compared in constant time, and alive at `now`.
    pub fn authenticate(&self, token: &str, now: OffsetDateTime) -> Result<ProgramScope, ApiError> {
        let refused = || ApiError::new(ErrorCode::Unauthenticated, "this program token is not valid here");
        let parts = program::parse_token(token).filter(|p| p.agent == self.agent).ok_or_else(refused)?;
        let id = parts.id;
        let scopes = self.current().map_err(|e| {
            tracing::error!(error = %e, "program tokens cannot be read; every token is refused");
            refused()
        })?;
        let scope = scopes.iter().find(|s| s.id == id).ok_or_else(refused)?;
        let seen_revoked = self.seen_revoked.lock().map_err(|_| refused())?.contains(id);
        if seen_revoked {
            return Err(ApiError::new(
                ErrorCode::Unauthenticated,
                "this program token is revoked or expired",
            ));
        }
        let presented = hex::encode(Sha256::digest(token.as_bytes()));
        if !bool::from(presented.as_bytes().ct_eq(scope.token_sha256.as_bytes())) {
            return Err(refused());
        }
        program::check_alive(scope, now)?;
        Ok(scope.clone())
    }

    /// The list, read again only when the file changed.
    fn current(&self) -> Result<Arc<Vec<ProgramScope>>, TokenListError> {
        let stamp = match std::fs::metadata(&self.path) {
            Ok(meta) => {
                use std::os::unix::fs::MetadataExt;
                (meta.ino(), meta.modified().map_err(FileError::on("read", &self.path))?, meta.len())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Arc::new(Vec::new())),
            Err(e) => return Err(FileError::on("read", &self.path)(e).into()),
        };
        let mut cached = self.cached.lock().map_err(|_| self.file.content("its lock is poisoned"))?;
        if let Some((_, scopes)) = cached.as_ref().filter(|(at, _)| *at == stamp) {
            return Ok(scopes.clone());
        }
        let scopes = Arc::new(self.list()?);
        if let Ok(mut seen) = self.seen_revoked.lock() {
            seen.extend(scopes.iter().filter(|s| s.revoked_at.is_some()).map(|s| s.id.clone()));
        }
        *cached = Some((stamp, scopes.clone()));
        Ok(scopes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::crypto::MasterKey;

    #[tokio::test]
    async fn tokens_are_kept_hashed_sealed_and_revocable() {
        let dir = tempfile::tempdir().unwrap();
        let master = MasterKey::from_text(&"5e".repeat(32), "test").unwrap();
        let vault = Arc::new(
            crate::values::store::sqlite::open(&dir.path().join("values.db"), &master).await.unwrap(),
        );
        let agent = AgentId::from_uuid(uuid::Uuid::new_v4());
        let file = TokenFile::new(dir.path(), agent, vault.clone(), Alerts::default());
        file.load_floor().await.unwrap();
        let now = OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000);
        let new = NewToken {
            name: "billing-api".into(),
            environment: "prod".into(),
            secrets: vec!["billing-*".into()],
            verbs: vec![Verb::Read],
            expires_at: Some(now + time::Duration::days(90)),
        };
        let env = heimdall_core::ids::CatalogId::from_uuid(uuid::Uuid::new_v4());
        let register = |asked: RegisterProgramToken| async move {
            Ok(RegisteredToken {
                id: asked.id,
                agent_id: agent,
                name: asked.name,
                environment_id: env,
                environment: asked.environment,
                secrets: asked.secrets,
                verbs: asked.verbs,
                created_at: now,
                expires_at: asked.expires_at,
                revoked_at: None,
            })
        };
        let (token, scope) = file.create(new.clone(), now, register).await.unwrap();
        assert_eq!(scope.environment_id, Some(env), "bound to the environment's id the API gave");
        assert!(file.create(new.clone(), now, register).await.is_err(), "one live token per name");
        let refused = |_| async { Err::<RegisteredToken, _>("the API refused".to_owned()) };
        let other = NewToken { name: "other".into(), ..new.clone() };
        assert!(file.create(other, now, refused).await.is_err());
        assert_eq!(file.list().unwrap().len(), 1, "a token the API refused is not kept");
        let on_disk = std::fs::read(file.path()).unwrap();
        assert!(!on_disk.windows(scope.token_sha256.len()).any(|w| w == scope.token_sha256.as_bytes()));
        assert!(!on_disk.windows(11).any(|w| w == b"billing-api"), "the list is sealed");
        assert_eq!(file.authenticate(&token, now).unwrap().name, "billing-api");
        let mut wrong = token.to_string();
        wrong.pop();
        wrong.push(if token.ends_with('0') { '1' } else { '0' });
        assert_eq!(file.authenticate(&wrong, now).unwrap_err().code, ErrorCode::Unauthenticated);
        let later = now + time::Duration::days(90);
        assert_eq!(file.authenticate(&token, later).unwrap_err().code, ErrorCode::Unauthenticated);

        // Another Agent's list does not open here.
        let stranger =
            TokenFile::new(dir.path(), AgentId::from_uuid(uuid::Uuid::new_v4()), vault, Alerts::default());
        assert!(stranger.list().is_err());
        assert_eq!(stranger.authenticate(&token, now).unwrap_err().code, ErrorCode::Unauthenticated);

        file.revoke("billing-api", now).await.unwrap();
        assert_eq!(file.authenticate(&token, now).unwrap_err().code, ErrorCode::Unauthenticated);
        assert_eq!(file.revoked_ids().unwrap(), vec![scope.id.clone()]);
        assert!(file.create(new, now, register).await.is_ok(), "the name is free again");
    }
}
