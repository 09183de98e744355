//! Programs' writes and deletions through their Agent, and the Agent's
//! program tokens, as use cases run once for every adapter. A program is
//! decided by its token's id, never its name: the token must be one this
//! Agent registered, live, inside an owner's allowance, in an environment
//! the Agent holds, and the organization's policies must let that token
//! do it (`organization_allows`). The grant the API then signs is the
//! adapter's (the CA's key is its own).

use std::sync::Arc;

use time::OffsetDateTime;

use super::{
    accessor, check_caller, check_registered_call, organization_allows, NewToken, RegisteredToken, Verb,
};
use crate::authz::{secret_target, OrgPolicies};
use crate::domain::{CatalogEntry, CatalogKind};
use crate::error::ApiError;
use crate::ids::{CatalogId, OrgId, SecretId};
use crate::infra::Agent;
use crate::ports::{
    AssignmentStore, CatalogStore, DeletionStore, HoldingStore, ProgramAllowanceStore, ProgramStore,
    Recorder, SecretRecordStore, VersionStore,
};
use crate::secrets::{version_event, Secret, SecretVersion, VersionAsked};

/// The organization's policies, compiled, as the adapter keeps them (it
/// may reuse a compiled set while the policies are unchanged).
#[async_trait::async_trait]
pub trait PolicySource: Send + Sync {
    async fn org_policies(&self, org: OrgId) -> Result<Arc<OrgPolicies>, ApiError>;
}

/// Every port programs' use cases read or write.
pub trait ProgramStores:
    CatalogStore
    + SecretRecordStore
    + ProgramStore
    + ProgramAllowanceStore
    + AssignmentStore
    + DeletionStore
    + HoldingStore
    + VersionStore
{
}
impl<T> ProgramStores for T where
    T: CatalogStore
        + SecretRecordStore
        + ProgramStore
        + ProgramAllowanceStore
        + AssignmentStore
        + DeletionStore
        + HoldingStore
        + VersionStore
        + ?Sized
{
}

/// A program as its Agent names it: its token's id and its name.
#[derive(Clone, Copy, Debug)]
pub struct Program<'a> {
    pub token_id: &'a str,
    pub name: &'a str,
}

/// What a program asks for: a verb on a secret in an environment, by id.
#[derive(Clone, Copy, Debug)]
pub struct Asked {
    pub verb: Verb,
    pub secret: SecretId,
    pub environment: CatalogId,
}

/// The secret and environment a program asks for, once everything lets
/// it do `asked.verb` there through `agent`.
async fn allowed<S: ProgramStores + ?Sized>(
    store: &S,
    (policies, now): (&dyn PolicySource, OffsetDateTime),
    agent: &Agent,
    who: Program<'_>,
    asked: Asked,
) -> Result<(Secret, CatalogEntry), ApiError> {
    let org = agent.org_id;
    check_caller(who.token_id, who.name)?;
    let env = store.get_catalog_entry(org, asked.environment).await?;
    if env.kind != CatalogKind::Environment {
        return Err(ApiError::not_found("environment"));
    }
    let secret = store.get_secret(org, asked.secret).await?;
    let tokens = store.program_tokens(org, agent.id).await?;
    let allowances = store.program_allowances(org, agent.id).await?;
    check_registered_call(
        &agent.name,
        tokens.iter().find(|t| t.id == who.token_id),
        who.name,
        asked.verb,
        &secret.name,
        (env.id, &env.name),
        &allowances,
        now,
    )?;
    let holds = store.list_assignments(org, env.id).await?.iter().any(|a| a.agent_id == agent.id);
    if !holds {
        return Err(ApiError::forbidden(format!(
            "Agent {} does not hold environment {}: its programs write nothing there",
            agent.name, env.name
        )));
    }
    let tree = crate::catalog::service::tree(store, org).await?;
    let target = secret_target(secret.id, secret.owner_id, &secret.components, &tree);
    let compiled = policies.org_policies(org).await?;
    let personal = secret.owner_id.is_some();
    let by = accessor(who.name, &agent.id.to_string());
    organization_allows(org, who.token_id, &by, asked.verb, personal, &target, &env.name, &compiled)?;
    Ok((secret, env))
}

/// A version numbered for a program: what its grant names.
#[derive(Clone, Debug)]
pub struct Numbered {
    pub secret: Secret,
    pub environment: CatalogEntry,
    pub version: SecretVersion,
    /// How the program is named in the trail and the grant.
    pub accessor: String,
    pub at: OffsetDateTime,
}

/// Numbers the next version of the secret for a program's write through
/// `agent` (refused while it is being deleted there or everywhere, and
/// when `signer` says no grant can be signed).
pub async fn number_version<S: ProgramStores + ?Sized>(
    store: &S,
    (recorder, policies): (&dyn Recorder, &dyn PolicySource),
    agent: &Agent,
    (who, (secret, environment)): (Program<'_>, (SecretId, CatalogId)),
    signer: impl FnOnce() -> Result<(), ApiError>,
) -> Result<Numbered, ApiError> {
    let asked = Asked { verb: Verb::Write, secret, environment };
    let (secret, env) = allowed(store, (policies, recorder.now()), agent, who, asked).await?;
    crate::secrets::versions::may_take_version(store, agent.org_id, &secret, &env).await?;
    // No number is taken that no grant could follow.
    signer()?;
    let by = accessor(who.name, &agent.id.to_string());
    let event = recorder.event(&by, version_event((secret.id, &secret.name), &env.name, Some(agent.id)));
    let at = event.at;
    let stored = VersionAsked { created_by: &by, bind: None, keep_previous: time::Duration::ZERO };
    let version = store.create_version(agent.org_id, secret.id, env.id, stored, event).await?;
    Ok(Numbered { secret, environment: env, version, accessor: by, at })
}

/// Starts deleting the secret in one environment for a program, as
/// `secret delete NAME --environment E` does (`secrets::service::start_deletion`).
pub async fn delete<S: ProgramStores + ?Sized>(
    store: &S,
    (recorder, policies): (&dyn Recorder, &dyn PolicySource),
    agent: &Agent,
    who: Program<'_>,
    ((secret, environment), stale_after): ((SecretId, CatalogId), time::Duration),
) -> Result<(Secret, CatalogEntry), ApiError> {
    let asked = Asked { verb: Verb::Delete, secret, environment };
    let (secret, env) = allowed(store, (policies, recorder.now()), agent, who, asked).await?;
    let by = accessor(who.name, &agent.id.to_string());
    let mut holdings = store.holdings_of_secret(agent.org_id, &secret.name).await?;
    holdings.retain(|h| h.environment == env.name);
    let when = (recorder.now(), stale_after);
    let stamp = |planned| recorder.event(&by, planned);
    crate::secrets::service::start_deletion(
        store,
        (agent.org_id, &secret, Some(&env)),
        &holdings,
        when,
        stamp,
    )
    .await?;
    Ok((secret, env))
}

/// Registers a token `agent` made: its environment one the Agent holds,
/// its writes and deletions inside an owner's allowance (`register`).
pub async fn register_token<S: ProgramStores + ?Sized>(
    store: &S,
    recorder: &dyn Recorder,
    agent: &Agent,
    request: NewToken,
) -> Result<RegisteredToken, ApiError> {
    let org = agent.org_id;
    let environments = store.list_catalog(org, CatalogKind::Environment, None).await?;
    let held = crate::secrets::service::environments_held(store, org, agent.id).await?;
    let allowances = store.program_allowances(org, agent.id).await?;
    let planned = super::register(request, agent, (&environments, &held), &allowances, recorder.now())?;
    let event = recorder.event(&format!("agent:{}", agent.name), planned.event);
    store.register_program_token(org, &planned.token, event).await?;
    Ok(planned.token)
}

/// Revokes one of `agent`'s tokens (it already was: nothing changes);
/// another Agent's token, or none, is not found.
pub async fn revoke_token<S: ProgramStores + ?Sized>(
    store: &S,
    recorder: &dyn Recorder,
    agent: &Agent,
    id: &str,
) -> Result<(), ApiError> {
    let tokens = store.program_tokens(agent.org_id, agent.id).await?;
    if !tokens.iter().any(|t| t.id == id) {
        return Err(ApiError::not_found("program token"));
    }
    let by = format!("agent:{}", agent.name);
    store.revoke_program_tokens(agent.org_id, agent.id, &[id.to_owned()], recorder.now(), &by).await?;
    Ok(())
}
