//! Which holder of an environment lacks a current version, since when, and
//! when that is worth an event.
//!
//! One rule, used three ways: the sync answer plans transfers for what the
//! syncing Agent lacks ([`crate::transfer::plan`]), `secret show` and
//! `agent show` list every holder that is behind, and the API raises
//! `secret.holder_lagging` for a holder behind longer than
//! [`LAGGING_AFTER`]. A holder is behind on a version when it is assigned
//! the environment and reported neither the value nor a tombstone of it (a
//! tombstone was deactivated there on purpose: it is not behind).

use std::collections::{BTreeMap, BTreeSet};

use time::{Duration, OffsetDateTime};

use crate::current::{Assigned, CurrentVersion, Held};
use crate::ids::{AgentId, CatalogId};

/// Three of the Agent's default sync periods (`sync_seconds = 60`): a
/// holder still behind after this is not catching up by itself.
pub const LAGGING_AFTER: Duration = Duration::minutes(3);

/// At most one `secret.holder_lagging` event per Agent and environment in
/// this long, however long it stays behind.
pub const ALERT_AGAIN_AFTER: Duration = Duration::hours(24);

/// One holder lacking one current version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Behind {
    pub agent: AgentId,
    pub secret: String,
    pub environment: CatalogId,
    /// The current version it lacks.
    pub current: i64,
    /// The newest version it holds there, if any.
    pub held: Option<i64>,
    /// Since when it could have had it: the later of the first report of
    /// the current version by another holder and its own assignment.
    pub since: OffsetDateTime,
}

/// Every holder behind on a current version, in a stable order (Agent,
/// secret, environment). `current` is what [`crate::current::current_versions`]
/// decided; `held` is every Agent's last inventory.
pub fn behind(current: &[CurrentVersion], held: &[Held<'_>], assigned: &[Assigned]) -> Vec<Behind> {
    // Everything each Agent reported, tombstones included.
    let has: BTreeSet<(AgentId, &str, CatalogId, i64)> =
        held.iter().map(|h| (h.agent, h.secret, h.environment, h.version)).collect();
    let places: BTreeSet<(AgentId, CatalogId)> = assigned.iter().map(|a| (a.agent, a.environment)).collect();
    let mut newest: BTreeMap<(AgentId, &str, CatalogId), i64> = BTreeMap::new();
    // When a value of each version was first reported by an assigned holder.
    let mut first: BTreeMap<(&str, CatalogId, i64), OffsetDateTime> = BTreeMap::new();
    for h in held {
        let n = newest.entry((h.agent, h.secret, h.environment)).or_insert(h.version);
        *n = (*n).max(h.version);
        if !h.deactivated && places.contains(&(h.agent, h.environment)) {
            let at = first.entry((h.secret, h.environment, h.version)).or_insert(h.since);
            *at = (*at).min(h.since);
        }
    }
    let mut by_environment: BTreeMap<CatalogId, Vec<&CurrentVersion>> = BTreeMap::new();
    for c in current {
        by_environment.entry(c.environment).or_default().push(c);
    }
    let mut out = Vec::new();
    for a in assigned {
        for c in by_environment.get(&a.environment).into_iter().flatten() {
            if has.contains(&(a.agent, c.secret.as_str(), c.environment, c.version)) {
                continue;
            }
            let reported = first.get(&(c.secret.as_str(), c.environment, c.version)).copied();
            out.push(Behind {
                agent: a.agent,
                secret: c.secret.clone(),
                environment: c.environment,
                current: c.version,
                held: newest.get(&(a.agent, c.secret.as_str(), c.environment)).copied(),
                since: reported.map_or(a.at, |r| r.max(a.at)),
            });
        }
    }
    out.sort_by(|x, y| (x.agent, &x.secret, x.environment).cmp(&(y.agent, &y.secret, y.environment)));
    out
}

/// Whether a holder behind since `since` is lagging at `now`.
pub fn is_lagging(since: OffsetDateTime, now: OffsetDateTime) -> bool {
    now - since > LAGGING_AFTER
}

/// One `secret.holder_lagging` event: an Agent behind in one environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LagAlert {
    pub agent: AgentId,
    pub environment: CatalogId,
    /// How many secrets it lacks the current version of there.
    pub secrets: usize,
    /// Since when the oldest of them.
    pub since: OffsetDateTime,
}

/// The events to raise at `now`: one per (Agent, environment) with a
/// lagging holding, except where one was raised in the last
/// [`ALERT_AGAIN_AFTER`] (`recent`: Agent, environment, when).
pub fn alerts(
    behind: &[Behind],
    recent: &[(AgentId, CatalogId, OffsetDateTime)],
    now: OffsetDateTime,
) -> Vec<LagAlert> {
    let mut by_place: BTreeMap<(AgentId, CatalogId), LagAlert> = BTreeMap::new();
    for b in behind.iter().filter(|b| is_lagging(b.since, now)) {
        let alert = by_place.entry((b.agent, b.environment)).or_insert(LagAlert {
            agent: b.agent,
            environment: b.environment,
            secrets: 0,
            since: b.since,
        });
        alert.secrets += 1;
        alert.since = alert.since.min(b.since);
    }
    by_place
        .into_values()
        .filter(|a| {
            !recent.iter().any(|(agent, env, at)| {
                *agent == a.agent && *env == a.environment && now - *at < ALERT_AGAIN_AFTER
            })
        })
        .collect()
}

/// What an alert is recorded as, and looked for among recent events so
/// that it is not repeated within [`ALERT_AGAIN_AFTER`].
pub const ALERT_EVENT: crate::audit::AuditAction = crate::audit::AuditAction::SecretHolderLagging;

impl LagAlert {
    /// The event this alert is recorded as: by ids (which [`alerts`] reads
    /// back) and by the names people read.
    pub fn event(&self, agent: &str, environment: &str) -> crate::audit::EventPlan {
        let since = self.since.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
        crate::audit::EventPlan {
            action: ALERT_EVENT,
            target: format!("agent:{}", self.agent),
            detail: serde_json::json!({
                "agent": agent,
                "agent_id": self.agent,
                "environment": environment,
                "environment_id": self.environment,
                "secrets": self.secrets,
                "since": since,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn id(n: u128) -> AgentId {
        AgentId::from_uuid(Uuid::from_u128(n))
    }

    #[test]
    fn a_holder_is_behind_on_each_current_version_it_reported_neither_a_value_nor_a_tombstone_of() {
        let t0 = OffsetDateTime::UNIX_EPOCH + Duration::days(20_000);
        let (a, b, new, stranger) = (id(1), id(2), id(3), id(4));
        let prod = CatalogId::from_uuid(Uuid::from_u128(10));
        let held = |agent, secret, version, deactivated, since| Held {
            agent,
            secret,
            environment: prod,
            version,
            deactivated,
            since,
        };
        let assigned = [
            Assigned { agent: a, environment: prod, at: t0 },
            Assigned { agent: b, environment: prod, at: t0 },
            Assigned { agent: new, environment: prod, at: t0 + Duration::hours(1) },
        ];
        let current =
            |secret: &str, version| CurrentVersion { secret: secret.into(), environment: prod, version };
        let all = [
            held(a, "db", 2, false, t0 + Duration::minutes(5)),
            held(b, "db", 1, false, t0),
            held(a, "api", 1, false, t0),
            // b deactivated api 1 on purpose: not behind on it.
            held(b, "api", 1, true, t0),
            // A stranger's earlier report does not start anyone's lag.
            held(stranger, "db", 2, false, t0),
        ];
        let lacking = behind(&[current("api", 1), current("db", 2)], &all, &assigned);
        let got: Vec<(AgentId, &str, Option<i64>, OffsetDateTime)> =
            lacking.iter().map(|x| (x.agent, x.secret.as_str(), x.held, x.since)).collect();
        assert_eq!(
            got,
            vec![
                // Behind since a reported 2.
                (b, "db", Some(1), t0 + Duration::minutes(5)),
                // Since its assignment, later than a's reports.
                (new, "api", None, t0 + Duration::hours(1)),
                (new, "db", None, t0 + Duration::hours(1)),
            ]
        );
        assert!(lacking.iter().all(|x| x.environment == prod && x.agent != stranger));
    }

    #[test]
    fn one_event_per_agent_and_environment_once_it_lags_and_not_again_for_a_day() {
        let t0 = OffsetDateTime::UNIX_EPOCH + Duration::days(20_000);
        let (a, b) = (id(1), id(2));
        let (prod, dev) =
            (CatalogId::from_uuid(Uuid::from_u128(10)), CatalogId::from_uuid(Uuid::from_u128(11)));
        let gap = |agent, secret: &str, environment, since| Behind {
            agent,
            secret: secret.into(),
            environment,
            current: 2,
            held: Some(1),
            since,
        };
        let behind =
            [gap(a, "db", prod, t0), gap(a, "api", prod, t0 + Duration::minutes(1)), gap(b, "db", dev, t0)];
        assert!(
            alerts(&behind, &[], t0 + LAGGING_AFTER).is_empty(),
            "not lagging yet at exactly three periods"
        );
        let now = t0 + LAGGING_AFTER + Duration::minutes(2);
        let raised = alerts(&behind, &[], now);
        assert_eq!(raised.len(), 2);
        assert_eq!(
            (raised[0].agent, raised[0].environment, raised[0].secrets, raised[0].since),
            (a, prod, 2, t0)
        );
        // Raised an hour ago for a in prod: only b's.
        let recent = [(a, prod, now - Duration::hours(1))];
        let again = alerts(&behind, &recent, now);
        assert_eq!(again.iter().map(|x| x.agent).collect::<Vec<_>>(), vec![b]);
        // A day later, again.
        assert_eq!(alerts(&behind, &recent, now + Duration::hours(24)).len(), 2);
    }
}
