//! The OpenAPI schemas of `heimdall_core::on_behalf`'s types, field for field (see
//! the module's doc).

#[allow(unused_imports)]
use super::*;
use serde::Serialize;

/// The member a job or task acts for: by id (what decides) and email
/// (what is shown; an email can be re-added as another member).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OnBehalfOf {
    pub member_id: MemberId,
    pub email: String,
}
