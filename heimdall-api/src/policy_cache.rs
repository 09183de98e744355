//! Compiled Cedar policies per organization, reused while the stored
//! policies are the same. Every request still reads them from the store,
//! so a change applies from the next request; only compiling, which grew
//! with the number of policies (200 of them took an authorized `GET` from
//! 1,909 to 70 requests/s), happens once per change.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use heimdall_core::authz::{OrgPolicies, PolicyError};
use heimdall_core::domain::Policy;
use heimdall_core::ids::{OrgId, PolicyId};
use sha2::{Digest, Sha256};

/// What an organization's policies were compiled from (their digest), and the result.
type Entry = ([u8; 32], Arc<OrgPolicies>);

/// One entry per organization.
#[derive(Default)]
pub struct PolicyCache {
    compiled: Mutex<HashMap<OrgId, Entry>>,
}

impl std::fmt::Debug for PolicyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let organizations = self.compiled.lock().map(|m| m.len()).unwrap_or_default();
        f.debug_struct("PolicyCache").field("organizations", &organizations).finish()
    }
}

impl PolicyCache {
    /// `stored` (the organization's policies as read now), compiled: from
    /// the cache when they are exactly what was compiled last, else anew.
    pub fn compiled(
        &self,
        org: OrgId,
        stored: &[Policy],
    ) -> Result<Arc<OrgPolicies>, (PolicyId, PolicyError)> {
        let digest = digest(stored);
        let cached = self.compiled.lock().ok().and_then(|m| m.get(&org).cloned());
        if let Some((_, policies)) = cached.filter(|(seen, _)| *seen == digest) {
            return Ok(policies);
        }
        let policies = Arc::new(OrgPolicies::compile(stored)?);
        if let Ok(mut compiled) = self.compiled.lock() {
            compiled.insert(org, (digest, policies.clone()));
        }
        Ok(policies)
    }
}

/// Each policy's id and text, in order, length-prefixed: what compiling reads.
fn digest(stored: &[Policy]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for policy in stored {
        hash.update(policy.id.as_uuid().as_bytes());
        hash.update((policy.text.len() as u64).to_be_bytes());
        hash.update(policy.text.as_bytes());
    }
    hash.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(id: PolicyId, text: &str) -> Policy {
        serde_json::from_value(serde_json::json!({
            "id": id, "org_id": uuid::Uuid::nil(), "name": "p", "text": text,
            "created_at": "2026-12-01T00:00:00Z", "created_by": "owner@example.com",
        }))
        .unwrap()
    }

    #[test]
    fn the_same_policies_compile_once_and_a_change_compiles_again() {
        let cache = PolicyCache::default();
        let (org, id) = (OrgId::from_uuid(uuid::Uuid::new_v4()), PolicyId::from_uuid(uuid::Uuid::new_v4()));
        let forbid = r#"forbid (principal, action, resource) when { context.environment == "prod" };"#;
        let one = [policy(id, forbid)];
        let first = cache.compiled(org, &one).unwrap();
        assert!(Arc::ptr_eq(&first, &cache.compiled(org, &one).unwrap()), "reused");
        let changed = [policy(id, &forbid.replace("prod", "dev"))];
        assert!(!Arc::ptr_eq(&first, &cache.compiled(org, &changed).unwrap()), "compiled again");
        assert!(!Arc::ptr_eq(&first, &cache.compiled(org, &[]).unwrap()), "none left");
        let other = OrgId::from_uuid(uuid::Uuid::new_v4());
        assert!(!Arc::ptr_eq(&first, &cache.compiled(other, &one).unwrap()), "per organization");
        assert!(cache.compiled(org, &[policy(id, "not cedar")]).is_err(), "refused, and not cached");
    }
}
