//! Creating the first organization and its owner.

use heimdall_core::audit::AuditAction;
use heimdall_core::clock::Clock;
use heimdall_core::domain::{Member, Organization, Role};
use heimdall_core::ids::{EventId, MemberId, OrgId, TokenId};
use heimdall_core::names::{normalize_email, validate_name};
use heimdall_core::ports::{MetadataStore, NewEvent, NewToken};
use heimdall_core::token::TokenHash;
use heimdall_core::{ApiError, ErrorCode, Redacted};
use heimdall_wire::Bootstrapped;
use uuid::Uuid;

use crate::http::people::tokens::generate_token;

/// Creates the organization, its owner and the owner's first token. The
/// token is in the result and nowhere else; it is never stored in clear.
pub async fn bootstrap(
    store: &dyn MetadataStore,
    clock: &dyn Clock,
    org_name: &str,
    owner_email: &str,
) -> Result<Bootstrapped, ApiError> {
    validate_name("organization name", org_name)?;
    let email = normalize_email(owner_email)?;
    let now = clock.now();
    let org =
        Organization { id: OrgId::from_uuid(Uuid::new_v4()), name: org_name.to_owned(), created_at: now };
    let owner = Member {
        id: MemberId::from_uuid(Uuid::new_v4()),
        org_id: org.id,
        email: email.clone(),
        role: Role::Owner,
        created_at: now,
    };
    let token: Redacted<String> = generate_token();
    let new_token = NewToken {
        id: TokenId::from_uuid(Uuid::new_v4()),
        name: "bootstrap".into(),
        hash: TokenHash::of(token.expose()),
        expires_at: None,
    };
    let event = NewEvent {
        id: EventId::from_uuid(Uuid::new_v4()),
        at: now,
        actor: "system".into(),
        action: AuditAction::OrganizationBootstrapped,
        target: format!("organization:{}", org.id),
        detail: serde_json::json!({ "name": org.name, "owner": email }),
    };
    store.bootstrap(&org, &owner, &new_token, event).await?;
    Ok(Bootstrapped { organization: org, owner, token: token.expose().clone() })
}

/// `bootstrap --if-absent` with a token file that is already there: the
/// member and organization its token opens in this database. A file from
/// another database (or with a revoked token) is refused, so that a script
/// that bootstraps on every start never carries on with a token that opens
/// nothing.
pub async fn kept_token(
    store: &dyn MetadataStore,
    path: &std::path::Path,
) -> Result<(Member, Organization), ApiError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ApiError::invalid_input(format!("cannot read {}: {e}", path.display())))?;
    let token = Redacted::new(text.trim().to_owned());
    match store.authenticate(&TokenHash::of(token.expose()), time::OffsetDateTime::now_utc()).await? {
        Some(opened) => Ok(opened),
        None => Err(ApiError::new(
            ErrorCode::Unauthenticated,
            format!(
                "{} holds no active token of this database: it is from another database, or was revoked",
                path.display()
            ),
        )),
    }
}

/// Where `heimdall-api bootstrap --token-file` puts the owner's token:
/// made (empty, mode 0600) before the organization is, so that a file that
/// cannot be made stops the bootstrap before it starts; removed again if the
/// bootstrap fails.
#[derive(Debug)]
pub struct TokenFile {
    pub path: std::path::PathBuf,
    file: Option<std::fs::File>,
}

impl TokenFile {
    pub fn create(path: &std::path::Path) -> Result<Self, crate::key_files::KeyFileError> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path);
        let file = file.map_err(crate::key_files::KeyFileError::io("create", path))?;
        Ok(Self { path: path.to_owned(), file: Some(file) })
    }

    /// Writes the token and a newline; returns where.
    pub fn write(mut self, token: &str) -> Result<std::path::PathBuf, crate::key_files::KeyFileError> {
        use std::io::Write;
        let file = self.file.take();
        let written = file.map(|mut f| {
            f.write_all(token.as_bytes()).and_then(|()| f.write_all(b"\n")).and_then(|()| f.sync_all())
        });
        match written {
            Some(Ok(())) => Ok(self.path.clone()),
            _ => Err(crate::key_files::KeyFileError::Unusable {
                path: self.path.clone(),
                reason: "cannot be written; the organization was created, its token is lost",
            }),
        }
    }
}

impl Drop for TokenFile {
    /// A file never written (the bootstrap failed) is removed.
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
