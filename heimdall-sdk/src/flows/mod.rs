//! What writing and reading a value takes beyond one request, for any
//! program that embeds the SDK (the `heimdall` CLI uses exactly these; the
//! Python bindings use `read_values`):
//!
//! - [`write_value`]: the API numbers a version and signs one grant per
//!   Agent holding the environment; the value goes with its grant to each
//!   of them, and never to the API. The outcome says where it was stored.
//! - [`read_values`]: the API names the Agents holding the environment (each
//!   by its id and certificates: a host name proves nothing); they are asked
//!   in order until one answers. An Agent's refusal is final (asking another
//!   would ask again); one that cannot be reached, or that lacks the current
//!   version (`VERSION_NOT_HELD`), passes to the next. With
//!   the API unreachable, the holders it named last ([`HolderMemory`]).
//! - [`login`]: a key made here, certified by the API's CA for the caller.
//! - [`wait_for_resource`], [`wait_for_job`]: followed until they settle, with progress.

mod deletion;
mod holders;
mod login;
mod read;
mod wait;
mod write;

use heimdall_core::{ApiError, ErrorCode};
use heimdall_wire::AgentLocation;

pub use deletion::delete_secret_and_wait;
pub use holders::{HolderMemory, HoldersFile};
pub use login::{login, Certified};
pub use read::{read_values, Ask, Read};
pub use wait::{in_progress, wait_for_job, wait_for_resource, JobProgress, Waited};
pub use write::{write_value, Stored};

use crate::{AgentClient, Error, Identity, Result, Timeouts};

/// How a flow reaches the Agents.
#[derive(Clone, Copy, Default)]
pub struct AgentOptions<'a> {
    /// This local API instead of the URL the Agent reported (only when one
    /// Agent holds the environment).
    pub agent_url: Option<&'a str>,
    /// How long to wait on each Agent.
    pub timeouts: Option<Timeouts>,
    /// The holders to fall back on with the API unreachable (reads only).
    pub memory: Option<&'a dyn HolderMemory>,
}

impl std::fmt::Debug for AgentOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentOptions")
            .field("agent_url", &self.agent_url)
            .field("timeouts", &self.timeouts)
            .field("memory", &self.memory.is_some())
            .finish()
    }
}

fn names(holders: &[AgentLocation]) -> String {
    holders.iter().map(|h| h.agent.as_str()).collect::<Vec<_>>().join(", ")
}

fn no_url(location: &AgentLocation) -> Error {
    Error::Api(ApiError::new(
        ErrorCode::Unavailable,
        format!(
            "agent {} has not reported its local API URL yet; has it synced? (or pass --agent-url)",
            location.agent
        ),
    ))
}

fn no_agent(environment: &str) -> Error {
    Error::Api(ApiError::new(
        ErrorCode::NoAgent,
        format!(
            "no Agent holds the values of {environment}: an owner runs `heimdall environment assign-agent \
             {environment} AGENT`"
        ),
    ))
}

fn client_for(
    holder: &AgentLocation,
    url: &str,
    identity: &Identity,
    timeouts: Option<Timeouts>,
) -> Result<AgentClient> {
    let client = AgentClient::for_holder(holder, url, identity)?;
    match timeouts {
        Some(timeouts) => client.with_timeouts(timeouts),
        None => Ok(client),
    }
}
