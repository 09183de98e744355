//! Numbering a new version of a secret, as a use case run once for every
//! adapter: who may write it where, when a deletion refuses it, which
//! Agents will hold it and, for a personal secret, which keys open it.
//! The adapter then signs one write grant per holder (the CA's key is its
//! own); the value goes from the writer to those Agents, never through
//! here.

use time::OffsetDateTime;

use super::service::{resolve, target};
use super::views::{holders_among, Holder};
use super::{new_version, Secret, SecretVersion, VersionAsked, Writer};
use crate::authz::Action;
use crate::domain::{CatalogEntry, CatalogKind};
use crate::error::ApiError;
use crate::ids::OrgId;
use crate::ports::{
    Actor, AgentRecordStore, AssignmentStore, CatalogStore, CertificateStore, DeletionStore,
    SecretRecordStore, VersionStore,
};
use crate::Sha256Hex;

/// What a writer asks for.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    /// The environment, by id or name.
    pub environment: &'a str,
    /// For a personal secret: the key (her certificate's) that opens it.
    pub certificate_sha256: Option<&'a Sha256Hex>,
    /// How long the version it replaces stays readable (`30m`, `1d`; none:
    /// not at all).
    pub keep_previous: Option<&'a str>,
}

/// A version numbered: where it goes and who is to hold it.
#[derive(Clone, Debug)]
pub struct Numbered {
    pub secret: Secret,
    pub environment: CatalogEntry,
    pub version: SecretVersion,
    /// For a personal secret: the keys that open its value at an Agent.
    pub owner_keys: Option<Vec<Sha256Hex>>,
    /// The Agents to send the value to, in the order they were assigned.
    pub holders: Vec<Holder>,
    /// When it was numbered (what the grants count from).
    pub at: OffsetDateTime,
}

/// Numbers the next version of `key` in the environment asked, for a
/// writer the policies let write it there (`secret.write`): refused
/// while the secret is being deleted there or everywhere, and `NO_AGENT`
/// when no Agent holds the environment; `signer` says whether the adapter
/// can sign the grants (asked once the caller is known to be allowed).
/// Stored with its event in one store call.
pub async fn number<S>(
    store: &S,
    actor: &dyn Actor,
    (key, asked): (&str, Asked<'_>),
    signer: impl FnOnce() -> Result<(), ApiError>,
) -> Result<Numbered, ApiError>
where
    S: SecretRecordStore
        + CatalogStore
        + DeletionStore
        + AssignmentStore
        + AgentRecordStore
        + CertificateStore
        + VersionStore
        + ?Sized,
{
    let (org, now) = (actor.org(), actor.now());
    let secret = resolve(store, actor, key).await?;
    let environment =
        crate::catalog::service::resolve(store, org, CatalogKind::Environment, asked.environment).await?;
    actor.authorize_in(Action::SecretWrite, &target(store, actor, &secret).await?, &environment.name).await?;
    may_take_version(store, org, &secret, &environment).await?;
    // No number is taken that no grant could follow.
    signer()?;
    let assigned = store.list_assignments(org, environment.id).await?;
    let holders = holders_among(store, org, &assigned, now).await?;
    let certificates = match asked.certificate_sha256 {
        Some(_) => store.active_member_certificates(org, now).await?,
        None => Vec::new(),
    };
    let keep_previous = match asked.keep_previous {
        Some(text) => crate::retention::parse_keep_previous(text)?,
        None => time::Duration::ZERO,
    };
    let writer = Writer { member: actor.member(), certificate_sha256: asked.certificate_sha256 };
    let plan = new_version(&secret, &environment.name, holders.len(), writer, &certificates)?;
    let event = actor.event(plan.event);
    let at = event.at;
    let stored = VersionAsked { created_by: actor.name(), bind: plan.bind.as_ref(), keep_previous };
    let version = store.create_version(org, secret.id, environment.id, stored, event).await?;
    Ok(Numbered { secret, environment, version, owner_keys: plan.owner_keys, holders, at })
}

/// Refuses a new version of `secret` in `environment` while it is being
/// deleted, there or everywhere (`deletion::may_take_version`). People
/// and programs write through here.
pub async fn may_take_version<S: DeletionStore + ?Sized>(
    store: &S,
    org: OrgId,
    secret: &Secret,
    environment: &CatalogEntry,
) -> Result<(), ApiError> {
    let here = store
        .environment_deletions(org)
        .await?
        .into_iter()
        .find(|d| d.secret == secret.name && d.environment_id == environment.id)
        .map(|d| d.status);
    crate::deletion::may_take_version(&secret.name, secret.status.lifecycle(), &environment.name, here)
}
