-- The organization's notification channels (webhooks). A channel's
-- signing secret is derived from the API's key and the channel's id
-- (heimdall_core::notify::channel_secret): it is never stored.
CREATE TABLE notification_channels (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organizations (id),
    name       TEXT NOT NULL,
    url        TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    created_by TEXT NOT NULL,
    UNIQUE (org_id, name)
);

-- One row per event and channel, queued with the event; the delivery loop
-- claims due rows (next_attempt_at) and records each try.
CREATE TABLE notification_deliveries (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL REFERENCES organizations (id),
    channel_id      TEXT NOT NULL REFERENCES notification_channels (id),
    event_id        TEXT NOT NULL,
    action          TEXT NOT NULL,
    body            TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        BIGINT NOT NULL DEFAULT 0,
    last_result     TEXT,
    created_at      BIGINT NOT NULL,
    next_attempt_at BIGINT,
    delivered_at    BIGINT
);
CREATE INDEX notification_deliveries_due ON notification_deliveries (status, next_attempt_at);
CREATE INDEX notification_deliveries_by_org ON notification_deliveries (org_id, created_at);
