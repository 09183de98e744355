//! Notification channels and their deliveries (an outbox): a delivery is
//! queued in the transaction of the event it carries, and the API's
//! delivery loop claims and sends it.

use async_trait::async_trait;
use heimdall_core::ids::OrgId;
use heimdall_core::notify::{Channel, Delivery, Outcome};
use heimdall_core::ports::{ChannelStore, DueDelivery, NewEvent, NotificationStore, StoreError, StoreResult};
use sqlx::FromRow;
use time::OffsetDateTime;

use super::events::insert_event;
use super::sql::{db_err, from_micros, parse_id, to_micros, unique_as, SqlStore};

#[derive(FromRow)]
struct ChannelRow {
    id: String,
    org_id: String,
    name: String,
    url: String,
    sealed_url: String,
    created_at: i64,
    created_by: String,
}

impl ChannelRow {
    fn into_domain(self) -> StoreResult<Channel> {
        Ok(Channel {
            id: self.id,
            org_id: parse_id(&self.org_id)?,
            name: self.name,
            url: self.url,
            sealed_url: self.sealed_url,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
        })
    }
}

#[derive(FromRow)]
struct DeliveryRow {
    id: String,
    channel: String,
    event_id: String,
    action: String,
    status: String,
    attempts: i64,
    last_result: Option<String>,
    created_at: i64,
    next_attempt_at: Option<i64>,
    delivered_at: Option<i64>,
}

const CHANNEL_COLUMNS: &str = "id, org_id, name, url, sealed_url, created_at, created_by";

#[async_trait]
impl ChannelStore for SqlStore {
    async fn create_channel(&self, channel: &Channel, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO notification_channels (id, org_id, name, url, sealed_url, created_at, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(channel.id.clone())
        .bind(channel.org_id.to_string())
        .bind(channel.name.clone())
        .bind(channel.url.clone())
        .bind(channel.sealed_url.clone())
        .bind(to_micros(channel.created_at))
        .bind(channel.created_by.clone())
        .execute(&mut *tx)
        .await
        .map_err(unique_as("notification channel"))?;
        insert_event(&mut tx, channel.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn update_channel(&self, channel: &Channel, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let updated = sqlx::query(
            "UPDATE notification_channels SET name = $1, url = $2, sealed_url = $3 WHERE org_id = $4 AND id = $5",
        )
        .bind(channel.name.clone())
        .bind(channel.url.clone())
        .bind(channel.sealed_url.clone())
        .bind(channel.org_id.to_string())
        .bind(channel.id.clone())
        .execute(&mut *tx)
        .await
        .map_err(unique_as("notification channel"))?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound("notification channel"));
        }
        insert_event(&mut tx, channel.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn list_channels(&self, org: OrgId) -> StoreResult<Vec<Channel>> {
        let rows: Vec<ChannelRow> = sqlx::query_as(&format!(
            "SELECT {CHANNEL_COLUMNS} FROM notification_channels WHERE org_id = $1 ORDER BY name"
        ))
        .bind(org.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter().map(ChannelRow::into_domain).collect()
    }

    async fn delete_channel(&self, org: OrgId, key: &str, event: NewEvent) -> StoreResult<Channel> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let row: Option<ChannelRow> = sqlx::query_as(&format!(
            "SELECT {CHANNEL_COLUMNS} FROM notification_channels WHERE org_id = $1 AND (id = $2 OR name = $2)"
        ))
        .bind(org.to_string())
        .bind(key.to_owned())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let channel = row.ok_or(StoreError::NotFound("notification channel"))?.into_domain()?;
        for table in ["notification_deliveries WHERE channel_id", "notification_channels WHERE id"] {
            sqlx::query(&format!("DELETE FROM {table} = $1"))
                .bind(channel.id.clone())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(channel)
    }

    async fn list_deliveries(&self, org: OrgId, limit: u32) -> StoreResult<Vec<Delivery>> {
        let rows: Vec<DeliveryRow> = sqlx::query_as(
            "SELECT d.id, c.name AS channel, d.event_id, d.action, d.status, d.attempts, d.last_result, \
             d.created_at, d.next_attempt_at, d.delivered_at \
             FROM notification_deliveries d JOIN notification_channels c ON c.id = d.channel_id \
             WHERE d.org_id = $1 ORDER BY d.created_at DESC, d.id LIMIT $2",
        )
        .bind(org.to_string())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(rows
            .into_iter()
            .map(|r| Delivery {
                id: r.id,
                channel: r.channel,
                event_id: r.event_id,
                action: r.action,
                status: r.status,
                attempts: u32::try_from(r.attempts).unwrap_or(u32::MAX),
                last_result: r.last_result,
                created_at: from_micros(r.created_at),
                next_attempt_at: r.next_attempt_at.map(from_micros),
                delivered_at: r.delivered_at.map(from_micros),
            })
            .collect())
    }
}

#[async_trait]
impl NotificationStore for SqlStore {
    async fn claim_deliveries(
        &self,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
    ) -> StoreResult<Vec<DueDelivery>> {
        let due: Vec<(String, String, String, String, String, i64, i64)> = sqlx::query_as(
            "SELECT d.id, d.channel_id, c.sealed_url, d.action, d.body, d.attempts, d.next_attempt_at \
             FROM notification_deliveries d JOIN notification_channels c ON c.id = d.channel_id \
             WHERE d.status = 'pending' AND d.next_attempt_at <= $1 ORDER BY d.next_attempt_at LIMIT $2",
        )
        .bind(to_micros(now))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        let mut claimed = Vec::new();
        for (id, channel_id, url, action, body, attempts, due_at) in due {
            // Only the replica whose update lands sends it.
            let taken = sqlx::query(
                "UPDATE notification_deliveries SET next_attempt_at = $1 WHERE id = $2 AND status = 'pending' AND next_attempt_at = $3",
            )
            .bind(to_micros(lease_until))
            .bind(id.clone())
            .bind(due_at)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            if taken.rows_affected() == 1 {
                let attempts = u32::try_from(attempts).unwrap_or(u32::MAX);
                claimed.push(DueDelivery { id, channel_id, url, action, body, attempts });
            }
        }
        Ok(claimed)
    }

    async fn finish_delivery(
        &self,
        id: &str,
        attempts: u32,
        outcome: &Outcome,
        result: &str,
        now: OffsetDateTime,
    ) -> StoreResult<()> {
        let (status, next, delivered) = match outcome {
            Outcome::Delivered => ("delivered", None, Some(to_micros(now))),
            Outcome::Retry(at) => ("pending", Some(to_micros(*at)), None),
            Outcome::GivenUp => ("failed", None, None),
        };
        sqlx::query(
            "UPDATE notification_deliveries SET status = $1, attempts = $2, last_result = $3, next_attempt_at = $4, \
             delivered_at = $5 WHERE id = $6",
        )
        .bind(status)
        .bind(i64::from(attempts))
        .bind(result.to_owned())
        .bind(next)
        .bind(delivered)
        .bind(id.to_owned())
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }
}
