//! An Agent's sync, once for every adapter: the Agent reports the reads it
//! served and what its store holds, and is answered with what it decides
//! reads with. Everything the request carries is checked before anything
//! is written; then the reads are stored (a revoked Agent's too), the
//! inventory, alerts and revoked program tokens; then, for an Agent still
//! serving, the answer is loaded and decided here (`standing`, `current`,
//! `lagging`, `transfer`, `retention`, `current_delta`, `deletion`).
//! The adapter parses the request, maps it to a [`Report`], and maps the
//! [`Synced`] it gets back to its wire; metrics and logs are its own.

use time::OffsetDateTime;
use uuid::Uuid;

use crate::access::{AccessRecord, LEGACY_EPOCH};
use crate::audit::EventPlan;
use crate::current::{CurrentVersion, Held};
use crate::current_delta::Answered;
use crate::domain::{CatalogEntry, CatalogKind, Member, Policy};
use crate::error::{ApiError, ErrorCode};
use crate::ids::{AgentId, CatalogId, OrgId};
use crate::infra::Agent;
use crate::lagging::{Behind, LagAlert};
use crate::names::validate_text;
use crate::ports::{
    AccessStore, AgentStore, CertificateStore, EnvironmentDeletion, EventQuery, EventStore, InventoryStore,
    MemberStore, PolicyStore, ProgramAllowanceStore, ProgramStore, Recorder, Reported, ReportedAt,
    SecretChanges, SecretStore, SyncOutcome,
};
use crate::queue::service::{enrolled, Peer};
use crate::retention::Superseded;
use crate::secrets::views::Holder;
use crate::secrets::Assignment;
use crate::standing::{Standing, StandingStore};
use crate::transfer::PlannedTransfer;
use crate::Sha256Hex;

/// Most records one sync may carry; an Agent with more sends them over
/// several syncs.
pub const MAX_SYNC_RECORDS: usize = 10_000;

/// Most versions (values and tombstones) one Agent's inventory may report:
/// an Agent holding more is refused every sync. Versions erased by
/// retention are not reported.
pub const MAX_INVENTORY_ITEMS: usize = 200_000;

/// Most alerts one sync may raise.
pub const MAX_ALERTS: usize = 100;

/// Every port a sync reads or writes.
pub trait SyncStore:
    AgentStore
    + AccessStore
    + InventoryStore
    + EventStore
    + ProgramStore
    + ProgramAllowanceStore
    + CertificateStore
    + MemberStore
    + PolicyStore
    + SecretStore
    + StandingStore
{
}
impl<T> SyncStore for T where
    T: AgentStore
        + AccessStore
        + InventoryStore
        + EventStore
        + ProgramStore
        + ProgramAllowanceStore
        + CertificateStore
        + MemberStore
        + PolicyStore
        + SecretStore
        + StandingStore
        + ?Sized
{
}

/// Something an Agent found wrong on its own side (a sealed file copied
/// back), as the wire carries it.
pub trait RaisedAlert {
    /// Its fields are within what a sync may carry.
    fn check(&self) -> Result<(), ApiError>;
    /// The audit event it becomes, raised by `agent`.
    fn event(&self, agent: &Agent) -> EventPlan;
}

/// The installation's CA as a sync uses it: it signs what an Agent checks
/// offline (a transfer's grant, its local API's certificate status).
/// Ids are the adapter's (randomness is I/O).
pub trait Notary: Send + Sync {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, ApiError>;
    /// A new id for one grant.
    fn grant_id(&self) -> Uuid;
}

/// What the Agent sent, parsed.
#[derive(Debug)]
pub struct Report<'a, A> {
    /// Its store's numbering (`None`: [`LEGACY_EPOCH`]).
    pub epoch: Option<&'a str>,
    pub records_after: Option<i64>,
    pub records: &'a [AccessRecord],
    pub inventory: Vec<Reported>,
    pub applied_through: Option<OffsetDateTime>,
    pub local_url: Option<&'a str>,
    pub revoked_program_tokens: &'a [String],
    pub alerts: &'a [A],
    /// The generation its list of secrets is complete through.
    pub secrets_known: Option<i64>,
    /// It takes its own newest value as current wherever the answer is silent.
    pub current_omits_held: bool,
}

/// What a sync did, and the answer for an Agent still serving.
#[derive(Debug)]
pub struct Synced {
    pub agent: Agent,
    /// What its records did.
    pub received: SyncOutcome,
    /// `None`: the Agent is revoked; its reads are stored and it is told
    /// to stop (`queue::service::revoked`).
    pub answer: Option<Box<Answer>>,
}

/// A member as an Agent decides reads with: a read is served only to a
/// client certificate listed here.
#[derive(Debug)]
pub struct SyncedMember {
    pub member: Member,
    pub certificates: Vec<Sha256Hex>,
}

/// A version every Agent replaces with a tombstone, by environment name.
#[derive(Debug)]
pub struct Deactivated {
    pub secret: String,
    pub environment: String,
    pub version: i64,
}

/// A transfer for the syncing Agent, with the grant the CA signed naming it.
#[derive(Debug)]
pub struct Transfer {
    pub secret: String,
    pub environment: CatalogId,
    pub version: i64,
    /// The holders that have it, as it reaches them (a revoked one left out).
    pub sources: Vec<Holder>,
    pub grant: String,
}

/// An Agent behind too long, as recorded (`secret.holder_lagging`).
#[derive(Debug)]
pub struct Lagging {
    pub agent: String,
    pub environment: String,
    pub alert: LagAlert,
}

/// What the Agent is told.
#[derive(Debug)]
pub struct Answer {
    pub at: OffsetDateTime,
    pub members: Vec<SyncedMember>,
    pub secrets: SecretChanges,
    pub environments: Vec<CatalogEntry>,
    /// Domains, systems and components.
    pub catalog: Vec<CatalogEntry>,
    pub policies: Vec<Policy>,
    pub assignments: Vec<Assignment>,
    pub deactivated: Vec<Deactivated>,
    pub current: Answered,
    pub transfers: Vec<Transfer>,
    pub superseded: Vec<Superseded>,
    pub deleted_secrets: Vec<String>,
    /// Still sent a while after they are done (`deletion::still_sent`).
    pub deleted_in_environments: Vec<EnvironmentDeletion>,
    pub released_environments: Vec<CatalogId>,
    /// Signed by the CA; `None` without one.
    pub local_api_status: Option<String>,
    pub local_api_certificates: Vec<Sha256Hex>,
    pub live_program_tokens: Vec<String>,
    /// Who is behind across the organization, and how many transfers were
    /// planned for this Agent (for the adapter's metrics).
    pub behind: Vec<Behind>,
    pub planned: usize,
    /// The lag alerts raised now.
    pub lagging: Vec<Lagging>,
}

/// Refuses a report that carries more or longer than a sync may, before
/// anything of it is written.
pub fn check<A: RaisedAlert>(report: &Report<'_, A>) -> Result<(), ApiError> {
    if report.records.len() > MAX_SYNC_RECORDS {
        return Err(ApiError::invalid_input(format!("at most {MAX_SYNC_RECORDS} records per sync")));
    }
    if let Some(epoch) = report.epoch {
        validate_text("epoch", epoch, 64)?;
    }
    for record in report.records {
        if record.seq < 1 {
            return Err(ApiError::invalid_input("records[].seq starts at 1"));
        }
        if record.version < 1 {
            return Err(ApiError::invalid_input("records[].version starts at 1"));
        }
        validate_text("records[].accessor", &record.accessor, 320)?;
        validate_text("records[].secret", &record.secret, 200)?;
        validate_text("records[].environment", &record.environment, 200)?;
        validate_text("records[].from", &record.from, 100)?;
    }
    if report.inventory.len() > MAX_INVENTORY_ITEMS {
        return Err(ApiError::invalid_input(format!(
            "at most {MAX_INVENTORY_ITEMS} inventory items per sync"
        )));
    }
    for item in &report.inventory {
        validate_text("inventory[].secret", &item.secret, 200)?;
        validate_text("inventory[].environment", &item.environment, 200)?;
    }
    if let Some(url) = report.local_url {
        validate_text("local_url", url, 300)?;
        if !url.starts_with("https://") {
            return Err(ApiError::invalid_input("local_url must be an https:// URL"));
        }
    }
    if report.alerts.len() > MAX_ALERTS {
        return Err(ApiError::invalid_input(format!("at most {MAX_ALERTS} alerts per sync")));
    }
    for alert in report.alerts {
        alert.check()?;
    }
    if report.revoked_program_tokens.len() > MAX_SYNC_RECORDS {
        return Err(ApiError::invalid_input("too many revoked_program_tokens"));
    }
    Ok(())
}

/// Runs one sync for the Agent `peer` is: unknown or replaced
/// certificates are refused `UNAUTHENTICATED`; a revoked Agent's reads are
/// stored and it gets no answer.
pub async fn sync<S, R, A>(
    store: &S,
    recorder: &R,
    notary: Option<&dyn Notary>,
    peer: &Peer,
    report: Report<'_, A>,
) -> Result<Synced, ApiError>
where
    S: SyncStore + ?Sized,
    R: Recorder + ?Sized,
    A: RaisedAlert,
{
    let agent = enrolled(store, peer).await?;
    check(&report)?;
    let org = agent.org_id;
    let now = recorder.now();
    store.touch_agent(agent.id, now).await?;
    let environments = store.list_catalog(org, CatalogKind::Environment, None).await?;
    let names: Vec<(String, String)> =
        environments.iter().map(|e| (e.id.to_string(), e.name.clone())).collect();
    let epoch = report.epoch.unwrap_or(LEGACY_EPOCH);
    let records = crate::access::Report { epoch, after: report.records_after, records: report.records };
    let received = store.record_access(org, &agent, records, &names, now).await?;
    // What it holds now, revoked or not: a delete waits on what it still holds.
    let at = ReportedAt { now, applied_through: report.applied_through };
    store.store_inventory(org, &agent, &report.inventory, at).await?;
    let actor = format!("agent:{}", agent.name);
    for alert in report.alerts {
        store.record_event(org, recorder.event(&actor, alert.event(&agent))).await?;
    }
    if !report.revoked_program_tokens.is_empty() {
        store.revoke_program_tokens(org, agent.id, report.revoked_program_tokens, now, &actor).await?;
    }
    if agent.revoked_at.is_some() {
        return Ok(Synced { agent, received, answer: None });
    }
    if let Some(url) = report.local_url {
        if url != agent.local_url.as_deref().unwrap_or_default() {
            store.set_agent_local_url(agent.id, Some(url)).await?;
        }
    }
    let answer = answer(store, recorder, notary, &agent, &report, environments, now).await?;
    Ok(Synced { agent, received, answer: Some(Box::new(answer)) })
}

/// Loads and decides what a serving Agent is told.
async fn answer<S, R, A>(
    store: &S,
    recorder: &R,
    notary: Option<&dyn Notary>,
    agent: &Agent,
    report: &Report<'_, A>,
    environments: Vec<CatalogEntry>,
    now: OffsetDateTime,
) -> Result<Answer, ApiError>
where
    S: SyncStore + ?Sized,
    R: Recorder + ?Sized,
{
    let org = agent.org_id;
    let certificates = store.active_member_certificates(org, now).await?;
    let local_api_certificates: Vec<Sha256Hex> = store
        .active_agent_certificates(org, now)
        .await?
        .into_iter()
        .filter(|c| c.agent_id == agent.id)
        .map(|c| c.sha256)
        .collect();
    let members = store
        .list_members(org)
        .await?
        .into_iter()
        .map(|member| SyncedMember {
            certificates: certificates
                .iter()
                .filter(|c| c.member_id == member.id)
                .map(|c| c.sha256.clone())
                .collect(),
            member,
        })
        .collect();
    let policies = store.list_policies(org).await?;
    // Only what changed since the list the Agent holds (`crate::sync_delta`).
    let secrets = store.secret_changes(org, report.secrets_known).await?;
    let mut catalog = Vec::new();
    for kind in [CatalogKind::Domain, CatalogKind::System, CatalogKind::Component] {
        catalog.extend(store.list_catalog(org, kind, None).await?);
    }
    let standing = Standing::load(store, org, environments).await?;
    let (held, assigned) = (standing.held(), standing.assigned());
    let current = standing.current(&held, &assigned);
    let behind = crate::lagging::behind(&current, &held, &assigned);
    let planned = crate::transfer::plan(agent.id, &behind, &held, &assigned);
    let lagging = note_lag(store, recorder, org, &standing, &behind, now).await?;
    let superseded = superseded(store, org, agent.id, &current, &held, now).await?;
    let mine: Vec<CatalogId> =
        assigned.iter().filter(|a| a.agent == agent.id).map(|a| a.environment).collect();
    let current: Vec<CurrentVersion> =
        current.into_iter().filter(|c| mine.contains(&c.environment)).collect();
    // An Agent that asks is told only what its own report does not already
    // say (`crate::current_delta`).
    let current = if report.current_omits_held {
        let reported: Vec<crate::current_delta::Reported<'_>> = report
            .inventory
            .iter()
            .filter_map(|i| {
                Some(crate::current_delta::Reported {
                    secret: &i.secret,
                    environment: i.environment.parse().ok()?,
                    version: i.version,
                    deactivated: i.deactivated,
                })
            })
            .collect();
        crate::current_delta::answered(&current, &reported, &mine)
    } else {
        Answered { listed: current, none: Vec::new() }
    };
    drop(held);
    let planned_count = planned.len();
    let transfers = match notary {
        Some(notary) => transfers(store, notary, agent, planned, now).await?,
        // Without a CA there is nothing to sign a grant with: no transfer.
        None => Vec::new(),
    };
    let Standing { environments, assignments, deactivated, deleted_secrets, environment_deletions, .. } =
        standing;
    let deactivated = deactivated
        .into_iter()
        .filter_map(|(secret, env_id, version)| {
            let environment = environments.iter().find(|e| e.id == env_id)?.name.clone();
            Some(Deactivated { secret, environment, version })
        })
        .collect();
    let deleted_in_environments = environment_deletions
        .into_iter()
        // Still sent a while after it is done, for a late write made with a
        // grant from before it (`deletion::KEEP_SENDING_DONE`).
        .filter(|d| crate::deletion::still_sent(d.status, d.deleted_at, now))
        .collect();
    let local_api_status = match notary {
        Some(notary) => {
            let status = crate::local_api_status::CertificateStatus::new(
                agent.id,
                local_api_certificates.clone(),
                now,
            );
            Some(crate::local_api_status::encode(&status, |m| notary.sign(m))?)
        }
        None => None,
    };
    let live_program_tokens = store
        .program_tokens(org, agent.id)
        .await?
        .into_iter()
        .filter(|t| t.is_live(now))
        .map(|t| t.id)
        .collect();
    Ok(Answer {
        at: now,
        members,
        secrets,
        environments,
        catalog,
        policies,
        assignments,
        deactivated,
        current,
        transfers,
        superseded,
        deleted_secrets,
        deleted_in_environments,
        released_environments: store.released_environments(org, agent.id).await?,
        local_api_status,
        local_api_certificates,
        live_program_tokens,
        behind,
        planned: planned_count,
        lagging,
    })
}

/// Raises `secret.holder_lagging` for an Agent behind too long in an
/// environment (`crate::lagging::alerts`: once a day per Agent and
/// environment at most).
async fn note_lag<S: SyncStore + ?Sized, R: Recorder + ?Sized>(
    store: &S,
    recorder: &R,
    org: OrgId,
    standing: &Standing,
    behind: &[Behind],
    now: OffsetDateTime,
) -> Result<Vec<Lagging>, ApiError> {
    if !behind.iter().any(|b| crate::lagging::is_lagging(b.since, now)) {
        return Ok(Vec::new());
    }
    let query = EventQuery {
        limit: 500,
        before: None,
        action_prefix: Some(crate::lagging::ALERT_EVENT.as_str().to_owned()),
    };
    let recent: Vec<(AgentId, CatalogId, OffsetDateTime)> = store
        .list_events(org, &query)
        .await?
        .into_iter()
        .filter_map(|e| {
            let agent = e.detail["agent_id"].as_str()?.parse().ok()?;
            let environment = e.detail["environment_id"].as_str()?.parse().ok()?;
            Some((agent, environment, e.at))
        })
        .collect();
    let mut raised = Vec::new();
    for alert in crate::lagging::alerts(behind, &recent, now) {
        let agent = standing.agents.iter().find(|a| a.id == alert.agent).map_or("", |a| a.name.as_str());
        let environment = standing.environment_name(alert.environment);
        let event = recorder.event("system", alert.event(agent, environment));
        store.record_event(org, event).await?;
        raised.push(Lagging { agent: agent.to_owned(), environment: environment.to_owned(), alert });
    }
    Ok(raised)
}

/// What `agent` erases now (`crate::retention`): the versions are loaded
/// only for the secrets where it holds a value below the current one,
/// which is usually none.
async fn superseded<S: SyncStore + ?Sized>(
    store: &S,
    org: OrgId,
    agent: AgentId,
    current: &[CurrentVersion],
    held: &[Held<'_>],
    now: OffsetDateTime,
) -> Result<Vec<Superseded>, ApiError> {
    let wanted = crate::retention::candidates(agent, current, held);
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let mut overlaps = std::collections::BTreeMap::<_, Vec<_>>::new();
    for (secret, environment, overlap) in store.version_overlaps(org, &wanted).await? {
        overlaps.entry((secret, environment)).or_default().push(overlap);
    }
    Ok(crate::retention::to_erase(agent, current, held, &overlaps, now))
}

/// The planned transfers as the Agent gets them: each source's local API
/// and certificates (a revoked source is left out, a transfer with none
/// dropped), and a grant the CA signs naming `agent`.
async fn transfers<S: SyncStore + ?Sized>(
    store: &S,
    notary: &dyn Notary,
    agent: &Agent,
    planned: Vec<PlannedTransfer>,
    now: OffsetDateTime,
) -> Result<Vec<Transfer>, ApiError> {
    if planned.is_empty() {
        return Ok(Vec::new());
    }
    let mut ids: Vec<AgentId> = planned.iter().flat_map(|p| p.sources.iter().copied()).collect();
    ids.sort();
    ids.dedup();
    let reached = crate::secrets::views::holders_of(store, agent.org_id, &ids, now).await?;
    let source = |id: &AgentId| reached.iter().find(|h| h.agent_id == *id).cloned();
    let mut out = Vec::with_capacity(planned.len());
    for p in planned {
        let sources: Vec<Holder> = p.sources.iter().filter_map(source).collect();
        if sources.is_empty() {
            continue;
        }
        let claims = crate::transfer::TransferClaims::new(notary.grant_id(), agent.org_id, &p, agent.id, now);
        let grant = crate::transfer::encode(&claims, |m| notary.sign(m))?;
        out.push(Transfer {
            secret: p.secret,
            environment: p.environment,
            version: p.version,
            sources,
            grant,
        });
    }
    Ok(out)
}

/// A signature the CA could not make.
pub fn unsigned(why: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::Internal, format!("the CA could not sign: {why}"))
}
