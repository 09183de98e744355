//! Writing an audit event, in the transaction of the change it describes:
//! to the organization's feed, and to the delivery queue of each of its
//! notification channels when its action is one they hear of.

use heimdall_core::ids::OrgId;
use heimdall_core::ports::{NewEvent, StoreError, StoreResult};
use sqlx::{Any, Transaction};
use uuid::Uuid;

use super::sql::{db_err, to_micros};

pub(crate) async fn insert_event(
    tx: &mut Transaction<'_, Any>,
    org: OrgId,
    mut event: NewEvent,
) -> StoreResult<()> {
    // An event about a personal secret never names it: the feed is the
    // organization's (`secrets::redact_personal`).
    if let Some(id) = event.target.strip_prefix("secret:") {
        let personal: Option<(String, Option<String>, Option<String>)> =
            sqlx::query_as("SELECT name, deleted_name, personal_owner_id FROM secrets WHERE id = $1")
                .bind(id.to_owned())
                .fetch_optional(&mut **tx)
                .await
                .map_err(db_err)?;
        if let Some((name, deleted_name, Some(_))) = personal {
            heimdall_core::secrets::redact_personal(
                &mut event.detail,
                deleted_name.as_deref().unwrap_or(&name),
            );
        }
    }
    if heimdall_core::notify::is_notified(event.action) {
        queue_notifications(tx, org, &event).await?;
    }
    sqlx::query(
        "INSERT INTO audit_events (id, org_id, at, actor, action, target, detail) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(event.id.to_string())
    .bind(org.to_string())
    .bind(to_micros(event.at))
    .bind(event.actor)
    .bind(event.action.as_str())
    .bind(event.target)
    .bind(event.detail.to_string())
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Queues `event` for every channel of `org`, in the caller's transaction.
async fn queue_notifications(tx: &mut Transaction<'_, Any>, org: OrgId, event: &NewEvent) -> StoreResult<()> {
    let channels: Vec<(String,)> = sqlx::query_as("SELECT id FROM notification_channels WHERE org_id = $1")
        .bind(org.to_string())
        .fetch_all(&mut **tx)
        .await
        .map_err(db_err)?;
    if channels.is_empty() {
        return Ok(());
    }
    let body = serde_json::to_string(&event.clone().into_event(org))
        .map_err(|e| StoreError::Backend(e.to_string()))?;
    for (channel,) in channels {
        sqlx::query(
            "INSERT INTO notification_deliveries (id, org_id, channel_id, event_id, action, body, status, attempts, created_at, next_attempt_at) \
             VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $7)",
        )
        .bind(Uuid::new_v4().to_string())
        .bind(org.to_string())
        .bind(channel)
        .bind(event.id.to_string())
        .bind(event.action.as_str())
        .bind(body.clone())
        .bind(to_micros(event.at))
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    }
    Ok(())
}
