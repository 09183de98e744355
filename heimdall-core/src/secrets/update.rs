//! Changing a secret's metadata, as a planner: its type, description,
//! tags and Components (its name and versions are not changed here). The
//! adapter authorizes the caller where the secret is and, when it moves to
//! other Components, where it lands.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::{validate_secret_type, validate_tags, Secret};
use crate::audit::{AuditAction, EventPlan};
use crate::error::ApiError;
use crate::ids::CatalogId;
use crate::names::validate_text;

/// What to change; a field not given stays.
#[derive(Clone, Debug, Default)]
pub struct SecretChange {
    pub secret_type: Option<String>,
    pub description: Option<String>,
    pub tags: Option<BTreeMap<String, String>>,
    /// The Components it names, resolved.
    pub components: Option<Vec<CatalogId>>,
}

/// The secret as it will be, and its event.
#[derive(Clone, Debug, PartialEq)]
pub struct SecretUpdate {
    pub secret: Secret,
    /// Whether its Components change: the caller must be allowed there too.
    pub moves: bool,
    pub event: EventPlan,
}

/// `current` with `change` applied at `now`.
pub fn update(current: &Secret, change: SecretChange, now: OffsetDateTime) -> Result<SecretUpdate, ApiError> {
    let mut secret = current.clone();
    if let Some(t) = change.secret_type {
        validate_secret_type(&t)?;
        secret.secret_type = t;
    }
    if let Some(d) = change.description {
        validate_text("description", &d, 1000)?;
        secret.description = d;
    }
    if let Some(tags) = change.tags {
        validate_tags(&tags)?;
        secret.tags = tags;
    }
    let moves = change.components.is_some();
    if let Some(components) = change.components {
        secret.components = components;
    }
    secret.updated_at = now;
    let event = EventPlan {
        action: AuditAction::SecretUpdated,
        target: format!("secret:{}", secret.id),
        detail: serde_json::json!({ "name": secret.name }),
    };
    Ok(SecretUpdate { secret, moves, event })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::fixtures::secret;

    #[test]
    fn an_update_changes_what_it_names_and_checks_it() {
        let current = secret("db-password");
        let later = OffsetDateTime::UNIX_EPOCH + time::Duration::hours(1);
        let change = SecretChange { description: Some("orders' database".into()), ..SecretChange::default() };
        let plan = update(&current, change, later).unwrap();
        assert_eq!((plan.secret.description.as_str(), plan.secret.updated_at), ("orders' database", later));
        assert_eq!((plan.secret.secret_type.as_str(), plan.moves), (current.secret_type.as_str(), false));
        assert_eq!(plan.event.action, AuditAction::SecretUpdated);
        let bad = SecretChange { secret_type: Some("Not A Type!".into()), ..SecretChange::default() };
        assert_eq!(update(&current, bad, later).unwrap_err().code, ErrorCode::InvalidInput);
        let moved = SecretChange { components: Some(vec![]), ..SecretChange::default() };
        assert!(update(&current, moved, later).unwrap().moves);
    }
}
