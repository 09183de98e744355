//! Ports: what core needs from the outside world, in core's own types.
//!
//! Adapters implement these (`heimdall-api`'s SQL store for PostgreSQL and
//! SQLite). Architecture Invariant: no driver type (sqlx, tokio, …) appears
//! in a port's signature; storage failures are [`StoreError`].

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::domain::{
    AuditEvent, CatalogEntry, CatalogKind, Member, Organization, Policy, Role, TokenInfo,
};
use crate::error::{ApiError, ErrorCode};
use crate::ids::{CatalogId, EventId, MemberId, OrgId, PolicyId, TokenId};
use crate::token::TokenHash;

/// Why a store operation failed, in terms a caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("a {0} with that name already exists here")]
    AlreadyExists(&'static str),
    #[error("{0}")]
    NotEmpty(String),
    #[error("the organization's last owner cannot be removed or demoted")]
    LastOwner,
    #[error("this database already has an organization; bootstrap runs once")]
    AlreadyBootstrapped,
    /// The backend failed (connection lost, disk full, …). The message is
    /// for operators' logs; it never reaches an API response.
    #[error("storage unavailable: {0}")]
    Backend(String),
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound(what) => ApiError::not_found(what),
            StoreError::AlreadyExists(_) => ApiError::new(ErrorCode::AlreadyExists, err.to_string()),
            StoreError::NotEmpty(msg) => ApiError::new(ErrorCode::NotEmpty, msg),
            StoreError::LastOwner => ApiError::new(ErrorCode::LastOwner, err.to_string()),
            StoreError::AlreadyBootstrapped => {
                ApiError::new(ErrorCode::AlreadyBootstrapped, err.to_string())
            }
            StoreError::Backend(_) => ApiError::new(ErrorCode::Internal, "internal storage error"),
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// An audit event to be written in the same transaction as the change it
/// describes: either both are stored or neither.
#[derive(Clone, Debug)]
pub struct NewEvent {
    pub id: EventId,
    pub at: OffsetDateTime,
    pub actor: String,
    pub action: String,
    pub target: String,
    pub detail: serde_json::Value,
}

impl NewEvent {
    pub fn into_event(self, org_id: OrgId) -> AuditEvent {
        AuditEvent {
            id: self.id,
            org_id,
            at: self.at,
            actor: self.actor,
            action: self.action,
            target: self.target,
            detail: self.detail,
        }
    }
}

/// A newly issued token: its id, whose it is and its hash (never the token).
#[derive(Clone, Debug)]
pub struct NewToken {
    pub id: TokenId,
    pub name: String,
    pub hash: TokenHash,
}

/// Query for the audit feed, newest first.
#[derive(Clone, Debug, Default)]
pub struct EventQuery {
    pub limit: u32,
    /// Only events strictly older than this one (keyset pagination).
    pub before: Option<OffsetDateTime>,
    pub action_prefix: Option<String>,
}

/// Metadata storage for the API. Every method is scoped to one organization
/// where it touches tenant data.
#[async_trait]
pub trait MetadataStore: Send + Sync + std::fmt::Debug {
    /// Creates the first organization with its owner and the owner's first
    /// token. Refused once any organization exists.
    async fn bootstrap(
        &self,
        org: &Organization,
        owner: &Member,
        token: &NewToken,
        event: NewEvent,
    ) -> StoreResult<()>;

    /// The member and organization an active token belongs to.
    async fn authenticate(&self, hash: &TokenHash) -> StoreResult<Option<(Member, Organization)>>;

    // Members and tokens.
    async fn add_member(&self, member: &Member, token: &NewToken, event: NewEvent) -> StoreResult<()>;
    async fn list_members(&self, org: OrgId) -> StoreResult<Vec<Member>>;
    async fn get_member(&self, org: OrgId, id: MemberId) -> StoreResult<Member>;
    async fn find_member_by_email(&self, org: OrgId, email: &str) -> StoreResult<Option<Member>>;
    /// Changes a role; refuses with `LastOwner` (checked in the transaction)
    /// if no owner would remain.
    async fn change_role(&self, org: OrgId, id: MemberId, role: Role, event: NewEvent)
        -> StoreResult<Member>;
    /// Removes a member and revokes all their tokens, atomically; refuses
    /// with `LastOwner` if no owner would remain.
    async fn remove_member(&self, org: OrgId, id: MemberId, event: NewEvent) -> StoreResult<Member>;
    async fn create_token(&self, org: OrgId, member: MemberId, token: &NewToken, event: NewEvent)
        -> StoreResult<TokenInfo>;
    async fn list_tokens(&self, org: OrgId, member: MemberId) -> StoreResult<Vec<TokenInfo>>;
    async fn revoke_token(&self, org: OrgId, member: MemberId, id: TokenId, event: NewEvent)
        -> StoreResult<TokenInfo>;

    // Catalog.
    async fn create_catalog_entry(&self, entry: &CatalogEntry, event: NewEvent) -> StoreResult<()>;
    async fn list_catalog(
        &self,
        org: OrgId,
        kind: CatalogKind,
        parent: Option<CatalogId>,
    ) -> StoreResult<Vec<CatalogEntry>>;
    async fn get_catalog_entry(&self, org: OrgId, id: CatalogId) -> StoreResult<CatalogEntry>;
    /// Entries of `kind` with this name, anywhere in the organization
    /// (a system's name is unique only within its domain).
    async fn find_catalog_by_name(
        &self,
        org: OrgId,
        kind: CatalogKind,
        name: &str,
    ) -> StoreResult<Vec<CatalogEntry>>;
    async fn rename_catalog_entry(
        &self,
        org: OrgId,
        id: CatalogId,
        name: &str,
        event: NewEvent,
    ) -> StoreResult<CatalogEntry>;
    /// Deletes an entry that contains nothing; `NotEmpty` otherwise.
    async fn delete_catalog_entry(&self, org: OrgId, id: CatalogId, event: NewEvent) -> StoreResult<()>;

    // Policies.
    async fn create_policy(&self, policy: &Policy, event: NewEvent) -> StoreResult<()>;
    async fn list_policies(&self, org: OrgId) -> StoreResult<Vec<Policy>>;
    async fn get_policy(&self, org: OrgId, id: PolicyId) -> StoreResult<Policy>;
    async fn delete_policy(&self, org: OrgId, id: PolicyId, event: NewEvent) -> StoreResult<()>;

    // Audit feed.
    async fn list_events(&self, org: OrgId, query: &EventQuery) -> StoreResult<Vec<AuditEvent>>;
}
