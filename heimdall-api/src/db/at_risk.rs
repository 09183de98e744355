//! Applies `heimdall_core::at_risk` inside the transaction that removes a
//! member or stores an Agent's reads: loads what the rule needs, stores the
//! marks it returns, and writes one `secret.at_risk` event per new mark.

use heimdall_core::audit::AuditAction;
use std::collections::{BTreeMap, BTreeSet};

use heimdall_core::at_risk::{self, Membership, Read};
use heimdall_core::ids::{EventId, OrgId};
use heimdall_core::ports::{NewEvent, StoreError, StoreResult};
use heimdall_core::secrets::AtRisk;
use sqlx::{Any, Transaction};
use time::OffsetDateTime;
use uuid::Uuid;

use super::events::insert_event;
use super::sql::{db_err, from_micros, parse_id, to_micros};

/// Marks what `reads` put at risk; `actor` is who the events name.
pub(super) async fn mark(
    tx: &mut Transaction<'_, Any>,
    org: OrgId,
    reads: &[Read],
    actor: &str,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let emails: BTreeSet<&str> = reads.iter().map(|r| r.accessor.as_str()).collect();
    let mut memberships = Vec::new();
    for email in emails {
        let rows: Vec<(String, i64, Option<i64>)> =
            sqlx::query_as("SELECT id, created_at, removed_at FROM members WHERE org_id = $1 AND email = $2")
                .bind(org.to_string())
                .bind(email.to_owned())
                .fetch_all(&mut **tx)
                .await
                .map_err(db_err)?;
        for (id, joined, removed) in rows {
            let (joined, removed) = (from_micros(joined), removed.map(from_micros));
            memberships.push(Membership { member: parse_id(&id)?, email: email.to_owned(), joined, removed });
        }
    }
    if memberships.iter().all(|m| m.removed.is_none()) {
        return Ok(());
    }
    // Each place read: its ids and its current (highest) version.
    let mut places: BTreeMap<(String, String), (String, String, i64)> = BTreeMap::new();
    for read in reads {
        let key = (read.secret.clone(), read.environment.clone());
        if places.contains_key(&key) {
            continue;
        }
        let row: Option<(String, String, i64)> = sqlx::query_as(
            "SELECT s.id, e.id, MAX(v.version) FROM secrets s \
             JOIN secret_versions v ON v.secret_id = s.id \
             JOIN catalog_entries e ON e.id = v.environment_id \
             WHERE s.org_id = $1 AND s.name = $2 AND e.kind = 'environment' AND e.name = $3 \
             GROUP BY s.id, e.id",
        )
        .bind(org.to_string())
        .bind(key.0.clone())
        .bind(key.1.clone())
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?;
        if let Some(row) = row {
            places.insert(key, row);
        }
    }
    let current = |secret: &str, env: &str| places.get(&(secret.to_owned(), env.to_owned())).map(|p| p.2);
    for found in at_risk::marks(reads, &memberships, current) {
        let Some((secret_id, environment_id, _)) =
            places.get(&(found.secret.clone(), found.environment.clone()))
        else {
            continue;
        };
        let held: Option<(String,)> = sqlx::query_as(
            "SELECT versions FROM secret_risks WHERE secret_id = $1 AND environment_id = $2 AND member_id = $3",
        )
        .bind(secret_id.clone())
        .bind(environment_id.clone())
        .bind(found.member.to_string())
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?;
        let held: Option<Vec<i64>> =
            held.map(|(text,)| serde_json::from_str(&text)).transpose().map_err(backend)?;
        let mut versions = held.clone().unwrap_or_default();
        versions.extend(&found.versions);
        versions.sort_unstable();
        versions.dedup();
        let text = serde_json::to_string(&versions).map_err(backend)?;
        let (member, email, marked_at) = (found.member.to_string(), found.email.clone(), to_micros(now));
        match &held {
            Some(old) if *old == versions => continue,
            Some(_) => sqlx::query(
                "UPDATE secret_risks SET versions = $4 WHERE secret_id = $1 AND environment_id = $2 AND member_id = $3",
            )
            .bind(secret_id.clone())
            .bind(environment_id.clone())
            .bind(member)
            .bind(text),
            None => sqlx::query(
                "INSERT INTO secret_risks (secret_id, environment_id, member_id, versions, member_email, marked_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(secret_id.clone())
            .bind(environment_id.clone())
            .bind(member)
            .bind(text)
            .bind(email)
            .bind(marked_at),
        }
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
        if held.is_none() {
            let event = NewEvent {
                id: EventId::from_uuid(Uuid::new_v4()),
                at: now,
                actor: actor.to_owned(),
                action: AuditAction::SecretAtRisk,
                target: format!("secret:{secret_id}"),
                detail: serde_json::json!({
                    "secret": found.secret,
                    "environment": found.environment,
                    "member": found.member,
                    "email": found.email,
                    "versions": found.versions,
                }),
            };
            insert_event(tx, org, event).await?;
        }
    }
    Ok(())
}

fn backend(e: serde_json::Error) -> StoreError {
    StoreError::Backend(format!("stored versions: {e}"))
}

/// Every read by `email` the API holds, for the removal of the member who has it.
pub(super) async fn reads_by(
    tx: &mut Transaction<'_, Any>,
    org: OrgId,
    email: &str,
) -> StoreResult<Vec<Read>> {
    let rows: Vec<(String, i64, String, String, i64)> = sqlx::query_as(
        "SELECT accessor, accessed_at, secret_name, environment, version FROM access_records \
         WHERE org_id = $1 AND accessor = $2",
    )
    .bind(org.to_string())
    .bind(email.to_owned())
    .fetch_all(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(rows
        .into_iter()
        .map(|(accessor, at, secret, environment, version)| Read {
            accessor,
            at: from_micros(at),
            secret,
            environment,
            version,
        })
        .collect())
}

/// A new version in `environment_id` clears the marks the rule says it clears.
pub(super) async fn clear(
    tx: &mut Transaction<'_, Any>,
    secret_id: &str,
    environment_id: &str,
) -> StoreResult<()> {
    let marked: Vec<(String,)> =
        sqlx::query_as("SELECT DISTINCT environment_id FROM secret_risks WHERE secret_id = $1")
            .bind(secret_id.to_owned())
            .fetch_all(&mut **tx)
            .await
            .map_err(db_err)?;
    for (env,) in marked.into_iter().filter(|(env,)| at_risk::cleared_by_new_version(env, environment_id)) {
        sqlx::query("DELETE FROM secret_risks WHERE secret_id = $1 AND environment_id = $2")
            .bind(secret_id.to_owned())
            .bind(env)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

/// The marks on one secret, for showing.
/// Every mark of every secret of `org`, by secret id, in one query.
pub(super) async fn of_org(
    pool: &sqlx::AnyPool,
    org: &str,
) -> StoreResult<std::collections::HashMap<String, Vec<AtRisk>>> {
    let rows: Vec<(String, String, String, String, String, i64)> = sqlx::query_as(
        "SELECT r.secret_id, e.name, r.member_id, r.member_email, r.versions, r.marked_at FROM secret_risks r \
         JOIN catalog_entries e ON e.id = r.environment_id JOIN secrets s ON s.id = r.secret_id \
         WHERE s.org_id = $1 ORDER BY r.secret_id, e.name, r.marked_at",
    )
    .bind(org.to_owned())
    .fetch_all(pool)
    .await
    .map_err(db_err)?;
    let mut out: std::collections::HashMap<String, Vec<AtRisk>> = std::collections::HashMap::new();
    for (secret, environment, member, email, versions, marked_at) in rows {
        out.entry(secret).or_default().push(AtRisk {
            environment,
            member_id: parse_id(&member)?,
            email,
            versions: serde_json::from_str(&versions).map_err(backend)?,
            marked_at: from_micros(marked_at),
        });
    }
    Ok(out)
}

pub(super) async fn of_secret(pool: &sqlx::AnyPool, secret_id: &str) -> StoreResult<Vec<AtRisk>> {
    let rows: Vec<(String, String, String, String, i64)> = sqlx::query_as(
        "SELECT e.name, r.member_id, r.member_email, r.versions, r.marked_at FROM secret_risks r \
         JOIN catalog_entries e ON e.id = r.environment_id WHERE r.secret_id = $1 ORDER BY e.name, r.marked_at",
    )
    .bind(secret_id.to_owned())
    .fetch_all(pool)
    .await
    .map_err(db_err)?;
    rows.into_iter()
        .map(|(environment, member, email, versions, marked_at)| {
            Ok(AtRisk {
                environment,
                member_id: parse_id(&member)?,
                email,
                versions: serde_json::from_str(&versions).map_err(backend)?,
                marked_at: from_micros(marked_at),
            })
        })
        .collect()
}
