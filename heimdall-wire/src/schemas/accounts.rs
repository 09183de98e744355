//! The OpenAPI schemas of `heimdall_core::accounts`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateCloudAccount {
    pub name: String,
    pub provider: Provider,
    pub region: String,
    pub state_bucket: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_endpoint: Option<String>,
    /// Default: the provider's own ([`crate::infra::StateBackend::default_for`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_backend: Option<StateBackend>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_storage_account: Option<String>,
    pub auth: AccountAuth,
    /// Check each provisioned Resource placed on this account for drift
    /// this often, e.g. `24h` (`heimdall_core::drift::parse_every`). Off when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_check_every: Option<String>,
}

/// A change to a registered account; what is absent stays. Where it
/// keeps state (`state_bucket`, `state_endpoint`, `state_storage_account`)
/// moves only while no Resource keeps state there
/// (`accounts::check_state_move`); the provider and the state backend
/// never change.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateCloudAccount {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AccountAuth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_bucket: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_storage_account: Option<String>,
    /// `24h` and the like, or `off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_check_every: Option<String>,
}
