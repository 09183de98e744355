//! What people change about cloud accounts, as planners: registering one
//! and linking it. Each returns the row the store writes and its event
//! (`audit::EventPlan`) for the same transaction; the account and the
//! catalog entries are resolved first. Changing one is [`super::update`].

use time::OffsetDateTime;

use super::{check_new_account, created, link_event, CreateCloudAccount};
use crate::audit::EventPlan;
use crate::domain::{CatalogEntry, CatalogKind};
use crate::error::ApiError;
use crate::ids::{CatalogId, CloudAccountId, OrgId};
use crate::infra::{AccountLink, CloudAccount, LinkScope};

/// An account to store, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct AccountPlan {
    pub account: CloudAccount,
    pub event: EventPlan,
}

/// The account `request` registers, made by `by` at `now`: checked
/// ([`check_new_account`]), its state backend settled and its drift
/// schedule parsed. A static credential's secret is checked by the
/// adapter as the caller's use (`on_behalf::may_use`), which needs loading.
pub fn register(
    request: CreateCloudAccount,
    id: CloudAccountId,
    org: OrgId,
    by: &str,
    now: OffsetDateTime,
) -> Result<AccountPlan, ApiError> {
    let state_backend = check_new_account(&request)?;
    let drift_check_every_seconds =
        request.drift_check_every.as_deref().map(crate::drift::parse_every).transpose()?;
    let account = CloudAccount {
        id,
        org_id: org,
        name: request.name,
        provider: request.provider,
        region: request.region,
        state_bucket: request.state_bucket,
        state_endpoint: request.state_endpoint,
        state_backend,
        state_storage_account: request.state_storage_account,
        auth: request.auth,
        drift_check_every_seconds,
        created_at: now,
        created_by: by.to_owned(),
    };
    let event = created(&account);
    Ok(AccountPlan { account, event })
}

/// Which catalog entry a link's scope names, by kind: none for the
/// organization (which takes no `scope_id`), a domain or a system (which
/// need one). Read from the request before the entry is resolved.
pub fn scope_kind(scope: LinkScope, scope_id: Option<&str>) -> Result<Option<CatalogKind>, ApiError> {
    match (scope, scope_id) {
        (LinkScope::Organization, None) => Ok(None),
        (LinkScope::Organization, Some(_)) => {
            Err(ApiError::invalid_input("scope organization takes no scope_id"))
        }
        (LinkScope::Domain, Some(_)) => Ok(Some(CatalogKind::Domain)),
        (LinkScope::System, Some(_)) => Ok(Some(CatalogKind::System)),
        (scope, None) => Err(ApiError::invalid_input(format!("scope {scope} needs scope_id"))),
    }
}

/// A link to store, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkPlan {
    pub link: AccountLink,
    pub event: EventPlan,
}

/// `account` serving `environment` at `scope` (its entry resolved, none
/// for the organization), linked by `by` at `now`.
pub fn link(
    account: &CloudAccount,
    (scope, scope_id): (LinkScope, Option<CatalogId>),
    environment: &CatalogEntry,
    by: &str,
    now: OffsetDateTime,
) -> LinkPlan {
    let link = AccountLink {
        account_id: account.id,
        scope,
        scope_id,
        environment_id: environment.id,
        created_at: now,
        created_by: by.to_owned(),
    };
    let event = link_event(account, true, (scope, scope_id), &environment.name);
    LinkPlan { link, event }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditAction;
    use crate::error::ErrorCode;
    use crate::fixtures::environment;
    use crate::infra::{AccountAuth, Provider, StateBackend};
    use uuid::Uuid;

    fn request(name: &str) -> CreateCloudAccount {
        CreateCloudAccount {
            name: name.into(),
            provider: Provider::Aws,
            region: "eu-west-1".into(),
            state_bucket: "acme-state".into(),
            state_endpoint: None,
            state_backend: None,
            state_storage_account: None,
            auth: AccountAuth::Static { secret: "aws-keys".into() },
            drift_check_every: Some("24h".into()),
        }
    }

    fn plan(request: CreateCloudAccount) -> Result<AccountPlan, ApiError> {
        let id = CloudAccountId::from_uuid(Uuid::from_u128(7));
        register(request, id, OrgId::from_uuid(Uuid::nil()), "ana@example.com", OffsetDateTime::UNIX_EPOCH)
    }

    #[test]
    fn a_registered_account_settles_its_backend_and_schedule_and_records_no_credential() {
        let planned = plan(request("prod-aws")).unwrap();
        assert_eq!(planned.account.state_backend, StateBackend::default_for(Provider::Aws));
        assert_eq!(planned.account.drift_check_every_seconds, Some(24 * 3600));
        assert_eq!(planned.account.created_by, "ana@example.com");
        assert_eq!(planned.event.action, AuditAction::CloudAccountCreated);
        assert_eq!(planned.event.target, format!("cloud_account:{}", planned.account.id));
        assert!(!planned.event.detail.to_string().contains("aws-keys"), "{}", planned.event.detail);
    }

    #[test]
    fn a_bad_name_or_schedule_is_refused_before_anything_is_planned() {
        let refused = plan(request("Prod AWS")).unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidInput);
        let refused = plan(CreateCloudAccount { drift_check_every: Some("soon".into()), ..request("prod") });
        assert_eq!(refused.unwrap_err().code, ErrorCode::InvalidInput);
    }

    #[test]
    fn the_organization_takes_no_scope_entry_and_a_domain_or_system_needs_one() {
        assert_eq!(scope_kind(LinkScope::Organization, None), Ok(None));
        assert_eq!(scope_kind(LinkScope::Domain, Some("payments")), Ok(Some(CatalogKind::Domain)));
        assert_eq!(scope_kind(LinkScope::System, Some("checkout")), Ok(Some(CatalogKind::System)));
        for (scope, id) in
            [(LinkScope::Organization, Some("x")), (LinkScope::Domain, None), (LinkScope::System, None)]
        {
            assert_eq!(scope_kind(scope, id).unwrap_err().code, ErrorCode::InvalidInput, "{scope}");
        }
    }

    #[test]
    fn a_link_names_its_environment_by_id_and_its_event_by_name() {
        let account = plan(request("prod-aws")).unwrap().account;
        let prod = environment("prod");
        let planned = link(
            &account,
            (LinkScope::Organization, None),
            &prod,
            "ana@example.com",
            OffsetDateTime::UNIX_EPOCH,
        );
        assert_eq!((planned.link.account_id, planned.link.environment_id), (account.id, prod.id));
        assert_eq!(planned.event.action, AuditAction::CloudAccountLinked);
        assert_eq!(planned.event.detail["environment"], "prod");
    }
}
