//! The organization's secrets as this Agent last heard them, so that a
//! sync answer needs to carry only what changed since
//! (`heimdall_core::sync_delta`). Kept in memory only: after a restart the
//! first answer is whole.

use heimdall_core::sync_delta::{merge, FULL_EVERY};
use heimdall_wire::{SyncResponse, SyncSecret};
use tokio::time::Instant;

/// The list and the generation it is complete through.
#[derive(Clone, Debug)]
pub struct KnownSecrets {
    generation: i64,
    list: Vec<SyncSecret>,
    /// When the API last sent the whole list.
    whole_at: Instant,
}

/// What the next sync request says it holds: nothing once [`FULL_EVERY`]
/// has passed since the last whole list, so any drift ends there.
pub fn known_generation(known: Option<&KnownSecrets>) -> Option<i64> {
    known.filter(|k| k.whole_at.elapsed() < FULL_EVERY).map(|k| k.generation)
}

/// The answer with the whole list of secrets, a delta merged into the list
/// held; `known` becomes that list. A delta that follows a generation this
/// Agent does not hold is refused (and `known` dropped, so the next answer
/// is whole): applying it would decide reads with a list that is not the API's.
/// A delta that follows a generation this Agent does not hold.
#[derive(Debug, thiserror::Error)]
#[error(
    "the API sent the secrets changed after generation {since}, which this Agent does not hold; \
     the next sync asks for the whole list"
)]
pub struct UnknownGeneration {
    pub since: i64,
}

pub fn whole(
    known: &mut Option<KnownSecrets>,
    mut response: SyncResponse,
) -> Result<SyncResponse, UnknownGeneration> {
    let held = known.take();
    let (mut secrets, whole_at) = match response.secrets_since {
        Some(since) => {
            let Some(held) = held.filter(|k| k.generation == since) else {
                return Err(UnknownGeneration { since });
            };
            let changed = std::mem::take(&mut response.secrets);
            (merge(held.list, changed, &response.removed_secrets, |s| s.id), held.whole_at)
        }
        None => (std::mem::take(&mut response.secrets), Instant::now()),
    };
    // As the API orders a whole list: by name.
    secrets.sort_by(|a, b| a.name.cmp(&b.name));
    *known = response.secrets_generation.map(|generation| KnownSecrets {
        generation,
        list: secrets.clone(),
        whole_at,
    });
    response.secrets = secrets;
    response.secrets_since = None;
    response.removed_secrets.clear();
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use heimdall_core::ids::{OrgId, SecretId};
    use uuid::Uuid;

    fn secret(n: u128, name: &str) -> SyncSecret {
        SyncSecret {
            id: SecretId::from_uuid(Uuid::from_u128(n)),
            name: name.into(),
            personal_owner: None,
            owner_id: None,
            owner_keys: vec![],
            components: vec![],
        }
    }

    fn answer(
        secrets: Vec<SyncSecret>,
        generation: i64,
        since: Option<i64>,
        removed: Vec<u128>,
    ) -> SyncResponse {
        let json = serde_json::json!({
            "org_id": OrgId::from_uuid(Uuid::from_u128(1)),
            "at": "2026-12-07T00:00:00Z",
            "members": [], "secrets": secrets, "environments": [], "policies": [],
            "assignments": [], "deactivated": [], "received_through": 0,
            "secrets_generation": generation,
            "secrets_since": since,
            "removed_secrets": removed.into_iter().map(|n| SecretId::from_uuid(Uuid::from_u128(n))).collect::<Vec<_>>(),
        });
        serde_json::from_value(json).expect("an answer")
    }

    fn names(response: &SyncResponse) -> Vec<&str> {
        response.secrets.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn a_delta_is_merged_into_the_list_held() {
        let mut known = None;
        let first = whole(&mut known, answer(vec![secret(2, "b"), secret(1, "a")], 5, None, vec![])).unwrap();
        assert_eq!(names(&first), ["a", "b"]);
        assert_eq!(known_generation(known.as_ref()), Some(5));
        // `b` renamed `c`, `a` deleted, `d` created.
        let delta = answer(vec![secret(2, "c"), secret(4, "d")], 9, Some(5), vec![1]);
        let merged = whole(&mut known, delta).unwrap();
        assert_eq!(names(&merged), ["c", "d"]);
        assert_eq!(merged.secrets_since, None, "what is applied and kept is whole");
        assert!(merged.removed_secrets.is_empty());
        assert_eq!(known_generation(known.as_ref()), Some(9));
    }

    #[test]
    fn a_delta_after_a_generation_not_held_is_refused_and_the_next_answer_is_whole() {
        let mut known = None;
        whole(&mut known, answer(vec![secret(1, "a")], 5, None, vec![])).unwrap();
        let err = whole(&mut known, answer(vec![secret(2, "b")], 9, Some(4), vec![])).unwrap_err();
        assert_eq!(err.since, 4, "{err}");
        assert_eq!(known_generation(known.as_ref()), None);
        let mut nothing = None;
        assert!(
            whole(&mut nothing, answer(vec![], 9, Some(0), vec![])).is_err(),
            "a delta with no list held"
        );
    }

    #[test]
    fn an_api_older_than_deltas_leaves_nothing_known() {
        let mut known = None;
        let mut old = answer(vec![secret(1, "a")], 0, None, vec![]);
        old.secrets_generation = None;
        whole(&mut known, old).unwrap();
        assert_eq!(known_generation(known.as_ref()), None, "every request asks for the whole list");
    }
}
