//! Creating the first organization and its owner.

use heimdall_core::clock::Clock;
use heimdall_core::domain::{Member, Organization, Role};
use heimdall_core::ids::{EventId, MemberId, OrgId, TokenId};
use heimdall_core::names::{normalize_email, validate_name};
use heimdall_core::ports::{MetadataStore, NewEvent, NewToken};
use heimdall_core::token::TokenHash;
use heimdall_core::wire::Bootstrapped;
use heimdall_core::{ApiError, Redacted};
use uuid::Uuid;

use crate::http::tokens::generate_token;

/// Creates the organization, its owner and the owner's first token. The
/// token is in the result and nowhere else; it is never stored in clear.
pub async fn bootstrap(
    store: &dyn MetadataStore,
    clock: &dyn Clock,
    org_name: &str,
    owner_email: &str,
) -> Result<Bootstrapped, ApiError> {
    validate_name("organization name", org_name)?;
    let email = normalize_email(owner_email)?;
    let now = clock.now();
    let org =
        Organization { id: OrgId::from_uuid(Uuid::new_v4()), name: org_name.to_owned(), created_at: now };
    let owner = Member {
        id: MemberId::from_uuid(Uuid::new_v4()),
        org_id: org.id,
        email: email.clone(),
        role: Role::Owner,
        created_at: now,
    };
    let token: Redacted<String> = generate_token();
    let new_token = NewToken {
        id: TokenId::from_uuid(Uuid::new_v4()),
        name: "bootstrap".into(),
        hash: TokenHash::of(token.expose()),
    };
    let event = NewEvent {
        id: EventId::from_uuid(Uuid::new_v4()),
        at: now,
        actor: "system".into(),
        action: "organization.bootstrapped".into(),
        target: format!("organization:{}", org.id),
        detail: serde_json::json!({ "name": org.name, "owner": email }),
    };
    store.bootstrap(&org, &owner, &new_token, event).await?;
    Ok(Bootstrapped { organization: org, owner, token: token.expose().clone() })
}
