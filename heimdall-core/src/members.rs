//! Rules for changing who is in an organization and with which role, and
//! the planners the API applies: [`add`], [`change_role`], [`remove`].
//!
//! Cedar decides whether the actor may manage members at all
//! (`member.write`); these rules decide which role changes are allowed.
//! The store calls [`check_owner_remains`] inside its transaction, on the
//! owners it counted there, so two concurrent demotions cannot both succeed.
//! [`service`] runs them with the policies' answer over the store port.

pub mod service;

use serde_json::json;
use time::OffsetDateTime;

use crate::audit::{AuditAction, EventPlan};
use crate::domain::{Member, Role};
use crate::error::{ApiError, ErrorCode};
use crate::ids::{MemberId, OrgId};

/// A member to add (with the first token the adapter makes), and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct Addition {
    pub member: Member,
    pub event: EventPlan,
}

/// Adds `email` (normalized: one member per address, whatever its case)
/// as `role` to `org`, by an `actor` of that role. An address already in
/// the organization is the store's to refuse (`ALREADY_EXISTS`).
pub fn add(
    actor: Role,
    org: OrgId,
    id: MemberId,
    email: &str,
    role: Role,
    now: OffsetDateTime,
) -> Result<Addition, ApiError> {
    let email = crate::names::normalize_email(email)?;
    check_role_change(actor, None, role)?;
    let event = member_event(AuditAction::MemberAdded, id, json!({ "email": email, "role": role }));
    Ok(Addition { member: Member { id, org_id: org, email, role, created_at: now }, event })
}

/// A role to set; the store checks [`check_owner_remains`] as it sets it.
#[derive(Clone, Debug, PartialEq)]
pub struct RoleChange {
    pub member: MemberId,
    pub role: Role,
    pub event: EventPlan,
}

/// Gives `member` the role `role`, by an `actor` of that role.
pub fn change_role(actor: Role, member: &Member, role: Role) -> Result<RoleChange, ApiError> {
    check_role_change(actor, Some(member.role), role)?;
    let detail = json!({ "email": member.email, "from": member.role, "to": role });
    Ok(RoleChange {
        member: member.id,
        role,
        event: member_event(AuditAction::MemberRoleChanged, member.id, detail),
    })
}

/// A member to remove with all their tokens; the store checks
/// [`check_owner_remains`] as it removes them.
#[derive(Clone, Debug, PartialEq)]
pub struct Removal {
    pub member: MemberId,
    pub event: EventPlan,
}

/// Removes `member`, by an `actor` of that role.
pub fn remove(actor: Role, member: &Member) -> Result<Removal, ApiError> {
    check_removal(actor, member.role)?;
    let detail = json!({ "email": member.email, "role": member.role, "tokens_revoked": true });
    Ok(Removal { member: member.id, event: member_event(AuditAction::MemberRemoved, member.id, detail) })
}

fn member_event(action: AuditAction, member: MemberId, detail: serde_json::Value) -> EventPlan {
    EventPlan { action, target: format!("member:{member}"), detail }
}

/// May `actor` give `target` the role `new_role`? `current` is the target's
/// role today, `None` when the target is being added.
pub fn check_role_change(actor: Role, current: Option<Role>, new_role: Role) -> Result<(), ApiError> {
    let touches_owner = new_role == Role::Owner || current == Some(Role::Owner);
    if touches_owner && actor != Role::Owner {
        return Err(ApiError::forbidden("only an owner may grant, change or remove the owner role"));
    }
    Ok(())
}

/// May `actor` remove a member whose role is `current`?
pub fn check_removal(actor: Role, current: Role) -> Result<(), ApiError> {
    if current == Role::Owner && actor != Role::Owner {
        return Err(ApiError::forbidden("only an owner may remove an owner"));
    }
    Ok(())
}

/// Would the change leave the organization without an owner?
/// `owners` counts owners today; `current` is the target's role today and
/// `new_role` is `None` for a removal.
pub fn check_owner_remains(owners: u64, current: Role, new_role: Option<Role>) -> Result<(), ApiError> {
    let loses_an_owner = current == Role::Owner && new_role != Some(Role::Owner);
    if loses_an_owner && owners <= 1 {
        return Err(ApiError::new(
            ErrorCode::LastOwner,
            "the organization's last owner cannot be removed or demoted; make someone else owner first",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(n: u128, email: &str, role: Role) -> Member {
        Member {
            id: MemberId::from_uuid(uuid::Uuid::from_u128(n)),
            org_id: OrgId::from_uuid(uuid::Uuid::nil()),
            email: email.into(),
            role,
            created_at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn members_are_added_changed_and_removed_by_id_with_their_events() {
        let (org, id, now) = (
            OrgId::from_uuid(uuid::Uuid::nil()),
            MemberId::from_uuid(uuid::Uuid::from_u128(7)),
            OffsetDateTime::UNIX_EPOCH,
        );
        // One address whatever its case; an admin adds no owner.
        let added = add(Role::Admin, org, id, " Bo@Example.com ", Role::Member, now).unwrap();
        assert_eq!((added.member.id, added.member.email.as_str()), (id, "bo@example.com"));
        assert_eq!(added.event.action, AuditAction::MemberAdded);
        assert_eq!(added.event.target, format!("member:{id}"));
        assert_eq!(
            add(Role::Admin, org, id, "bo@example.com", Role::Owner, now).unwrap_err().code,
            ErrorCode::Forbidden
        );
        assert_eq!(
            add(Role::Owner, org, id, "not an email", Role::Member, now).unwrap_err().code,
            ErrorCode::InvalidInput
        );
        // The role change names both roles; an admin demotes no owner.
        let bo = member(7, "bo@example.com", Role::Member);
        let change = change_role(Role::Admin, &bo, Role::Admin).unwrap();
        assert_eq!((change.member, change.role), (bo.id, Role::Admin));
        assert_eq!(
            change.event.detail,
            json!({ "email": "bo@example.com", "from": "member", "to": "admin" })
        );
        let ana = member(1, "ana@example.com", Role::Owner);
        assert_eq!(change_role(Role::Admin, &ana, Role::Member).unwrap_err().code, ErrorCode::Forbidden);
        // Removal revokes the tokens; an admin removes no owner.
        let removal = remove(Role::Owner, &bo).unwrap();
        assert_eq!((removal.member, removal.event.action), (bo.id, AuditAction::MemberRemoved));
        assert_eq!(removal.event.detail["tokens_revoked"], json!(true));
        assert_eq!(remove(Role::Admin, &ana).unwrap_err().code, ErrorCode::Forbidden);
    }

    #[test]
    fn admin_cannot_touch_owner_role() {
        assert!(check_role_change(Role::Admin, None, Role::Owner).is_err());
        assert!(check_role_change(Role::Admin, Some(Role::Owner), Role::Member).is_err());
        assert!(check_role_change(Role::Admin, Some(Role::Member), Role::Admin).is_ok());
        assert!(check_role_change(Role::Owner, Some(Role::Member), Role::Owner).is_ok());
        assert!(check_removal(Role::Admin, Role::Owner).is_err());
        assert!(check_removal(Role::Admin, Role::Admin).is_ok());
    }

    #[test]
    fn last_owner_stays() {
        let err = check_owner_remains(1, Role::Owner, None).unwrap_err();
        assert_eq!(err.code, ErrorCode::LastOwner);
        assert!(check_owner_remains(1, Role::Owner, Some(Role::Admin)).is_err());
        assert!(check_owner_remains(2, Role::Owner, None).is_ok());
        assert!(check_owner_remains(1, Role::Owner, Some(Role::Owner)).is_ok());
        assert!(check_owner_remains(1, Role::Admin, None).is_ok());
    }
}
