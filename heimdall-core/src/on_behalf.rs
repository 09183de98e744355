//! Values an Agent uses on someone's behalf: a database's admin secret
//! (to create and rotate a service user with its grants), a cloud
//! account's static secret and a Resource's secret inputs (for a job). An
//! Agent may read any value it holds, so each such use is decided here as
//! a `secret.read` by the member who asked for it, with every `forbid`:
//! by the API when the request is made, and by the Agent again when the
//! value is used, against the policies it last synced. The job or task
//! carries who asked ([`OnBehalfOf`]); the access record names both the
//! Agent's part and that member ([`accessor`]).
//!
//! Without this rule an admin under a `forbid` on a secret could have an
//! Agent use it for her: point a database's admin secret at a host she
//! runs, or name a static secret in a cloud account her module reads.

use serde::{Deserialize, Serialize};

use crate::authz::{decide, secret_target, Action, CatalogTree, Decision, OrgPolicies, Principal};
use crate::error::{ApiError, ErrorCode};
use crate::ids::{CatalogId, MemberId, SecretId};

/// The member a job or task acts for: by id (what decides) and email
/// (what is shown; an email can be re-added as another member).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnBehalfOf {
    pub member_id: MemberId,
    pub email: String,
}

/// A secret as the rule needs it: what policies see of it.
#[derive(Clone, Copy, Debug)]
pub struct UsedSecret<'a> {
    pub name: &'a str,
    pub id: SecretId,
    /// A personal secret's owner: never used on anyone's behalf.
    pub owner: Option<MemberId>,
    /// The Components it is linked to: a `forbid` on one (or on its System
    /// or Domain) covers the secret.
    pub components: &'a [CatalogId],
}

/// Whether `requester` may have an Agent use `secret` in `environment`
/// for her: an organization secret (a personal one is its owner's alone,
/// `FORBIDDEN`) that she may read there (`FORBIDDEN`, naming her, the
/// secret and the environment, never a value).
pub fn may_use(
    requester: &Principal,
    secret: UsedSecret<'_>,
    environment: &str,
    tree: &CatalogTree,
    policies: &OrgPolicies,
) -> Result<(), ApiError> {
    crate::secrets::usable_by_jobs(secret.owner)?;
    let target = secret_target(secret.id, secret.owner, secret.components, tree);
    match decide(requester, Action::SecretRead, &target, Some(environment), policies) {
        Decision::Allow => Ok(()),
        Decision::NotPermitted | Decision::ForbiddenBy(_) => {
            Err(refused(&requester.email, secret.name, environment))
        }
    }
}

/// The refusal of a use for `email`, who may not read `secret` in `environment`.
pub fn refused(email: &str, secret: &str, environment: &str) -> ApiError {
    ApiError::new(
        ErrorCode::Forbidden,
        format!("{email} may not read secret {secret} in {environment}, so no Agent uses it on their behalf"),
    )
}

/// A job or task queued before it carried who asked: no value is used for it.
pub fn nobody(what: &str, secret: &str) -> ApiError {
    ApiError::new(
        ErrorCode::Forbidden,
        format!(
            "{what} does not say on whose behalf it runs, so secret {secret} is not used for it; \
             request it again (a change, a retry or a rotation) so that it does"
        ),
    )
}

/// The member `on_behalf` names is no longer one: nothing is used for her.
pub fn not_a_member(on_behalf: &OnBehalfOf, secret: &str) -> ApiError {
    ApiError::new(
        ErrorCode::Forbidden,
        format!(
            "{} ({}), on whose behalf secret {secret} would be used, is no longer a member; \
             someone who may read it requests the work again",
            on_behalf.email, on_behalf.member_id
        ),
    )
}

/// How an access record names a use: the Agent's part (`agent edge-1`,
/// `database-rotation orders/app`) for the member it acted for.
pub fn accessor(part: &str, on_behalf: &OnBehalfOf) -> String {
    format!("{part} for {}", on_behalf.email)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{CatalogKind, Policy, Role};
    use crate::ids::{OrgId, PolicyId};

    fn principal(role: Role) -> Principal {
        Principal {
            org: OrgId::from_uuid(uuid::Uuid::from_u128(1)),
            id: MemberId::from_uuid(uuid::Uuid::from_u128(2)),
            email: "ana@example.com".into(),
            role,
        }
    }

    fn policies(text: &str) -> OrgPolicies {
        OrgPolicies::compile(&[Policy {
            id: PolicyId::from_uuid(uuid::Uuid::from_u128(3)),
            org_id: OrgId::from_uuid(uuid::Uuid::from_u128(1)),
            name: "p".into(),
            description: String::new(),
            text: text.into(),
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            created_by: "owner@example.com".into(),
            version: 1,
            updated_at: None,
            updated_by: None,
        }])
        .unwrap()
    }

    #[test]
    fn a_use_is_a_read_by_whoever_asked_with_every_forbid() {
        let component = CatalogId::from_uuid(uuid::Uuid::from_u128(10));
        let tree = CatalogTree::new([(component, CatalogKind::Component, None)]);
        let linked = [component];
        let secret = UsedSecret {
            name: "orders-admin",
            id: SecretId::from_uuid(uuid::Uuid::from_u128(20)),
            owner: None,
            components: &linked,
        };
        let none = OrgPolicies::default();
        assert!(may_use(&principal(Role::Admin), secret, "prod", &tree, &none).is_ok());
        // Every member reads organization secrets by default, so may use them.
        assert!(may_use(&principal(Role::Member), secret, "prod", &tree, &none).is_ok());

        let prod = policies(
            r#"forbid (principal, action == Heimdall::Action::"secret.read", resource)
               when { context.environment == "prod" } unless { principal.role == "owner" };"#,
        );
        let err = may_use(&principal(Role::Admin), secret, "prod", &tree, &prod).unwrap_err();
        assert_eq!(err.code, ErrorCode::Forbidden);
        assert!(err.message.contains("ana@example.com") && err.message.contains("orders-admin"));
        assert!(may_use(&principal(Role::Admin), secret, "dev", &tree, &prod).is_ok());
        assert!(may_use(&principal(Role::Owner), secret, "prod", &tree, &prod).is_ok());

        // A forbid on the Component the secret is linked to covers it.
        let on_component = policies(&format!(
            r#"forbid (principal, action, resource in Heimdall::Component::"{component}")
               unless {{ principal.role == "owner" }};"#
        ));
        assert!(may_use(&principal(Role::Admin), secret, "dev", &tree, &on_component).is_err());

        // A personal secret is used for nobody, not even its owner.
        let personal = UsedSecret { owner: Some(principal(Role::Owner).id), ..secret };
        assert_eq!(
            may_use(&principal(Role::Owner), personal, "dev", &tree, &none).unwrap_err().code,
            ErrorCode::Forbidden
        );
    }

    #[test]
    fn records_name_the_agents_part_and_the_member() {
        let who = OnBehalfOf {
            member_id: MemberId::from_uuid(uuid::Uuid::from_u128(2)),
            email: "ana@example.com".into(),
        };
        assert_eq!(
            accessor("database-rotation orders/app", &who),
            "database-rotation orders/app for ana@example.com"
        );
    }
}
