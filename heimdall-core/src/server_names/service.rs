//! An Agent's local-API certificate as use cases run once for every
//! adapter: which names the CA may sign for it (a refusal is on the audit
//! feed), and what is stored once it signed. The signing is the
//! adapter's (the CA's key is its own).

use time::OffsetDateTime;

use crate::error::ApiError;
use crate::infra::Agent;
use crate::ports::{AgentRecordStore, CertificateStore, EventStore, Recorder};
use crate::secrets::AgentCertificate;
use crate::Sha256Hex;

/// How the Agent's events name it.
fn actor(agent: &Agent) -> String {
    format!("agent:{}", agent.name)
}

/// The names `agent` asked for, if the CA may sign them: loopback names and
/// the names an owner approved for this Agent, never one of the API's own
/// (`api_names`). A refusal is `FORBIDDEN` and recorded.
pub async fn signable<S: AgentRecordStore + EventStore + ?Sized>(
    store: &S,
    recorder: &dyn Recorder,
    agent: &Agent,
    (asked, api_names): (&[String], &[String]),
) -> Result<Vec<String>, ApiError> {
    let names = super::requested(asked)?;
    let approved: Vec<String> =
        store.agent_names(agent.org_id, agent.id).await?.into_iter().map(|n| n.name).collect();
    if let Err(refused) = super::check_agent_names(&names, &approved, api_names) {
        let event = recorder.event(&actor(agent), super::certificate_refused(agent, &refused));
        store.record_event(agent.org_id, event).await?;
        return Err(refused.error(&agent.name));
    }
    Ok(names)
}

/// Stores the certificate the CA signed for `agent`'s local API (its
/// digest, names and end), with its event.
pub async fn record_issued<S: CertificateStore + ?Sized>(
    store: &S,
    recorder: &dyn Recorder,
    agent: &Agent,
    names: Vec<String>,
    (sha256, not_after): (Sha256Hex, OffsetDateTime),
) -> Result<AgentCertificate, ApiError> {
    let planned = super::issued(agent, names, sha256, (recorder.now(), not_after));
    let event = recorder.event(&actor(agent), planned.event);
    store.add_agent_certificate(&planned.record, event).await?;
    Ok(planned.record)
}
