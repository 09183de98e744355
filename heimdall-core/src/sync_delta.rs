//! The sync answer's secrets as a delta: an Agent that holds the list as
//! of a generation is sent only what changed after it.
//!
//! The API's database numbers every change to a secret (its row, its
//! Components, the keys bound to it) with the organization's next
//! *generation*, in commit order. An Agent says which generation its list
//! is complete through; the answer carries the secrets changed after it
//! and the ids of those deleted since, with the generation it is complete
//! through. A full list goes to an Agent that knows none, that claims one
//! the API has not reached, one from before the API last started (each
//! start moves the generation past anything an Agent could know: a
//! database restored from a backup is followed by a start, and no Agent
//! then keeps a list the database lost; see [`RESTART_STEP`]), or that
//! asks for one ([`FULL_EVERY`]): whatever went wrong, a list is never
//! more than that old.

use std::collections::BTreeMap;

/// How often an Agent asks for the whole list even when it holds one:
/// the bound on how long any drift could last.
pub const FULL_EVERY: std::time::Duration = std::time::Duration::from_secs(300);

/// How far each start of an API process moves every organization's
/// generation; the generation it reaches is the new floor.
pub const RESTART_STEP: i64 = 1 << 32;

/// Which answer an Agent that knows `known` gets when the organization is
/// at `through`, last started at `floor`: `Some(g)`, the changes after
/// `g`; `None`, the whole list.
pub fn since(known: Option<i64>, floor: i64, through: i64) -> Option<i64> {
    known.filter(|k| (floor.max(0)..=through).contains(k))
}

/// The list after a delta: `known` without `removed`, with `changed`
/// replacing the entries of the same key and adding the others. Ordered
/// by `key`, as a full answer's list is ordered by the API.
pub fn merge<T, K: Ord + Clone>(
    known: Vec<T>,
    changed: Vec<T>,
    removed: &[K],
    key: impl Fn(&T) -> K,
) -> Vec<T> {
    let mut by_key: BTreeMap<K, T> = known.into_iter().map(|t| (key(&t), t)).collect();
    for gone in removed {
        by_key.remove(gone);
    }
    for t in changed {
        by_key.insert(key(&t), t);
    }
    by_key.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delta_goes_only_to_an_agent_whose_generation_the_api_has_reached() {
        assert_eq!(since(None, 0, 7), None, "an Agent that knows nothing gets everything");
        assert_eq!(since(Some(7), 0, 7), Some(7), "unchanged: an empty delta");
        assert_eq!(since(Some(3), 0, 7), Some(3));
        assert_eq!(since(Some(0), 0, 0), Some(0));
        // The API's database went back (a restore): the Agent's list may
        // hold what the API no longer has.
        assert_eq!(since(Some(9), 0, 7), None);
        assert_eq!(since(Some(-1), 0, 7), None, "no generation is negative");
    }

    #[test]
    fn a_list_from_before_the_api_last_started_is_replaced_whole() {
        // Restored to generation 100 while an Agent knew 120; the start
        // after the restore moved it to 100 + RESTART_STEP. Even once
        // writes pass 120 again, 120 is below the floor.
        let floor = 100 + RESTART_STEP;
        assert_eq!(since(Some(120), floor, floor + 50), None);
        assert_eq!(since(Some(floor), floor, floor + 50), Some(floor), "a list taken since is fine");
    }

    #[test]
    fn a_merge_replaces_adds_and_removes_by_key() {
        let known = vec![(1, "a"), (2, "b"), (3, "c")];
        let merged = merge(known, vec![(2, "b2"), (4, "d")], &[3], |t| t.0);
        assert_eq!(merged, vec![(1, "a"), (2, "b2"), (4, "d")]);
    }

    #[test]
    fn a_secret_changed_and_removed_in_the_same_delta_stays_changed() {
        // The API sends a secret as removed only when its row says deleted,
        // so the same id cannot be both; if it were, the newer word (the
        // change, applied after) wins rather than a silent loss.
        let merged = merge(vec![(1, "a")], vec![(1, "a2")], &[1], |t| t.0);
        assert_eq!(merged, vec![(1, "a2")]);
    }
}
