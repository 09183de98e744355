-- Versions written before 0044 came from a release that kept every version:
-- each keeps the one before it (heimdall_core::retention::KEEPS_PREVIOUS),
-- so an upgrade erases nothing by itself. "Before 0044" is when sqlx
-- recorded applying it (UTC, to the second; created_at is microseconds).
UPDATE secret_versions SET keep_previous_seconds = -1
WHERE keep_previous_seconds = 0
  AND created_at < (SELECT CAST(strftime('%s', installed_on) AS BIGINT) * 1000000
                    FROM _sqlx_migrations WHERE version = 44);
