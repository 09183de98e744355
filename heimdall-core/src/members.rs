//! Rules for changing who is in an organization and with which role.
//!
//! Cedar decides whether the actor may manage members at all
//! (`member.write`); these rules decide which role changes are allowed.
//! The store calls [`check_owner_remains`] inside its transaction, on the
//! owners it counted there, so two concurrent demotions cannot both succeed.

use crate::domain::Role;
use crate::error::{ApiError, ErrorCode};

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
